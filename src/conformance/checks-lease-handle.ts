/**
 * Lease handle checks: `DurableExecutionLease` run against the store under test.
 *
 * The store-level lease checks (checks-lease.ts) pin the fencing rules one call at a time. These
 * drive the process-local handle the way a worker does: heartbeats that outlive several TTLs,
 * owners racing, release and takeover with the next token, a holder whose heartbeats stop and
 * whose local watchdog fails it before a successor takes over, an uncertain acquisition reconciled
 * by its `leaseId` (in this process and from "another process"), and a renewal failure that fails
 * the handle for good. Faults come from {@link LeaseFaultStore}, a wrapper that delays, hangs or
 * fails chosen lease methods of the real store and records every call; it is exported for tests.
 *
 * Pass them as `extraChecks`:
 * ```ts
 * await runStoreConformance({ createStore, extraChecks: leaseHandleConformanceChecks });
 * ```
 */
import { DurableExecutionLease } from '../core/lease/execution-lease.js';
import type {
  DurableAppendOptions,
  DurableAppendResult,
  DurableEventStore,
  DurableExecutionFence,
  DurableExecutionLeaseRecord,
  DurableLeaseAcquireOptions,
  DurableLeaseRenewOptions,
  DurableSessionStore,
  DurableReadOptions,
  DurableReadResult,
  DurableStoreCallOptions,
} from '../core/store.js';
import { isDurableExecutionLeaseTimeoutError } from '../protocol/errors.js';
import type { DurableEventDraft } from '../protocol/events.js';
import { WorkerId, type EventSequence, type SessionId } from '../protocol/ids.js';
import { assert, assertEqual, describeValue, expectCode, expectRejection, fail, sleep } from './assertions.js';
import { leaseStoreOf } from './checks-lease.js';
import { markerDraft } from './fixtures.js';
import { eventually } from './helpers.js';
import type { ConformanceCheck, ConformanceContext } from './types.js';
import { systemTime, type TimeSource } from '../core/time.js';

type Check = ConformanceCheck<DurableEventStore>;
type Ctx = ConformanceContext<DurableEventStore>;

/**
 * Default TTL of the handles these checks hold (`leaseHandleTtlMs`; heartbeats every eighth):
 * long enough for a local or file-backed store to answer, and for a heartbeat delayed by a loaded
 * machine (up to TTL minus one period, 1.75 s) not to fail a healthy handle.
 */
const HANDLE_TTL_MS = 2_000;

/** A lease method a {@link LeaseFaultStore} can disturb. */
type LeaseMethod = 'acquire' | 'renew' | 'release' | 'assert';

/** What happens to calls of one lease method. */
type LeaseFault =
  /** Waits `ms`, then runs the real call; ignores the call's signal unless `honorSignal`. */
  | { kind: 'delay'; ms: number; honorSignal?: boolean }
  /** Never settles (and ignores the signal). */
  | { kind: 'hang' }
  /** Rejects with `error()` without touching the store. */
  | { kind: 'fail'; error: () => unknown };

/** One lease call seen by a {@link LeaseFaultStore}; times are the fault store's `time.monotonicNow()` milliseconds. */
interface LeaseCallRecord {
  method: LeaseMethod;
  /** The lease the call names (the acquisition's `leaseId`, or the fence's). */
  leaseId: string;
  startedAt: number;
  /** When the call's signal aborted, if it did. */
  abortedAt?: number;
  abortReason?: unknown;
  settledAt?: number;
  outcome?: 'resolved' | 'rejected';
  /** True when the wrapped store was actually called. */
  reachedStore: boolean;
}

/** Wraps a real store; lease methods can be delayed, hung or failed, and every lease call is recorded. */
export class LeaseFaultStore implements DurableSessionStore {
  /** Faults by method; change them at any time (a call reads its fault when it starts). */
  readonly faults: Partial<Record<LeaseMethod, LeaseFault>> = {};
  readonly calls: LeaseCallRecord[] = [];

  /**
   * @param inner the real store
   * @param time clock of the call records and timer of `delay` faults (default: the host's); pass
   *   the handle's `ManualTimeSource` to drive delays with it
   */
  constructor(
    readonly inner: DurableSessionStore,
    readonly time: TimeSource = systemTime,
  ) {}

  /** The recorded calls of `method`. */
  callsOf(method: LeaseMethod): LeaseCallRecord[] {
    return this.calls.filter((call) => call.method === method);
  }

