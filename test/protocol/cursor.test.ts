import { Buffer } from 'node:buffer';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  DurableEventStoreError,
  EventId,
  EventSequence,
  SessionId,
  decodeBase64Url,
  decodeDurableEventCursor,
  durableEventCursor,
  encodeBase64Url,
  encodeDurableEventCursor,
  parseDurableEventCursor,
  type DurableEventCursor,
} from '../../src/protocol/index.js';
import { envelopeOf, validDrafts } from './event-fixtures.js';

const parts = { sessionId: SessionId('session-1'), sequence: EventSequence(42), eventId: EventId('event-42') };
const cursor: DurableEventCursor = { version: 1, ...parts };

function invalidCursor(run: () => unknown): void {
  let thrown: unknown;
  try {
    run();
  } catch (error) {
    thrown = error;
  }
  expect(thrown).toBeInstanceOf(DurableEventStoreError);
  expect((thrown as DurableEventStoreError).code).toBe('DURABLE_EVENT_INVALID_CURSOR');
}

describe('cursor creation and parsing', () => {
  it('builds a cursor from parts or from an envelope', () => {
    expect(durableEventCursor(parts)).toEqual(cursor);
    const envelope = envelopeOf(validDrafts.request_started, 9);
    expect(durableEventCursor(envelope)).toEqual({ version: 1, sessionId: envelope.sessionId, sequence: 9, eventId: envelope.eventId });
    expect(Object.keys(durableEventCursor(envelope))).toEqual(['version', 'sessionId', 'sequence', 'eventId']);
  });

  it('parses the object and its JSON text', () => {
    expect(parseDurableEventCursor({ ...cursor })).toEqual(cursor);
    expect(parseDurableEventCursor(JSON.stringify(cursor))).toEqual(cursor);
  });

  it.each<[string, unknown]>([
    ['missing version', { sessionId: 's', sequence: 1, eventId: 'e' }],
    ['version 2', { ...cursor, version: 2 }],
    ['version as string', { ...cursor, version: '1' }],
    ['extra key', { ...cursor, after: 3 }],
    ['missing sessionId', { version: 1, sequence: 1, eventId: 'e' }],
    ['missing sequence', { version: 1, sessionId: 's', eventId: 'e' }],
    ['missing eventId', { version: 1, sessionId: 's', sequence: 1 }],
    ['empty sessionId', { ...cursor, sessionId: '' }],
    ['control char in eventId', { ...cursor, eventId: 'e\u0000' }],
    ['too long eventId', { ...cursor, eventId: 'e'.repeat(257) }],
    ['sequence zero', { ...cursor, sequence: 0 }],
    ['fractional sequence', { ...cursor, sequence: 1.5 }],
    ['sequence as string', { ...cursor, sequence: '42' }],
    ['null', null],
    ['array', [cursor]],
    ['number', 42],
    ['invalid JSON text', '{"version":1,'],
    ['JSON text of a bad cursor', JSON.stringify({ ...cursor, version: 2 })],
    ['overlong text', ' '.repeat(10_000)],
  ])('refuses %s', (_label, value) => {
    invalidCursor(() => parseDurableEventCursor(value));
  });

  it('durableEventCursor validates its parts', () => {
    invalidCursor(() => durableEventCursor({ ...parts, sequence: 0 as EventSequence }));
    invalidCursor(() => durableEventCursor({ ...parts, eventId: '' as EventId }));
  });
});

