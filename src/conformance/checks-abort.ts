/**
 * Cancellation checks:
 * - a call given an already-aborted signal rejects with an `AbortError` and starts no mutation
 *   (no events, no lease state);
 * - an aborted call rejects with exactly the signal's reason, whatever the caller aborted with
 *   (a `TimeoutError` as `AbortSignal.timeout` gives, an `Error`, any value), both when the
 *   signal was aborted before the call and when it aborts while the call waits. No wall clock:
 *   a call is aborted "while it waits" the moment the store adds its first abort listener to the
 *   signal (one microtask later), and after one timer turn.
 */
import { isExecutionLeaseStore, type DurableEventStore } from '../core/store.js';
import { EventSequence, WorkerId } from '../protocol/ids.js';
import { assertEqual, describeValue, expectAbortError, expectRejection, fail } from './assertions.js';
import { markerDraft } from './fixtures.js';
import { seed, settle } from './helpers.js';
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

/**
 * Abort reasons other than a plain `AbortError`: what `AbortSignal.timeout` aborts with, an
 * `Error`, and a value that is no error at all. Fresh objects each time, compared by identity.
 */
function customReasons(): Array<{ label: string; reason: unknown }> {
  return [
    { label: 'a TimeoutError DOMException', reason: new DOMException('the operation timed out', 'TimeoutError') },
    { label: 'an Error', reason: new Error('x') },
    { label: 'a plain object', reason: { aborted: 'by the caller' } },
  ];
}

/** How a check aborts a call: before it starts, or while it runs. */
type AbortPoint = 'before the call' | 'at the first abort listener' | 'after one timer turn';

/**
 * A signal that aborts with `reason` at `point`. 'at the first abort listener' aborts one
 * microtask after the store first adds an abort listener to the signal: the store is then
 * waiting on something it can stop (a query, a request, a lock), and its synchronous setup is done.
 */
function abortingSignal(point: AbortPoint, reason: unknown): { signal: AbortSignal; started: () => void } {
  const controller = new AbortController();
  const signal = controller.signal;
  if (point === 'before the call') {
    controller.abort(reason);
    return { signal, started: () => undefined };
  }
  if (point === 'after one timer turn') {
    return {
      signal,
      started: () => {
        void settle().then(() => controller.abort(reason));
      },
    };
  }
  const add = signal.addEventListener.bind(signal);
  let armed = false;
  const watching = (...args: Parameters<AbortSignal['addEventListener']>): void => {
    add(...args);
    if (args[0] !== 'abort' || armed) return;
    armed = true;
    queueMicrotask(() => controller.abort(reason));
  };
  // An own property in front of the prototype's method: only this signal reports its listeners.
  Object.defineProperty(signal, 'addEventListener', { value: watching, configurable: true, writable: true });
  return { signal, started: () => undefined };
}

/**
 * Runs `call` with a signal aborted with `reason` at `point`. Before the call it must reject
 * with exactly the reason; while it runs it may also resolve (it finished first), but a
 * rejection must be exactly the reason. Returns whether it resolved.
 */
async function expectReasonOrSuccess(
  point: AbortPoint,
  reason: unknown,
  call: (signal: AbortSignal) => Promise<unknown>,
  what: string,
): Promise<boolean> {
  const { signal, started } = abortingSignal(point, reason);
  const pending = call(signal);
  started();
  if (point === 'before the call') {
    const error = await expectRejection(pending, what);
    if (error !== reason) fail(`${what}: expected the signal's reason ${describeValue(reason)}, got ${describeValue(error)}`, error);
    return false;
  }
  try {
    await pending;
    return true;
  } catch (error) {
    if (error !== reason) fail(`${what}: expected a result or the signal's reason ${describeValue(reason)}, got ${describeValue(error)}`, error);
    return false;
  }
}

const IN_FLIGHT_POINTS: readonly AbortPoint[] = ['at the first abort listener', 'after one timer turn'];

