/**
 * `sleep` and `waitFor` against the memory store: deadlines recorded once, bounded timers on a
 * `ManualTimeSource` (the port's `time`: its timers fire only on `advance`, never on real time), early deliveries, timeouts replayed the same way, ledger order deciding a
 * delivery/timeout race, the subscribe-then-read race, local wake-ups, and cancellation.
 */
import { describe, expect, it } from 'vitest';
import { MemoryDurableEventStore } from '../../src/adapters/memory/memory-store.js';
import { createDurabilityPort } from '../../src/core/durability/port.js';
import { readAllRecords } from '../../src/conformance/durability-helpers.js';
import { ManualTimeSource } from '../../src/core/time.js';
import { durabilityView, newSessionId, tick } from './helpers.js';

const T0 = Date.UTC(2030, 0, 1);

/** The port's clock and timers, starting at T0; time moves only on `advance`. */
function manualClock(): ManualTimeSource {
  return new ManualTimeSource(T0);
}

/** Resolves to 'settled' if `promise` settles within a few timer turns, else 'pending'. */
async function state(promise: Promise<unknown>, turns = 3): Promise<'settled' | 'pending'> {
  let settled = false;
  promise.then(
    () => (settled = true),
    () => (settled = true),
  );
  for (let turn = 0; turn < turns; turn++) await tick();
  return settled ? 'settled' : 'pending';
}

describe('sleep', () => {
  it('records the deadline once; a replay keeps it and returns at once after it', async () => {
    const store = new MemoryDurableEventStore();
    const sessionId = newSessionId();
    const clock = manualClock();
    const first = createDurabilityPort({ store, sessionId, runId: 'run-1', time: clock, maxTimerIntervalMs: 100 });
    const sleeping = first.sleep('nap', 1_000);
    expect(await state(sleeping)).toBe('pending');
    await clock.advance(400);
    expect(await state(sleeping)).toBe('pending');
    first.close();
    await expect(sleeping).rejects.toMatchObject({ name: 'AbortError' });

    // A replay 500 ms later asking for 1000 ms more keeps the recorded deadline T0 + 1000.
    await clock.advance(100);
    const replay = createDurabilityPort({ store, sessionId, runId: 'run-1', time: clock, maxTimerIntervalMs: 100 });
    const again = replay.sleep('nap', 1_000);
    expect(await state(again)).toBe('pending');
    await clock.advance(500); // now T0 + 1000: the bounded timer (100 ms at a time) re-reads the clock and ends the sleep
    expect(await state(again, 10)).toBe('settled');
    const records = await readAllRecords(store, sessionId);
    expect(records).toEqual([expect.objectContaining({ kind: 'sleep', key: 'nap', untilMs: T0 + 1_000 })]);

    await clock.advance(10_000);
    const late = createDurabilityPort({ store, sessionId, runId: 'run-1', time: clock });
    expect(await state(late.sleep('nap', 3_600_000), 1)).toBe('settled');
  });

  it('refuses a time option that is not a TimeSource', () => {
    const store = new MemoryDurableEventStore();
    // SAFETY: deliberately the wrong type, as untyped JavaScript could pass it.
    const time = { wallNow: () => T0 } as unknown as ManualTimeSource;
    expect(() => createDurabilityPort({ store, sessionId: newSessionId(), runId: 'run-1', time })).toThrow(
      expect.objectContaining({ code: 'DURABILITY_INVALID_INPUT' }),
    );
  });

  it('accepts an absolute deadline and refuses bad durations', async () => {
    const store = new MemoryDurableEventStore();
    const sessionId = newSessionId();
    const port = createDurabilityPort({ store, sessionId, runId: 'run-1', clock: () => T0 });
    await port.sleep('past', { until: T0 - 1 });
    expect(await readAllRecords(store, sessionId)).toEqual([expect.objectContaining({ untilMs: T0 - 1 })]);
    for (const bad of [-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, -0, { until: 1.5 }, { until: -5 }]) {
      // SAFETY: deliberately invalid durations.
      await expect(port.sleep('bad', bad as number)).rejects.toMatchObject({ code: 'DURABILITY_INVALID_INPUT' });
    }
  });
});

