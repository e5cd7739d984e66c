/**
 * DurableExecutionLease against the memory store: heartbeats, takeover and fencing, sticky
 * fencing, release, and `withExecutionLease` serialization. Handle and store share a
 * `ManualTimeSource`: time moves only when a test calls `advance` (timers fire, their promise work
 * settles) or `block` (a stall: the clocks move, no timer runs); store-side expiry is forced by
 * jumping the store's clock alone. Nothing here depends on how fast the machine runs, except the
 * real-clock smoke test at the end, whose margins are seconds.
 */
import { ManualTimeSource, type TimeSource } from '../../src/core/time.js';
import { getEventListeners } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import { MemoryDurableEventStore } from '../../src/adapters/memory/memory-store.js';
import { lifecycleDrafts } from '../../src/conformance/checks-journal.js';
import { LeaseFaultStore } from '../../src/conformance/checks-lease-handle.js';
import { DurableSessionJournal } from '../../src/core/journal/journal.js';
import { DurableExecutionLease, withExecutionLease } from '../../src/core/lease/index.js';
import { isDurableExecutionLeaseError, isDurableExecutionLeaseTimeoutError } from '../../src/protocol/errors.js';
import { CommandId, SessionId, WorkerId } from '../../src/protocol/ids.js';
import { codeOf, HEARTBEAT_MS, manualClockStore, rejectionCode, tagged, tagOf, TTL_MS, waitUntil } from './helpers.js';

const OWNER_A = WorkerId('worker-a');
const OWNER_B = WorkerId('worker-b');
let sessions = 0;
const held: DurableExecutionLease[] = [];

function newSession(): SessionId {
  sessions += 1;
  return SessionId(`lease-handle-${sessions}`);
}

async function acquire(
  store: Parameters<typeof DurableExecutionLease.acquire>[0],
  sessionId: SessionId,
  ownerId = OWNER_A,
  extra: { ttlMs?: number; heartbeatIntervalMs?: number; storeTimeoutMs?: number; time?: TimeSource } = {},
): Promise<DurableExecutionLease> {
  const lease = await DurableExecutionLease.acquire(store, sessionId, {
    ownerId,
    ttlMs: TTL_MS,
    heartbeatIntervalMs: HEARTBEAT_MS,
    ...extra,
  });
  held.push(lease);
  return lease;
}

afterEach(async () => {
  await Promise.allSettled(held.splice(0).map((lease) => lease.release()));
});

