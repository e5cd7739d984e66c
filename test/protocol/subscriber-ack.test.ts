/**
 * The flow-control arithmetic: UTF-8 frame sizes (against TextEncoder, with fast-check), ack frames,
 * and the window decisions of `socket-pacing.ts`.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  applyAck,
  fits,
  parseAttachment,
  pacingFromEnv,
  resolvePacingLimits,
  stalledTooLong,
  type SocketCursor,
} from '../../src/edge/socket-pacing.js';
import { encodeSubscriberAck, frameByteLength, parseSubscriberAck } from '../../src/protocol/frames.js';

const limits = resolvePacingLimits({ windowBytes: 1000, objectWindowBytes: 3000 });
const base: SocketCursor = {
  sessionId: 's',
  cursorSequence: null,
  cursorEventId: null,
  caughtUp: true,
  paced: true,
  sent: 0,
  acked: 0,
  stalledAt: null,
  resync: false,
};

describe('subscriber flow control arithmetic', () => {
  it('counts UTF-8 bytes like TextEncoder, surrogate pairs and lone surrogates included', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (text) => {
        expect(frameByteLength(text)).toBe(new TextEncoder().encode(text).byteLength);
      }),
      { numRuns: 500 },
    );
    expect(frameByteLength('a\u00e9\u20ac\u{1F600}\uD800')).toBe(1 + 2 + 3 + 4 + 3);
  });

  it('parses ack frames and nothing else', () => {
    expect(parseSubscriberAck(encodeSubscriberAck(42))).toEqual({ type: 'ack', bytes: 42 });
    for (const text of ['ping', '{"type":"ack"}', '{"type":"ack","bytes":-1}', '{"type":"ack","bytes":1.5}', '{"type":"ack","bytes":1,"x":1}', '{']) {
      expect(parseSubscriberAck(text)).toBeUndefined();
    }
  });

  it('moves acks forward only, and refuses an ack beyond what was sent', () => {
    const cursor = { ...base, sent: 500, acked: 100, stalledAt: 7 };
    expect(applyAck(cursor, 300)).toEqual({ kind: 'moved', cursor: { ...cursor, acked: 300, stalledAt: null } });
    expect(applyAck(cursor, 100)).toEqual({ kind: 'ignored' });
    expect(applyAck(cursor, 501).kind).toBe('violation');
  });

  it('lets a frame go within both windows, or alone when nothing is in flight', () => {
    expect(fits({ ...base, sent: 500 }, 500, 500, limits)).toBe(true);
    expect(fits({ ...base, sent: 500 }, 501, 500, limits)).toBe(false);
    expect(fits(base, 5000, 0, limits)).toBe(true); // alone
    expect(fits({ ...base, sent: 10 }, 100, 2950, limits)).toBe(false); // object window
    expect(fits(base, 1, 3000, limits)).toBe(false); // object full: not even alone
    expect(stalledTooLong({ ...base, stalledAt: 0 }, limits.stallMs + 1, limits)).toBe(true);
    expect(stalledTooLong({ ...base, stalledAt: 0 }, limits.stallMs, limits)).toBe(false);
  });

  it('reads old attachments as live legacy sockets, and limits from Worker vars', () => {
    expect(parseAttachment({ sessionId: 's', cursorSequence: 3, cursorEventId: 'e' })).toEqual({
      ...base,
      cursorSequence: 3,
      cursorEventId: 'e',
      paced: false,
    });
    expect(parseAttachment({ sessionId: 's', cursorSequence: 3, cursorEventId: null })).toBeNull();
    expect(pacingFromEnv({ SUBSCRIBER_WINDOW_BYTES: '16384', SUBSCRIBER_STALL_MS: '5', OTHER: 'x' })).toEqual({
      windowBytes: 16384,
      objectWindowBytes: 16 * 1024 * 1024,
      stallMs: 5,
    });
    expect(pacingFromEnv({ SUBSCRIBER_WINDOW_BYTES: 'lots' })).toEqual({});
    expect(() => resolvePacingLimits({ windowBytes: 10, objectWindowBytes: 5 })).toThrow(RangeError);
  });
});
