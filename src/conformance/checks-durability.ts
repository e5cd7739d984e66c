/**
 * Durability records checks: the rules of `DurabilityRecordStore` (src/core/durability/record-contract.ts),
 * for any backend that implements it. Pass them to `runStoreConformance` as `extraChecks`:
 *
 * ```ts
 * await runStoreConformance({
 *   createStore,
 *   restart,
 *   extraChecks: [...durabilityConformanceChecks, ...durabilityWatchConformanceChecks],
 * });
 * ```
 *
 * `durabilityConformanceChecks` covers recording and reading back every kind, first-writer-wins
 * identities, delivery conflicts, cursor paging, session isolation, strict validation, concurrent
 * writers, cancellation, detached records, separation from the event log, restart durability
 * (with a `restart` control) and the port's replay over the backend (`checks-durability-port.ts`).
 * `durabilityWatchConformanceChecks` is for backends with `watchDurability`.
 */
import type { DurabilityDeliveryDraft, DurabilityRecordDraft } from '../core/durability/record-contract.js';
import { isIsoTimestamp } from '../protocol/timestamp.js';
import {
  assert,
  assertDeepEqual,
  assertEqual,
  expectAbortError,
  expectCode,
  fail,
} from './assertions.js';
import { durabilityPortChecks } from './checks-durability-port.js';
import {
  everyKindDrafts,
  invalidDurabilityDrafts,
  durabilityStoreOf,
  readAllRecords,
  type DurabilityConformanceStore,
} from './durability-helpers.js';
import { markerDraft } from './fixtures.js';
import { eventually, settle } from './helpers.js';
import type { ConformanceCheck } from './types.js';

type Check = ConformanceCheck<DurabilityConformanceStore>;

const recordsAndReadsBack: Check = {
  name: 'durability-records-every-kind-and-reads-back',
  async run(ctx) {
    const store = durabilityStoreOf(ctx);
    const sessionId = ctx.newSessionId();
    const empty = await store.readDurability(sessionId);
    assertDeepEqual(empty, { records: [], nextCursor: null, headSequence: null, hasMore: false }, 'empty durability page');
    const drafts = everyKindDrafts('run-1');
    const before = ctx.now();
    for (const [index, draft] of drafts.entries()) {
      const { record, created } = await store.recordDurability(sessionId, draft);
      assertEqual(created, true, `record ${index} created`);
      assertDeepEqual(record, { ...draft, sequence: index + 1, sessionId, recordedAt: record.recordedAt }, `record ${index}`);
    }
    const after = ctx.now();
    const records = await readAllRecords(store, sessionId);
    assertEqual(records.length, drafts.length, 'records read back');
    for (const [index, record] of records.entries()) {
      const expected = { ...drafts[index], sequence: index + 1, sessionId, recordedAt: record.recordedAt };
      assertDeepEqual(record, expected, `record ${index} read back`);
      assert(isIsoTimestamp(record.recordedAt), `record ${index}: recordedAt ${record.recordedAt} is an ISO timestamp`);
      const at = Date.parse(record.recordedAt);
      assert(at >= before - 1000 && at <= after + 1000, `record ${index}: recordedAt ${record.recordedAt} lies within the call`);
    }
  },
};

const firstWriterWins: Check = {
  name: 'durability-identity-first-writer-wins',
  async run(ctx) {
    const store = durabilityStoreOf(ctx);
    const sessionId = ctx.newSessionId();
    const first = await store.recordDurability(sessionId, { kind: 'step', scope: 's', key: 'k', result: 1 });
    const again = await store.recordDurability(sessionId, { kind: 'step', scope: 's', key: 'k', result: 2 });
    assertEqual(again.created, false, 'second step with the same identity');
    assertDeepEqual(again.record, first.record, 'the first step record is returned');
    const sleep = await store.recordDurability(sessionId, { kind: 'sleep', scope: 's', key: 'k', untilMs: 10 });
    const sleepAgain = await store.recordDurability(sessionId, { kind: 'sleep', scope: 's', key: 'k', untilMs: 99 });
    assertEqual(sleep.created, true, 'a sleep shares its key with a step of another kind');
    assertEqual(sleepAgain.created, false, 'second sleep with the same identity');
    assertEqual(sleepAgain.record.kind === 'sleep' ? sleepAgain.record.untilMs : undefined, 10, 'the first deadline is kept');
    const otherScope = await store.recordDurability(sessionId, { kind: 'step', scope: 's2', key: 'k', result: 3 });
    assertEqual(otherScope.created, true, 'same key in another scope');
    const runEvent = { kind: 'run_event', scope: 's', key: 'k' } as const;
    const run = await store.recordDurability(sessionId, { ...runEvent, status: 'failed', detail: null });
    const runAgain = await store.recordDurability(sessionId, { ...runEvent, status: 'completed', detail: 1 });
    assertEqual(runAgain.created, false, 'second run_event with the same identity');
    assertDeepEqual(runAgain.record, run.record, 'the first run_event is returned');
    assertEqual((await readAllRecords(store, sessionId)).length, 4, 'records stored');
  },
};