describe('waitFor', () => {
  it('resolves with a delivery recorded before the wait began (no wait record needed)', async () => {
    const store = new MemoryDurableEventStore();
    const sessionId = newSessionId();
    const port = createDurabilityPort({ store, sessionId, runId: 'run-1' });
    expect(await port.deliver({ key: 'approval', deliveryId: 'd-1', payload: { ok: true } })).toEqual({
      deliveryId: 'd-1',
      sequence: 1,
      created: true,
    });
    const result = await port.waitFor<{ ok: boolean }>('approval');
    expect(result).toEqual({ status: 'delivered', payload: { ok: true }, deliveryId: 'd-1', sequence: 1 });
    if (result.status === 'delivered') result.payload.ok = false;
    expect(await port.waitFor('approval')).toMatchObject({ payload: { ok: true } });
    expect((await readAllRecords(store, sessionId)).map((r) => r.kind)).toEqual(['delivery']);
  });

  it('is woken directly by a delivery through the same store object, without watchDurability', async () => {
    const inner = new MemoryDurableEventStore();
    const store = durabilityView(inner); // no watchDurability, no subscribe
    const sessionId = newSessionId();
    const waiter = createDurabilityPort({ store, sessionId, runId: 'run-1' });
    const waiting = waiter.waitFor('approval');
    expect(await state(waiting)).toBe('pending');
    const readsBefore = store.reads.length;
    const deliverer = createDurabilityPort({ store, sessionId, runId: 'run-1' });
    await deliverer.deliver({ key: 'approval', deliveryId: 'd-1', payload: 'yes' });
    expect(await waiting).toMatchObject({ status: 'delivered', payload: 'yes' });
    // One catch-up read after the wake-up; nothing polled while waiting.
    expect(store.reads.length - readsBefore).toBe(1);
  });

  it('is woken by the store watch for a delivery written through another port on the same store', async () => {
    const store = new MemoryDurableEventStore();
    const sessionId = newSessionId();
    const waiting = createDurabilityPort({ store, sessionId, runId: 'run-1' }).waitFor('k');
    expect(await state(waiting)).toBe('pending');
    await store.recordDurability(sessionId, { kind: 'delivery', runId: 'run-1', key: 'k', deliveryId: 'd', payload: 7 });
    expect(await waiting).toMatchObject({ status: 'delivered', payload: 7 });
  });

  it('ignores deliveries to another run or key', async () => {
    const store = new MemoryDurableEventStore();
    const sessionId = newSessionId();
    const port = createDurabilityPort({ store, sessionId, runId: 'run-1' });
    await port.deliver({ runId: 'run-2', key: 'k', deliveryId: 'd-1', payload: 1 });
    await port.deliver({ key: 'other', deliveryId: 'd-2', payload: 2 });
    expect(await port.waitFor('k', { timeoutMs: 0 })).toEqual({ status: 'timed_out', sequence: 4 });
  });

  it('records a timeout and replays it the same way, even after a late delivery', async () => {
    const store = new MemoryDurableEventStore();
    const sessionId = newSessionId();
    const clock = manualClock();
    const port = createDurabilityPort({ store, sessionId, runId: 'run-1', time: clock, maxTimerIntervalMs: 100 });
    const waiting = port.waitFor('approval', { timeoutMs: 1_000 });
    expect(await state(waiting)).toBe('pending');
    await clock.advance(1_000);
    expect(await waiting).toEqual({ status: 'timed_out', sequence: 2 });
    await port.deliver({ key: 'approval', deliveryId: 'late', payload: 'too late' });
    const replay = createDurabilityPort({ store, sessionId, runId: 'run-1', time: clock });
    expect(await replay.waitFor('approval', { timeoutMs: 1_000 })).toEqual({ status: 'timed_out', sequence: 2 });
    expect((await readAllRecords(store, sessionId)).map((r) => r.kind)).toEqual(['wait', 'wait_timeout', 'delivery']);
  });

  it('keeps the recorded timeout deadline on replay', async () => {
    const store = new MemoryDurableEventStore();
    const sessionId = newSessionId();
    const clock = manualClock();
    const first = createDurabilityPort({ store, sessionId, runId: 'run-1', time: clock, maxTimerIntervalMs: 100 });
    const waiting = first.waitFor('k', { timeoutMs: 1_000 });
    expect(await state(waiting)).toBe('pending');
    first.close();
    await expect(waiting).rejects.toMatchObject({ name: 'AbortError' });
    await clock.advance(5_000);
    const replay = createDurabilityPort({ store, sessionId, runId: 'run-1', time: clock });
    // The first wait's deadline (T0 + 1000) has passed: the replay times out at once.
    expect(await replay.waitFor('k', { timeoutMs: 60_000 })).toMatchObject({ status: 'timed_out' });
    expect(await readAllRecords(store, sessionId)).toEqual([
      expect.objectContaining({ kind: 'wait', deadlineMs: T0 + 1_000 }),
      expect.objectContaining({ kind: 'wait_timeout' }),
    ]);
  });

  it('lets the ledger order decide a delivery/timeout race, identically on every replay', async () => {
    const store = new MemoryDurableEventStore();
    const clock = manualClock();
    // Delivery first, then (after the deadline) no timeout recorded yet: delivered.
    const a = newSessionId();
    await store.recordDurability(a, { kind: 'wait', scope: 'run-1', key: 'k', deadlineMs: T0 - 1 });
    await store.recordDurability(a, { kind: 'delivery', runId: 'run-1', key: 'k', deliveryId: 'd', payload: 'won' });
    for (let replay = 0; replay < 2; replay++) {
      const port = createDurabilityPort({ store, sessionId: a, runId: 'run-1', time: clock });
      expect(await port.waitFor('k', { timeoutMs: 5 })).toMatchObject({ status: 'delivered', payload: 'won' });
    }
    // Timeout recorded before the delivery: timed out, every time.
    const b = newSessionId();
    await store.recordDurability(b, { kind: 'wait', scope: 'run-1', key: 'k', deadlineMs: T0 - 1 });
    await store.recordDurability(b, { kind: 'wait_timeout', scope: 'run-1', key: 'k' });
    await store.recordDurability(b, { kind: 'delivery', runId: 'run-1', key: 'k', deliveryId: 'd', payload: 'lost' });
    for (let replay = 0; replay < 2; replay++) {
      const port = createDurabilityPort({ store, sessionId: b, runId: 'run-1', time: clock });
      expect(await port.waitFor('k')).toEqual({ status: 'timed_out', sequence: 2 });
    }
  });

  it('sees a delivery appended between its subscribe and its read (subscribe first, then read)', async () => {
    const inner = new MemoryDurableEventStore();
    const store = durabilityView(inner); // no watchDurability: only subscribe could wake it
    const sessionId = newSessionId();
    const events: string[] = [];
    const port = createDurabilityPort({
      store,
      sessionId,
      runId: 'run-1',
      subscribe: () => {
        events.push(`subscribe (reads so far: ${store.reads.length})`);
        // Another process appends right now; its notification went out before anyone listened,
        // so this wake is never called. Only a read AFTER subscribing can find the delivery.
        void inner.recordDurability(sessionId, { kind: 'delivery', runId: 'run-1', key: 'k', deliveryId: 'racer', payload: 1 });
        return () => events.push('unsubscribe');
      },
    });
    const result = await port.waitFor('k', { timeoutMs: 2_000 });
    expect(result).toMatchObject({ status: 'delivered', deliveryId: 'racer' });
    expect(events).toEqual(['subscribe (reads so far: 0)', 'unsubscribe']);
  });

  it('is woken by the host subscribe hook for a delivery from another process', async () => {
    const inner = new MemoryDurableEventStore();
    const sessionId = newSessionId();
    let wakeHook: (() => void) | undefined;
    let unsubscribed = 0;
    const store = durabilityView(inner);
    const port = createDurabilityPort({
      store,
      sessionId,
      runId: 'run-1',
      subscribe: (wake) => {
        wakeHook = wake;
        return () => (unsubscribed += 1);
      },
    });
    const waiting = port.waitFor('k');
    expect(await state(waiting)).toBe('pending');
    const readsWhileWaiting = store.reads.length;
    await tick(20);
    expect(store.reads.length).toBe(readsWhileWaiting); // no hidden polling
    await inner.recordDurability(sessionId, { kind: 'delivery', runId: 'run-1', key: 'k', deliveryId: 'remote', payload: 'hi' });
    expect(await state(waiting)).toBe('pending'); // written by "another process": nothing woke us yet
    wakeHook?.();
    expect(await waiting).toMatchObject({ status: 'delivered', payload: 'hi' });
    expect(unsubscribed).toBe(1);
  });

  it('runs the unsubscribe on every completion and cancellation', async () => {
    const store = new MemoryDurableEventStore();
    const sessionId = newSessionId();
    let subscribed = 0;
    let unsubscribed = 0;
    const controller = new AbortController();
    const port = createDurabilityPort({
      store,
      sessionId,
      runId: 'run-1',
      signal: controller.signal,
      subscribe: () => {
        subscribed += 1;
        return () => (unsubscribed += 1);
      },
    });
    await port.deliver({ key: 'early', deliveryId: 'd', payload: null });
    await port.waitFor('early'); // delivered
    await port.waitFor('quick', { timeoutMs: 0 }); // timed out
    const pending = port.waitFor('never');
    expect(await state(pending)).toBe('pending');
    controller.abort();
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
    expect([subscribed, unsubscribed]).toEqual([3, 3]);
  });
});