  append(sessionId: SessionId, drafts: readonly DurableEventDraft[], options?: DurableAppendOptions): Promise<DurableAppendResult> {
    return this.inner.append(sessionId, drafts, options);
  }
  read(sessionId: SessionId, options?: DurableReadOptions): Promise<DurableReadResult> {
    return this.inner.read(sessionId, options);
  }
  getHeadSequence(sessionId: SessionId, options?: DurableStoreCallOptions): Promise<EventSequence | null> {
    return this.inner.getHeadSequence(sessionId, options);
  }
  acquireExecutionLease(sessionId: SessionId, options: DurableLeaseAcquireOptions): Promise<DurableExecutionLeaseRecord> {
    return this.#run('acquire', options.leaseId, options.signal, (signal) => this.inner.acquireExecutionLease(sessionId, { ...options, signal }));
  }
  renewExecutionLease(sessionId: SessionId, fence: DurableExecutionFence, options: DurableLeaseRenewOptions): Promise<DurableExecutionLeaseRecord> {
    return this.#run('renew', fence.leaseId, options.signal, (signal) => this.inner.renewExecutionLease(sessionId, fence, { ...options, signal }));
  }
  releaseExecutionLease(sessionId: SessionId, fence: DurableExecutionFence, options?: DurableStoreCallOptions): Promise<void> {
    return this.#run('release', fence.leaseId, options?.signal, (signal) => this.inner.releaseExecutionLease(sessionId, fence, { signal }));
  }
  assertExecutionLease(sessionId: SessionId, fence: DurableExecutionFence, options?: DurableStoreCallOptions): Promise<void> {
    return this.#run('assert', fence.leaseId, options?.signal, (signal) => this.inner.assertExecutionLease(sessionId, fence, { signal }));
  }
  inspectExecutionLease(sessionId: SessionId, options?: DurableStoreCallOptions): Promise<DurableExecutionLeaseRecord | null> {
    return this.inner.inspectExecutionLease(sessionId, options);
  }
  requiresExecutionLease(sessionId: SessionId, options?: DurableStoreCallOptions): Promise<boolean> {
    return this.inner.requiresExecutionLease(sessionId, options);
  }

  async #run<T>(
    method: LeaseMethod,
    leaseId: string,
    signal: AbortSignal | undefined,
    call: (signal: AbortSignal | undefined) => Promise<T>,
  ): Promise<T> {
    const record: LeaseCallRecord = { method, leaseId, startedAt: this.time.monotonicNow(), reachedStore: false };
    this.calls.push(record);
    signal?.addEventListener(
      'abort',
      () => {
        record.abortedAt = this.time.monotonicNow();
        record.abortReason = signal.reason;
      },
      { once: true },
    );
    const settle = (outcome: 'resolved' | 'rejected'): void => {
      record.settledAt = this.time.monotonicNow();
      record.outcome = outcome;
    };
    try {
      const fault = this.faults[method];
      if (fault?.kind === 'hang') await new Promise<never>(() => undefined);
      if (fault?.kind === 'fail') throw fault.error();
      if (fault?.kind === 'delay') {
        await waitFor(this.time, fault.ms, fault.honorSignal === true ? signal : undefined);
        if (fault.honorSignal === true && signal?.aborted === true) throw signal.reason;
      }
      record.reachedStore = true;
      // The real store sees the signal only when the fault honors it: an ignoring store runs to the end.
      const result = await call(fault?.kind === 'delay' && fault.honorSignal !== true ? undefined : signal);
      settle('resolved');
      return result;
    } catch (error) {
      settle('rejected');
      throw error;
    }
  }
}

function waitFor(time: TimeSource, ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const timer = time.setTimer(done, ms);
    signal?.addEventListener('abort', done, { once: true });
    function done(): void {
      time.clearTimer(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
  });
}

/** The TTL and heartbeat of the run's lease handles (`leaseHandleTtlMs`, heartbeat an eighth of it). */
function handleTiming(ctx: Ctx): { ttlMs: number; heartbeatMs: number } {
  const ttlMs = ctx.options.leaseHandleTtlMs ?? HANDLE_TTL_MS;
  return { ttlMs, heartbeatMs: Math.max(1, Math.floor(ttlMs / 8)) };
}

function acquireHandle(ctx: Ctx, store: DurableSessionStore, sessionId: SessionId, owner: string, extra: { storeTimeoutMs?: number; leaseId?: string } = {}) {
  const { ttlMs, heartbeatMs } = handleTiming(ctx);
  return DurableExecutionLease.acquire(store, sessionId, {
    ownerId: WorkerId(owner),
    ttlMs,
    heartbeatIntervalMs: heartbeatMs,
    ...extra,
  });
}

async function appendWith(ctx: Ctx, sessionId: SessionId, label: string, fence?: DurableExecutionFence): Promise<DurableAppendResult> {
  return ctx.store.append(sessionId, [markerDraft(label)], fence === undefined ? {} : { executionFence: fence });
}

/** Waits for the handle's signal to abort: within its TTL plus the usual bound. */
async function signalAborted(ctx: Ctx, lease: DurableExecutionLease, what: string): Promise<unknown> {
  await eventually(() => lease.signal.aborted, what, handleTiming(ctx).ttlMs + 5_000);
  return lease.signal.reason;
}