const deliveryIdempotency: Check = {
  name: 'durability-delivery-idempotent-by-id',
  async run(ctx) {
    const store = durabilityStoreOf(ctx);
    const sessionId = ctx.newSessionId();
    const draft: DurabilityDeliveryDraft = {
      kind: 'delivery',
      runId: 'r',
      key: 'k',
      deliveryId: 'd',
      payload: { a: 1, b: [true] },
    };
    const first = await store.recordDurability(sessionId, draft);
    assertEqual(first.created, true, 'first delivery');
    const same = await store.recordDurability(sessionId, { ...draft, payload: { b: [true], a: 1 } });
    assertEqual(same.created, false, 'same delivery again (keys in another order)');
    assertEqual(same.record.sequence, first.record.sequence, 'same delivery sequence');
    await expectCode(store.recordDurability(sessionId, { ...draft, payload: { a: 2 } }), 'DURABILITY_CONFLICT', 'other payload');
    await expectCode(store.recordDurability(sessionId, { ...draft, key: 'k2' }), 'DURABILITY_CONFLICT', 'other key');
    await expectCode(store.recordDurability(sessionId, { ...draft, runId: 'r2' }), 'DURABILITY_CONFLICT', 'other run');
    const second = await store.recordDurability(sessionId, { ...draft, deliveryId: 'd2' });
    assertEqual(second.created, true, 'another delivery ID to the same mailbox');
    assertEqual((await readAllRecords(store, sessionId)).length, 2, 'records stored');
  },
};

const cursorPages: Check = {
  name: 'durability-cursor-pages',
  async run(ctx) {
    const store = durabilityStoreOf(ctx);
    const sessionId = ctx.newSessionId();
    for (let index = 0; index < 5; index++) {
      await store.recordDurability(sessionId, { kind: 'step', scope: 's', key: `k${index}`, result: index });
    }
    const first = await store.readDurability(sessionId, { limit: 2 });
    assertDeepEqual(first.records.map((r) => r.sequence), [1, 2], 'first page');
    assertDeepEqual([first.nextCursor, first.headSequence, first.hasMore], [2, 5, true], 'first page cursor');
    const second = await store.readDurability(sessionId, { after: 2, limit: 2 });
    assertDeepEqual(second.records.map((r) => r.sequence), [3, 4], 'second page');
    const last = await store.readDurability(sessionId, { after: 4, limit: 2 });
    assertDeepEqual([last.records.map((r) => r.sequence), last.nextCursor, last.hasMore], [[5], 5, false], 'last page');
    const atHead = await store.readDurability(sessionId, { after: 5 });
    const atHeadShape = [atHead.records, atHead.nextCursor, atHead.headSequence, atHead.hasMore];
    assertDeepEqual(atHeadShape, [[], 5, 5, false], 'page at the head');
    await expectCode(store.readDurability(sessionId, { after: 6 }), 'DURABILITY_INVALID_INPUT', 'cursor ahead of the head');
    const emptySession = ctx.newSessionId();
    await expectCode(store.readDurability(emptySession, { after: 1 }), 'DURABILITY_INVALID_INPUT', 'cursor on empty durability records');
    for (const bad of [{ after: 0 }, { after: 1.5 }, { limit: 0 }, { limit: 1001 }, { limit: 2.5 }]) {
      await expectCode(store.readDurability(sessionId, bad), 'DURABILITY_INVALID_INPUT', `read options ${JSON.stringify(bad)}`);
    }
  },
};

