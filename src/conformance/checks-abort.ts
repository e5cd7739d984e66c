/**
 * Cancellation checks: a call given an already-aborted signal rejects with an `AbortError` and
 * starts no mutation (no events, no lease state).
 */
import { isExecutionLeaseStore, type DurableEventStore } from '../core/store.js';
import { EventSequence, WorkerId } from '../protocol/ids.js';
import { assertEqual, expectAbortError, fail } from './assertions.js';
import { markerDraft } from './fixtures.js';
import { seed } from './helpers.js';
import type { ConformanceCheck } from './types.js';

type Check = ConformanceCheck<DurableEventStore>;

function abortedSignal(): AbortSignal {
  const controller = new AbortController();
  controller.abort();
  return controller.signal;
}

const abortedAppend: Check = {
  name: 'abort-append-writes-nothing',
  async run(ctx) {
    const empty = ctx.newSessionId();
    await expectAbortError(
      ctx.store.append(empty, [markerDraft('x')], { expectedLastSequence: null, signal: abortedSignal() }),
      'append to an empty stream with an aborted signal',
    );
    await ctx.expectHead(empty, null, 'empty stream after an aborted append');
    const seeded = ctx.newSessionId();
    await seed(ctx, seeded, 2);
    await expectAbortError(
      ctx.store.append(seeded, [markerDraft('x')], { signal: abortedSignal() }),
      'unconditioned append with an aborted signal',
    );
    await expectAbortError(
      ctx.store.append(seeded, [markerDraft('x')], { expectedLastSequence: EventSequence(2), signal: abortedSignal() }),
      'conditioned append with an aborted signal',
    );
    await ctx.expectHead(seeded, 2, 'head after aborted appends');
  },
};

const abortedReads: Check = {
  name: 'abort-read-and-head',
  async run(ctx) {
    const sessionId = ctx.newSessionId();
    await seed(ctx, sessionId, 1);
    await expectAbortError(ctx.store.read(sessionId, { signal: abortedSignal() }), 'read with an aborted signal');
    await expectAbortError(
      ctx.store.getHeadSequence(sessionId, { signal: abortedSignal() }),
      'getHeadSequence with an aborted signal',
    );
  },
};

const abortedLeaseCalls: Check = {
  name: 'abort-lease-calls-change-nothing',
  requires: ['lease'],
  async run(ctx) {
    const store = ctx.store;
    if (!isExecutionLeaseStore(store)) fail('the store lost its lease methods');
    const sessionId = ctx.newSessionId();
    const ownerId = WorkerId('abort-owner');
    await expectAbortError(
      store.acquireExecutionLease(sessionId, { ownerId, leaseId: 'lease-aborted', ttlMs: 60_000, signal: abortedSignal() }),
      'acquire with an aborted signal',
    );
    assertEqual(await store.requiresExecutionLease(sessionId), false, 'no lease state after an aborted acquire');
    assertEqual(await store.inspectExecutionLease(sessionId), null, 'inspect after an aborted acquire');

    const record = await store.acquireExecutionLease(sessionId, { ownerId, leaseId: 'lease-real', ttlMs: 60_000 });
    const fence = { leaseId: record.leaseId, ownerId, fencingToken: record.fencingToken };
    await expectAbortError(
      store.renewExecutionLease(sessionId, fence, { ttlMs: 120_000, signal: abortedSignal() }),
      'renew with an aborted signal',
    );
    await expectAbortError(
      store.releaseExecutionLease(sessionId, fence, { signal: abortedSignal() }),
      'release with an aborted signal',
    );
    await expectAbortError(
      store.assertExecutionLease(sessionId, fence, { signal: abortedSignal() }),
      'assert with an aborted signal',
    );
    await expectAbortError(store.inspectExecutionLease(sessionId, { signal: abortedSignal() }), 'inspect with an aborted signal');
    await expectAbortError(
      store.requiresExecutionLease(sessionId, { signal: abortedSignal() }),
      'requiresExecutionLease with an aborted signal',
    );
    const after = await store.inspectExecutionLease(sessionId);
    assertEqual(after?.released, false, 'the lease is still held after an aborted release');
    assertEqual(after?.expiresAtMs, record.expiresAtMs, 'the lease expiry is unchanged after an aborted renew');
    await store.assertExecutionLease(sessionId, fence);
  },
};

/** Cancellation checks. */
export const abortChecks: Check[] = [abortedAppend, abortedReads, abortedLeaseCalls];