/**
 * Lets the stored lease lapse. A handle's watchdog fires no later than the store's expiry (its
 * window is counted from when the last renewal was sent), so after it the stored lease has at most
 * a round trip left: on the wall clock this waits for the record's own `expiresAtMs` instead of a
 * whole TTL. With `advanceClock` the store's clock moves a whole TTL (which costs no time).
 */
async function elapseUntilExpired(ctx: Ctx, store: DurableSessionStore, sessionId: SessionId): Promise<void> {
  const { ttlMs } = handleTiming(ctx);
  if (ctx.options.advanceClock !== undefined) return ctx.elapse(ttlMs);
  const record = await store.inspectExecutionLease(sessionId);
  const left = record === null ? 0 : record.expiresAtMs - ctx.now();
  assert(left <= ttlMs, `the stored lease outlives the failed handle by ${left} ms, more than a TTL`);
  if (left >= 0) await ctx.elapse(left + 1);
}

const heartbeatOutlivesTtl: Check = {
  name: 'lease-handle-heartbeat-outlives-ttl',
  requires: ['lease'],
  async run(ctx) {
    const store = new LeaseFaultStore(leaseStoreOf(ctx));
    const sessionId = ctx.newSessionId();
    const lease = await acquireHandle(ctx, store, sessionId, 'handle-a');
    assertEqual(lease.fence.fencingToken, 1, 'first token');
    const { ttlMs, heartbeatMs } = handleTiming(ctx);
    await sleep(ttlMs * 2 + heartbeatMs);
    assert(!lease.signal.aborted, `the handle failed: ${describeValue(lease.signal.reason)}`);
    assert(store.callsOf('renew').length >= 3, `expected at least 3 heartbeats, saw ${store.callsOf('renew').length}`);
    const record = await store.inspectExecutionLease(sessionId);
    assertEqual(record?.leaseId, lease.fence.leaseId, 'lease after two TTLs');
    assertEqual(record?.fencingToken, 1, 'token after two TTLs');
    await expectCode(acquireHandle(ctx, store, sessionId, 'handle-b'), 'DURABLE_EXECUTION_LEASE_CONFLICT', 'second owner');
    await lease.withExecutionLease((fence) => appendWith(ctx, sessionId, 'under-lease', fence));
    await lease.release();
  },
};

const ownersRace: Check = {
  name: 'lease-handle-owners-race',
  requires: ['lease'],
  async run(ctx) {
    const store = leaseStoreOf(ctx);
    const sessionId = ctx.newSessionId();
    const results = await Promise.allSettled([0, 1, 2, 3].map((i) => acquireHandle(ctx, store, sessionId, `racer-${i}`)));
    const winners = results.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
    assertEqual(winners.length, 1, 'winning handles');
    for (const result of results) {
      if (result.status === 'rejected') {
        assertEqual((result.reason as { code?: unknown }).code, 'DURABLE_EXECUTION_LEASE_CONFLICT', 'a losing handle');
      }
    }
    await winners[0]?.release();
  },
};

const releaseThenTakeover: Check = {
  name: 'lease-handle-release-then-takeover',
  requires: ['lease'],
  async run(ctx) {
    const store = leaseStoreOf(ctx);
    const sessionId = ctx.newSessionId();
    const a = await acquireHandle(ctx, store, sessionId, 'handle-a');
    await appendWith(ctx, sessionId, 'a-1', a.fence);
    await Promise.all([a.release(), a.release()]);
    await a.release();
    assertEqual((a.signal.reason as { code?: unknown }).code, 'DURABLE_EXECUTION_LEASE_LOST', 'released handle signal');
    const b = await acquireHandle(ctx, store, sessionId, 'handle-b');
    assertEqual(b.fence.fencingToken, a.fence.fencingToken + 1, 'token after release and takeover');
    await expectCode(appendWith(ctx, sessionId, 'a-stale', a.fence), 'DURABLE_EXECUTION_LEASE_LOST', 'stale fence');
    await expectCode(appendWith(ctx, sessionId, 'unfenced'), 'DURABLE_EXECUTION_LEASE_REQUIRED', 'unfenced append');
    let ran = false;
    await expectCode(
      a.withExecutionLease(async () => {
        ran = true;
      }),
      'DURABLE_EXECUTION_LEASE_LOST',
      'withExecutionLease after release',
    );
    assert(!ran, 'a released handle ran a fenced step');
    await b.withExecutionLease((fence) => appendWith(ctx, sessionId, 'b-1', fence));
    await b.release();
    await expectCode(appendWith(ctx, sessionId, 'unfenced-2'), 'DURABLE_EXECUTION_LEASE_REQUIRED', 'sticky after release');
    assertEqual((await ctx.readAll(sessionId)).length, 2, 'events written');
  },
};