/**
 * The (point, reason) pairs a check tries on its `count` operations: every reason on every
 * operation before the call (nothing reaches the backend), and while the calls run one reason
 * per operation, rotated so that each point meets each reason (aborted calls over a network
 * are slow to tear down: this keeps the check short).
 */
function abortCases(count: number): Array<{ point: AbortPoint; label: string; reason: unknown; operation: number }> {
  const cases: Array<{ point: AbortPoint; label: string; reason: unknown; operation: number }> = [];
  for (const { label, reason } of customReasons()) {
    for (let operation = 0; operation < count; operation++) cases.push({ point: 'before the call', label, reason, operation });
  }
  for (const [index, point] of IN_FLIGHT_POINTS.entries()) {
    for (let operation = 0; operation < count; operation++) {
      const reasons = customReasons();
      const { label, reason } = reasons[(operation + index) % reasons.length] as (typeof reasons)[number];
      cases.push({ point, label, reason, operation });
    }
  }
  return cases;
}

const abortReasonsOfCalls: Check = {
  name: 'abort-rejects-with-signal-reason',
  async run(ctx) {
    const seeded = ctx.newSessionId();
    let head = await seed(ctx, seeded, 1);
    for (const { point, label, reason, operation } of abortCases(4)) {
      const where = `aborted with ${label} ${point}`;
      if (operation === 0) {
        const empty = ctx.newSessionId();
        const created = await expectReasonOrSuccess(
          point,
          reason,
          (signal) => ctx.store.append(empty, [markerDraft('x')], { expectedLastSequence: null, signal }),
          `append to an empty stream ${where}`,
        );
        if (point === 'before the call') await ctx.expectHead(empty, null, `empty stream after an append ${where}`);
        else if (created) await ctx.expectHead(empty, 1, `stream after an append that resolved though ${where}`);
      } else if (operation === 1) {
        const appended = await expectReasonOrSuccess(
          point,
          reason,
          (signal) => ctx.store.append(seeded, [markerDraft('y')], { signal }),
          `unconditioned append ${where}`,
        );
        if (appended) head += 1;
      } else if (operation === 2) {
        await expectReasonOrSuccess(point, reason, (signal) => ctx.store.read(seeded, { signal }), `read ${where}`);
      } else {
        await expectReasonOrSuccess(point, reason, (signal) => ctx.store.getHeadSequence(seeded, { signal }), `getHeadSequence ${where}`);
      }
    }
    // An append rejected while it ran has an unknown outcome: the head is at least the resolved ones.
    const final = await ctx.store.getHeadSequence(seeded);
    if (final === null || final < head) fail(`head after the aborted appends: expected at least ${head}, got ${String(final)}`);
  },
};

const abortReasonsOfLeaseCalls: Check = {
  name: 'abort-lease-calls-reject-with-signal-reason',
  requires: ['lease'],
  async run(ctx) {
    const store = ctx.store;
    if (!isExecutionLeaseStore(store)) fail('the store lost its lease methods');
    const ownerId = WorkerId('abort-reason-owner');
    let sessionId = ctx.newSessionId();
    for (const { point, label, reason, operation } of abortCases(2)) {
      const where = `aborted with ${label} ${point}`;
      if (operation === 0) {
        sessionId = ctx.newSessionId();
        const acquire = (signal: AbortSignal) => store.acquireExecutionLease(sessionId, { ownerId, leaseId: 'lease-aborted', ttlMs: 60_000, signal });
        await expectReasonOrSuccess(point, reason, acquire, `acquire ${where}`);
        if (point === 'before the call') assertEqual(await store.inspectExecutionLease(sessionId), null, `inspect after an acquire ${where}`);
      } else {
        await expectReasonOrSuccess(point, reason, (signal) => store.inspectExecutionLease(sessionId, { signal }), `inspect ${where}`);
      }
    }
  },
};

/** Cancellation checks. */
export const abortChecks: Check[] = [abortedAppend, abortedReads, abortedLeaseCalls, abortReasonsOfCalls, abortReasonsOfLeaseCalls];
