/**
 * The ledger engine on its own: draft validation, identities, first-writer-wins planning,
 * delivery conflicts, size limits, paging rules and fail-closed parsing of stored records.
 */
import { describe, expect, it } from 'vitest';
import {
  checkDurabilityCursor,
  decodeDurabilityRecord,
  durabilityIdentity,
  encodeDurabilityRecord,
  parseDurabilityRecord,
  planDurabilityRead,
  planDurabilityRecord,
  validateDurabilityDraft,
} from '../../src/core/durability/record-engine.js';
import type { DurabilityRecord } from '../../src/core/durability/record-contract.js';
import { everyKindDrafts, invalidDurabilityDrafts } from '../../src/conformance/durability-helpers.js';
import { SessionId } from '../../src/protocol/ids.js';

const sessionId = SessionId('engine-session');
const NOW = Date.UTC(2030, 0, 1);

function stored(draftIndex: number, sequence: number): DurabilityRecord {
  const draft = everyKindDrafts('scope-1')[draftIndex];
  if (draft === undefined) throw new Error('no such draft');
  const planned = planDurabilityRecord({ sessionId, draft, existing: undefined, head: sequence - 1, nowMs: NOW });
  return planned.record;
}

describe('validateDurabilityDraft', () => {
  it('accepts every kind and returns a detached copy', () => {
    for (const draft of everyKindDrafts('scope-1')) {
      const valid = validateDurabilityDraft(draft);
      expect(valid).toEqual(draft);
      expect(valid).not.toBe(draft);
    }
    const result = { list: [1] };
    const valid = validateDurabilityDraft({ kind: 'step', scope: 's', key: 'k', result });
    result.list.push(2);
    expect(valid).toMatchObject({ result: { list: [1] } });
  });

  it.each(invalidDurabilityDrafts())('refuses $what with $code', ({ draft, code }) => {
    expect(() => validateDurabilityDraft(draft)).toThrow(expect.objectContaining({ code }));
  });

  it('never invokes a getter on the draft itself', () => {
    let invoked = false;
    const draft = { kind: 'step', scope: 's', result: 1 };
    Object.defineProperty(draft, 'key', { enumerable: true, get: () => ((invoked = true), 'k') });
    expect(() => validateDurabilityDraft(draft)).toThrow(expect.objectContaining({ code: 'DURABILITY_INVALID_INPUT' }));
    expect(invoked).toBe(false);
  });
});

