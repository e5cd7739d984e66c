/**
 * DurableEventSubscription against the memory store: the spec example, replay + barrier + live,
 * on-demand paging, fail-closed cursors and pages, close / abort, follow: false, the end after
 * session_closed, polling fallback, store deadlines and option validation. Poll intervals and
 * store deadlines run on a `ManualTimeSource` (the `time` option), so no assertion depends on how
 * fast the machine runs; one polling smoke test uses the real clock without a timing assertion.
 */
import { describe, expect, it } from 'vitest';
import { MemoryDurableEventStore } from '../../src/adapters/memory/memory-store.js';
import { markerDrafts } from '../../src/conformance/fixtures.js';
import { DurableEventSubscription, type DurableSubscriptionMessage } from '../../src/core/subscription/index.js';
import type { DurableReadOptions } from '../../src/core/store.js';
import { durableEventCursor, parseDurableEventCursor, type DurableEventCursor } from '../../src/protocol/cursor.js';
import { DurableEventSubscriptionError, isAbortError } from '../../src/protocol/errors.js';
import { DurableEventType, type DurableEventEnvelope } from '../../src/protocol/events.js';
import { EventSequence, SessionId } from '../../src/protocol/ids.js';
import { deferred, sleepIgnoringSignal, wrapStore } from '../journal/store-wrappers.js';
import { ManualTimeSource } from '../../src/core/time.js';

const sessionId = SessionId('subscription-session');

async function seeded(count: number, store = new MemoryDurableEventStore()): Promise<MemoryDurableEventStore> {
  if (count > 0) await store.append(sessionId, markerDrafts(count, 'seed'));
  return store;
}

function summary(message: DurableSubscriptionMessage): string {
  return message.type === 'caught_up' ? `caught_up@${String(message.headSequence)}` : `${message.event.sequence}${message.live ? 'L' : 'R'}`;
}

async function takeN(subscription: DurableEventSubscription, count: number): Promise<string[]> {
  const out: string[] = [];
  for (let index = 0; index < count; index++) {
    const result = await subscription.next();
    if (result.done === true) break;
    out.push(summary(result.value));
  }
  return out;
}

describe('DurableEventSubscription: the spec example', () => {
  it('replays, marks the client ready at caught_up, then delivers and saves cursors', async () => {
    const store = await seeded(3);
    let savedCursor: DurableEventCursor | null = null;
    const delivered: number[] = [];
    let readyAt: EventSequence | null | undefined;
    const markClientReady = (head: EventSequence | null): void => {
      readyAt = head;
    };
    const deliver = async (event: DurableEventEnvelope): Promise<void> => {
      delivered.push(event.sequence);
      if (event.sequence === 3) await store.append(sessionId, [{ type: DurableEventType.SESSION_CLOSED, data: { reason: 'completed' } }]);
    };
    const saveCursor = async (cursor: DurableEventCursor): Promise<void> => {
      savedCursor = cursor;
    };

    const subscription = await DurableEventSubscription.open(store, sessionId, {
      after: savedCursor,
      pageSize: 100,
      pollIntervalMs: 250,
    });

    for await (const message of subscription) {
      if (message.type === 'caught_up') {
        markClientReady(message.headSequence);
        continue;
      }

      await deliver(message.event);
      await saveCursor(message.cursor);
    }

    expect(readyAt).toBe(3);
    expect(delivered).toEqual([1, 2, 3, 4]);
    expect(savedCursor).toMatchObject({ version: 1, sessionId, sequence: 4 });
  });
});