const sessionsIsolated: Check = {
  name: 'durability-sessions-are-isolated',
  async run(ctx) {
    const store = durabilityStoreOf(ctx);
    const a = ctx.newSessionId();
    const b = ctx.newSessionId();
    const draft = { kind: 'step', scope: 's', key: 'k', result: 'a' } as const;
    await store.recordDurability(a, draft);
    const inB = await store.recordDurability(b, { ...draft, result: 'b' });
    assertEqual(inB.created, true, 'the same identity in another session');
    assertEqual(inB.record.sequence, 1, 'sequences are per session');
    const deliveryDraft = { kind: 'delivery', runId: 'r', key: 'k', deliveryId: 'd', payload: 1 } as const;
    await store.recordDurability(a, deliveryDraft);
    const deliveredInB = await store.recordDurability(b, { ...deliveryDraft, payload: 2 });
    assertEqual(deliveredInB.created, true, 'delivery IDs are per session');
    const recordsOfB = await readAllRecords(store, b);
    assertDeepEqual(recordsOfB.map((r) => r.sessionId), [b, b], 'records of b carry b');
  },
};

const refusesInvalid: Check = {
  name: 'durability-refuses-invalid-drafts',
  async run(ctx) {
    const store = durabilityStoreOf(ctx);
    const sessionId = ctx.newSessionId();
    for (const { what, draft, code } of invalidDurabilityDrafts()) {
      // SAFETY: deliberately malformed input; the store must refuse it at run time.
      await expectCode(store.recordDurability(sessionId, draft as DurabilityRecordDraft), code, what);
    }
    await expectCode(
      store.recordDurability(sessionId, { kind: 'step', scope: 's', key: 'k', result: 'x'.repeat(1024 * 1024) }),
      'DURABILITY_INVALID_VALUE',
      'a record over the size limit',
    );
    assertEqual((await store.readDurability(sessionId)).headSequence, null, 'nothing was written');
  },
};

const concurrentOneWinner: Check = {
  name: 'durability-concurrent-records-one-winner',
  async run(ctx) {
    const store = durabilityStoreOf(ctx);
    const sessionId = ctx.newSessionId();
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, index) =>
        store.recordDurability(sessionId, { kind: 'step', scope: 's', key: 'k', result: index }),
      ),
    );
    assertEqual(results.filter((r) => r.created).length, 1, 'exactly one writer created the record');
    const winner = results.find((r) => r.created)?.record;
    for (const result of results) assertDeepEqual(result.record, winner, 'every writer sees the winner');
    const others = await Promise.all(
      Array.from({ length: 10 }, (_, index) =>
        store.recordDurability(sessionId, { kind: 'step', scope: 's', key: `other-${index}`, result: index }),
      ),
    );
    const sequences = others.map((r) => r.record.sequence).sort((x, y) => x - y);
    const contiguous = Array.from({ length: 10 }, (_, index) => index + 2);
    assertDeepEqual(sequences, contiguous, 'concurrent records get contiguous sequences');
  },
};

const abortedWritesNothing: Check = {
  name: 'durability-aborted-call-writes-nothing',
  async run(ctx) {
    const store = durabilityStoreOf(ctx);
    const sessionId = ctx.newSessionId();
    const controller = new AbortController();
    controller.abort();
    await expectAbortError(
      store.recordDurability(sessionId, { kind: 'step', scope: 's', key: 'k', result: 1 }, { signal: controller.signal }),
      'record with an aborted signal',
    );
    await expectAbortError(store.readDurability(sessionId, { signal: controller.signal }), 'read with an aborted signal');
    assertEqual((await store.readDurability(sessionId)).headSequence, null, 'nothing was written');
  },
};

const detachedRecords: Check = {
  name: 'durability-records-are-detached',
  async run(ctx) {
    const store = durabilityStoreOf(ctx);
    const sessionId = ctx.newSessionId();
    const result = { items: [1, 2], nested: { label: 'original' } };
    const { record } = await store.recordDurability(sessionId, { kind: 'step', scope: 's', key: 'k', result });
    result.items.push(3);
    result.nested.label = 'changed draft';
    if (record.kind !== 'step') fail('expected a step record');
    (record.result as { nested: { label: string } }).nested.label = 'changed record';
    const [read] = await readAllRecords(store, sessionId);
    const original = { items: [1, 2], nested: { label: 'original' } };
    assertDeepEqual(read?.kind === 'step' ? read.result : undefined, original, 'stored result');
    if (read?.kind === 'step') (read.result as { items: number[] }).items.length = 0;
    const [again] = await readAllRecords(store, sessionId);
    assertDeepEqual(again?.kind === 'step' ? again.result : undefined, original, 'stored result after mutating a read');
  },
};

