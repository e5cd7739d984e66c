/**
 * The lease handle on a ManualTimeSource: heartbeats, the watchdog, the local expiry window and
 * call deadlines driven by explicit `advance` calls instead of the wall clock, so these tests
 * cannot flake however loaded the machine is (nothing here waits on real time).
 */
import { describe, expect, it } from 'vitest';
import { MemoryDurableEventStore } from '../../src/adapters/memory/memory-store.js';
import { DurableExecutionLease } from '../../src/core/lease/index.js';
import type {
  DurableExecutionFence,
  DurableExecutionLeaseRecord,
  DurableLeaseRenewOptions,
} from '../../src/core/store.js';
import { ManualTimeSource, systemTime } from '../../src/core/time.js';
import { withDeadline } from '../../src/core/abort.js';
import { SessionId, WorkerId } from '../../src/protocol/ids.js';

/** A memory store whose renewals can be made to hang (a stalled network or store). */
class StallableStore extends MemoryDurableEventStore {
  stallRenewals = false;
  renewals = 0;

  override renewExecutionLease(
    sessionId: SessionId,
    fence: DurableExecutionFence,
    options: DurableLeaseRenewOptions,
  ): Promise<DurableExecutionLeaseRecord> {
    this.renewals += 1;
    if (this.stallRenewals) return new Promise(() => undefined);
    return super.renewExecutionLease(sessionId, fence, options);
  }
}

function setup(): { time: ManualTimeSource; store: StallableStore; sessionId: SessionId } {
  const time = new ManualTimeSource();
  const store = new StallableStore({ clock: () => time.wallNow() });
  return { time, store, sessionId: SessionId(`manual-${Math.random().toString(36).slice(2)}`) };
}

const options = (time: ManualTimeSource) => ({
  ownerId: WorkerId('worker-a'),
  ttlMs: 30_000,
  heartbeatIntervalMs: 10_000,
  storeTimeoutMs: 5_000,
  time,
});

describe('DurableExecutionLease on a manual clock', () => {
  it('refuses a time option that is not a TimeSource before any store call, like every other time option', async () => {
    const { time, store, sessionId } = setup();
    // No setTimer: a heartbeat would only fail later, inside a timer callback.
    const broken = { wallNow: () => time.wallNow(), monotonicNow: () => time.monotonicNow(), clearTimer: () => undefined };
    const attempt = DurableExecutionLease.acquire(store, sessionId, { ...options(time), time: broken as never });
    await expect(attempt).rejects.toMatchObject({ code: 'DURABLE_EXECUTION_LEASE_INVALID' });
    await expect(attempt).rejects.toThrow(/time must be a TimeSource/);
    expect(await store.inspectExecutionLease(sessionId)).toBeNull();
  });

  it('renews once per heartbeat interval and keeps the lease far beyond its TTL', async () => {
    const { time, store, sessionId } = setup();
    const lease = await DurableExecutionLease.acquire(store, sessionId, options(time));
    await time.advance(9_999);
    expect(store.renewals).toBe(0);
    await time.advance(1);
    expect(store.renewals).toBe(1);
    await time.advance(10 * 60_000);
    expect(store.renewals).toBe(61);
    expect(lease.signal.aborted).toBe(false);
    const stored = await store.inspectExecutionLease(sessionId);
    expect(stored?.expiresAtMs).toBe(time.wallNow() + 30_000);
    await lease.release();
    expect(time.pendingTimers).toBe(0);
  });

  it('a stalled renewal times out at storeTimeoutMs and aborts the signal (fails closed)', async () => {
    const { time, store, sessionId } = setup();
    const lease = await DurableExecutionLease.acquire(store, sessionId, options(time));
    store.stallRenewals = true;
    await time.advance(10_000); // the heartbeat fires; its renewal hangs
    expect(lease.signal.aborted).toBe(false);
    await time.advance(4_999);
    expect(lease.signal.aborted).toBe(false);
    await time.advance(1);
    expect(lease.signal.aborted).toBe(true);
    expect((lease.signal.reason as { code?: string }).code).toBe('DURABLE_EXECUTION_LEASE_TIMEOUT');
    expect(time.pendingTimers).toBe(0);
  });

  it('the watchdog ends the window when no renewal was confirmed, even if the heartbeat never ran', async () => {
    const { time, store, sessionId } = setup();
    const lease = await DurableExecutionLease.acquire(store, sessionId, {
      ...options(time),
      heartbeatIntervalMs: 29_999,
      storeTimeoutMs: 300_000,
    });
    store.stallRenewals = true;
    await time.advance(29_999);
    expect(lease.signal.aborted).toBe(false);
    await time.advance(1);
    expect(lease.signal.aborted).toBe(true);
    expect((lease.signal.reason as { code?: string }).code).toBe('DURABLE_EXECUTION_LEASE_LOST');
  });

  it('a wall clock that jumps forward shortens the window: the next call fails closed', async () => {
    const { time, store, sessionId } = setup();
    const lease = await DurableExecutionLease.acquire(store, sessionId, options(time));
    time.stepWall(31_000); // the host was suspended: the monotonic clock did not move
    await expect(lease.withExecutionLease(async () => 'ran')).rejects.toMatchObject({ code: 'DURABLE_EXECUTION_LEASE_LOST' });
    expect(lease.signal.aborted).toBe(true);
  });
});

describe('withDeadline on a manual clock', () => {
  it('settles at the deadline exactly, not before', async () => {
    const time = new ManualTimeSource();
    let seen: AbortSignal | undefined;
    const outcome = withDeadline(
      1_000,
      undefined,
      (signal) => {
        seen = signal;
        return new Promise<never>(() => undefined);
      },
      () => new Error('deadline'),
      time,
    ).then(
      () => 'resolved',
      (error: Error) => error.message,
    );
    await time.advance(999);
    expect(seen?.aborted).toBe(false);
    await time.advance(1);
    expect(await outcome).toBe('deadline');
    expect(seen?.aborted).toBe(true);
  });

  it('uses the host timers by default', () => {
    expect(systemTime.wallNow()).toBeGreaterThan(0);
  });
});