describe('Cursor reads: the spec example', () => {
  it('reads a page after sequence 20, and turns an event into a cursor and back', async () => {
    const store = await seeded(130);
    const consumed: number[] = [];
    const consume = (event: DurableEventEnvelope): void => {
      consumed.push(event.sequence);
    };

    const page = await store.read(sessionId, {
      after: EventSequence(20),
      limit: 100,
    });

    for (const event of page.events) {
      consume(event);
    }

    expect(consumed).toEqual(Array.from({ length: 100 }, (_, index) => index + 21));
    expect(page.nextCursor).toBe(120);
    expect(page.headSequence).toBe(130);
    expect(page.hasMore).toBe(true);

    const cursor = durableEventCursor(page.events.at(-1)!);
    expect(parseDurableEventCursor(JSON.parse(JSON.stringify(cursor)))).toEqual(cursor);
    expect(() => parseDurableEventCursor({ sessionId, sequence: 120, eventId: cursor.eventId })).toThrow();
    const resumed = await DurableEventSubscription.open(store, sessionId, { after: cursor, follow: false, pageSize: 100 });
    expect(await takeN(resumed, 20)).toEqual([...Array.from({ length: 10 }, (_, index) => `${index + 121}R`), 'caught_up@130']);
  });
});

describe('DurableEventSubscription: replay, barrier, live', () => {
  it('replays through the head captured at open, emits one caught_up, then live events', async () => {
    const store = await seeded(3);
    const subscription = await DurableEventSubscription.open(store, sessionId, { pageSize: 2 });
    await store.append(sessionId, markerDrafts(2, 'after-open'));
    expect(await takeN(subscription, 6)).toEqual(['1R', '2R', '3R', 'caught_up@3', '4L', '5L']);
    const pending = subscription.next();
    await store.append(sessionId, markerDrafts(1, 'live'));
    expect(summary(((await pending) as IteratorYieldResult<DurableSubscriptionMessage>).value)).toBe('6L');
    subscription.close();
  });

  it('gives each event its cursor', async () => {
    const store = await seeded(2);
    const subscription = await DurableEventSubscription.open(store, sessionId, { follow: false });
    const events = (await store.read(sessionId)).events;
    const first = await subscription.next();
    expect(first.value).toEqual({ type: 'event', event: events[0], cursor: durableEventCursor(events[0]!), live: false });
  });

  it('reads a page only when the consumer asks, never more than pageSize', async () => {
    const inner = await seeded(7);
    const reads: Array<DurableReadOptions | undefined> = [];
    const store = wrapStore(inner, {
      read: async (read, id, options) => {
        reads.push(options);
        return read(id, options);
      },
    });
    const subscription = await DurableEventSubscription.open(store, sessionId, { pageSize: 3, follow: false });
    expect(reads).toHaveLength(0);
    await subscription.next();
    expect(reads.map((o) => [o?.after, o?.limit])).toEqual([[undefined, 3]]);
    await subscription.next();
    await subscription.next();
    expect(reads).toHaveLength(1);
    await subscription.next();
    expect(reads.map((o) => [o?.after, o?.limit])).toEqual([
      [undefined, 3],
      [3, 3],
    ]);
    expect(await takeN(subscription, 10)).toEqual(['5R', '6R', '7R', 'caught_up@7']);
    // The last replay page is cut at the barrier: limit 1, not 3.
    expect(reads.at(-1)).toMatchObject({ after: 6, limit: 1 });
  });

  it('serves concurrent next() calls in order', async () => {
    const store = await seeded(3);
    const subscription = await DurableEventSubscription.open(store, sessionId, { follow: false, pageSize: 1 });
    const results = await Promise.all([subscription.next(), subscription.next(), subscription.next(), subscription.next(), subscription.next()]);
    expect(results.map((r) => (r.done === true ? 'done' : summary(r.value)))).toEqual(['1R', '2R', '3R', 'caught_up@3', 'done']);
  });

  it('starts an empty session with caught_up null and follows the first append', async () => {
    const store = new MemoryDurableEventStore();
    const subscription = await DurableEventSubscription.open(store, sessionId);
    expect(subscription.replayHeadSequence).toBeNull();
    expect(await takeN(subscription, 1)).toEqual(['caught_up@null']);
    const pending = subscription.next();
    await store.append(sessionId, markerDrafts(2, 'first'));
    expect(summary(((await pending) as IteratorYieldResult<DurableSubscriptionMessage>).value)).toBe('1L');
    expect(await takeN(subscription, 1)).toEqual(['2L']);
    subscription.close();
  });

  it('resumes after a saved cursor with nothing lost and nothing repeated', async () => {
    const store = await seeded(5);
    const first = await DurableEventSubscription.open(store, sessionId, { follow: false });
    let cursor: DurableEventCursor | undefined;
    for (let index = 0; index < 2; index++) {
      const result = await first.next();
      if (result.done !== true && result.value.type === 'event') cursor = result.value.cursor;
    }
    first.close();
    await store.append(sessionId, markerDrafts(1, 'meanwhile'));
    const second = await DurableEventSubscription.open(store, sessionId, { after: cursor ?? null, follow: false });
    expect(second.replayHeadSequence).toBe(6);
    expect(await takeN(second, 10)).toEqual(['3R', '4R', '5R', '6R', 'caught_up@6']);
  });
});

