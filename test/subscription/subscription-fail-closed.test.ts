/**
 * DurableEventSubscription fails closed: foreign, ahead-of-head, replaced and malformed cursors at
 * open; gapped, foreign or shrinking pages while reading.
 */
import { describe, expect, it } from 'vitest';
import { MemoryDurableEventStore } from '../../src/adapters/memory/memory-store.js';
import { markerDrafts } from '../../src/conformance/fixtures.js';
import { DurableEventSubscription, type DurableSubscriptionMessage } from '../../src/core/subscription/index.js';
import { durableEventCursor, type DurableEventCursor } from '../../src/protocol/cursor.js';
import { DurableEventSubscriptionError } from '../../src/protocol/errors.js';
import type { DurableEventEnvelope } from '../../src/protocol/events.js';
import { EventId, EventSequence, SessionId } from '../../src/protocol/ids.js';
import { wrapStore } from '../journal/store-wrappers.js';

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

describe('DurableEventSubscription: fail closed', () => {
  async function openWith(store: MemoryDurableEventStore, after: unknown): Promise<unknown> {
    // SAFETY: deliberately malformed cursors, to reach the run-time checks.
    return DurableEventSubscription.open(store, sessionId, { after: after as DurableEventCursor }).catch((e: unknown) => e);
  }

  it.each<[string, (event: DurableEventEnvelope) => unknown]>([
    ['a cursor of another session', (e) => ({ ...durableEventCursor(e), sessionId: SessionId('elsewhere') })],
    ['a cursor ahead of the head', (e) => ({ ...durableEventCursor(e), sequence: EventSequence(4) })],
    ['a cursor far ahead of the head', (e) => ({ ...durableEventCursor(e), sequence: EventSequence(1000) })],
    ['a cursor naming a replaced event', (e) => ({ ...durableEventCursor(e), eventId: EventId('not-the-event') })],
    ['a cursor without version', (e) => ({ sessionId, sequence: e.sequence, eventId: e.eventId })],
    ['a cursor of another version', (e) => ({ ...durableEventCursor(e), version: 2 })],
    ['a cursor with an extra key', (e) => ({ ...durableEventCursor(e), extra: true })],
    ['a cursor that is not an object', () => 42],
  ])('rejects %s with DurableEventSubscriptionError', async (_name, make) => {
    const store = await seeded(3);
    const third = (await store.read(sessionId)).events[2]!;
    const error = await openWith(store, make(third));
    expect(error).toBeInstanceOf(DurableEventSubscriptionError);
  });

  it('accepts the cursor in its JSON text form', async () => {
    const store = await seeded(3);
    const second = (await store.read(sessionId)).events[1]!;
    const subscription = await DurableEventSubscription.open(store, sessionId, {
      // SAFETY: the text form is accepted at run time (parseDurableEventCursor).
      after: JSON.stringify(durableEventCursor(second)) as unknown as DurableEventCursor,
      follow: false,
    });
    expect(await takeN(subscription, 3)).toEqual(['3R', 'caught_up@3']);
  });

  it('rejects a cursor into an empty session', async () => {
    const store = await seeded(3);
    const event = (await store.read(sessionId)).events[0]!;
    const empty = SessionId('empty-session');
    const error = await DurableEventSubscription.open(store, empty, { after: { ...durableEventCursor(event), sessionId: empty } }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(DurableEventSubscriptionError);
  });

  it('fails closed when a page skips a sequence, then ends', async () => {
    const inner = await seeded(4);
    const store = wrapStore(inner, {
      read: async (read, id, options) => {
        const page = await read(id, options);
        return { ...page, events: page.events.filter((e) => e.sequence !== 3) };
      },
    });
    const subscription = await DurableEventSubscription.open(store, sessionId, { pageSize: 10 });
    const error = await subscription.next().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DurableEventSubscriptionError);
    expect((error as Error).message).toMatch(/expected sequence 3/);
    await expect(subscription.next()).resolves.toEqual({ done: true, value: undefined });
  });

  it('fails closed when a page belongs to another session', async () => {
    const inner = await seeded(2);
    const store = wrapStore(inner, {
      read: async (read, id, options) => {
        const page = await read(id, options);
        return { ...page, events: page.events.map((e) => ({ ...e, sessionId: SessionId('intruder') })) };
      },
    });
    const subscription = await DurableEventSubscription.open(store, sessionId);
    await expect(subscription.next()).rejects.toBeInstanceOf(DurableEventSubscriptionError);
  });

  it('fails closed when the log shrinks below the replay barrier', async () => {
    const inner = await seeded(4);
    let truncated = false;
    const store = wrapStore(inner, {
      read: async (read, id, options) => {
        const page = await read(id, options);
        if (!truncated) return page;
        return { ...page, events: page.events.filter((e) => e.sequence <= 2), hasMore: false };
      },
    });
    const subscription = await DurableEventSubscription.open(store, sessionId, { pageSize: 2 });
    expect(await takeN(subscription, 2)).toEqual(['1R', '2R']);
    truncated = true;
    await expect(subscription.next()).rejects.toBeInstanceOf(DurableEventSubscriptionError);
  });

  it('fails closed when a live read finds the position ahead of the head (truncated log)', async () => {
    const inner = await seeded(2);
    let truncated = false;
    const store = wrapStore(inner, {
      read: async (read, id, options) => {
        if (truncated) return read(id, { ...options, after: (options?.after ?? 0) > 0 ? EventSequence(99) : undefined });
        return read(id, options);
      },
    });
    const subscription = await DurableEventSubscription.open(store, sessionId, { pollIntervalMs: 1 });
    expect(await takeN(subscription, 3)).toEqual(['1R', '2R', 'caught_up@2']);
    truncated = true;
    const error = await subscription.next().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DurableEventSubscriptionError);
    expect((error as Error).cause).toMatchObject({ code: 'DURABLE_EVENT_INVALID_CURSOR' });
  });
});
