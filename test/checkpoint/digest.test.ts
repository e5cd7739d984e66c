/**
 * The checkpoint digest chains one step per event over its identity (format 5): the sequence as
 * two 32-bit words, then the event ID, type, command ID and commit time, each as its length and
 * its code units two per word. Stored checkpoints carry the digest, so any drift in the step must
 * come with a new format: the reference below spells the step out word by word.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { chainDigest, eventIdentityParts } from '../../src/core/checkpoint/codec.js';
import { INITIAL_HASH_STATE, type RunningHashState } from '../../src/core/checkpoint/hash.js';
import type { DurableEventEnvelope } from '../../src/protocol/events.js';

/** The words one event feeds, built the slow, obvious way. */
function identityWords(event: DurableEventEnvelope): number[] {
  const [sequence, ...texts] = eventIdentityParts(event);
  const words = [sequence % 2 ** 32, Math.floor(sequence / 2 ** 32)];
  for (const text of texts) {
    words.push(text.length);
    for (let index = 0; index < text.length; index += 2) {
      const low = text.charCodeAt(index);
      words.push(index + 1 < text.length ? low + text.charCodeAt(index + 1) * 65536 : low);
    }
  }
  return words;
}

function referenceStep(state: RunningHashState, event: DurableEventEnvelope): RunningHashState {
  let h1 = state.h1;
  let h2 = state.h2;
  for (const word of identityWords(event)) {
    h1 = Math.imul(h1 ^ word, 2654435761);
    h2 = Math.imul(h2 ^ word, 1597334677);
  }
  return { h1: h1 >>> 0, h2: h2 >>> 0 };
}

const identity = fc.record({
  sequence: fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }),
  eventId: fc.string({ unit: 'binary', minLength: 1, maxLength: 60 }),
  type: fc.constantFrom('session_created', 'tool_completed', 'request_accepted'),
  commandId: fc.option(fc.string({ unit: 'binary', minLength: 1, maxLength: 60 }), { nil: undefined }),
  recordedAt: fc.constant('2026-12-02T02:25:58.068Z'),
});
// SAFETY: the digest reads only these five fields of an envelope.
const asEvent = (fields: unknown) => fields as DurableEventEnvelope;

describe('checkpoint digest', () => {
  it('chainDigest feeds exactly the identity words of each event, with or without a commandId', () => {
    fc.assert(
      fc.property(fc.array(identity, { minLength: 1, maxLength: 5 }), (events) => {
        let expected = INITIAL_HASH_STATE;
        let chained = INITIAL_HASH_STATE;
        for (const fields of events) {
          expected = referenceStep(expected, asEvent(fields));
          chained = chainDigest(chained, asEvent(fields));
        }
        expect(chained).toEqual(expected);
      }),
      { numRuns: 300 },
    );
  });

  it('changes with every identity field, and with where one text ends and the next begins', () => {
    const base = { sequence: 4294967297, eventId: 'evt-1', type: 'tool_completed', commandId: 'cmd-1', recordedAt: '2026-12-02T02:25:58.068Z' };
    const digest = (fields: object) => chainDigest(INITIAL_HASH_STATE, asEvent(fields));
    const variants = [
      { ...base, sequence: 1 },
      { ...base, sequence: 4294967296 + 2 },
      { ...base, eventId: 'evt-2' },
      { ...base, type: 'tool_failed' },
      { ...base, commandId: undefined },
      { ...base, commandId: 'cmd-1\u0000' },
      { ...base, eventId: 'evt-1c', commandId: 'md-1' },
      { ...base, recordedAt: '2026-12-02T02:25:58.069Z' },
    ];
    const seen = new Set([JSON.stringify(digest(base))]);
    for (const variant of variants) seen.add(JSON.stringify(digest(variant)));
    expect(seen.size).toBe(variants.length + 1);
  });
});
