/**
 * Flow control of the SessionObject's WebSocket subscribers inside workerd, with real hibernatable
 * sockets: a client that never acks gets at most one window and is closed with 4008; an acking
 * client gets the whole log in order with never more than one window (plus one frame) unacked;
 * reconnecting after the 4008 close from the last cursor is gapless and duplicate-free; a paced
 * client that stalls is closed when something new is due; an ack of more than was sent is refused;
 * the object's total bounds several subscribers together.
 */
import { env } from 'cloudflare:workers';
import { afterEach, describe, expect, it } from 'vitest';
import { DurableObjectEventStore } from '../../src/adapters/durable-object/durable-object-store.js';
import { DEFAULT_SUBSCRIBER_PACING } from '../../src/edge/socket-pacing.js';
import { SUBSCRIBER_POLICY_CLOSE_CODE, SUBSCRIBER_SLOW_CLOSE_CODE, SUBSCRIBER_SLOW_ERROR_CODE, encodeSubscriberAck } from '../../src/protocol/frames.js';
import { RequestId, type SessionId } from '../../src/protocol/ids.js';
import type { DurableEventDraft } from '../../src/protocol/events.js';
import { freshSessionId, sleep } from './session-object-helpers.js';
import { RawSubscriber, closeRawSubscribers, setPacingLimits as setLimits } from './pacing-helpers.js';

const store = new DurableObjectEventStore(env.SESSIONS);
const WINDOW = DEFAULT_SUBSCRIBER_PACING.windowBytes;

/** `count` events of about `bytes` bytes each, recognisable by index (from `first`). */
function bulky(count: number, bytes: number, prefix: string, first = 0): DurableEventDraft[] {
  return Array.from({ length: count }, (_, index) => ({
    type: 'request_completed' as const,
    requestId: RequestId('pacing-request'),
    data: { output: `${prefix}-${first + index}:${'x'.repeat(bytes)}` },
  }));
}

/** Appends `count` events in batches small enough for one append. */
async function appendBulky(sessionId: SessionId, count: number, bytes: number, prefix: string): Promise<void> {
  const perBatch = Math.max(1, Math.floor((2 * 1024 * 1024) / bytes));
  for (let start = 0; start < count; start += perBatch) {
    await store.append(sessionId, bulky(Math.min(perBatch, count - start), bytes, prefix, start));
  }
}

afterEach(closeRawSubscribers);

function outputs(subscriber: RawSubscriber): unknown[] {
  return subscriber.events.map((f) => String((f.event.data as { output?: unknown }).output).split(':')[0]);
}

/** Largest event frame the test logs contain (bytes). */
const FRAME_SLACK = 64 * 1024;

