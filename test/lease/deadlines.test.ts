/**
 * DurableExecutionLease when the store misbehaves: renewals that fail or hang, a blocked event
 * loop, slow calls that ignore their signal, and acquisitions whose outcome is uncertain. The
 * faults come from `LeaseFaultStore` wrapped around a real memory store; the handle is real.
 *
 * Handle, fault store and memory store share one `ManualTimeSource`: every delay, deadline,
 * heartbeat and watchdog fires only when a test calls `time.advance`, so the outcomes do not
 * depend on how loaded the machine is. Two smoke tests at the end run on the real clock with
 * margins of seconds.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { MemoryDurableEventStore } from '../../src/adapters/memory/memory-store.js';
import { LeaseFaultStore } from '../../src/conformance/checks-lease-handle.js';
import { DeadlineExceeded } from '../../src/core/abort.js';
import { DurableExecutionLease } from '../../src/core/lease/index.js';
import { ManualTimeSource, type TimeSource } from '../../src/core/time.js';
import {
  DurableEventStoreError,
  type DurableExecutionLeaseTimeoutError,
  isDurableExecutionLeaseTimeoutError,
} from '../../src/protocol/errors.js';
import { SessionId, WorkerId } from '../../src/protocol/ids.js';
import { blockEventLoop, codeOf, HEARTBEAT_MS, rejectionCode, tagged, TTL_MS, waitUntil } from './helpers.js';

const OWNER_A = WorkerId('worker-a');
const OWNER_B = WorkerId('worker-b');
let sessions = 0;
const held: DurableExecutionLease[] = [];

function newSession(): SessionId {
  sessions += 1;
  return SessionId(`lease-deadline-${sessions}`);
}

/** A fault store over a memory store, both on `time` (a fresh manual clock unless given). */
function faultyStore(time: TimeSource = new ManualTimeSource()): LeaseFaultStore {
  return new LeaseFaultStore(new MemoryDurableEventStore({ clock: () => time.wallNow() }), time);
}

/** The manual clock of a {@link faultyStore}. */
function clockOf(store: LeaseFaultStore): ManualTimeSource {
  if (!(store.time instanceof ManualTimeSource)) throw new Error('not a manual-clock store');
  return store.time;
}

async function acquire(
  store: LeaseFaultStore,
  sessionId: SessionId,
  extra: { ownerId?: WorkerId; ttlMs?: number; heartbeatIntervalMs?: number; storeTimeoutMs?: number; leaseId?: string; signal?: AbortSignal } = {},
): Promise<DurableExecutionLease> {
  const lease = await DurableExecutionLease.acquire(store, sessionId, {
    ownerId: OWNER_A,
    ttlMs: TTL_MS,
    heartbeatIntervalMs: HEARTBEAT_MS,
    time: store.time,
    ...extra,
  });
  held.push(lease);
  return lease;
}

async function timeoutOf(promise: Promise<unknown>): Promise<DurableExecutionLeaseTimeoutError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!isDurableExecutionLeaseTimeoutError(error)) throw new Error(`expected a lease timeout, got ${String(error)}`);
  expect(error.code).toBe('DURABLE_EXECUTION_LEASE_TIMEOUT');
  return error;
}

/** Starts `call`, moves the manual clock by `ms`, and returns the lease timeout it must have ended with. */
async function timeoutAfter(time: ManualTimeSource, ms: number, call: Promise<unknown>): Promise<DurableExecutionLeaseTimeoutError> {
  const outcome = timeoutOf(call);
  await time.advance(ms);
  return outcome;
}

afterEach(async () => {
  await Promise.allSettled(held.splice(0).map((lease) => lease.release()));
});

