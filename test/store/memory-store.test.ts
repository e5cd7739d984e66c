/**
 * Unit tests of MemoryDurableEventStore beyond the shared conformance run: its options (clock,
 * test hooks), watcher isolation, copy semantics and ephemerality.
 */
import { describe, expect, it } from 'vitest';
import { MemoryDurableEventStore } from '../../src/adapters/memory/memory-store.js';
import { markerDraft, markerDrafts, sessionCreatedDraft } from '../../src/conformance/fixtures.js';
import type { DurableAppendNotice, DurableSessionStore } from '../../src/core/store.js';
import { isDurableEventStoreError } from '../../src/protocol/errors.js';
import { EventSequence, SessionId, WorkerId } from '../../src/protocol/ids.js';

// Type-level: the memory store implements the whole contract.
new MemoryDurableEventStore() satisfies DurableSessionStore;

const sessionId = SessionId('memory-session');

function manualClock(start = Date.UTC(2025, 5, 1)): { now: () => number; advance: (ms: number) => void } {
  let nowMs = start;
  return { now: () => nowMs, advance: (ms) => void (nowMs += ms) };
}

describe('MemoryDurableEventStore', () => {
  it('stamps recordedAt from its clock option', async () => {
    const clock = manualClock(Date.UTC(2025, 0, 2, 3, 4, 5, 6));
    const store = new MemoryDurableEventStore({ clock: clock.now });
    const first = await store.append(sessionId, [sessionCreatedDraft()]);
    clock.advance(1_000);
    const second = await store.append(sessionId, [markerDraft('later')]);
    expect(first.events[0]?.recordedAt).toBe('2025-01-02T03:04:05.006Z');
    expect(second.events[0]?.recordedAt).toBe('2025-01-02T03:04:06.006Z');
    expect(second.events[0]?.occurredAt).toBe('2025-01-02T03:04:06.006Z');
  });

  it('expires leases on its clock', async () => {
    const clock = manualClock();
    const store = new MemoryDurableEventStore({ clock: clock.now });
    const held = await store.acquireExecutionLease(sessionId, { ownerId: WorkerId('a'), leaseId: 'l-a', ttlMs: 1_000 });
    clock.advance(999);
    await expect(
      store.acquireExecutionLease(sessionId, { ownerId: WorkerId('b'), leaseId: 'l-b', ttlMs: 1_000 }),
    ).rejects.toMatchObject({ code: 'DURABLE_EXECUTION_LEASE_CONFLICT' });
    clock.advance(1);
    const taken = await store.acquireExecutionLease(sessionId, { ownerId: WorkerId('b'), leaseId: 'l-b', ttlMs: 1_000 });
    expect(taken.fencingToken).toBe(held.fencingToken + 1);
    expect(taken.acquiredAtMs).toBe(clock.now());
  });

  describe('testHooks.beforeCommit', () => {
    it('runs with the session ID right before a batch is stored', async () => {
      const calls: string[] = [];
      const store = new MemoryDurableEventStore({ testHooks: { beforeCommit: (id) => void calls.push(id) } });
      await store.append(sessionId, markerDrafts(2));
      expect(calls).toEqual([sessionId]);
    });

    it('is not reached by refused appends', async () => {
      const calls: string[] = [];
      const store = new MemoryDurableEventStore({ testHooks: { beforeCommit: (id) => void calls.push(id) } });
      await expect(
        store.append(sessionId, [markerDraft('x')], { expectedLastSequence: EventSequence(3) }),
      ).rejects.toMatchObject({ code: 'DURABLE_EVENT_SEQUENCE_CONFLICT' });
      await expect(store.append(sessionId, [])).rejects.toMatchObject({ code: 'DURABLE_EVENT_INVALID_INPUT' });
      expect(calls).toEqual([]);
    });

    it('turns a throw into DURABLE_EVENT_WRITE_FAILED with nothing written and no notice', async () => {
      const injected = new Error('disk on fire');
      let failNext = true;
      const store = new MemoryDurableEventStore({
        testHooks: {
          beforeCommit: () => {
            if (failNext) {
              failNext = false;
              throw injected;
            }
          },
        },
      });
      const notices: DurableAppendNotice[] = [];
      store.watch(sessionId, (notice) => notices.push(notice));
      const error = await store.append(sessionId, markerDrafts(3)).catch((reason: unknown) => reason);
      expect(isDurableEventStoreError(error)).toBe(true);
      expect(error).toMatchObject({ code: 'DURABLE_EVENT_WRITE_FAILED', cause: injected });
      expect(await store.getHeadSequence(sessionId)).toBeNull();
      await new Promise((resolve) => setTimeout(resolve, 0));
      expect(notices).toEqual([]);
      const retry = await store.append(sessionId, markerDrafts(3), { expectedLastSequence: null });
      expect(retry.lastSequence).toBe(3);
    });
  });

  describe('watch', () => {
    it('delivers after the batch is stored, outside the append call', async () => {
      const store = new MemoryDurableEventStore();
      const seen: Array<{ notice: DurableAppendNotice; head: number | null }> = [];
      store.watch(sessionId, (notice) => {
        void store.getHeadSequence(sessionId).then((head) => seen.push({ notice, head }));
      });
      const pending = store.append(sessionId, markerDrafts(2));
      expect(seen).toEqual([]); // never synchronously inside append
      await pending;
      await new Promise((resolve) => setTimeout(resolve, 0));
      expect(seen).toEqual([{ notice: { sessionId, lastSequence: 2 }, head: 2 }]);
    });

    it('isolates a throwing listener from the appender and from other listeners', async () => {
      const store = new MemoryDurableEventStore();
      const heard: number[] = [];
      store.watch(sessionId, () => {
        throw new Error('listener bug');
      });
      store.watch(sessionId, (notice) => heard.push(notice.lastSequence));
      await store.append(sessionId, [markerDraft('a')]);
      await store.append(sessionId, [markerDraft('b')]);
      await new Promise((resolve) => setTimeout(resolve, 0));
      expect(heard).toEqual([1, 2]);
    });

    it('stops after unsubscribe', async () => {
      const store = new MemoryDurableEventStore();
      const heard: number[] = [];
      const stop = store.watch(sessionId, (notice) => heard.push(notice.lastSequence));
      await store.append(sessionId, [markerDraft('a')]);
      await new Promise((resolve) => setTimeout(resolve, 0));
      stop();
      stop();
      await store.append(sessionId, [markerDraft('b')]);
      await new Promise((resolve) => setTimeout(resolve, 0));
      expect(heard).toEqual([1]);
    });
  });

  it('stores copies: later changes to a draft or a returned event do not leak in', async () => {
    const store = new MemoryDurableEventStore();
    const payload = { list: [1, 2] };
    const draft = markerDraft('copy', payload);
    const result = await store.append(sessionId, [draft]);
    payload.list.push(3);
    const page = await store.read(sessionId);
    (page.events[0]?.data as { output: { list: number[] } }).output.list.push(4);
    (result.events[0]?.data as { output: unknown }).output = 'changed';
    const again = await store.read(sessionId);
    expect(again.events[0]?.data).toEqual({ output: { list: [1, 2] } });
  });

  it('is ephemeral: another instance shares nothing', async () => {
    const first = new MemoryDurableEventStore();
    await first.append(sessionId, markerDrafts(2));
    await first.acquireExecutionLease(sessionId, { ownerId: WorkerId('a'), leaseId: 'l', ttlMs: 60_000 });
    const second = new MemoryDurableEventStore();
    expect(await second.getHeadSequence(sessionId)).toBeNull();
    expect(await second.requiresExecutionLease(sessionId)).toBe(false);
  });

  it('reads pages by index without scanning from the start', async () => {
    const store = new MemoryDurableEventStore();
    await store.append(sessionId, markerDrafts(10));
    const page = await store.read(sessionId, { after: EventSequence(7), limit: 2 });
    expect(page.events.map((event) => event.sequence)).toEqual([8, 9]);
    expect(page).toMatchObject({ nextCursor: 9, headSequence: 10, hasMore: true });
  });

  it('keeps inspect results detached from its lease state', async () => {
    const store = new MemoryDurableEventStore();
    const record = await store.acquireExecutionLease(sessionId, { ownerId: WorkerId('a'), leaseId: 'l', ttlMs: 60_000 });
    record.released = true;
    const inspected = await store.inspectExecutionLease(sessionId);
    expect(inspected?.released).toBe(false);
  });
});