describe('DurableEventSubscription: ending', () => {
  it('follow: false replays only the snapshot that existed at open', async () => {
    const store = await seeded(2);
    const subscription = await DurableEventSubscription.open(store, sessionId, { follow: false });
    await store.append(sessionId, markerDrafts(3, 'late'));
    expect(await takeN(subscription, 10)).toEqual(['1R', '2R', 'caught_up@2']);
    expect(subscription.closed).toBe(true);
  });

  it('ends after a live session_closed', async () => {
    const store = new MemoryDurableEventStore();
    await store.append(sessionId, [{ type: DurableEventType.SESSION_CREATED, data: {} }]);
    const subscription = await DurableEventSubscription.open(store, sessionId);
    expect(await takeN(subscription, 2)).toEqual(['1R', 'caught_up@1']);
    const pending = subscription.next();
    await store.append(sessionId, [{ type: DurableEventType.SESSION_CLOSED, data: { reason: 'completed' } }]);
    const closed = await pending;
    expect(closed.done !== true && closed.value.type === 'event' && closed.value.event.type).toBe('session_closed');
    await expect(subscription.next()).resolves.toEqual({ done: true, value: undefined });
  });

  it('ends after caught_up when the replay contains session_closed, or the cursor names it', async () => {
    const store = new MemoryDurableEventStore();
    await store.append(sessionId, [
      { type: DurableEventType.SESSION_CREATED, data: {} },
      { type: DurableEventType.SESSION_CLOSED, data: { reason: 'completed' } },
    ]);
    const replay = await DurableEventSubscription.open(store, sessionId);
    expect(await takeN(replay, 10)).toEqual(['1R', '2R', 'caught_up@2']);
    const closedEvent = (await store.read(sessionId)).events[1]!;
    const resumed = await DurableEventSubscription.open(store, sessionId, { after: durableEventCursor(closedEvent) });
    expect(await takeN(resumed, 10)).toEqual(['caught_up@2']);
  });

  it('close() releases a pending wait; the pending and later next() resolve done; watch is released', async () => {
    const inner = new MemoryDurableEventStore();
    let watching = 0;
    const store = wrapStore(inner);
    store.watch = (id, listener) => {
      watching += 1;
      const stop = inner.watch(id, listener);
      return () => {
        watching -= 1;
        stop();
      };
    };
    const subscription = await DurableEventSubscription.open(store, sessionId);
    await subscription.next();
    const pending = subscription.next();
    await sleepIgnoringSignal(5);
    expect(watching).toBe(1);
    subscription.close();
    await expect(pending).resolves.toEqual({ done: true, value: undefined });
    await expect(subscription.next()).resolves.toEqual({ done: true, value: undefined });
    expect(watching).toBe(0);
    subscription.close(); // idempotent
  });

  it('return() (a for-await break) closes the subscription', async () => {
    const store = await seeded(3);
    const subscription = await DurableEventSubscription.open(store, sessionId);
    for await (const message of subscription) {
      if (message.type === 'event') break;
    }
    expect(subscription.closed).toBe(true);
    await expect(subscription.next()).resolves.toEqual({ done: true, value: undefined });
  });

  it('close() during an in-flight read resolves the pending next() as done', async () => {
    const inner = await seeded(3);
    const entered = deferred();
    const store = wrapStore(inner, {
      read: async (read, id, options) => {
        entered.resolve();
        await sleepIgnoringSignal(20);
        return read(id, options);
      },
    });
    const subscription = await DurableEventSubscription.open(store, sessionId);
    const pending = subscription.next();
    await entered.promise;
    subscription.close();
    await expect(pending).resolves.toEqual({ done: true, value: undefined });
  });

  it('an aborted signal rejects the pending and every later next() with AbortError', async () => {
    const store = new MemoryDurableEventStore();
    const controller = new AbortController();
    const subscription = await DurableEventSubscription.open(store, sessionId, { signal: controller.signal });
    await subscription.next();
    const pending = subscription.next();
    controller.abort();
    const error = await pending.catch((e: unknown) => e);
    expect(isAbortError(error)).toBe(true);
    expect(isAbortError(await subscription.next().catch((e: unknown) => e))).toBe(true);
  });

  it('an abort during an in-flight read rejects with AbortError', async () => {
    const inner = await seeded(2);
    const entered = deferred();
    const store = wrapStore(inner, {
      read: async (read, id, options) => {
        entered.resolve();
        await sleepIgnoringSignal(20);
        return read(id, options);
      },
    });
    const controller = new AbortController();
    const subscription = await DurableEventSubscription.open(store, sessionId, { signal: controller.signal });
    const pending = subscription.next();
    await entered.promise;
    controller.abort();
    expect(isAbortError(await pending.catch((e: unknown) => e))).toBe(true);
  });
});