describe('renewal failures and the local watchdog', () => {
  it('a renewal failure aborts the signal with that error, and the handle stays failed', async () => {
    const store = faultyStore();
    const time = clockOf(store);
    const sessionId = newSession();
    const lease = await acquire(store, sessionId);
    await time.advance(HEARTBEAT_MS * 2);
    expect(store.callsOf('renew')).toHaveLength(2); // two healthy heartbeats
    const injected = new DurableEventStoreError('DURABLE_EVENT_READ_FAILED', 'injected: the lease file is unreadable');
    store.faults.renew = { kind: 'fail', error: () => injected };

    await time.advance(HEARTBEAT_MS); // the failed heartbeat aborts the signal
    expect(lease.signal.aborted).toBe(true);
    expect(lease.signal.reason).toBe(injected);

    delete store.faults.renew; // the store recovers; the handle must not
    const renewals = store.callsOf('renew').length;
    await time.advance(HEARTBEAT_MS * 4);
    expect(store.callsOf('renew')).toHaveLength(renewals);
    expect(lease.signal.reason).toBe(injected);
    expect(() => lease.throwIfLost()).toThrow(injected);
    await expect(lease.renew()).rejects.toBe(injected);
    await expect(lease.withExecutionLease(async () => 'ran')).rejects.toBe(injected);
    // Nobody renews the lease any more: once it lapses at the store, another owner takes over.
    await time.advance(TTL_MS);
    const stored = await store.inspectExecutionLease(sessionId);
    expect(stored?.expiresAtMs).toBeLessThanOrEqual(time.wallNow());
    const successor = await acquire(store, sessionId, { ownerId: OWNER_B });
    expect(successor.fence.fencingToken).toBe(2);
  });

  it('fails closed at the local expiry while a renewal hangs, before the call returns', async () => {
    const store = faultyStore();
    const time = clockOf(store);
    const sessionId = newSession();
    const lease = await acquire(store, sessionId);
    store.faults.renew = { kind: 'hang' };

    await time.advance(TTL_MS - 1);
    expect(lease.signal.aborted).toBe(false);
    await time.advance(1); // the local expiry
    expect(lease.signal.aborted).toBe(true);
    const hung = store.callsOf('renew').at(-1);
    expect(hung?.settledAt).toBeUndefined(); // the store never answered
    // Its deadline (passed down with the call) fired at the same window end.
    expect(hung?.abortedAt).toBe(TTL_MS);
    expect(['DURABLE_EXECUTION_LEASE_LOST', 'DURABLE_EXECUTION_LEASE_TIMEOUT']).toContain(codeOf(lease.signal.reason));
    expect(lease.remainingMs()).toBe(0);
    expect(() => lease.throwIfLost()).toThrow();
  });

  it('a blocked event loop cannot make a stale handle look valid', async () => {
    const store = faultyStore();
    const time = clockOf(store);
    const sessionId = newSession();
    const lease = await acquire(store, sessionId);
    time.block(TTL_MS + 100); // the clocks move; no heartbeat, no watchdog timer runs meanwhile
    // Observed synchronously, before any timer runs.
    expect(lease.signal.aborted).toBe(true);
    expect(codeOf(lease.signal.reason)).toBe('DURABLE_EXECUTION_LEASE_LOST');
    expect(() => lease.throwIfLost()).toThrow();
    // The store agrees: the lease expired there too.
    expect(
      await rejectionCode(store.append(sessionId, [tagged({ tag: 'late', owner: 'a', token: 1 })], { executionFence: lease.fence })),
    ).toBe('DURABLE_EXECUTION_LEASE_LOST');
  });
});

