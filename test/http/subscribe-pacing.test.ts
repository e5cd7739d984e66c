/**
 * Flow control over HTTP, against the real Worker with small subscriber windows
 * (`SUBSCRIBER_WINDOW_BYTES`, `SUBSCRIBER_STALL_MS` vars): `HttpDurableEventStore`'s watch sends
 * acks, and when the object closes its socket with 4008 it reconnects after its cursor; a
 * `DurableEventSubscription` over it still delivers every event once, in order. The first socket
 * never sends its acks (the test drops them), so its 16 KiB window fills during the first batch and
 * the object closes it with 4008 when the next batch commits (stall bound 1 ms); later sockets ack
 * normally. The first socket also never reports its close to the watch (as behind a proxy that
 * ends the TCP connection only after `ws`'s 30 s close timeout): the watch must reconnect on the
 * object's slow notice alone, long before its 60 s liveness check would. Nothing here depends on
 * how fast the machine is.
 */
import { EventSource } from 'eventsource';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { HttpDurableEventStore } from '../../src/client.js';
import { DurableEventSubscription } from '../../src/core/subscription/index.js';
import { SUBSCRIBER_SLOW_ERROR_CODE } from '../../src/protocol/frames.js';
import { RequestId, SessionId } from '../../src/protocol/ids.js';
import { startLocalWorker, type LocalWorker } from './local-worker.js';

let worker: LocalWorker;

beforeAll(async () => {
  worker = await startLocalWorker({ vars: { SUBSCRIBER_WINDOW_BYTES: '16384', SUBSCRIBER_STALL_MS: '1' } });
});

afterAll(async () => {
  await worker?.stop();
});

/** `ws` WebSocket that records the close codes it sees; the first one never delivers its acks. */
const closeCodes: number[] = [];
/** `error` frames the first socket received (the slow notice). */
const firstErrors: string[] = [];
let sockets = 0;
let firstLive: () => void = () => undefined;
/** Resolves when the first socket is live (its `caught_up` arrived). */
const firstSocketLive = new Promise<void>((resolve) => {
  firstLive = resolve;
});
class RecordingWebSocket extends WebSocket {
  readonly #index: number;
  constructor(url: string, protocols?: string | string[]) {
    super(url, protocols);
    sockets += 1;
    this.#index = sockets;
    this.addEventListener('close', (event) => closeCodes.push(event.code));
    if (this.#index === 1) {
      this.addEventListener('message', (event) => {
        const text = String(event.data);
        if (text.startsWith('{"type":"caught_up"')) firstLive();
        if (text.startsWith('{"type":"error"')) firstErrors.push(text);
      });
      // The watch's `onclose` handler is kept but never called for this socket.
      Object.defineProperty(this, 'onclose', { configurable: true, get: () => null, set: () => undefined });
    }
  }

  override send(data: string, ...rest: unknown[]): void {
    if (this.#index === 1 && data.includes('"ack"')) return;
    // SAFETY: forwards the caller's remaining arguments to ws unchanged.
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    (super.send as (...args: any[]) => void)(data, ...rest);
  }
}

/** Polls `condition` every 10 ms; throws after `timeoutMs`. */
async function waitFor(condition: () => boolean, timeoutMs: number): Promise<void> {
  for (let waited = 0; !condition(); waited += 10) {
    if (waited > timeoutMs) throw new Error(`condition not met in ${timeoutMs} ms: close codes ${JSON.stringify(closeCodes)}, ${sockets} sockets`);
    await new Promise((resolve) => setTimeout(resolve, 10));
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
      }
    })();
    // The batches start once the first (ack-dropping) socket is live, so they are pushed to it.
    await firstSocketLive;
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
    // The object sends the slow notice, then closes the first socket, when the second batch
    // commits. The watch never hears that close (see the header), so only the notice can make it
    // reconnect before its liveness check (two 30 s ping intervals).
    await waitFor(() => sockets > 1, 30_000);
    expect(firstErrors.map((text) => (JSON.parse(text) as { code: string }).code)).toEqual([SUBSCRIBER_SLOW_ERROR_CODE]);
    await waitFor(() => seen.length >= total, 60_000);
    await subscription.close();
    await consume;
    expect(seen).toEqual(Array.from({ length: total }, (_, index) => index + 1));
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