describe('DurableExecutionLease: heartbeats and fencing', () => {
  it('heartbeats keep the lease alive past several TTLs (manual clock)', async () => {
    // Store and handle share a manual clock: four TTLs pass only when the test says so, however
    // loaded the machine is, and every heartbeat due in them runs to completion in order.
    const time = new ManualTimeSource();
    const store = new LeaseFaultStore(new MemoryDurableEventStore({ clock: () => time.wallNow() }));
    const sessionId = newSession();
    const lease = await acquire(store, sessionId, OWNER_A, { time });
    const first = lease.record;
    expect(lease.fence.fencingToken).toBe(1);

    await time.advance(TTL_MS * 4);

    expect(lease.signal.aborted).toBe(false);
    expect(store.callsOf('renew').length).toBeGreaterThanOrEqual(4);
    const stored = await store.inspectExecutionLease(sessionId);
    expect(stored).toMatchObject({ leaseId: first.leaseId, fencingToken: 1, released: false });
    // Renewed far past the first grant's expiry.
    expect(stored?.expiresAtMs).toBeGreaterThan(first.expiresAtMs + TTL_MS);
    expect(lease.record.expiresAtMs).toBe(stored?.expiresAtMs);
    expect(await rejectionCode(acquire(store, sessionId, OWNER_B))).toBe('DURABLE_EXECUTION_LEASE_CONFLICT');
    await store.append(sessionId, [tagged({ tag: 'a-1', owner: 'a', token: 1 })], { executionFence: lease.fence });
  });

  it('a takeover increments the token; the stale holder is refused at the store and fails locally', async () => {
    const { time, store, jump } = manualClockStore();
    const sessionId = newSession();
    const a = await acquire(store, sessionId, OWNER_A, { time });
    await store.append(sessionId, [tagged({ tag: 'a-1', owner: 'a', token: 1 })], { executionFence: a.fence });

    jump(TTL_MS * 10); // A's lease is expired at the store; A's process has not noticed yet
    const b = await acquire(store, sessionId, OWNER_B, { time });
    expect(b.fence.fencingToken).toBe(a.fence.fencingToken + 1);

    expect(
      await rejectionCode(store.append(sessionId, [tagged({ tag: 'a-stale', owner: 'a', token: 1 })], { executionFence: a.fence })),
    ).toBe('DURABLE_EXECUTION_LEASE_LOST');
    await store.append(sessionId, [tagged({ tag: 'b-1', owner: 'b', token: 2 })], { executionFence: b.fence });

    // A's next heartbeat is refused: its signal aborts with LOST and stays aborted.
    expect(a.signal.aborted).toBe(false);
    await time.advance(HEARTBEAT_MS);
    expect(a.signal.aborted).toBe(true);
    expect(isDurableExecutionLeaseError(a.signal.reason)).toBe(true);
    expect(codeOf(a.signal.reason)).toBe('DURABLE_EXECUTION_LEASE_LOST');
    expect(() => a.throwIfLost()).toThrow();
    expect(a.remainingMs()).toBe(0);
    expect(await rejectionCode(a.assert())).toBe('DURABLE_EXECUTION_LEASE_LOST');

    const events = (await store.read(sessionId)).events.map(tagOf);
    expect(events.map((e) => e.tag)).toEqual(['a-1', 'b-1']);
    expect(b.signal.aborted).toBe(false);
  });

  it('an unfenced append during an active lease is REQUIRED, and fencing stays sticky after release and expiry', async () => {
    const { time, store, jump } = manualClockStore();
    const sessionId = newSession();
    await store.append(sessionId, [tagged({ tag: 'before-any-lease', owner: '-', token: 0 })]);
    const a = await acquire(store, sessionId, OWNER_A, { time });
    expect(await rejectionCode(store.append(sessionId, [tagged({ tag: 'x', owner: '-', token: 0 })]))).toBe(
      'DURABLE_EXECUTION_LEASE_REQUIRED',
    );
    await a.release();
    expect(await rejectionCode(store.append(sessionId, [tagged({ tag: 'x', owner: '-', token: 0 })]))).toBe(
      'DURABLE_EXECUTION_LEASE_REQUIRED',
    );
    expect(await store.requiresExecutionLease(sessionId)).toBe(true);

    const b = await acquire(store, sessionId, OWNER_B, { time });
    expect(b.fence.fencingToken).toBe(2);
    jump(TTL_MS * 10);
    expect(await rejectionCode(store.append(sessionId, [tagged({ tag: 'x', owner: '-', token: 0 })]))).toBe(
      'DURABLE_EXECUTION_LEASE_REQUIRED',
    );
    expect(
      await rejectionCode(store.append(sessionId, [tagged({ tag: 'x', owner: 'b', token: 2 })], { executionFence: b.fence })),
    ).toBe('DURABLE_EXECUTION_LEASE_LOST');
    expect((await store.read(sessionId)).events.map((e) => tagOf(e).tag)).toEqual(['before-any-lease']);

    // The journal opened through the lease store refuses a session that needs a lease.
    expect(await rejectionCode(DurableSessionJournal.open(store, sessionId, { executionLeaseStore: store }))).toBe(
      'DURABLE_EXECUTION_LEASE_REQUIRED',
    );
  });

  it('release is idempotent, aborts the signal, and lets a successor in with the next token', async () => {
    const { time, store: inner } = manualClockStore();
    const store = new LeaseFaultStore(inner, time);
    const sessionId = newSession();
    const a = await acquire(store, sessionId, OWNER_A, { time });
    const observed: unknown[] = [];
    a.signal.addEventListener('abort', () => observed.push(a.signal.reason));

    await Promise.all([a.release(), a.release()]);
    await a.release();

    expect(store.callsOf('release')).toHaveLength(1);
    expect(observed).toHaveLength(1);
    expect(codeOf(observed[0])).toBe('DURABLE_EXECUTION_LEASE_LOST');
    expect(await store.inspectExecutionLease(sessionId)).toMatchObject({ released: true, fencingToken: 1 });
    expect(await rejectionCode(a.renew())).toBe('DURABLE_EXECUTION_LEASE_LOST');
    expect(await rejectionCode(a.assert())).toBe('DURABLE_EXECUTION_LEASE_LOST');

    const b = await acquire(store, sessionId, OWNER_B, { time });
    expect(b.fence.fencingToken).toBe(2);
    // Releasing a lease that was replaced is not an error: it is not ours any more either way.
    await a.release();
    expect(b.signal.aborted).toBe(false);
    // The released handle never heartbeats again; B's handle does, once per period.
    const renewalsBefore = store.callsOf('renew').length;
    await time.advance(HEARTBEAT_MS * 3);
    const later = store.callsOf('renew').slice(renewalsBefore);
    expect(later.filter((call) => call.leaseId === a.fence.leaseId)).toEqual([]);
    expect(later.filter((call) => call.leaseId === b.fence.leaseId)).toHaveLength(3);
    expect(b.signal.aborted).toBe(false);
  });

  it('a released handle that lost its lease elsewhere still releases quietly', async () => {
    const { time, store, jump } = manualClockStore();
    const sessionId = newSession();
    const a = await acquire(store, sessionId, OWNER_A, { time });
    jump(TTL_MS * 10);
    await acquire(store, sessionId, OWNER_B, { time });
    await expect(a.release()).resolves.toBeUndefined();
    expect(a.signal.aborted).toBe(true);
  });
});

