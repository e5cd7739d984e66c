/**
 * Durability checks, driven by the caller's test controls.
 *
 * - With `restart`: everything acknowledged before a reopen is there after it (events
 *   deep-equal, same head, same lease state) and appends continue contiguously.
 * - With `failNextCommit`: a commit that fails before acknowledgement rejects with a domain
 *   error, leaves the head (and, with `restart`, the reopened log) untouched, and does not
 *   poison the next append.
 */
import type { DurableEventStore } from '../core/store.js';
import { EventSequence, WorkerId } from '../protocol/ids.js';
import { assertDeepEqual, assertEqual, expectCode, expectDurableError, expectSequenceConflict } from './assertions.js';
import { markerDraft, markerDrafts, markerLabel, sessionCreatedDraft } from './fixtures.js';
import { seed } from './helpers.js';
import { fenceOf, leaseStoreOf, LONG_LEASE_TTL_MS } from './checks-lease.js';
import type { ConformanceCheck } from './types.js';

type Check = ConformanceCheck<DurableEventStore>;

const eventsSurvive: Check = {
  name: 'restart-preserves-events',
  requires: ['restart'],
  async run(ctx) {
    const a = ctx.newSessionId();
    const b = ctx.newSessionId();
    await ctx.store.append(a, [sessionCreatedDraft(), ...markerDrafts(3, 'a')], { expectedLastSequence: null });
    await ctx.store.append(a, markerDrafts(2, 'a2'));
    await ctx.store.append(b, markerDrafts(4, 'b'));
    const beforeA = await ctx.readAll(a);
    const beforeB = await ctx.readAll(b);
    await ctx.restart();
    assertDeepEqual(await ctx.readAll(a), beforeA, 'session A after restart');
    assertDeepEqual(await ctx.readAll(b), beforeB, 'session B after restart');
    await ctx.expectHead(a, 6, 'head of A after restart');
    await ctx.expectHead(b, 4, 'head of B after restart');
    await ctx.expectHead(ctx.newSessionId(), null, 'an untouched session after restart');
  },
};

const sequencesContinue: Check = {
  name: 'restart-continues-sequences',
  requires: ['restart'],
  async run(ctx) {
    const sessionId = ctx.newSessionId();
    await seed(ctx, sessionId, 3);
    await ctx.restart();
    await expectSequenceConflict(
      ctx.store.append(sessionId, [markerDraft('stale')], { expectedLastSequence: null }),
      null,
      3,
      'precondition null after restart',
    );
    const next = await ctx.store.append(sessionId, markerDrafts(2, 'after'), {
      expectedLastSequence: EventSequence(3),
    });
    assertEqual(next.previousSequence, 3, 'previousSequence after restart');
    assertEqual(next.lastSequence, 5, 'lastSequence after restart');
    await ctx.restart();
    const events = await ctx.readAll(sessionId);
    assertDeepEqual(
      events.map((event) => event.sequence),
      [1, 2, 3, 4, 5],
      'sequences after two restarts',
    );
    assertEqual(new Set(events.map((event) => event.eventId)).size, 5, 'eventIds stay distinct across restarts');
  },
};