describe('deadlines', () => {
  it('caps lease calls to the remaining heartbeat-to-expiry window, not to storeTimeoutMs', async () => {
    const store = faultyStore();
    const time = clockOf(store);
    const sessionId = newSession();
    const storeTimeoutMs = 30_000;
    const lease = await acquire(store, sessionId, { ttlMs: 600, heartbeatIntervalMs: 200, storeTimeoutMs });
    store.faults.renew = { kind: 'hang' };
    await time.advance(600);
    expect(lease.signal.aborted).toBe(true);
    const call = store.callsOf('renew').at(-1);
    expect(call?.abortReason).toBeInstanceOf(DeadlineExceeded);
    const deadline = (call?.abortReason as DeadlineExceeded).timeoutMs;
    // The heartbeat started at 200 ms of a 600 ms window: its deadline is the 400 ms left, far
    // below the configured 30 s, and it fired exactly then.
    expect(call?.startedAt).toBe(200);
    expect(deadline).toBe(400);
    expect(call?.abortedAt).toBe(600);
  });

  it('caps an assertion to the window too', async () => {
    const store = faultyStore();
    const time = clockOf(store);
    const sessionId = newSession();
    const lease = await acquire(store, sessionId, { ttlMs: 600, heartbeatIntervalMs: 500, storeTimeoutMs: 30_000 });
    store.faults.assert = { kind: 'hang' };
    store.faults.renew = { kind: 'hang' };
    const error = await timeoutAfter(time, 600, lease.assert());
    expect(error.details?.['timeoutMs']).toBeLessThanOrEqual(600);
    expect(error.leaseId).toBe(lease.fence.leaseId);
    expect(lease.signal.aborted).toBe(true);
  });

  it('a slow store that ignores its signal hits every deadline with DURABLE_EXECUTION_LEASE_TIMEOUT', async () => {
    const storeTimeoutMs = 100;
    const slow = { kind: 'delay', ms: 400 } as const;
    const opts = { ttlMs: 5_000, heartbeatIntervalMs: 2_000, storeTimeoutMs };

    // Acquisition.
    const store = faultyStore();
    const time = clockOf(store);
    const s1 = newSession();
    store.faults.acquire = slow;
    const acquireError = await timeoutAfter(time, storeTimeoutMs, acquire(store, s1, opts));
    expect(typeof acquireError.leaseId).toBe('string');
    delete store.faults.acquire;

    // Heartbeat (renew() is what the timer calls).
    const s2 = newSession();
    const renewing = await acquire(store, s2, opts);
    store.faults.renew = slow;
    await timeoutAfter(time, storeTimeoutMs, renewing.renew());
    expect(isDurableExecutionLeaseTimeoutError(renewing.signal.reason)).toBe(true);
    delete store.faults.renew;

    // Assertion.
    const s3 = newSession();
    const asserting = await acquire(store, s3, opts);
    store.faults.assert = slow;
    await timeoutAfter(time, storeTimeoutMs, asserting.assert());
    expect(asserting.signal.aborted).toBe(true);
    delete store.faults.assert;

    // Fenced operation.
    const s4 = newSession();
    const stepping = await acquire(store, s4, opts);
    let bodySignal: AbortSignal | undefined;
    await timeoutAfter(
      time,
      storeTimeoutMs,
      stepping.withExecutionLease(async (_fence, signal) => {
        bodySignal = signal;
        await new Promise<void>((resolve) => time.setTimer(resolve, 400)); // ignores its signal
      }),
    );
    expect(bodySignal?.aborted).toBe(true);
    expect(stepping.signal.aborted).toBe(true);

    // Release: throws, the handle is closed anyway, and a retry once the store is healthy succeeds.
    const s5 = newSession();
    const releasing = await acquire(store, s5, opts);
    store.faults.release = slow;
    await timeoutAfter(time, storeTimeoutMs, releasing.release());
    expect(releasing.signal.aborted).toBe(true);
    delete store.faults.release;
    await releasing.release();
    expect((await store.inspectExecutionLease(s5))?.released).toBe(true);
    expect(store.callsOf('release').length).toBe(2);
  });

  it('a store that honours its signal writes nothing after the deadline fired', async () => {
    const store = faultyStore();
    const time = clockOf(store);
    const sessionId = newSession();
    store.faults.acquire = { kind: 'delay', ms: 300, honorSignal: true };
    await timeoutAfter(time, 50, acquire(store, sessionId, { storeTimeoutMs: 50 }));
    await time.advance(350);
    expect(await store.inspectExecutionLease(sessionId)).toBeNull();
    expect(store.callsOf('acquire')[0]?.reachedStore).toBe(false);
    delete store.faults.acquire;

    const lease = await acquire(store, sessionId, { ttlMs: 5_000, heartbeatIntervalMs: 2_000, storeTimeoutMs: 50 });
    const before = await store.inspectExecutionLease(sessionId);
    store.faults.renew = { kind: 'delay', ms: 300, honorSignal: true };
    await timeoutAfter(time, 50, lease.renew());
    await time.advance(350);
    expect(await store.inspectExecutionLease(sessionId)).toEqual(before);
  });

  it('an acquisition answered after its TTL is not trusted: timeout, then a retry reconciles', async () => {
    const store = faultyStore();
    const time = clockOf(store);
    const sessionId = newSession();
    store.faults.acquire = { kind: 'delay', ms: TTL_MS + 100 }; // within storeTimeoutMs, past the TTL
    const error = await timeoutAfter(time, TTL_MS + 100, acquire(store, sessionId, { storeTimeoutMs: 10_000 }));
    expect(store.callsOf('acquire')[0]?.outcome).toBe('resolved'); // the store did grant it
    delete store.faults.acquire;
    const lease = await acquire(store, sessionId);
    expect(lease.fence.leaseId).toBe(error.leaseId);
    expect(lease.signal.aborted).toBe(false);
  });

  it("reports a store's own deadline error as a lease timeout carrying the leaseId", async () => {
    const store = faultyStore();
    const sessionId = newSession();
    const cause = new DurableEventStoreError('DURABLE_EVENT_LOCK_TIMEOUT', 'injected: the session lock is busy');
    store.faults.acquire = { kind: 'fail', error: () => cause };
    const error = await timeoutOf(acquire(store, sessionId));
    expect(error.cause).toBe(cause);
    expect(typeof error.leaseId).toBe('string');
  });
});