describe('identities and planning', () => {
  it('identifies by (kind, scope, key) and deliveries by deliveryId', () => {
    expect(durabilityIdentity({ kind: 'step', scope: 's', key: 'k', result: 1 })).toBe(
      durabilityIdentity({ kind: 'step', scope: 's', key: 'k', result: 2 }),
    );
    expect(durabilityIdentity({ kind: 'step', scope: 's', key: 'k', result: 1 })).not.toBe(
      durabilityIdentity({ kind: 'sleep', scope: 's', key: 'k', untilMs: 1 }),
    );
    // JSON tuples: no choice of strings makes two identities collide.
    expect(durabilityIdentity({ kind: 'step', scope: 'a","b', key: 'c', result: 1 })).not.toBe(
      durabilityIdentity({ kind: 'step', scope: 'a', key: 'b","c', result: 1 }),
    );
    expect(durabilityIdentity({ kind: 'delivery', runId: 'r1', key: 'k1', deliveryId: 'd', payload: 1 })).toBe(
      durabilityIdentity({ kind: 'delivery', runId: 'r2', key: 'k2', deliveryId: 'd', payload: 2 }),
    );
  });

  it('appends after the head, returns the existing record, refuses a conflicting delivery', () => {
    const draft = { kind: 'step', scope: 's', key: 'k', result: 1 } as const;
    const first = planDurabilityRecord({ sessionId, draft, existing: undefined, head: 4, nowMs: NOW });
    expect(first).toEqual({ created: true, record: { ...draft, sequence: 5, sessionId, recordedAt: new Date(NOW).toISOString() } });
    const again = planDurabilityRecord({ sessionId, draft: { ...draft, result: 2 }, existing: first.record, head: 5, nowMs: NOW });
    expect(again).toEqual({ created: false, record: first.record });

    const delivery = { kind: 'delivery', runId: 'r', key: 'k', deliveryId: 'd', payload: { a: 1, b: 2 } } as const;
    const stored = planDurabilityRecord({ sessionId, draft: delivery, existing: undefined, head: null, nowMs: NOW }).record;
    expect(
      planDurabilityRecord({ sessionId, draft: { ...delivery, payload: { b: 2, a: 1 } }, existing: stored, head: 1, nowMs: NOW }).created,
    ).toBe(false);
    expect(() =>
      planDurabilityRecord({ sessionId, draft: { ...delivery, payload: { a: 1 } }, existing: stored, head: 1, nowMs: NOW }),
    ).toThrow(expect.objectContaining({ code: 'DURABILITY_CONFLICT' }));
  });

  it('refuses a record over the byte limit as an invalid value', () => {
    const draft = { kind: 'step', scope: 's', key: 'k', result: 'é'.repeat(600 * 1024) } as const;
    expect(() => planDurabilityRecord({ sessionId, draft, existing: undefined, head: null, nowMs: NOW })).toThrow(
      expect.objectContaining({ code: 'DURABILITY_INVALID_VALUE' }),
    );
  });

  it('validates read options and cursors', () => {
    expect(planDurabilityRead(undefined)).toEqual({ after: undefined, limit: 100 });
    expect(planDurabilityRead({ after: 3, limit: 1000 })).toEqual({ after: 3, limit: 1000 });
    for (const bad of [{ after: 0 }, { after: -1 }, { after: '1' }, { limit: 0 }, { limit: 1001 }]) {
      expect(() => planDurabilityRead(bad)).toThrow(expect.objectContaining({ code: 'DURABILITY_INVALID_INPUT' }));
    }
    expect(() => checkDurabilityCursor(undefined, null)).not.toThrow();
    expect(() => checkDurabilityCursor(3, 3)).not.toThrow();
    expect(() => checkDurabilityCursor(4, 3)).toThrow(expect.objectContaining({ code: 'DURABILITY_INVALID_INPUT' }));
    expect(() => checkDurabilityCursor(1, null)).toThrow(expect.objectContaining({ code: 'DURABILITY_INVALID_INPUT' }));
  });
});

describe('parsing stored records (fail closed)', () => {
  it('round-trips every kind through the storage encoding', () => {
    everyKindDrafts('scope-1').forEach((_, index) => {
      const record = stored(index, index + 1);
      const decoded = decodeDurabilityRecord(encodeDurabilityRecord(record), { sessionId, sequence: index + 1 });
      expect(decoded).toEqual(record);
    });
  });

  const good = (): Record<string, unknown> => ({ ...stored(0, 1) });
  const cases: Array<[string, () => unknown, { sessionId?: SessionId; sequence?: number }?]> = [
    ['null', () => null],
    ['an array', () => [good()]],
    ['an unknown kind', () => ({ ...good(), kind: 'nap' })],
    ['an extra field', () => ({ ...good(), extra: true })],
    ['a missing sequence', () => {
      const record = good();
      delete record['sequence'];
      return record;
    }],
    ['sequence 0', () => ({ ...good(), sequence: 0 })],
    ['a fractional sequence', () => ({ ...good(), sequence: 1.5 })],
    ['an unexpected sequence', () => good(), { sequence: 2 }],
    ['another session', () => good(), { sessionId: SessionId('other') }],
    ['a bad timestamp', () => ({ ...good(), recordedAt: '2030-02-30T00:00:00.000Z' })],
    ['a result with negative zero', () => ({ ...good(), result: { x: -0 } })],
    ['a result with NaN', () => ({ ...good(), result: Number.NaN })],
    ['a missing result', () => ({ ...good(), result: undefined })],
    ['a non-integer deadline', () => ({ ...stored(1, 1), untilMs: 1.5 })],
    ['a bad run status', () => ({ ...stored(5, 1), status: 'paused' })],
  ];
  it.each(cases)('refuses %s with DURABILITY_CORRUPT_RECORD', (_what, build, expected) => {
    expect(() => parseDurabilityRecord(build(), expected)).toThrow(expect.objectContaining({ code: 'DURABILITY_CORRUPT_RECORD' }));
  });

  it('refuses stored text that is not JSON', () => {
    expect(() => decodeDurabilityRecord('{"kind":"step",', { sequence: 7 })).toThrow(
      expect.objectContaining({ code: 'DURABILITY_CORRUPT_RECORD', details: { sequence: 7 } }),
    );
  });
});