describe('DurableExecutionLease: withExecutionLease', () => {
  it('runs fenced steps one at a time, with no heartbeat in between', async () => {
    const { time, store: inner } = manualClockStore();
    const store = new LeaseFaultStore(inner, time);
    const sessionId = newSession();
    const lease = await acquire(store, sessionId, OWNER_A, { ttlMs: 1_200, heartbeatIntervalMs: 50, time });
    const log: string[] = [];
    const step = (tag: string) =>
      withExecutionLease(lease, async (fence, signal) => {
        log.push(`start ${tag}`);
        expect(signal.aborted).toBe(false);
        const renewalsAtStart = store.callsOf('renew').length;
        await time.advance(150); // three heartbeat periods pass inside the step
        await store.append(sessionId, [tagged({ tag, owner: 'a', token: fence.fencingToken })], { executionFence: fence, signal });
        // No renewal started while this step ran (the heartbeats due meanwhile wait their turn).
        expect(store.callsOf('renew').length).toBe(renewalsAtStart);
        log.push(`end ${tag}`);
        return tag;
      });
    await expect(Promise.all([step('s-1'), step('s-2'), step('s-3')])).resolves.toEqual(['s-1', 's-2', 's-3']);

    expect((await store.read(sessionId)).events.map((e) => tagOf(e).tag)).toEqual(['s-1', 's-2', 's-3']);
    expect(log).toEqual(['start s-1', 'end s-1', 'start s-2', 'end s-2', 'start s-3', 'end s-3']);
    // Each step first confirms ownership with the store.
    expect(store.callsOf('assert')).toHaveLength(3);
    // Steps leave no listener behind on the lease's signal.
    await Promise.all(Array.from({ length: 20 }, () => lease.withExecutionLease(async () => undefined)));
    expect(getEventListeners(lease.signal, 'abort')).toHaveLength(0);
    // Heartbeats resumed afterwards.
    const before = store.callsOf('renew').length;
    await time.advance(50);
    expect(store.callsOf('renew').length).toBeGreaterThan(before);
    expect(lease.signal.aborted).toBe(false);
  });

  it('refuses after loss without running the body', async () => {
    const { time, store, jump } = manualClockStore();
    const sessionId = newSession();
    const lease = await acquire(store, sessionId, OWNER_A, { time });
    jump(TTL_MS * 10);
    await acquire(store, sessionId, OWNER_B, { time });
    let ran = 0;
    // The store's assertion refuses (no heartbeat has run: the manual clock has not moved).
    expect(await rejectionCode(lease.withExecutionLease(async () => void ran++))).toBe('DURABLE_EXECUTION_LEASE_LOST');
    expect(lease.signal.aborted).toBe(true);
    expect(await rejectionCode(lease.withExecutionLease(async () => void ran++))).toBe('DURABLE_EXECUTION_LEASE_LOST');
    expect(ran).toBe(0);
  });

  it('a step queued behind release is refused', async () => {
    const { time, store } = manualClockStore();
    const sessionId = newSession();
    const lease = await acquire(store, sessionId, OWNER_A, { time });
    let ran = 0;
    let open = (): void => undefined;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const first = lease.withExecutionLease(async () => {
      await gate;
      ran++;
    });
    const released = lease.release();
    const late = lease.withExecutionLease(async () => void ran++);
    open();
    await first;
    await released;
    expect(await rejectionCode(late)).toBe('DURABLE_EXECUTION_LEASE_LOST');
    expect(ran).toBe(1);
  });

  it('a step that overruns the lease window times out and fails the lease', async () => {
    const { time, store } = manualClockStore();
    const sessionId = newSession();
    const lease = await acquire(store, sessionId, OWNER_A, { storeTimeoutMs: 60_000, time });
    let bodySignal: AbortSignal | undefined;
    const pending = lease
      .withExecutionLease(async (_fence, signal) => {
        bodySignal = signal;
        await new Promise(() => undefined); // ignores its signal
      })
      .catch((e: unknown) => e);
    await time.advance(TTL_MS);
    const error = await pending;
    expect(isDurableExecutionLeaseTimeoutError(error)).toBe(true);
    // Bounded by the lease window, not by the 60 s store deadline.
    const details = (error as { details?: { timeoutMs?: number } }).details;
    expect(details?.timeoutMs).toBeLessThanOrEqual(TTL_MS);
    expect(bodySignal?.aborted).toBe(true);
    // The watchdog may have failed the handle in the same millisecond; either way it is closed.
    expect(['DURABLE_EXECUTION_LEASE_TIMEOUT', 'DURABLE_EXECUTION_LEASE_LOST']).toContain(codeOf(lease.signal.reason));
  });

  it('a step that ends after the local window reports the loss', async () => {
    const { time, store } = manualClockStore();
    const sessionId = newSession();
    const lease = await acquire(store, sessionId, OWNER_A, { time });
    const error = await lease
      .withExecutionLease(async () => {
        time.block(TTL_MS + 50); // a synchronous stall: the clocks move, no timer can interrupt it
      })
      .catch((e: unknown) => e);
    expect(codeOf(error)).toBe('DURABLE_EXECUTION_LEASE_LOST');
    expect(lease.signal.aborted).toBe(true);
  });
});