describe('SessionObject subscriber flow control', () => {
  it('sends a client that never acks at most one window, then closes it with 4008', async () => {
    const sessionId = freshSessionId('legacy');
    await appendBulky(sessionId, 60, 50_000, 'e'); // about 3 MB
    const subscriber = await RawSubscriber.open(sessionId, { ack: false });
    await subscriber.until(() => subscriber.closed !== null, 'the close');
    expect(subscriber.closed?.code).toBe(SUBSCRIBER_SLOW_CLOSE_CODE);
    // The last frame before the close is the slow notice a client can reconnect on at once.
    expect(subscriber.frames.at(-1)).toMatchObject({ type: 'error', code: SUBSCRIBER_SLOW_ERROR_CODE });
    expect(subscriber.received).toBeGreaterThan(0);
    expect(subscriber.received).toBeLessThanOrEqual(WINDOW + FRAME_SLACK);
    expect(subscriber.caughtUp).toBe(false);
    // In order, from the first event, without gaps.
    expect(subscriber.events.map((f) => f.event.sequence)).toEqual(subscriber.events.map((_, index) => index + 1));
  });

  it('reconnecting after the 4008 close from the last cursor is gapless and duplicate-free', async () => {
    const sessionId = freshSessionId('reconnect');
    await appendBulky(sessionId, 60, 50_000, 'r');
    const sequences: number[] = [];
    let after: string | undefined;
    let connections = 0;
    for (;;) {
      connections += 1;
      expect(connections).toBeLessThan(20);
      const subscriber = await RawSubscriber.open(sessionId, { ack: false, ...(after === undefined ? {} : { after }) });
      await subscriber.until(() => subscriber.closed !== null || subscriber.caughtUp, 'the close or caught_up');
      sequences.push(...subscriber.events.map((f) => f.event.sequence));
      after = subscriber.events.at(-1)?.cursor ?? after;
      if (subscriber.caughtUp) break;
      expect(subscriber.closed?.code).toBe(SUBSCRIBER_SLOW_CLOSE_CODE);
    }
    expect(connections).toBeGreaterThan(2);
    expect(sequences).toEqual(Array.from({ length: 60 }, (_, index) => index + 1));
  });

  it('gives an acking client the whole log in order, never more than one window unacknowledged', async () => {
    const sessionId = freshSessionId('paced');
    await appendBulky(sessionId, 60, 50_000, 'p');
    const subscriber = await RawSubscriber.open(sessionId, { ack: true });
    let rounds = 0;
    await subscriber.until(() => subscriber.received > 0, 'the first page');
    while (!subscriber.caughtUp) {
      // Acknowledge only once the object stopped: what arrived meanwhile is its whole window.
      await subscriber.quiet();
      expect(subscriber.received - subscriber.acked).toBeLessThanOrEqual(WINDOW + FRAME_SLACK);
      expect(subscriber.closed).toBeNull();
      if (subscriber.caughtUp) break;
      const before = subscriber.received;
      subscriber.ack();
      rounds += 1;
      expect(rounds).toBeLessThan(20);
      await subscriber.until(() => subscriber.received > before, 'the next page after an ack');
    }
    expect(rounds).toBeGreaterThanOrEqual(2);
    expect(subscriber.peakUnacked).toBeLessThanOrEqual(WINDOW + FRAME_SLACK);
    expect(outputs(subscriber)).toEqual(Array.from({ length: 60 }, (_, index) => `p-${index}`));
    expect(subscriber.frames.at(-1)).toEqual({ type: 'caught_up', headSequence: 60 });

    // Live: a burst larger than the window arrives paced as well, still in order.
    subscriber.ack(); // everything processed so far
    const beforeLive = subscriber.received;
    await appendBulky(sessionId, 40, 50_000, 'live');
    await subscriber.until(() => subscriber.received > beforeLive, 'live events');
    while (subscriber.events.length < 100) {
      await subscriber.quiet();
      expect(subscriber.received - subscriber.acked).toBeLessThanOrEqual(WINDOW + FRAME_SLACK);
      if (subscriber.events.length >= 100) break;
      const before = subscriber.received;
      subscriber.ack();
      await subscriber.until(() => subscriber.received > before, 'the next live page after an ack');
    }
    expect(subscriber.events.map((f) => f.event.sequence)).toEqual(Array.from({ length: 100 }, (_, index) => index + 1));
    expect(subscriber.closed).toBeNull();
  });

  it('closes a paced client that stalls longer than stallMs when something new is due for it', async () => {
    const sessionId = freshSessionId('stall');
    await appendBulky(sessionId, 40, 50_000, 's');
    await setLimits(sessionId, { stallMs: 50 });
    const subscriber = await RawSubscriber.open(sessionId, { ack: true });
    await subscriber.quiet();
    expect(subscriber.closed).toBeNull();
    expect(subscriber.received).toBeLessThanOrEqual(WINDOW + FRAME_SLACK);
    await sleep(100);
    await store.append(sessionId, bulky(1, 10, 'late'));
    await subscriber.until(() => subscriber.closed !== null, 'the close');
    expect(subscriber.closed?.code).toBe(SUBSCRIBER_SLOW_CLOSE_CODE);
  });

  it('refuses an ack of more bytes than were sent with 1008', async () => {
    const sessionId = freshSessionId('overack');
    await appendBulky(sessionId, 3, 100, 'o');
    const subscriber = await RawSubscriber.open(sessionId, { ack: true });
    await subscriber.until(() => subscriber.caughtUp, 'caught_up');
    subscriber.ws.send(encodeSubscriberAck(subscriber.received + 1));
    await subscriber.until(() => subscriber.closed !== null, 'the close');
    expect(subscriber.closed?.code).toBe(SUBSCRIBER_POLICY_CLOSE_CODE);
  });

  it('bounds what all subscribers of an object hold together, and resumes the waiting ones on acks', async () => {
    const sessionId = freshSessionId('total');
    await appendBulky(sessionId, 40, 20_000, 't'); // about 800 KB
    await setLimits(sessionId, { windowBytes: 128 * 1024, objectWindowBytes: 256 * 1024 });
    const subscribers: RawSubscriber[] = [];
    for (let index = 0; index < 4; index += 1) subscribers.push(await RawSubscriber.open(sessionId, { ack: true }));
    await Promise.all(subscribers.map((s) => s.quiet()));
    const total = subscribers.reduce((sum, s) => sum + s.received, 0);
    expect(total).toBeLessThanOrEqual(256 * 1024 + 4 * 32 * 1024);
    expect(subscribers.some((s) => s.received === 0)).toBe(true);
    // Everyone acks as it goes: all of them reach the end.
    // Bounded by time (generous for a loaded machine, within the 30 s test timeout), not by a
    // count of 30 ms rounds.
    const deadline = Date.now() + 20_000;
    while (Date.now() < deadline && !subscribers.every((s) => s.caughtUp)) {
      for (const s of subscribers) if (s.received > s.acked) s.ack();
      await sleep(30);
    }
    for (const s of subscribers) {
      expect(s.caughtUp).toBe(true);
      expect(s.closed).toBeNull();
      expect(outputs(s)).toEqual(Array.from({ length: 40 }, (_, index) => `t-${index}`));
    }
  });
});
