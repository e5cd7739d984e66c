/**
 * The checkpoint digest chains one step per event over its identity text. `chainDigest` feeds the
 * parts of that text without joining them; it must give exactly the lanes of feeding the joined
 * text (stored checkpoints compare digests, so any drift would discard every checkpoint).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { chainDigest, eventIdentityText } from '../../src/core/checkpoint/codec.js';
import { INITIAL_HASH_STATE, feedHash, feedHashJoined } from '../../src/core/checkpoint/hash.js';
import type { DurableEventEnvelope } from '../../src/protocol/events.js';

describe('checkpoint digest', () => {
  it('feedHashJoined equals feedHash of the joined parts', () => {
    fc.assert(
      fc.property(fc.array(fc.string({ unit: 'binary', maxLength: 40 }), { minLength: 1, maxLength: 6 }), (parts) => {
        expect(feedHashJoined(INITIAL_HASH_STATE, parts)).toEqual(feedHash(INITIAL_HASH_STATE, parts.join('|')));
      }),
      { numRuns: 300 },
    );
  });

  it('chainDigest chains exactly the identity text of each event, with or without a commandId', () => {
    const identity = fc.record({
      sequence: fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }),
      eventId: fc.string({ unit: 'binary', minLength: 1, maxLength: 60 }),
      type: fc.constantFrom('session_created', 'tool_completed', 'request_accepted'),
      commandId: fc.option(fc.string({ unit: 'binary', minLength: 1, maxLength: 60 }), { nil: undefined }),
      recordedAt: fc.constant('2026-12-02T02:25:58.068Z'),
    });
    fc.assert(
      fc.property(fc.array(identity, { minLength: 1, maxLength: 5 }), (events) => {
        let joined = INITIAL_HASH_STATE;
        let chained = INITIAL_HASH_STATE;
        for (const fields of events) {
          // SAFETY: the digest reads only these five fields of an envelope.
          const event = fields as unknown as DurableEventEnvelope;
          joined = feedHash(joined, eventIdentityText(event));
          chained = chainDigest(chained, event);
        }
        expect(chained).toEqual(joined);
      }),
      { numRuns: 300 },
    );
  });
});
