/**
 * SessionObject WebSocket subscribers inside workerd, with real hibernatable sockets: replay from
 * a cursor, one `caught_up`, live events; exact resume with a saved cursor; refusal of foreign,
 * stale, ahead and malformed cursors; ping answered by the runtime. (Sockets surviving the object's
 * eviction: test/e2e/subscribers.test.ts, under wrangler dev.)
 */
import { runInDurableObject } from 'cloudflare:test';
import { env } from 'cloudflare:workers';
import { afterEach, describe, expect, it } from 'vitest';
import { DurableObjectEventStore } from '../../src/adapters/durable-object/durable-object-store.js';
import { SUBSCRIBER_POLICY_CLOSE_CODE } from '../../src/protocol/frames.js';
import { decodeDurableEventCursor, durableEventCursor, encodeDurableEventCursor } from '../../src/protocol/cursor.js';
import { EventId, EventSequence } from '../../src/protocol/ids.js';
import { freshSessionId, markers, stubFor, TestSubscriber } from './session-object-helpers.js';

const store = new DurableObjectEventStore(env.SESSIONS);
const open: TestSubscriber[] = [];

async function subscribe(objectSession: string, query: { sessionId?: string; after?: string }): Promise<TestSubscriber> {
  const subscriber = await TestSubscriber.open(objectSession, query);
  open.push(subscriber);
  return subscriber;
}

afterEach(() => {
  while (open.length > 0) open.pop()?.close();
});

function outputs(subscriber: TestSubscriber): unknown[] {
  return subscriber.events.map((frame) => (frame.event.data as { output?: unknown }).output);
}

function caughtUp(subscriber: TestSubscriber): boolean {
  return subscriber.messages.some((m) => m.type === 'caught_up');
}