describe('cancellation', () => {
  it('releases local waiters with an AbortError and keeps every durable fact', async () => {
    const store = new MemoryDurableEventStore();
    const sessionId = newSessionId();
    const controller = new AbortController();
    const port = createDurabilityPort({ store, sessionId, runId: 'run-1', signal: controller.signal });
    await port.step('done', () => 'kept');
    const sleeping = port.sleep('nap', 3_600_000);
    const waiting = port.waitFor('approval', { timeoutMs: 3_600_000 });
    let gate!: () => void;
    const bodyFinished = new Promise<void>((resolve) => (gate = resolve));
    const stepping = port.step('slow', async () => {
      await bodyFinished;
      return 'recorded after the abort';
    });
    expect(await state(Promise.race([sleeping, waiting, stepping]))).toBe('pending');
    controller.abort();
    await expect(sleeping).rejects.toMatchObject({ name: 'AbortError' });
    await expect(waiting).rejects.toMatchObject({ name: 'AbortError' });
    await expect(stepping).rejects.toMatchObject({ name: 'AbortError' });
    await expect(port.step('later', () => 1)).rejects.toMatchObject({ name: 'AbortError' });
    // The body that was running finishes; its effect happened, so its result is still recorded.
    gate();
    await tick(5);
    const kinds = (await readAllRecords(store, sessionId)).map((r) => `${r.kind}:${r.key}`);
    expect(kinds).toEqual(['step:done', 'sleep:nap', 'wait:approval', 'step:slow']);
    const replay = createDurabilityPort({ store, sessionId, runId: 'run-1' });
    expect(await replay.step('done', () => 'not run')).toBe('kept');
    expect(await replay.step('slow', () => 'not run')).toBe('recorded after the abort');
  });

  it('rejects at once on an already aborted signal and after close()', async () => {
    const store = new MemoryDurableEventStore();
    const sessionId = newSessionId();
    const port = createDurabilityPort({ store, sessionId, runId: 'run-1', signal: AbortSignal.abort() });
    let runs = 0;
    await expect(port.step('k', () => ((runs += 1), 1))).rejects.toMatchObject({ name: 'AbortError' });
    const closed = createDurabilityPort({ store, sessionId, runId: 'run-1' });
    closed.close();
    closed.close();
    await expect(closed.waitFor('k')).rejects.toMatchObject({ name: 'AbortError' });
    await expect(closed.deliver({ key: 'k', deliveryId: 'd', payload: 1 })).rejects.toMatchObject({ name: 'AbortError' });
    expect(runs).toBe(0);
    expect((await store.readDurability(sessionId)).headSequence).toBeNull();
  });
});
