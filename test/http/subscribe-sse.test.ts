/**
 * Server-Sent Events subscriptions with a real EventSource implementation (`eventsource` v3):
 * replay with cursor ids, one `caught_up`, live events; a connection cut in the middle of the
 * stream resumes by itself through `Last-Event-ID` and loses and duplicates nothing, even with
 * appends during the outage; `Last-Event-ID` wins over `?after=`; bad cursors get problem+json.
 */
import { EventSource, type FetchLike } from 'eventsource';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpDurableEventStore } from '../../src/client.js';
import { markerDrafts } from '../../src/conformance/fixtures.js';
import { durableEventCursor, encodeDurableEventCursor } from '../../src/protocol/cursor.js';
import type { DurableEventEnvelope } from '../../src/protocol/events.js';
import { EventId, EventSequence, SessionId } from '../../src/protocol/ids.js';
import { api, readProblem } from './http-helpers.js';
import { startLocalWorker, type LocalWorker } from './local-worker.js';

let worker: LocalWorker;
let store: HttpDurableEventStore;
let counter = 0;

beforeAll(async () => {
  worker = await startLocalWorker();
  store = new HttpDurableEventStore({ baseUrl: worker.url, token: worker.adminToken });
});

afterAll(async () => {
  await worker?.stop();
});

function freshSession(): SessionId {
  counter += 1;
  return SessionId(`sse-${counter}-${Date.now()}`);
}

function subscribePath(sessionId: string): string {
  return `/v1/sessions/${encodeURIComponent(sessionId)}/subscribe`;
}

interface Received {
  events: Array<{ sequence: number; id: string; event: DurableEventEnvelope }>;
  caughtUp: Array<number | null>;
}

function listen(source: EventSource): Received {
  const received: Received = { events: [], caughtUp: [] };
  source.addEventListener('event', (message) => {
    const frame = JSON.parse(message.data) as { event: DurableEventEnvelope; cursor: string };
    expect(message.lastEventId).toBe(frame.cursor);
    received.events.push({ sequence: frame.event.sequence, id: message.lastEventId, event: frame.event });
  });
  source.addEventListener('caught_up', (message) => {
    received.caughtUp.push((JSON.parse(message.data) as { headSequence: number | null }).headSequence);
  });
  return received;
}

async function waitFor(condition: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 8000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`${what}: not in time`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** `fetch` that adds a bearer token and records the Last-Event-ID of every (re)connection. */
function authorizedFetch(token: string, seen: Array<string | undefined>, transform?: (attempt: number, response: Response) => Response): FetchLike {
  let attempt = 0;
  return async (url, init) => {
    seen.push(init.headers['Last-Event-ID']);
    const response = await fetch(url, { ...init, headers: { ...init.headers, authorization: `Bearer ${token}` } });
    attempt += 1;
    return transform === undefined ? response : transform(attempt, response);
  };
}

/** Forwards a response's stream but breaks it after `cutAt(text)` characters have passed. */
function cutAfter(response: Response, cutAt: (text: string) => number | undefined): Response {
  const upstream = response.body;
  if (upstream === null) return response;
  const reader = upstream.getReader();
  const decoder = new TextDecoder();
  const encoder = new TextEncoder();
  let seen = '';
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      const { done, value } = await reader.read();
      if (done) {
        controller.close();
        return;
      }
      const text = decoder.decode(value, { stream: true });
      const at = cutAt(seen + text);
      if (at === undefined) {
        seen += text;
        controller.enqueue(value);
        return;
      }
      controller.enqueue(encoder.encode((seen + text).slice(seen.length, at)));
      await reader.cancel();
      controller.error(new Error('connection cut by the test'));
    },
  });
  return new Response(body, { status: response.status, headers: response.headers });
}