describe('encoded cursors', () => {
  it('round-trips through base64url and stays URL-safe', () => {
    const weird = durableEventCursor({ sessionId: SessionId('sé/😀?&='), sequence: EventSequence(Number.MAX_SAFE_INTEGER), eventId: EventId('"quoted"') });
    for (const c of [cursor, weird]) {
      const text = encodeDurableEventCursor(c);
      expect(text).toMatch(/^[A-Za-z0-9_-]+$/);
      expect(decodeDurableEventCursor(text)).toEqual(c);
    }
  });

  it('encodes the canonical JSON', () => {
    const text = encodeDurableEventCursor(cursor);
    expect(Buffer.from(text, 'base64url').toString('utf8')).toBe('{"eventId":"event-42","sequence":42,"sessionId":"session-1","version":1}');
  });

  const b64 = (text: string) => Buffer.from(text, 'utf8').toString('base64url');
  const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
  /** A canonical encoding whose final character gets a low bit set: Buffer would ignore it, we must not. */
  function withStrayBits(): string {
    for (let pad = 0; pad < 3; pad++) {
      const text = encodeDurableEventCursor({ ...cursor, eventId: EventId(`event-${'x'.repeat(pad)}`) });
      if (text.length % 4 === 2) {
        const last = ALPHABET.indexOf(text.charAt(text.length - 1));
        const tampered = text.slice(0, -1) + ALPHABET.charAt(last | 1);
        expect(Buffer.from(tampered, 'base64url')).toEqual(Buffer.from(text, 'base64url'));
        return tampered;
      }
    }
    throw new Error('no padding length gives a 2-character tail');
  }
  const good = encodeDurableEventCursor(cursor);

  it.each<[string, unknown]>([
    ['empty string', ''],
    ['not a string', 42],
    ['standard base64 alphabet', Buffer.from(JSON.stringify({ ...cursor, sessionId: '>>>??' })).toString('base64')],
    ['padding', `${good}==`],
    ['impossible length', good.length % 4 === 0 ? `${good}A` : good.slice(0, good.length - (good.length % 4) + 1)],
    ['stray low bits', withStrayBits()],
    ['non-canonical key order', b64(JSON.stringify(cursor))],
    ['whitespace', b64(' {"eventId":"event-42","sequence":42,"sessionId":"session-1","version":1}')],
    ['not JSON', b64('hello')],
    ['invalid UTF-8', Buffer.from([0xff, 0xfe, 0x7b]).toString('base64url')],
    ['BOM', b64('\ufeff{"eventId":"event-42","sequence":42,"sessionId":"session-1","version":1}')],
    ['version missing', b64('{"eventId":"event-42","sequence":42,"sessionId":"session-1"}')],
    ['extra key', b64('{"eventId":"event-42","sequence":42,"sessionId":"session-1","version":1,"x":1}')],
    ['too long', 'A'.repeat(10_000)],
  ])('refuses %s', (_label, text) => {
    invalidCursor(() => decodeDurableEventCursor(text));
  });
});

describe('base64url', () => {
  it('matches Buffer for any bytes, and decodes its own output', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), (bytes) => {
        const text = encodeBase64Url(bytes);
        expect(text).toBe(Buffer.from(bytes).toString('base64url'));
        expect(decodeBase64Url(text)).toEqual(bytes);
      }),
    );
  });

  it('refuses what base64url cannot produce', () => {
    for (const bad of ['A', 'AAAAA', 'AB', 'AAB', 'A+', 'A/', 'AA==', 'A\u00e9', 'AAAA\u00e9A', 'AA\u0000A', 'AAA\uD800', 'AAAAAB', 'AAAAAAB']) {
      expect(decodeBase64Url(bad), bad).toBeUndefined();
    }
    expect(decodeBase64Url('')).toEqual(new Uint8Array());
  });

  it('refuses any single character outside the alphabet at any position', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 3, maxLength: 30 }), fc.nat(), fc.integer({ min: 0, max: 0xffff }), (bytes, at, code) => {
        const text = encodeBase64Url(bytes);
        const index = at % text.length;
        const char = String.fromCharCode(code);
        fc.pre(!/[A-Za-z0-9_-]/.test(char));
        expect(decodeBase64Url(text.slice(0, index) + char + text.slice(index + 1))).toBeUndefined();
      }),
    );
  });

  it('decodes exactly what Buffer decodes, for any canonical text', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), (bytes) => {
        const text = Buffer.from(bytes).toString('base64url');
        expect(decodeBase64Url(text)).toEqual(new Uint8Array(Buffer.from(text, 'base64url')));
      }),
    );
  });
});