describe('DurableEventSubscription: waiting for appends', () => {
  it('falls back to polling a store without watch', async () => {
    const time = new ManualTimeSource();
    const inner = await seeded(1);
    let reads = 0;
    const store = wrapStore(inner, {
      watch: false,
      read: async (read, ...args) => {
        reads += 1;
        return read(...args);
      },
    });
    const subscription = await DurableEventSubscription.open(store, sessionId, { pollIntervalMs: 2, time });
    expect(await takeN(subscription, 2)).toEqual(['1R', 'caught_up@1']);
    const pending = subscription.next();
    await time.advance(0);
    const first = reads; // the empty live read; the wait sleeps one poll interval
    await time.advance(1);
    expect(reads).toBe(first);
    await time.advance(1);
    expect(reads).toBe(first + 1);
    await time.advance(2 * 5);
    expect(reads).toBe(first + 6); // one read per interval
    await inner.append(sessionId, markerDrafts(1, 'polled'));
    await time.advance(2);
    expect(summary(((await pending) as IteratorYieldResult<DurableSubscriptionMessage>).value)).toBe('2L');
    subscription.close();
  });

  it('polls on the real clock too (smoke: no timing assertion)', async () => {
    const inner = await seeded(1);
    const store = wrapStore(inner, { watch: false });
    const subscription = await DurableEventSubscription.open(store, sessionId, { pollIntervalMs: 5 });
    expect(await takeN(subscription, 2)).toEqual(['1R', 'caught_up@1']);
    const pending = subscription.next();
    await sleepIgnoringSignal(20);
    await inner.append(sessionId, markerDrafts(1, 'polled'));
    expect(summary(((await pending) as IteratorYieldResult<DurableSubscriptionMessage>).value)).toBe('2L');
    subscription.close();
  });

  it('uses watch instead of polling: one empty read, then it waits for the notification', async () => {
    const time = new ManualTimeSource();
    const inner = await seeded(1);
    let reads = 0;
    const store = wrapStore(inner, {
      read: async (read, ...args) => {
        reads += 1;
        return read(...args);
      },
    });
    const subscription = await DurableEventSubscription.open(store, sessionId, { pollIntervalMs: 1, time });
    expect(await takeN(subscription, 2)).toEqual(['1R', 'caught_up@1']);
    const pending = subscription.next();
    await time.advance(1_000); // a thousand poll intervals
    expect(reads).toBe(2); // the replay page and one empty live read: no polling
    expect(time.pendingTimers).toBe(0);
    await inner.append(sessionId, markerDrafts(1, 'pushed'));
    expect(summary(((await pending) as IteratorYieldResult<DurableSubscriptionMessage>).value)).toBe('2L');
    subscription.close();
  });

  it('loses no wake-up when an append lands between the empty read and the wait', async () => {
    const inner = await seeded(1);
    let injectAfterRead = false;
    const store = wrapStore(inner, {
      read: async (read, id, options) => {
        const page = await read(id, options);
        if (injectAfterRead && page.events.length === 0) {
          injectAfterRead = false;
          await inner.append(sessionId, markerDrafts(1, 'racing'));
          await sleepIgnoringSignal(1); // the notification is delivered before the read returns
        }
        return page;
      },
    });
    // The poll timer is on a manual clock that never moves: only the watch flag can deliver the event.
    const subscription = await DurableEventSubscription.open(store, sessionId, { pollIntervalMs: 60_000, time: new ManualTimeSource() });
    expect(await takeN(subscription, 2)).toEqual(['1R', 'caught_up@1']);
    injectAfterRead = true;
    expect(await takeN(subscription, 1)).toEqual(['2L']);
    subscription.close();
  });

  it('bounds each store read by storeTimeoutMs', async () => {
    const time = new ManualTimeSource();
    const inner = await seeded(1);
    let slow = false;
    const store = wrapStore(inner, {
      read: async (read, ...args) => {
        if (slow) await new Promise<void>((resolve) => time.setTimer(resolve, 50)); // ignores its signal
        return read(...args);
      },
    });
    const subscription = await DurableEventSubscription.open(store, sessionId, { storeTimeoutMs: 5, time });
    slow = true;
    const pending = subscription.next();
    await time.advance(4);
    let settled = false;
    void pending.then(
      () => (settled = true),
      () => (settled = true),
    );
    await time.advance(0);
    expect(settled).toBe(false);
    await time.advance(1);
    await expect(pending).rejects.toMatchObject({ code: 'DURABLE_EVENT_IO_TIMEOUT' });
    await expect(subscription.next()).resolves.toEqual({ done: true, value: undefined });
  });
});