describe('uncertain acquisitions', () => {
  it('an in-process retry reuses the leaseId and reconciles a grant that landed late', async () => {
    const store = faultyStore();
    const time = clockOf(store);
    const sessionId = newSession();
    store.faults.acquire = { kind: 'delay', ms: 300 };
    const error = await timeoutAfter(time, 50, acquire(store, sessionId, { storeTimeoutMs: 50 }));
    delete store.faults.acquire;
    await time.advance(250); // the late grant lands
    expect(store.callsOf('acquire')[0]?.settledAt).toBe(300);
    const granted = await store.inspectExecutionLease(sessionId);
    expect(granted).toMatchObject({ leaseId: error.leaseId, fencingToken: 1 });

    const lease = await acquire(store, sessionId, { storeTimeoutMs: 50 });
    expect(lease.fence).toEqual({ leaseId: error.leaseId, ownerId: OWNER_A, fencingToken: 1 });
    expect(store.callsOf('acquire')[1]?.leaseId).toBe(error.leaseId);
    // Resolved: the identity now belongs to a live handle and is not handed out again.
    expect(await rejectionCode(acquire(store, sessionId))).toBe('DURABLE_EXECUTION_LEASE_CONFLICT');
    // Another owner is still refused.
    expect(await rejectionCode(acquire(store, sessionId, { ownerId: OWNER_B }))).toBe('DURABLE_EXECUTION_LEASE_CONFLICT');
  });

  it('the retry may also land before the late grant: both resolve to one lease', async () => {
    const store = faultyStore();
    const time = clockOf(store);
    const sessionId = newSession();
    store.faults.acquire = { kind: 'delay', ms: 400 };
    const error = await timeoutAfter(time, 50, acquire(store, sessionId, { storeTimeoutMs: 50 }));
    delete store.faults.acquire;
    const lease = await acquire(store, sessionId, { storeTimeoutMs: 50 });
    expect(lease.fence).toMatchObject({ leaseId: error.leaseId, fencingToken: 1 });
    await time.advance(350); // the late grant lands
    expect(store.callsOf('acquire')[0]?.settledAt).toBe(400);
    expect(store.callsOf('acquire')[0]?.outcome).toBe('resolved');
    expect(await store.inspectExecutionLease(sessionId)).toMatchObject({ leaseId: error.leaseId, fencingToken: 1 });
    await lease.assert();
    expect(lease.signal.aborted).toBe(false);
  });

  it('a retry from another process passes the leaseId explicitly', async () => {
    const time = new ManualTimeSource();
    const inner = new MemoryDurableEventStore({ clock: () => time.wallNow() });
    const here = new LeaseFaultStore(inner, time);
    const sessionId = newSession();
    here.faults.acquire = { kind: 'delay', ms: 300 };
    const error = await timeoutAfter(time, 50, acquire(here, sessionId, { storeTimeoutMs: 50 }));
    await time.advance(250); // the late grant lands
    expect(here.callsOf('acquire')[0]?.settledAt).toBe(300);

    const elsewhere = new LeaseFaultStore(inner, time); // another store object: no shared memory of the attempt
    expect(await rejectionCode(acquire(elsewhere, sessionId))).toBe('DURABLE_EXECUTION_LEASE_CONFLICT');
    const lease = await acquire(elsewhere, sessionId, { leaseId: error.leaseId ?? 'missing' });
    expect(lease.fence).toMatchObject({ leaseId: error.leaseId, fencingToken: 1 });
  });

  it('a cancelled acquisition is uncertain too: the retry reconciles it', async () => {
    const store = faultyStore();
    const time = clockOf(store);
    const sessionId = newSession();
    store.faults.acquire = { kind: 'delay', ms: 300 };
    const controller = new AbortController();
    const attempt = acquire(store, sessionId, { signal: controller.signal });
    await time.advance(20);
    controller.abort();
    expect(await attempt.then(() => 'resolved', (e: unknown) => (e as Error).name)).toBe('AbortError');
    const firstId = store.callsOf('acquire')[0]?.leaseId;
    delete store.faults.acquire;
    await time.advance(280); // the late grant lands
    expect(store.callsOf('acquire')[0]?.settledAt).toBe(300);
    const lease = await acquire(store, sessionId);
    expect(lease.fence).toMatchObject({ leaseId: firstId, fencingToken: 1 });
  });
});