const stalledHolderTakenOver: Check = {
  name: 'lease-handle-stalled-holder-taken-over',
  requires: ['lease'],
  async run(ctx) {
    const store = new LeaseFaultStore(leaseStoreOf(ctx));
    const sessionId = ctx.newSessionId();
    const a = await acquireHandle(ctx, store, sessionId, 'handle-a');
    store.faults.renew = { kind: 'hang' };
    const reason = await signalAborted(ctx, a, 'local expiry of a holder whose renewal hangs');
    const code = (reason as { code?: unknown }).code;
    assert(
      code === 'DURABLE_EXECUTION_LEASE_LOST' || code === 'DURABLE_EXECUTION_LEASE_TIMEOUT',
      `the handle failed with ${describeValue(reason)}`,
    );
    await elapseUntilExpired(ctx, store, sessionId);
    await expectCode(appendWith(ctx, sessionId, 'unfenced'), 'DURABLE_EXECUTION_LEASE_REQUIRED', 'sticky after expiry');
    const b = await acquireHandle(ctx, store, sessionId, 'handle-b');
    assertEqual(b.fence.fencingToken, a.fence.fencingToken + 1, 'token after takeover');
    await expectCode(appendWith(ctx, sessionId, 'a-stale', a.fence), 'DURABLE_EXECUTION_LEASE_LOST', 'stale fence');
    await b.withExecutionLease((fence) => appendWith(ctx, sessionId, 'b-1', fence));
    await b.release();
  },
};

const uncertainAcquisition: Check = {
  name: 'lease-handle-uncertain-acquisition-reconciles',
  requires: ['lease'],
  async run(ctx) {
    const inner = leaseStoreOf(ctx);
    for (const retry of ['same-process', 'other-process'] as const) {
      const store = new LeaseFaultStore(inner);
      const sessionId = ctx.newSessionId();
      store.faults.acquire = { kind: 'delay', ms: 400 };
      const error = await expectRejection(acquireHandle(ctx, store, sessionId, 'handle-a', { storeTimeoutMs: 100 }), 'slow acquisition');
      if (!isDurableExecutionLeaseTimeoutError(error)) fail(`expected DURABLE_EXECUTION_LEASE_TIMEOUT, got ${describeValue(error)}`);
      const leaseId = error.leaseId;
      assert(typeof leaseId === 'string', 'the timeout error names the leaseId');
      delete store.faults.acquire;
      await eventually(() => store.callsOf('acquire')[0]?.settledAt !== undefined, 'the late grant');
      assertEqual((await inner.inspectExecutionLease(sessionId))?.leaseId, leaseId, 'the late grant landed');
      let lease: DurableExecutionLease;
      if (retry === 'same-process') {
        lease = await acquireHandle(ctx, store, sessionId, 'handle-a');
      } else {
        const elsewhere = new LeaseFaultStore(inner);
        await expectCode(acquireHandle(ctx, elsewhere, sessionId, 'handle-a'), 'DURABLE_EXECUTION_LEASE_CONFLICT', 'retry with a new leaseId');
        lease = await acquireHandle(ctx, elsewhere, sessionId, 'handle-a', { leaseId });
      }
      assertEqual(lease.fence.leaseId, leaseId, `${retry} retry: leaseId`);
      assertEqual(lease.fence.fencingToken, 1, `${retry} retry: token`);
      await lease.withExecutionLease((fence) => appendWith(ctx, sessionId, retry, fence));
      await lease.release();
    }
  },
};

const renewalFailureSticks: Check = {
  name: 'lease-handle-renewal-failure-fails-closed',
  requires: ['lease'],
  async run(ctx) {
    const store = new LeaseFaultStore(leaseStoreOf(ctx));
    const sessionId = ctx.newSessionId();
    const lease = await acquireHandle(ctx, store, sessionId, 'handle-a');
    const injected = new Error('injected renewal failure');
    store.faults.renew = { kind: 'fail', error: () => injected };
    const reason = await signalAborted(ctx, lease, 'failure after a failed renewal');
    assert(reason === injected, `signal reason: ${describeValue(reason)}`);
    delete store.faults.renew;
    const renewals = store.callsOf('renew').length;
    await sleep(handleTiming(ctx).heartbeatMs * 2);
    assertEqual(store.callsOf('renew').length, renewals, 'renewals after the failure');
    await expectRejection(lease.renew(), 'renew after the failure');
    assertEqual(lease.signal.reason, injected, 'the failure is kept');
    await lease.release();
  },
};

/** Every lease handle check, for `runStoreConformance({ extraChecks })`. */
export const leaseHandleConformanceChecks: Check[] = [
  heartbeatOutlivesTtl,
  ownersRace,
  releaseThenTakeover,
  stalledHolderTakenOver,
  uncertainAcquisition,
  renewalFailureSticks,
];
