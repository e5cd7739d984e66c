/**
 * Events at the 1 MiB limit through every read path of the edge: 33 of them (about 33 MiB) are
 * more than one Worker-to-object RPC value (32 MiB) or a sane response may carry, so every path
 * must page by bytes: `GET /events` with the default limit, `HttpDurableEventStore.read`,
 * `DurableEventSubscription` over HTTP (replay by pages, live by WebSocket watch), Server-Sent
 * Events, and WebSocket replay. Each must deliver all 33, in order.
 */
import { EventSource } from 'eventsource';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { HttpDurableEventStore } from '../../src/client.js';
import { markerDraft, markerLabel } from '../../src/conformance/fixtures.js';
import { DurableEventSubscription } from '../../src/core/subscription/index.js';
import type { DurableEventEnvelope } from '../../src/protocol/events.js';
import { encodeSubscriberAck, frameByteLength } from '../../src/protocol/frames.js';
import { type EventSequence, SessionId } from '../../src/protocol/ids.js';
import { MAX_EVENT_BYTES, MAX_READ_PAGE_BYTES } from '../../src/protocol/limits.js';
import { api } from './http-helpers.js';
import { startLocalWorker, type LocalWorker } from './local-worker.js';

let worker: LocalWorker;
let store: HttpDurableEventStore;
const sessionId = SessionId(`large-events-${Date.now()}`);
const COUNT = 33;
const big = 'y'.repeat(MAX_EVENT_BYTES - 4096);

beforeAll(async () => {
  worker = await startLocalWorker();
  store = new HttpDurableEventStore({ baseUrl: worker.url, token: worker.adminToken, WebSocket });
  for (let first = 0; first < COUNT; first += 7) {
    const drafts = [];
    for (let index = first; index < Math.min(first + 7, COUNT); index++) drafts.push(markerDraft(`${index}`, `${index}:${big}`));
    await store.append(sessionId, drafts);
  }
}, 120_000);

afterAll(async () => {
  await worker?.stop();
});

const labelOf = (event: DurableEventEnvelope): string => String(markerLabel(event)).split(':')[0] ?? '';
const expected = Array.from({ length: COUNT }, (_, index) => `${index}`);

describe('33 events at the 1 MiB limit', () => {
  it('GET /events answers the default page within the byte budget, and the cursor walks all of them', async () => {
    const labels: string[] = [];
    let query = '';
    for (let pages = 0; pages < COUNT + 1; pages++) {
      const response = await api(worker, `/v1/sessions/${sessionId}/events${query}`, { token: worker.adminToken });
      expect(response.status).toBe(200);
      const text = await response.text();
      const page = JSON.parse(text) as { events: DurableEventEnvelope[]; hasMore: boolean; nextCursor: number };
      expect(page.events.length).toBeGreaterThan(0);
      expect(new TextEncoder().encode(text).byteLength).toBeLessThan(MAX_READ_PAGE_BYTES + 64 * 1024);
      labels.push(...page.events.map(labelOf));
      if (!page.hasMore) break;
      query = `?after=${page.nextCursor}`;
    }
    expect(labels).toEqual(expected);
  });

  it('HttpDurableEventStore.read pages through all of them', async () => {
    const labels: string[] = [];
    let after: EventSequence | undefined;
    for (;;) {
      const page = await store.read(sessionId, { after, limit: 1000 });
      labels.push(...page.events.map(labelOf));
      if (!page.hasMore) break;
      after = page.nextCursor ?? undefined;
    }
    expect(labels).toEqual(expected);
  });

  it('DurableEventSubscription over HTTP replays all of them', async () => {
    const labels: string[] = [];
    const subscription = await DurableEventSubscription.open(store, sessionId, { follow: false, pageSize: 1000 });
    for await (const message of subscription) {
      if (message.type === 'event') labels.push(labelOf(message.event));
    }
    expect(labels).toEqual(expected);
  });

  it('Server-Sent Events replay all of them, then caught_up', async () => {
    const url = new URL(worker.href(`/v1/sessions/${encodeURIComponent(sessionId)}/subscribe`));
    url.searchParams.set('access_token', worker.adminToken);
    const source = new EventSource(url.href);
    const labels: string[] = [];
    const errors: string[] = [];
    try {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`SSE: ${labels.length} events, errors ${JSON.stringify(errors)}`)), 60_000);
        source.addEventListener('event', (message) => {
          labels.push(labelOf((JSON.parse(message.data) as { event: DurableEventEnvelope }).event));
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
    expect(labels).toEqual(expected);
  });

  it('WebSocket replay sends all of them, then caught_up (acknowledging as it reads)', async () => {
    const url = new URL(worker.href(`/v1/sessions/${encodeURIComponent(sessionId)}/subscribe`));
    url.protocol = 'ws:';
    url.searchParams.set('access_token', worker.adminToken);
    url.searchParams.set('ack', '1');
    const socket = new WebSocket(url.href);
    const labels: string[] = [];
    let received = 0;
    try {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`WebSocket: ${labels.length} events`)), 60_000);
        socket.on('message', (data) => {
          received += frameByteLength(String(data));
          socket.send(encodeSubscriberAck(received)); // flow control: see docs/http-api.md
          const frame = JSON.parse(String(data)) as { type: string; event?: DurableEventEnvelope; message?: string };
          if (frame.type === 'event' && frame.event !== undefined) labels.push(labelOf(frame.event));
          else if (frame.type === 'caught_up') {
            clearTimeout(timer);
            resolve();
          } else if (frame.type === 'error') reject(new Error(frame.message));
        });
        socket.on('error', reject);
      });
    } finally {
      socket.close();
    }
    expect(labels).toEqual(expected);
  });
});
