/**
 * `fastParseEnvelope` (the projector's fast path) against `safeParseDurableEventEnvelope`,
 * differentially: every valid envelope fixture it covers is accepted exactly as zod parses it
 * (same values, same key order), every invalid one is declined, and on generated mutations of
 * envelope and payload fields it never accepts anything zod refuses nor returns anything zod
 * would not.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { fastParseEnvelope } from '../../src/protocol/draft-fast-path.js';
import { safeParseDurableEventEnvelope, type DurableEventEnvelope, type DurableEventType } from '../../src/protocol/events.js';
import { copy, envelopeOf, invalidDataMutations, validDrafts } from './event-fixtures.js';

const TYPES = Object.keys(validDrafts) as DurableEventType[];

function covered(type: DurableEventType): DurableEventEnvelope {
  const draft = copy(validDrafts[type]) as { data: Record<string, unknown> };
  // Content-part arrays are left to zod on purpose (as in the draft fast path).
  if (type === 'request_accepted') draft.data['input'] = 'text';
  return envelopeOf(draft as never, 7);
}

function agreesWithZod(fast: DurableEventEnvelope | undefined, input: unknown): boolean {
  if (fast === undefined) return false;
  const reference = safeParseDurableEventEnvelope(input);
  expect(reference.ok).toBe(true);
  if (!reference.ok) return false;
  expect(fast).toStrictEqual(reference.value);
  expect(JSON.stringify(fast)).toBe(JSON.stringify(reference.value));
  return true;
}

const WEIRD: unknown[] = [undefined, null, '', 'x', 0, -1, 1.5, 3, 2 ** 53, true, [], {}, 'a\u0000b', '2025-01-31T12:00:00Z', '2025-02-30T12:00:00.000Z', 5];
const ENVELOPE_KEYS = ['schemaVersion', 'eventId', 'sequence', 'sessionId', 'recordedAt', 'occurredAt', 'type', 'commandId', 'causationEventId', 'requestId', 'turnId', 'toolAttemptId', 'modelAttemptId', 'extra'];

describe('fastParseEnvelope', () => {
  it('accepts every covered valid envelope exactly as zod parses it', () => {
    for (const type of TYPES) expect(agreesWithZod(fastParseEnvelope(covered(type)), covered(type)), type).toBe(true);
    expect(fastParseEnvelope(envelopeOf(validDrafts.request_accepted))).toBeUndefined();
  });

  it('declines every invalid payload fixture and envelope without its store fields', () => {
    for (const type of TYPES) {
      for (const [label, mutate] of invalidDataMutations[type]) {
        const envelope = covered(type) as unknown as { data: Record<string, unknown> };
        mutate(envelope.data);
        expect(fastParseEnvelope(envelope), `${type}: ${label}`).toBeUndefined();
      }
      for (const key of ['schemaVersion', 'eventId', 'sequence', 'sessionId', 'recordedAt', 'occurredAt']) {
        const envelope = covered(type) as unknown as Record<string, unknown>;
        delete envelope[key];
        expect(fastParseEnvelope(envelope), `${type} without ${key}`).toBeUndefined();
      }
    }
  });

  it('never accepts what zod refuses, nor returns what zod would not, on generated mutations', () => {
    const tally = { accepted: 0, declined: 0 };
    fc.assert(
      fc.property(
        fc.constantFrom(...TYPES),
        fc.array(fc.tuple(fc.constantFrom(...ENVELOPE_KEYS), fc.constantFrom(...WEIRD), fc.boolean()), { maxLength: 2 }),
        (type, mutations) => {
          const envelope = covered(type) as unknown as Record<string, unknown>;
          for (const [key, value, remove] of mutations) {
            if (remove) delete envelope[key];
            else envelope[key] = value;
          }
          if (agreesWithZod(fastParseEnvelope(envelope), envelope)) tally.accepted++;
          else tally.declined++;
        },
      ),
      { numRuns: 3000 },
    );
    expect(tally.accepted).toBeGreaterThan(200);
    expect(tally.declined).toBeGreaterThan(200);
  });
});
