/**
 * DurableExecutionLease when the store misbehaves: renewals that fail or hang, a blocked event
 * loop, slow calls that ignore their signal, and acquisitions whose outcome is uncertain. The
 * faults come from `LeaseFaultStore` wrapped around a real memory store; the handle is real.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { MemoryDurableEventStore } from '../../src/adapters/memory/memory-store.js';
import { LeaseFaultStore } from '../../src/conformance/checks-lease-handle.js';
import { DeadlineExceeded } from '../../src/core/abort.js';
import { DurableExecutionLease } from '../../src/core/lease/index.js';
import {
  DurableEventStoreError,
  type DurableExecutionLeaseTimeoutError,
  isDurableExecutionLeaseTimeoutError,
} from '../../src/protocol/errors.js';
import { SessionId, WorkerId } from '../../src/protocol/ids.js';
import { blockEventLoop, codeOf, HEARTBEAT_MS, rejectionCode, sleep, tagged, TTL_MS, waitUntil } from './helpers.js';

const OWNER_A = WorkerId('worker-a');
const OWNER_B = WorkerId('worker-b');
let sessions = 0;
const held: DurableExecutionLease[] = [];

function newSession(): SessionId {
  sessions += 1;
  return SessionId(`lease-deadline-${sessions}`);
}

function faultyStore(): LeaseFaultStore {
  return new LeaseFaultStore(new MemoryDurableEventStore());
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

afterEach(async () => {
  await Promise.allSettled(held.splice(0).map((lease) => lease.release()));
});

describe('renewal failures and the local watchdog', () => {
  it('a renewal failure aborts the signal with that error, and the handle stays failed', async () => {
    const store = faultyStore();
    const sessionId = newSession();
    const lease = await acquire(store, sessionId);
    await waitUntil(() => store.callsOf('renew').length >= 2, 'two healthy heartbeats');
    const injected = new DurableEventStoreError('DURABLE_EVENT_READ_FAILED', 'injected: the lease file is unreadable');
    store.faults.renew = { kind: 'fail', error: () => injected };

    await waitUntil(() => lease.signal.aborted, 'the failed heartbeat aborts the signal');
    expect(lease.signal.reason).toBe(injected);

    delete store.faults.renew; // the store recovers; the handle must not
    const renewals = store.callsOf('renew').length;
    await sleep(HEARTBEAT_MS * 4);
    expect(store.callsOf('renew')).toHaveLength(renewals);
    expect(lease.signal.reason).toBe(injected);
    expect(() => lease.throwIfLost()).toThrow(injected);
    await expect(lease.renew()).rejects.toBe(injected);
    await expect(lease.withExecutionLease(async () => 'ran')).rejects.toBe(injected);
    // Nobody renews the lease any more: once it lapses at the store, another owner takes over.
    await waitUntil(async () => {
      const stored = await store.inspectExecutionLease(sessionId);
      return stored !== null && stored.expiresAtMs <= Date.now();
    }, 'the store-side expiry');
    const successor = await acquire(store, sessionId, { ownerId: OWNER_B });
    expect(successor.fence.fencingToken).toBe(2);
  });

  it('fails closed at the local expiry while a renewal hangs, before the call returns', async () => {
    const store = faultyStore();
    const sessionId = newSession();
    const lease = await acquire(store, sessionId);
    store.faults.renew = { kind: 'hang' };

    await waitUntil(() => lease.signal.aborted, 'local expiry');
    const hung = store.callsOf('renew').at(-1);
    expect(hung?.settledAt).toBeUndefined(); // the store never answered
    // Its deadline (passed down with the call) fires at the same window end.
    await waitUntil(() => hung?.abortedAt !== undefined, "the hung renewal's deadline", 1_000);
    expect(['DURABLE_EXECUTION_LEASE_LOST', 'DURABLE_EXECUTION_LEASE_TIMEOUT']).toContain(codeOf(lease.signal.reason));
    expect(lease.remainingMs()).toBe(0);
    expect(() => lease.throwIfLost()).toThrow();
  });

  it('a blocked event loop cannot make a stale handle look valid', async () => {
    const store = faultyStore();
    const sessionId = newSession();
    const lease = await acquire(store, sessionId);
    blockEventLoop(TTL_MS + 100); // no heartbeat, no watchdog timer can run meanwhile
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
    const sessionId = newSession();
    const storeTimeoutMs = 30_000;
    const lease = await acquire(store, sessionId, { ttlMs: 600, heartbeatIntervalMs: 200, storeTimeoutMs });
    store.faults.renew = { kind: 'hang' };
    await waitUntil(() => store.callsOf('renew').at(-1)?.abortedAt !== undefined, "the hung heartbeat's deadline");
    expect(lease.signal.aborted).toBe(true);
    const call = store.callsOf('renew').at(-1);
    expect(call?.abortReason).toBeInstanceOf(DeadlineExceeded);
    const deadline = (call?.abortReason as DeadlineExceeded).timeoutMs;
    // The deadline handed to the store was what was left of the 600 ms window when the heartbeat
    // started (about 400 ms), far below the configured 30 s.
    expect(deadline).toBeLessThanOrEqual(600);
    expect(deadline).toBeGreaterThan(0);
    expect((call?.abortedAt ?? Infinity) - (call?.startedAt ?? 0)).toBeLessThan(storeTimeoutMs / 2);
  });

  it('caps an assertion to the window too', async () => {
    const store = faultyStore();
    const sessionId = newSession();
    const lease = await acquire(store, sessionId, { ttlMs: 600, heartbeatIntervalMs: 500, storeTimeoutMs: 30_000 });
    store.faults.assert = { kind: 'hang' };
    store.faults.renew = { kind: 'hang' };
    const error = await timeoutOf(lease.assert());
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
    const s1 = newSession();
    store.faults.acquire = slow;
    const acquireError = await timeoutOf(acquire(store, s1, opts));
    expect(typeof acquireError.leaseId).toBe('string');
    delete store.faults.acquire;

    // Heartbeat (renew() is what the timer calls).
    const s2 = newSession();
    const renewing = await acquire(store, s2, opts);
    store.faults.renew = slow;
    await timeoutOf(renewing.renew());
    expect(isDurableExecutionLeaseTimeoutError(renewing.signal.reason)).toBe(true);
    delete store.faults.renew;

    // Assertion.
    const s3 = newSession();
    const asserting = await acquire(store, s3, opts);
    store.faults.assert = slow;
    await timeoutOf(asserting.assert());
    expect(asserting.signal.aborted).toBe(true);
    delete store.faults.assert;

    // Fenced operation.
    const s4 = newSession();
    const stepping = await acquire(store, s4, opts);
    let bodySignal: AbortSignal | undefined;
    await timeoutOf(
      stepping.withExecutionLease(async (_fence, signal) => {
        bodySignal = signal;
        await sleep(400);
      }),
    );
    expect(bodySignal?.aborted).toBe(true);
    expect(stepping.signal.aborted).toBe(true);

    // Release: throws, the handle is closed anyway, and a retry once the store is healthy succeeds.
    const s5 = newSession();
    const releasing = await acquire(store, s5, opts);
    store.faults.release = slow;
    await timeoutOf(releasing.release());
    expect(releasing.signal.aborted).toBe(true);
    delete store.faults.release;
    await releasing.release();
    expect((await store.inspectExecutionLease(s5))?.released).toBe(true);
    expect(store.callsOf('release').length).toBe(2);
  });

  it('a store that honours its signal writes nothing after the deadline fired', async () => {
    const store = faultyStore();
    const sessionId = newSession();
    store.faults.acquire = { kind: 'delay', ms: 300, honorSignal: true };
    await timeoutOf(acquire(store, sessionId, { storeTimeoutMs: 50 }));
    await sleep(350);
    expect(await store.inspectExecutionLease(sessionId)).toBeNull();
    expect(store.callsOf('acquire')[0]?.reachedStore).toBe(false);
    delete store.faults.acquire;

    const lease = await acquire(store, sessionId, { ttlMs: 5_000, heartbeatIntervalMs: 2_000, storeTimeoutMs: 50 });
    const before = await store.inspectExecutionLease(sessionId);
    store.faults.renew = { kind: 'delay', ms: 300, honorSignal: true };
    await timeoutOf(lease.renew());
    await sleep(350);
    expect(await store.inspectExecutionLease(sessionId)).toEqual(before);
  });

  it('an acquisition answered after its TTL is not trusted: timeout, then a retry reconciles', async () => {
    const store = faultyStore();
    const sessionId = newSession();
    store.faults.acquire = { kind: 'delay', ms: TTL_MS + 100 }; // within storeTimeoutMs, past the TTL
    const error = await timeoutOf(acquire(store, sessionId, { storeTimeoutMs: 10_000 }));
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
    const sessionId = newSession();
    store.faults.acquire = { kind: 'delay', ms: 300 };
    const error = await timeoutOf(acquire(store, sessionId, { storeTimeoutMs: 50 }));
    delete store.faults.acquire;
    await waitUntil(() => store.callsOf('acquire')[0]?.settledAt !== undefined, 'the late grant');
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
    const sessionId = newSession();
    store.faults.acquire = { kind: 'delay', ms: 400 };
    const error = await timeoutOf(acquire(store, sessionId, { storeTimeoutMs: 50 }));
    delete store.faults.acquire;
    const lease = await acquire(store, sessionId, { storeTimeoutMs: 50 });
    expect(lease.fence).toMatchObject({ leaseId: error.leaseId, fencingToken: 1 });
    await waitUntil(() => store.callsOf('acquire')[0]?.settledAt !== undefined, 'the late grant');
    expect(store.callsOf('acquire')[0]?.outcome).toBe('resolved');
    expect(await store.inspectExecutionLease(sessionId)).toMatchObject({ leaseId: error.leaseId, fencingToken: 1 });
    await lease.assert();
    expect(lease.signal.aborted).toBe(false);
  });

  it('a retry from another process passes the leaseId explicitly', async () => {
    const inner = new MemoryDurableEventStore();
    const here = new LeaseFaultStore(inner);
    const sessionId = newSession();
    here.faults.acquire = { kind: 'delay', ms: 300 };
    const error = await timeoutOf(acquire(here, sessionId, { storeTimeoutMs: 50 }));
    await waitUntil(() => here.callsOf('acquire')[0]?.settledAt !== undefined, 'the late grant');

    const elsewhere = new LeaseFaultStore(inner); // another store object: no shared memory of the attempt
    expect(await rejectionCode(acquire(elsewhere, sessionId))).toBe('DURABLE_EXECUTION_LEASE_CONFLICT');
    const lease = await acquire(elsewhere, sessionId, { leaseId: error.leaseId ?? 'missing' });
    expect(lease.fence).toMatchObject({ leaseId: error.leaseId, fencingToken: 1 });
  });

  it('a cancelled acquisition is uncertain too: the retry reconciles it', async () => {
    const store = faultyStore();
    const sessionId = newSession();
    store.faults.acquire = { kind: 'delay', ms: 300 };
    const controller = new AbortController();
    const attempt = acquire(store, sessionId, { signal: controller.signal });
    await sleep(20);
    controller.abort();
    expect(await attempt.then(() => 'resolved', (e: unknown) => (e as Error).name)).toBe('AbortError');
    const firstId = store.callsOf('acquire')[0]?.leaseId;
    delete store.faults.acquire;
    await waitUntil(() => store.callsOf('acquire')[0]?.settledAt !== undefined, 'the late grant');
    const lease = await acquire(store, sessionId);
    expect(lease.fence).toMatchObject({ leaseId: firstId, fencingToken: 1 });
  });
});
