/**
 * Flow control over HTTP, against the real Worker with small subscriber windows
 * (`SUBSCRIBER_WINDOW_BYTES`, `SUBSCRIBER_STALL_MS` vars): `HttpDurableEventStore`'s watch sends
 * acks, and when the object closes its socket with 4008 it reconnects after its cursor; a
 * `DurableEventSubscription` over it still delivers every event once, in order. (Each batch is 15
 * windows, and the watch acks 20 ms after a quiet socket, so the object finds it stalled when the
 * next batch commits and closes it with 4008.)
 */
import { EventSource } from 'eventsource';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { HttpDurableEventStore } from '../../src/client.js';
import { DurableEventSubscription } from '../../src/core/subscription/index.js';
import { SUBSCRIBER_SLOW_CLOSE_CODE } from '../../src/protocol/frames.js';
import { RequestId, SessionId } from '../../src/protocol/ids.js';
import { startLocalWorker, type LocalWorker } from './local-worker.js';

let worker: LocalWorker;

beforeAll(async () => {
  worker = await startLocalWorker({ vars: { SUBSCRIBER_WINDOW_BYTES: '16384', SUBSCRIBER_STALL_MS: '1' } });
});

afterAll(async () => {
  await worker?.stop();
});

/** `ws` WebSocket that records the close codes it sees. */
const closeCodes: number[] = [];
let sockets = 0;
class RecordingWebSocket extends WebSocket {
  constructor(url: string, protocols?: string | string[]) {
    super(url, protocols);
    sockets += 1;
    this.addEventListener('close', (event) => closeCodes.push(event.code));
  }
}

describe('subscriber flow control over HTTP', () => {
  it('a subscription over HttpDurableEventStore recovers from 4008 closes and misses nothing', { timeout: 120_000 }, async () => {
    const sessionId = SessionId(`pacing-http-${Date.now()}`);
    const reader = new HttpDurableEventStore({ baseUrl: worker.url, token: worker.adminToken, WebSocket: RecordingWebSocket });
    const writer = new HttpDurableEventStore({ baseUrl: worker.url, token: worker.adminToken });
    await writer.append(sessionId, [{ type: 'request_completed', requestId: RequestId('r'), data: { output: 'start' } }]);
    const subscription = await DurableEventSubscription.open(reader, sessionId, { follow: true, pageSize: 50 });
    const seen: number[] = [];
    const total = 1 + 20 * 30;
    const consume = (async () => {
      for await (const message of subscription) {
        if (message.type !== 'event') continue;
        seen.push(message.event.sequence);
        if (seen.length >= total) break;
      }
    })();
    const filler = 'y'.repeat(8_000);
    for (let batch = 0; batch < 20; batch += 1) {
      await writer.append(
        sessionId,
        Array.from({ length: 30 }, (_, index) => ({
          type: 'request_completed' as const,
          requestId: RequestId('r'),
          data: { output: `${batch}-${index}:${filler}` },
        })),
      );
    }
    await consume;
    await subscription.close();
    expect(seen).toEqual(Array.from({ length: total }, (_, index) => index + 1));
    // The watch was closed for falling behind at least once, and reconnected.
    expect(closeCodes).toContain(SUBSCRIBER_SLOW_CLOSE_CODE);
    expect(sockets).toBeGreaterThan(1);
  });

  it('SSE with frames=all replays a log larger than the relay bound without falling behind', { timeout: 120_000 }, async () => {
    const sessionId = SessionId(`pacing-relay-${Date.now()}`);
    const writer = new HttpDurableEventStore({ baseUrl: worker.url, token: worker.adminToken });
    const filler = 'z'.repeat(900_000);
    for (let index = 0; index < 12; index += 1) {
      await writer.append(sessionId, [{ type: 'request_completed', requestId: RequestId('r'), data: { output: `${index}:${filler}` } }]);
    }
    const url = new URL(worker.href(`/v1/sessions/${encodeURIComponent(sessionId)}/subscribe`));
    url.searchParams.set('access_token', worker.adminToken);
    url.searchParams.set('frames', 'all');
    const source = new EventSource(url.href);
    const sequences: number[] = [];
    const errors: string[] = [];
    try {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`SSE: ${sequences.length} events, errors ${JSON.stringify(errors)}`)), 90_000);
        source.addEventListener('event', (message) => {
          sequences.push((JSON.parse(message.data) as { event: { sequence: number } }).event.sequence);
        });
        source.addEventListener('error', (message) => {
          errors.push(String((message as { data?: unknown }).data ?? 'error'));
        });
        source.addEventListener('caught_up', () => {
          clearTimeout(timer);
          resolve();
        });
      });
    } finally {
      source.close();
    }
    expect(errors).toEqual([]);
    expect(sequences).toEqual(Array.from({ length: 12 }, (_, index) => index + 1));
  });
});
