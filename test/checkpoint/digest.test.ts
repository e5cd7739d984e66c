/**
 * The checkpoint digest chains one step per event over its whole canonical content (format 6): a
 * tag per JSON value, numbers as their JSON text and strings as their length and code units two
 * per word, object members in UTF-16 key order, arrays and objects closed by an end tag. Stored
 * checkpoints carry the digest, so any drift in the step must come with a new format: the
 * reference below spells the step out word by word.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { chainDigest, DIGEST_TAGS } from '../../src/core/checkpoint/codec.js';
import { INITIAL_HASH_STATE, type RunningHashState } from '../../src/core/hash.js';
import type { DurableEventEnvelope } from '../../src/protocol/events.js';
import type { JsonValue } from '../../src/protocol/json.js';

function textWords(text: string): number[] {
  const words = [text.length];
  for (let index = 0; index < text.length; index += 2) {
    const low = text.charCodeAt(index);
    words.push(index + 1 < text.length ? low + text.charCodeAt(index + 1) * 65536 : low);
  }
  return words;
}

/** The words one JSON value feeds, built the slow, obvious way. */
function valueWords(value: JsonValue): number[] {
  if (value === null) return [DIGEST_TAGS.null];
  if (value === true) return [DIGEST_TAGS.true];
  if (value === false) return [DIGEST_TAGS.false];
  if (typeof value === 'number') return [DIGEST_TAGS.number, ...textWords(JSON.stringify(value))];
  if (typeof value === 'string') return [DIGEST_TAGS.string, ...textWords(value)];
  if (Array.isArray(value)) return [DIGEST_TAGS.array, ...value.flatMap(valueWords), DIGEST_TAGS.end];
  const members = Object.entries(value).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return [DIGEST_TAGS.object, ...members.flatMap(([key, member]) => [...textWords(key), ...valueWords(member)]), DIGEST_TAGS.end];
}

function referenceStep(state: RunningHashState, event: JsonValue): RunningHashState {
  let h1 = state.h1;
  let h2 = state.h2;
  for (const word of valueWords(event)) {
    h1 = Math.imul(h1 ^ word, 2654435761);
    h2 = Math.imul(h2 ^ word, 1597334677);
  }
  return { h1: h1 >>> 0, h2: h2 >>> 0 };
}

// SAFETY: the digest reads an envelope as plain JSON; these tests feed it any JSON object.
const asEvent = (value: unknown) => value as DurableEventEnvelope;
const json = fc.jsonValue({ maxDepth: 3 }).map((value) => JSON.parse(JSON.stringify(value)) as JsonValue);
const event = fc.dictionary(fc.string({ unit: 'binary', maxLength: 12 }), json, { maxKeys: 6 });

/** `value` with every object's keys in reverse order (same JSON value, other spelling). */
function reversedKeys(value: JsonValue): JsonValue {
  if (Array.isArray(value)) return value.map(reversedKeys);
  if (typeof value !== 'object' || value === null) return value;
  const copy: Record<string, JsonValue> = {};
  for (const key of Object.keys(value).reverse()) Object.defineProperty(copy, key, { value: reversedKeys(value[key] as JsonValue), enumerable: true, writable: true, configurable: true });
  return copy;
}

describe('checkpoint digest', () => {
  it('chainDigest feeds exactly the canonical words of each event', () => {
    fc.assert(
      fc.property(fc.array(event, { minLength: 1, maxLength: 5 }), (events) => {
        let expected = INITIAL_HASH_STATE;
        let chained = INITIAL_HASH_STATE;
        for (const fields of events) {
          expected = referenceStep(expected, fields);
          chained = chainDigest(chained, asEvent(fields));
        }
        expect(chained).toEqual(expected);
      }),
      { numRuns: 300 },
    );
  });

  it('does not depend on key order, and skips members whose value is undefined (absent in JSON)', () => {
    fc.assert(
      fc.property(event, (fields) => {
        expect(chainDigest(INITIAL_HASH_STATE, asEvent(reversedKeys(fields)))).toEqual(chainDigest(INITIAL_HASH_STATE, asEvent(fields)));
      }),
      { numRuns: 300 },
    );
    const base = { sequence: 1, eventId: 'evt-1', type: 'session_created' };
    expect(chainDigest(INITIAL_HASH_STATE, asEvent({ ...base, commandId: undefined }))).toEqual(chainDigest(INITIAL_HASH_STATE, asEvent(base)));
  });

  it('changes with every field of the envelope and every byte of the payload, and with where a value ends', () => {
    const base = {
      sequence: 4294967297,
      eventId: 'evt-1',
      type: 'tool_completed',
      commandId: 'cmd-1',
      recordedAt: '2026-12-02T02:25:58.068Z',
      occurredAt: '2026-12-02T02:25:58.060Z',
      data: { result: { status: 'done', count: 2, flags: [true, null] } },
    };
    const digest = (fields: object) => chainDigest(INITIAL_HASH_STATE, asEvent(fields));
    const variants = [
      { ...base, sequence: 1 },
      { ...base, eventId: 'evt-2' },
      { ...base, type: 'tool_failed' },
      { ...base, commandId: undefined },
      { ...base, commandId: 'cmd-1\u0000' },
      { ...base, eventId: 'evt-1c', commandId: 'md-1' },
      { ...base, recordedAt: '2026-12-02T02:25:58.069Z' },
      { ...base, occurredAt: '2026-12-02T02:25:58.061Z' },
      { ...base, data: { result: { status: 'dune', count: 2, flags: [true, null] } } },
      { ...base, data: { result: { status: 'done', count: 3, flags: [true, null] } } },
      { ...base, data: { result: { status: 'done', count: '2', flags: [true, null] } } },
      { ...base, data: { result: { status: 'done', count: 2, flags: [null, true] } } },
      { ...base, data: { result: { status: 'done', count: 2, flags: [true, null, null] } } },
      { ...base, data: { result: { status: 'done', count: 2, flags: [[true], null] } } },
      { ...base, data: { result: { status: 'done', count: 2, flags: [false, null] } } },
      { ...base, data: { result: { status: 'done', count: 2, flags: { 0: true, 1: null } } } },
      { ...base, data: { result: { status: 'done', count: 2, flag: [true, null] } } },
      { ...base, data: { result: { status: 'done', count: 2 }, flags: [true, null] } },
      { ...base, extra: null },
    ];
    const seen = new Set([JSON.stringify(digest(base))]);
    for (const variant of variants) seen.add(JSON.stringify(digest(variant)));
    expect(seen.size).toBe(variants.length + 1);
  });

  it('chains: two events reordered give another digest', () => {
    const a = { sequence: 1, eventId: 'evt-a', type: 'x' };
    const b = { sequence: 1, eventId: 'evt-b', type: 'x' };
    const forward = chainDigest(chainDigest(INITIAL_HASH_STATE, asEvent(a)), asEvent(b));
    const backward = chainDigest(chainDigest(INITIAL_HASH_STATE, asEvent(b)), asEvent(a));
    expect(forward).not.toEqual(backward);
  });
});