describe('on the real clock (smoke, margins of seconds)', () => {
  it('a hung renewal hits its deadline on the host timers and fails the lease', async () => {
    const store = new LeaseFaultStore(new MemoryDurableEventStore());
    const sessionId = newSession();
    const lease = await DurableExecutionLease.acquire(store, sessionId, {
      ownerId: OWNER_A,
      ttlMs: 1_500,
      heartbeatIntervalMs: 500,
      storeTimeoutMs: 30_000,
    });
    held.push(lease);
    store.faults.renew = { kind: 'hang' };
    await waitUntil(() => lease.signal.aborted && store.callsOf('renew').at(-1)?.abortedAt !== undefined, 'the deadline', 30_000);
    const call = store.callsOf('renew').at(-1);
    expect(call?.abortReason).toBeInstanceOf(DeadlineExceeded);
    // Capped to the lease window (at most 1.5 s), never the 30 s store deadline.
    expect((call?.abortReason as DeadlineExceeded).timeoutMs).toBeLessThanOrEqual(1_500);
    expect(lease.remainingMs()).toBe(0);
  });

  it('a really blocked event loop cannot make a stale handle look valid', async () => {
    const store = new LeaseFaultStore(new MemoryDurableEventStore());
    const sessionId = newSession();
    const lease = await DurableExecutionLease.acquire(store, sessionId, { ownerId: OWNER_A, ttlMs: TTL_MS, heartbeatIntervalMs: HEARTBEAT_MS });
    held.push(lease);
    blockEventLoop(TTL_MS + 100); // at least this much real time passes; no timer runs meanwhile
    expect(lease.signal.aborted).toBe(true);
    expect(codeOf(lease.signal.reason)).toBe('DURABLE_EXECUTION_LEASE_LOST');
  });
});