describe('DurableEventSubscription: options', () => {
  it.each<[string, object]>([
    ['pageSize 0', { pageSize: 0 }],
    ['pageSize 1001', { pageSize: 1001 }],
    ['pollIntervalMs 0', { pollIntervalMs: 0 }],
    ['pollIntervalMs above the maximum', { pollIntervalMs: 60_001 }],
    ['storeTimeoutMs 0', { storeTimeoutMs: 0 }],
    ['follow not a boolean', { follow: 'yes' }],
    ['time not a TimeSource', { time: {} }],
  ])('rejects %s', async (_name, options) => {
    await expect(DurableEventSubscription.open(new MemoryDurableEventStore(), sessionId, options)).rejects.toBeInstanceOf(
      DurableEventSubscriptionError,
    );
  });

  it('rejects an invalid session ID and an already aborted signal', async () => {
    await expect(DurableEventSubscription.open(new MemoryDurableEventStore(), '' as SessionId)).rejects.toBeInstanceOf(
      DurableEventSubscriptionError,
    );
    const controller = new AbortController();
    controller.abort();
    const error = await DurableEventSubscription.open(new MemoryDurableEventStore(), sessionId, { signal: controller.signal }).catch(
      (e: unknown) => e,
    );
    expect(isAbortError(error)).toBe(true);
  });
});