describe('DurableExecutionLease: with the journal and options', () => {
  it('journal commits carry the fence and stop once the lease is lost', async () => {
    const { time, store, jump } = manualClockStore();
    const sessionId = newSession();
    const lease = await acquire(store, sessionId, OWNER_A, { time });
    const journal = await DurableSessionJournal.open(store, sessionId, { executionLease: lease, executionLeaseStore: store });
    const created = await journal.commit({ commandId: CommandId('create'), events: [lifecycleDrafts.sessionCreated()] });
    expect(created.status).toBe('committed');

    jump(TTL_MS * 10);
    await time.advance(HEARTBEAT_MS); // the next heartbeat is refused
    expect(lease.signal.aborted).toBe(true);
    expect(
      await rejectionCode(journal.commit({ commandId: CommandId('accept'), events: [lifecycleDrafts.requestAccepted('r-1')] })),
    ).toBe('DURABLE_EXECUTION_LEASE_LOST');
    expect(await store.getHeadSequence(sessionId)).toBe(1);
  });

  it('validates options before calling the store', async () => {
    const store = new LeaseFaultStore(new MemoryDurableEventStore());
    const sessionId = newSession();
    const cases = [
      { ownerId: OWNER_A, ttlMs: 5 },
      { ownerId: OWNER_A, ttlMs: 1_000, heartbeatIntervalMs: 1_000 },
      { ownerId: OWNER_A, ttlMs: 1_000, heartbeatIntervalMs: 0 },
      { ownerId: OWNER_A, ttlMs: 1_000, storeTimeoutMs: 0 },
      { ownerId: OWNER_A, ttlMs: 1_000, storeTimeoutMs: 1.5 },
      { ownerId: WorkerId('a'), ttlMs: 1_000, leaseId: '' },
      { ownerId: '' as WorkerId, ttlMs: 1_000 },
    ];
    for (const options of cases) {
      expect(await rejectionCode(DurableExecutionLease.acquire(store, sessionId, options))).toBe('DURABLE_EXECUTION_LEASE_INVALID');
    }
    const notALeaseStore = new MemoryDurableEventStore() as unknown as Record<string, unknown>;
    const plain = { append: notALeaseStore['append'] } as unknown as Parameters<typeof DurableExecutionLease.acquire>[0];
    expect(await rejectionCode(DurableExecutionLease.acquire(plain, sessionId, { ownerId: OWNER_A, ttlMs: 1_000 }))).toBe(
      'DURABLE_EXECUTION_LEASE_INVALID',
    );
    expect(store.calls).toHaveLength(0);
  });
});

describe('DurableExecutionLease on the real clock (smoke, margins of seconds)', () => {
  it('heartbeats on the host timers keep a lease alive', async () => {
    const store = new LeaseFaultStore(new MemoryDurableEventStore());
    const sessionId = newSession();
    // A 10 s TTL renewed every 250 ms: only a timer delayed by ~10 s could fail it.
    const lease = await acquire(store, sessionId, OWNER_A, { ttlMs: 10_000, heartbeatIntervalMs: 250 });
    await waitUntil(() => store.callsOf('renew').filter((call) => call.outcome === 'resolved').length >= 3, 'three heartbeats', 30_000);
    expect(lease.signal.aborted).toBe(false);
    expect((await store.inspectExecutionLease(sessionId))?.leaseId).toBe(lease.fence.leaseId);
    await lease.release();
    const renewals = store.callsOf('renew').length;
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(store.callsOf('renew')).toHaveLength(renewals); // a released handle stops heartbeating
  });
});