describe('Server-Sent Events through the Worker', () => {
  it('replays with cursor ids, sends caught_up, then live events (token in the query)', async () => {
    const sessionId = freshSession();
    await store.append(sessionId, markerDrafts(3, 'before'));
    const token = await worker.mintToken(sessionId, ['subscribe']);
    const source = new EventSource(`${worker.href(subscribePath(sessionId))}?access_token=${token}`);
    try {
      const received = listen(source);
      await waitFor(() => received.caughtUp.length === 1, 'caught_up');
      expect(received.events.map((e) => e.sequence)).toEqual([1, 2, 3]);
      expect(received.caughtUp).toEqual([3]);
      for (const { id, event } of received.events) expect(id).toBe(encodeDurableEventCursor(durableEventCursor(event)));
      await store.append(sessionId, markerDrafts(2, 'live'));
      await waitFor(() => received.events.length === 5, 'live events');
      expect(received.events.map((e) => e.sequence)).toEqual([1, 2, 3, 4, 5]);
    } finally {
      source.close();
    }
  });

  it('resumes after a connection cut mid-stream without losing or duplicating an event', async () => {
    const sessionId = freshSession();
    await store.append(sessionId, markerDrafts(6, 'replayed'));
    const token = await worker.mintToken(sessionId, ['subscribe']);
    const lastEventIds: Array<string | undefined> = [];
    // First connection: break the stream in the middle of the fourth event.
    const fetchWithCut = authorizedFetch(token, lastEventIds, (attempt, response) =>
      attempt === 1
        ? cutAfter(response, (text) => {
            const starts = [...text.matchAll(/^event: event$/gm)].map((match) => match.index);
            const fourth = starts[3];
            return starts.length >= 5 && fourth !== undefined ? fourth + 20 : undefined;
          })
        : response,
    );
    let cut = false;
    const source = new EventSource(worker.href(subscribePath(sessionId)), { fetch: fetchWithCut });
    source.addEventListener('error', () => {
      cut = true;
    });
    try {
      const received = listen(source);
      await waitFor(() => cut, 'the cut');
      // Appends while the subscriber is away.
      await store.append(sessionId, markerDrafts(2, 'during-outage'));
      await waitFor(() => received.caughtUp.length >= 1 && received.events.length >= 8, 'resumed stream');
      await store.append(sessionId, markerDrafts(2, 'after-resume'));
      await waitFor(() => received.events.length >= 10, 'live events after the resume');
      expect(received.events.map((e) => e.sequence)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
      expect(lastEventIds.length).toBeGreaterThanOrEqual(2);
      expect(lastEventIds[0]).toBeUndefined();
      // The reconnect named the last event fully received before the cut.
      const resumedFrom = lastEventIds[1];
      const lastBeforeCut = received.events.find((e) => e.id === resumedFrom);
      expect(lastBeforeCut?.sequence).toBe(3);
    } finally {
      source.close();
    }
  });

  it('lets Last-Event-ID win over ?after= and answers bad cursors with problem+json', async () => {
    const sessionId = freshSession();
    const { events } = await store.append(sessionId, markerDrafts(4));
    const cursorOf = (index: number): string => {
      const event = events[index];
      if (event === undefined) throw new Error('missing event');
      return encodeDurableEventCursor(durableEventCursor(event));
    };
    const response = await api(worker, `${subscribePath(sessionId)}?after=${cursorOf(0)}`, {
      token: worker.adminToken,
      headers: { accept: 'text/event-stream', 'last-event-id': cursorOf(1) },
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const reader = response.body?.getReader();
    let text = '';
    const decoder = new TextDecoder();
    while (reader !== undefined && !text.includes('event: caught_up')) {
      const { done, value } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
    }
    await reader?.cancel();
    const ids = [...text.matchAll(/^id: (.+)$/gm)].map((match) => match[1]);
    expect(ids).toEqual([cursorOf(2), cursorOf(3)]);

    const garbage = await api(worker, subscribePath(sessionId), {
      token: worker.adminToken,
      headers: { accept: 'text/event-stream', 'last-event-id': 'garbage' },
    });
    expect(garbage.status).toBe(400);
    expect((await readProblem(garbage)).code).toBe('DURABLE_EVENT_INVALID_CURSOR');
    const stale = encodeDurableEventCursor({ version: 1, sessionId, sequence: EventSequence(2), eventId: EventId('other') });
    const replaced = await api(worker, `${subscribePath(sessionId)}?after=${stale}`, {
      token: worker.adminToken,
      headers: { accept: 'text/event-stream' },
    });
    expect(replaced.status).toBe(400);
    expect((await readProblem(replaced)).code).toBe('DURABLE_EVENT_SUBSCRIPTION_INVALID');
    const ahead = encodeDurableEventCursor({ version: 1, sessionId, sequence: EventSequence(9), eventId: EventId('x') });
    const tooFar = await api(worker, `${subscribePath(sessionId)}?after=${ahead}`, {
      token: worker.adminToken,
      headers: { accept: 'text/event-stream' },
    });
    expect((await readProblem(tooFar)).code).toBe('DURABLE_EVENT_SUBSCRIPTION_INVALID');
  });

  it('streams an empty session: caught_up with a null head, then the first event', async () => {
    const sessionId = freshSession();
    const token = await worker.mintToken(sessionId, ['subscribe']);
    const source = new EventSource(worker.href(subscribePath(sessionId)), { fetch: authorizedFetch(token, []) });
    try {
      const received = listen(source);
      await waitFor(() => received.caughtUp.length === 1, 'caught_up');
      expect(received.caughtUp).toEqual([null]);
      await store.append(sessionId, markerDrafts(1));
      await waitFor(() => received.events.length === 1, 'first event');
      expect(received.events[0]?.sequence).toBe(1);
    } finally {
      source.close();
    }
  });
});