const leaseSurvives: Check = {
  name: 'restart-preserves-lease-state',
  requires: ['restart', 'lease'],
  async run(ctx) {
    const sessionId = ctx.newSessionId();
    const record = await leaseStoreOf(ctx).acquireExecutionLease(sessionId, {
      ownerId: WorkerId('restart-owner'),
      leaseId: 'lease-restart',
      ttlMs: LONG_LEASE_TTL_MS,
    });
    await ctx.store.append(sessionId, [markerDraft('fenced')], { executionFence: fenceOf(record) });
    await ctx.restart();
    const store = leaseStoreOf(ctx);
    assertDeepEqual(await store.inspectExecutionLease(sessionId), record, 'lease record after restart');
    assertEqual(await store.requiresExecutionLease(sessionId), true, 'requiresExecutionLease after restart');
    await expectCode(
      store.append(sessionId, [markerDraft('unfenced')]),
      'DURABLE_EXECUTION_LEASE_REQUIRED',
      'unfenced append after restart',
    );
    await expectCode(
      store.acquireExecutionLease(sessionId, { ownerId: WorkerId('other'), leaseId: 'lease-other', ttlMs: LONG_LEASE_TTL_MS }),
      'DURABLE_EXECUTION_LEASE_CONFLICT',
      'another owner after restart',
    );
    const next = await store.append(sessionId, [markerDraft('fenced-again')], { executionFence: fenceOf(record) });
    assertEqual(next.lastSequence, 2, 'fenced append after restart');
    await store.releaseExecutionLease(sessionId, fenceOf(record));
    await ctx.restart();
    const reopened = leaseStoreOf(ctx);
    assertEqual((await reopened.inspectExecutionLease(sessionId))?.released, true, 'a release survives restart');
    const takeover = await reopened.acquireExecutionLease(sessionId, {
      ownerId: WorkerId('other'),
      leaseId: 'lease-after-restart',
      ttlMs: LONG_LEASE_TTL_MS,
    });
    assertEqual(takeover.fencingToken, record.fencingToken + 1, 'token keeps growing across restarts');
  },
};

const failedCommit: Check = {
  name: 'failed-commit-writes-nothing',
  requires: ['failNextCommit'],
  async run(ctx) {
    const sessionId = ctx.newSessionId();
    await seed(ctx, sessionId, 2);
    const before = await ctx.readAll(sessionId);
    await ctx.failNextCommit();
    await expectDurableError(ctx.store.append(sessionId, markerDrafts(3, 'lost')), 'the append whose commit fails');
    await ctx.expectHead(sessionId, 2, 'head after a failed commit');
    assertDeepEqual(await ctx.readAll(sessionId), before, 'log after a failed commit');
    const next = await ctx.store.append(sessionId, [markerDraft('next')]);
    assertEqual(next.previousSequence, 2, 'the next append starts at the unchanged head');
    assertEqual(next.lastSequence, 3, 'the next append succeeds');
  },
};

const failedConditionedCommit: Check = {
  name: 'failed-commit-then-retry-with-same-precondition',
  requires: ['failNextCommit'],
  async run(ctx) {
    const sessionId = ctx.newSessionId();
    await ctx.failNextCommit();
    await expectDurableError(
      ctx.store.append(sessionId, [sessionCreatedDraft()], { expectedLastSequence: null }),
      'the first append of a session whose commit fails',
    );
    await ctx.expectHead(sessionId, null, 'head after the failed first commit');
    const retry = await ctx.store.append(sessionId, [sessionCreatedDraft()], { expectedLastSequence: null });
    assertEqual(retry.lastSequence, 1, 'a retry with the same precondition commits');
    const events = await ctx.readAll(sessionId);
    assertEqual(events.length, 1, 'exactly one copy after the retry');
  },
};

const failedCommitAfterRestart: Check = {
  name: 'failed-commit-absent-after-restart',
  requires: ['failNextCommit', 'restart'],
  async run(ctx) {
    const sessionId = ctx.newSessionId();
    await seed(ctx, sessionId, 2);
    const before = await ctx.readAll(sessionId);
    await ctx.failNextCommit();
    await expectDurableError(ctx.store.append(sessionId, markerDrafts(2, 'lost')), 'the append whose commit fails');
    await ctx.restart();
    await ctx.expectHead(sessionId, 2, 'head after a failed commit and a restart');
    assertDeepEqual(await ctx.readAll(sessionId), before, 'log after a failed commit and a restart');
    await ctx.store.append(sessionId, [markerDraft('after')], { expectedLastSequence: EventSequence(2) });
    await ctx.restart();
    const labels = (await ctx.readAll(sessionId)).map(markerLabel);
    assertDeepEqual(labels, ['seed-0', 'seed-1', 'after'], 'log after the next append and another restart');
  },
};

/** Restart and failed-commit checks. */
export const durabilityChecks: Check[] = [
  eventsSurvive,
  sequencesContinue,
  leaseSurvives,
  failedCommit,
  failedConditionedCommit,
  failedCommitAfterRestart,
];
