/**
 * Helpers shared by the durability records checks: the store under test narrowed to the durability
 * record contract, whole-session record reads, and fixture drafts.
 */
import type { DurabilityRecordStore, DurabilityRecord, DurabilityRecordDraft } from '../core/durability/record-contract.js';
import { isDurabilityRecordStore } from '../core/durability/record-contract.js';
import type { DurableEventStore } from '../core/store.js';
import type { SessionId } from '../protocol/ids.js';
import { fail } from './assertions.js';
import type { ConformanceContext } from './types.js';

/** A store implementing both the event log and the durability records. */
export type DurabilityConformanceStore = DurableEventStore & DurabilityRecordStore;

/** The store under test, asserted to implement the durability records. */
export function durabilityStoreOf(ctx: ConformanceContext<DurabilityConformanceStore>): DurabilityConformanceStore {
  if (!isDurabilityRecordStore(ctx.store)) fail('the store does not implement DurabilityRecordStore');
  return ctx.store;
}

/** Reads all of a session's durability records through pages of `limit`. */
export async function readAllRecords(
  store: DurabilityRecordStore,
  sessionId: SessionId,
  limit = 1000,
): Promise<DurabilityRecord[]> {
  const records: DurabilityRecord[] = [];
  let after: number | undefined;
  for (;;) {
    const page = await store.readDurability(sessionId, { after, limit });
    records.push(...page.records);
    if (!page.hasMore) return records;
    if (page.nextCursor === null || page.nextCursor === after) fail('a page with hasMore did not advance the cursor');
    after = page.nextCursor;
  }
}

/** One draft of every kind, in a fixed order. */
export function everyKindDrafts(scope: string): DurabilityRecordDraft[] {
  return [
    { kind: 'step', scope, key: 'charge', result: { chargeId: 'ch_1', amounts: [1, 2.5, -3], ok: true, note: null } },
    { kind: 'sleep', scope, key: 'cool-down', untilMs: 1_900_000_000_000 },
    { kind: 'wait', scope, key: 'approval', deadlineMs: null },
    { kind: 'wait_timeout', scope, key: 'approval' },
    {
      kind: 'delivery',
      runId: 'run-1',
      key: 'approval',
      deliveryId: 'delivery-1',
      payload: { approved: true, by: 'ünïcødé ✓' },
    },
    { kind: 'run_event', scope, key: 'run', status: 'completed', detail: { steps: 2 } },
  ];
}

/** Drafts every backend must refuse, with the code it must refuse them with. */
export function invalidDurabilityDrafts(): Array<{
  what: string;
  draft: unknown;
  code: 'DURABILITY_INVALID_INPUT' | 'DURABILITY_INVALID_VALUE';
}> {
  const step = (result: unknown) => ({ kind: 'step', scope: 's', key: 'k', result });
  const input = 'DURABILITY_INVALID_INPUT' as const;
  const sparse = [1, , 3]; // eslint-disable-line no-sparse-arrays
  const getter = Object.defineProperty({}, 'x', { get: () => 1, enumerable: true });
  return [
    { what: 'NaN result', draft: step(Number.NaN), code: 'DURABILITY_INVALID_VALUE' },
    { what: 'Infinity result', draft: step(Number.POSITIVE_INFINITY), code: 'DURABILITY_INVALID_VALUE' },
    { what: 'negative zero result', draft: step({ x: -0 }), code: 'DURABILITY_INVALID_VALUE' },
    { what: 'undefined result', draft: step(undefined), code: 'DURABILITY_INVALID_VALUE' },
    { what: 'sparse array result', draft: step(sparse), code: 'DURABILITY_INVALID_VALUE' },
    { what: 'accessor in result', draft: step(getter), code: 'DURABILITY_INVALID_VALUE' },
    { what: 'Date result', draft: step(new Date(0)), code: 'DURABILITY_INVALID_VALUE' },
    { what: 'Map result', draft: step(new Map([['a', 1]])), code: 'DURABILITY_INVALID_VALUE' },
    {
      what: 'undefined delivery payload',
      draft: { kind: 'delivery', runId: 'r', key: 'k', deliveryId: 'd', payload: undefined },
      code: 'DURABILITY_INVALID_VALUE',
    },
    { what: 'unknown kind', draft: { kind: 'nap', scope: 's', key: 'k' }, code: input },
    { what: 'extra field', draft: { ...step(1), extra: 1 }, code: input },
    { what: 'missing key', draft: { kind: 'step', scope: 's', result: 1 }, code: input },
    { what: 'empty key', draft: { kind: 'step', scope: 's', key: '', result: 1 }, code: input },
    { what: 'over-long key', draft: { kind: 'step', scope: 's', key: 'k'.repeat(257), result: 1 }, code: input },
    { what: 'control character in scope', draft: { kind: 'step', scope: 'a\nb', key: 'k', result: 1 }, code: input },
    { what: 'fractional deadline', draft: { kind: 'sleep', scope: 's', key: 'k', untilMs: 1.5 }, code: input },
    { what: 'negative deadline', draft: { kind: 'sleep', scope: 's', key: 'k', untilMs: -1 }, code: input },
    {
      what: 'infinite wait deadline',
      draft: { kind: 'wait', scope: 's', key: 'k', deadlineMs: Number.POSITIVE_INFINITY },
      code: 'DURABILITY_INVALID_INPUT',
    },
    {
      what: 'unknown run status',
      draft: { kind: 'run_event', scope: 's', key: 'k', status: 'paused', detail: null },
      code: 'DURABILITY_INVALID_INPUT',
    },
    { what: 'not an object', draft: 'step', code: input },
  ];
}