const separateFromEvents: Check = {
  name: 'durability-records-are-separate-from-events',
  async run(ctx) {
    const store = durabilityStoreOf(ctx);
    const sessionId = ctx.newSessionId();
    await store.append(sessionId, [markerDraft('before')]);
    await store.recordDurability(sessionId, { kind: 'step', scope: 's', key: 'k', result: 1 });
    await ctx.expectHead(sessionId, 1, 'event head after a durability record');
    await store.append(sessionId, [markerDraft('after')]);
    const page = await store.readDurability(sessionId);
    assertDeepEqual([page.records.length, page.headSequence], [1, 1], 'durability records after more events');
  },
};

const survivesRestart: Check = {
  name: 'durability-survives-restart',
  requires: ['restart'],
  async run(ctx) {
    const sessionId = ctx.newSessionId();
    const drafts = everyKindDrafts('run-r');
    for (const draft of drafts) await durabilityStoreOf(ctx).recordDurability(sessionId, draft);
    const before = await readAllRecords(durabilityStoreOf(ctx), sessionId);
    await ctx.restart();
    const store = durabilityStoreOf(ctx);
    assertDeepEqual(await readAllRecords(store, sessionId), before, 'records after restart');
    const again = await store.recordDurability(sessionId, { kind: 'step', scope: 'run-r', key: 'charge', result: 'other' });
    assertEqual(again.created, false, 'identity still known after restart');
    await expectCode(
      store.recordDurability(sessionId, {
        kind: 'delivery',
        runId: 'run-1',
        key: 'approval',
        deliveryId: 'delivery-1',
        payload: 0,
      }),
      'DURABILITY_CONFLICT',
      'delivery conflict after restart',
    );
    const next = await store.recordDurability(sessionId, { kind: 'step', scope: 'run-r', key: 'next', result: 1 });
    assertEqual(next.record.sequence, drafts.length + 1, 'the sequence continues after restart');
  },
};

const watchNotifies: Check = {
  name: 'durability-watch-notifies-after-commit',
  async run(ctx) {
    const store = durabilityStoreOf(ctx);
    const watch = store.watchDurability?.bind(store);
    if (watch === undefined) fail('the store has no watchDurability');
    const sessionId = ctx.newSessionId();
    const other = ctx.newSessionId();
    const notices: Array<{ sessionId: string; lastSequence: number; readable: Promise<number | null> }> = [];
    const stop = watch(sessionId, (notice) => {
      notices.push({ ...notice, readable: store.readDurability(sessionId).then((page) => page.headSequence) });
    });
    try {
      await store.recordDurability(other, { kind: 'step', scope: 's', key: 'k', result: 0 });
      await store.recordDurability(sessionId, { kind: 'step', scope: 's', key: 'k', result: 1 });
      await eventually(() => notices.length >= 1, 'a notice after the record');
      assertDeepEqual([notices[0]?.sessionId, notices[0]?.lastSequence], [sessionId, 1], 'the notice');
      assertEqual(await notices[0]?.readable, 1, 'head seen by a read started inside the listener');
      await store.recordDurability(sessionId, { kind: 'step', scope: 's', key: 'k', result: 2 });
      await settle();
      assertEqual(notices.length, 1, 'no notice when nothing was created');
    } finally {
      stop();
    }
    await store.recordDurability(sessionId, { kind: 'step', scope: 's', key: 'after-stop', result: 3 });
    await settle();
    assertEqual(notices.length, 1, 'no notice after unsubscribing');
  },
};

/** The durability record contract checks every `DurabilityRecordStore` backend runs. */
export const durabilityConformanceChecks: ConformanceCheck<DurabilityConformanceStore>[] = [
  recordsAndReadsBack,
  firstWriterWins,
  deliveryIdempotency,
  cursorPages,
  sessionsIsolated,
  refusesInvalid,
  concurrentOneWinner,
  abortedWritesNothing,
  detachedRecords,
  separateFromEvents,
  survivesRestart,
  ...durabilityPortChecks,
];

/** Checks for backends that implement `watchDurability`. */
export const durabilityWatchConformanceChecks: ConformanceCheck<DurabilityConformanceStore>[] = [watchNotifies];

export type { DurabilityConformanceStore } from './durability-helpers.js';