describe('SessionObject WebSocket subscribers', () => {
  it('replays from the start, sends one caught_up, then live events with their cursors', async () => {
    const sessionId = freshSessionId('replay');
    await store.append(sessionId, markers(3, 'old'));
    const subscriber = await subscribe(sessionId, { sessionId });
    await subscriber.until(caughtUp, 'caught_up');
    expect(subscriber.messages.map((m) => m.type)).toEqual(['event', 'event', 'event', 'caught_up']);
    expect(subscriber.messages[3]).toEqual({ type: 'caught_up', headSequence: 3 });

    await store.append(sessionId, markers(2, 'new'));
    await subscriber.until((s) => s.events.length === 5, 'two live events');
    expect(outputs(subscriber)).toEqual(['old-0', 'old-1', 'old-2', 'new-0', 'new-1']);
    expect(subscriber.messages.filter((m) => m.type === 'caught_up')).toHaveLength(1);
    for (const frame of subscriber.events) {
      expect(decodeDurableEventCursor(frame.cursor)).toEqual(durableEventCursor(frame.event));
    }
    expect(subscriber.events.map((f) => f.event.sequence)).toEqual([1, 2, 3, 4, 5]);
  });

  it('sends caught_up with a null head on an empty session, then the first events live', async () => {
    const sessionId = freshSessionId('empty');
    const subscriber = await subscribe(sessionId, { sessionId });
    await subscriber.until(caughtUp, 'caught_up');
    expect(subscriber.messages).toEqual([{ type: 'caught_up', headSequence: null }]);
    await store.append(sessionId, markers(1, 'first'));
    await subscriber.until((s) => s.events.length === 1, 'first event');
    expect(outputs(subscriber)).toEqual(['first-0']);
  });

  it('resumes exactly after a saved cursor, without loss or duplicates', async () => {
    const sessionId = freshSessionId('resume');
    await store.append(sessionId, markers(4, 'a'));
    const first = await subscribe(sessionId, { sessionId });
    await first.until(caughtUp, 'caught_up');
    const saved = first.events[1]?.cursor;
    expect(saved).toBeDefined();
    first.close();

    await store.append(sessionId, markers(2, 'b'));
    const second = await subscribe(sessionId, { sessionId, after: saved as string });
    await second.until(caughtUp, 'caught_up');
    expect(outputs(second)).toEqual(['a-2', 'a-3', 'b-0', 'b-1']);
    expect(second.messages.at(-1)).toEqual({ type: 'caught_up', headSequence: 6 });

    // A cursor at the head replays nothing.
    const atHead = await subscribe(sessionId, { sessionId, after: second.events.at(-1)?.cursor as string });
    await atHead.until(caughtUp, 'caught_up');
    expect(atHead.messages).toEqual([{ type: 'caught_up', headSequence: 6 }]);
  });

  it('replays a log longer than one page in order', async () => {
    const sessionId = freshSessionId('pages');
    await store.append(sessionId, markers(1000, 'p'));
    await store.append(sessionId, markers(500, 'q'));
    const subscriber = await subscribe(sessionId, { sessionId });
    await subscriber.until(caughtUp, 'caught_up', 15_000);
    expect(subscriber.events.map((f) => f.event.sequence)).toEqual(Array.from({ length: 1500 }, (_, i) => i + 1));
    expect(subscriber.messages.at(-1)).toEqual({ type: 'caught_up', headSequence: 1500 });
  });

  describe('refuses a bad cursor with an error frame and close 1008', () => {
    async function expectRefused(objectSession: string, query: { sessionId?: string; after?: string }, code: string) {
      const subscriber = await subscribe(objectSession, query);
      await subscriber.until((s) => s.closed !== null, 'close');
      expect(subscriber.messages).toEqual([{ type: 'error', code, message: expect.any(String) }]);
      expect(subscriber.closed?.code).toBe(SUBSCRIBER_POLICY_CLOSE_CODE);
    }

    it('a cursor of another session', async () => {
      const sessionId = freshSessionId('mine');
      const other = freshSessionId('theirs');
      await store.append(sessionId, markers(2, 'm'));
      const { events } = await store.append(other, markers(2, 't'));
      const foreign = encodeDurableEventCursor(durableEventCursor(events[0]!));
      await expectRefused(sessionId, { sessionId, after: foreign }, 'DURABLE_EVENT_SUBSCRIPTION_INVALID');
    });

    it('a cursor whose event was replaced (same sequence, other event id)', async () => {
      const sessionId = freshSessionId('replaced');
      const { events } = await store.append(sessionId, markers(2, 'r'));
      const stale = encodeDurableEventCursor(
        durableEventCursor({ sessionId, sequence: events[1]!.sequence, eventId: EventId('not-the-event') }),
      );
      await expectRefused(sessionId, { sessionId, after: stale }, 'DURABLE_EVENT_SUBSCRIPTION_INVALID');
    });

    it('a cursor ahead of the head', async () => {
      const sessionId = freshSessionId('ahead');
      await store.append(sessionId, markers(1, 'x'));
      const ahead = encodeDurableEventCursor(durableEventCursor({ sessionId, sequence: EventSequence(9), eventId: EventId('e-9') }));
      await expectRefused(sessionId, { sessionId, after: ahead }, 'DURABLE_EVENT_SUBSCRIPTION_INVALID');
    });

    it('a malformed cursor', async () => {
      const sessionId = freshSessionId('malformed');
      await expectRefused(sessionId, { sessionId, after: 'not-a-cursor' }, 'DURABLE_EVENT_INVALID_CURSOR');
    });

    it('a missing or foreign session id', async () => {
      const sessionId = freshSessionId('bound');
      await store.append(sessionId, markers(1, 'b'));
      await expectRefused(sessionId, {}, 'DURABLE_EVENT_INVALID_INPUT');
      await expectRefused(sessionId, { sessionId: 'someone-else' }, 'DURABLE_EVENT_INVALID_INPUT');
    });
  });

  it('answers 426 to a request that is not a WebSocket upgrade', async () => {
    const response = await stubFor(freshSessionId('plain')).fetch('http://session-object.test/');
    expect(response.status).toBe(426);
    await response.body?.cancel();
  });

  it('pushes to every subscriber and keeps appending when one of them goes away', async () => {
    const sessionId = freshSessionId('fanout');
    const a = await subscribe(sessionId, { sessionId });
    const b = await subscribe(sessionId, { sessionId });
    const gone = await subscribe(sessionId, { sessionId });
    await Promise.all([a, b, gone].map((s) => s.until(caughtUp, 'caught_up')));
    gone.close();
    for (let round = 0; round < 3; round += 1) {
      await expect(store.append(sessionId, markers(1, `r${round}`))).resolves.toMatchObject({ lastSequence: round + 1 });
    }
    await a.until((s) => s.events.length === 3, 'three events on a');
    await b.until((s) => s.events.length === 3, 'three events on b');
    expect(outputs(a)).toEqual(['r0-0', 'r1-0', 'r2-0']);
    expect(outputs(b)).toEqual(outputs(a));
  });

  it('answers ping with pong through the runtime auto-response', async () => {
    const sessionId = freshSessionId('ping');
    const subscriber = await subscribe(sessionId, { sessionId });
    await subscriber.until(caughtUp, 'caught_up');
    subscriber.ws.send('ping');
    await subscriber.until((s) => s.frames.includes('pong'), 'pong');
    const answered = await runInDurableObject(stubFor(sessionId), (_instance, state) =>
      state.getWebSockets().map((ws) => state.getWebSocketAutoResponseTimestamp(ws)),
    );
    expect(answered.some((timestamp) => timestamp instanceof Date)).toBe(true);
  });

  // Sockets surviving the object's eviction (hibernation) are tested end to end under wrangler dev:
  // test/e2e/subscribers.test.ts (this pool version cannot evict an object).
});

