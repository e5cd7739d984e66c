/**
 * The read routes over plain HTTP: paging with the encoded cursor (`nextCursor` in, `after` out;
 * a bare sequence accepted as sugar; foreign or replaced cursors refused), the head, and long
 * polling (`waitMs`), which answers as soon as an event after `after` exists, or with an empty
 * page when the wait ends.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpDurableEventStore } from '../../src/client.js';
import { markerDrafts } from '../../src/conformance/fixtures.js';
import { decodeDurableEventCursor, durableEventCursor, encodeDurableEventCursor } from '../../src/protocol/cursor.js';
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
  return SessionId(`read-${counter}-${Date.now()}`);
}

interface Page {
  events: Array<{ sequence: number; eventId: string; sessionId: string }>;
  nextCursor: string | null;
  headSequence: number | null;
  hasMore: boolean;
}

async function readPage(sessionId: string, query: string): Promise<Page> {
  const response = await api(worker, `/v1/sessions/${encodeURIComponent(sessionId)}/events${query}`, {
    token: worker.adminToken,
  });
  expect(response.status).toBe(200);
  return (await response.json()) as Page;
}

describe('read routes', () => {
  it('pages with after/limit and reports the head', async () => {
    const sessionId = freshSession();
    await store.append(sessionId, markerDrafts(5));
    const first = await readPage(sessionId, '?limit=2');
    expect(first.events.map((e) => e.sequence)).toEqual([1, 2]);
    expect(first).toMatchObject({ headSequence: 5, hasMore: true });
    // nextCursor is the versioned encoded cursor of the last event, the same as subscription frames carry.
    expect(decodeDurableEventCursor(first.nextCursor)).toEqual(durableEventCursor(first.events[1] as DurableEventEnvelope));
    const second = await readPage(sessionId, `?after=${first.nextCursor}&limit=2`);
    expect(second.events.map((e) => e.sequence)).toEqual([3, 4]);
    // A bare sequence stays accepted as sugar; the answer still carries an encoded cursor.
    const last = await readPage(sessionId, '?after=4&limit=2');
    expect(last.events.map((e) => e.sequence)).toEqual([5]);
    expect(last).toMatchObject({ headSequence: 5, hasMore: false });
    expect(decodeDurableEventCursor(last.nextCursor).sequence).toBe(5);
    const empty = await readPage(sessionId, `?after=${last.nextCursor}`);
    expect(empty).toEqual({ events: [], nextCursor: last.nextCursor, headSequence: 5, hasMore: false });
    const head = await api(worker, `/v1/sessions/${sessionId}/head`, { token: worker.adminToken });
    expect(await head.json()).toEqual({ headSequence: 5 });
  });

  it('long-polls until an event after `after` is appended', async () => {
    const sessionId = freshSession();
    await store.append(sessionId, markerDrafts(1));
    const polling = readPage(sessionId, '?after=1&waitMs=20000');
    await store.append(sessionId, markerDrafts(2, 'later'));
    const page = await polling;
    expect(page.events.map((e) => e.sequence)).toEqual([2, 3]);
    expect(page.headSequence).toBe(3);
  });

  it('long-polls an empty session until its first event', async () => {
    const sessionId = freshSession();
    const polling = readPage(sessionId, '?waitMs=20000');
    await store.append(sessionId, markerDrafts(1, 'first'));
    const page = await polling;
    expect(page.events.map((e) => e.sequence)).toEqual([1]);
  });

  it('answers an expired wait with an empty page at the unchanged head', async () => {
    const sessionId = freshSession();
    await store.append(sessionId, markerDrafts(1));
    const page = await readPage(sessionId, '?after=1&waitMs=150');
    expect(page).toMatchObject({ events: [], headSequence: 1, hasMore: false });
    expect(decodeDurableEventCursor(page.nextCursor).sequence).toBe(1);
  });

  it('refuses out-of-range waits and cursors ahead of the head', async () => {
    const sessionId = freshSession();
    await store.append(sessionId, markerDrafts(1));
    const tooLong = await api(worker, `/v1/sessions/${sessionId}/events?waitMs=30001`, { token: worker.adminToken });
    expect(tooLong.status).toBe(400);
    expect((await readProblem(tooLong)).code).toBe('DURABLE_EVENT_INVALID_INPUT');
    const ahead = await api(worker, `/v1/sessions/${sessionId}/events?after=7&waitMs=1000`, { token: worker.adminToken });
    expect(ahead.status).toBe(400);
    expect((await readProblem(ahead)).code).toBe('DURABLE_EVENT_INVALID_CURSOR');
    const foreign = encodeDurableEventCursor(durableEventCursor({ sessionId: SessionId('other'), sequence: EventSequence(1), eventId: EventId('e') }));
    const wrongSession = await api(worker, `/v1/sessions/${sessionId}/events?after=${foreign}`, { token: worker.adminToken });
    expect(wrongSession.status).toBe(400);
    expect((await readProblem(wrongSession)).code).toBe('DURABLE_EVENT_INVALID_CURSOR');
    const replaced = encodeDurableEventCursor(durableEventCursor({ sessionId, sequence: EventSequence(1), eventId: EventId('not-the-stored-event') }));
    const stale = await api(worker, `/v1/sessions/${sessionId}/events?after=${replaced}`, { token: worker.adminToken });
    expect(stale.status).toBe(400);
    expect((await readProblem(stale)).code).toBe('DURABLE_EVENT_INVALID_CURSOR');
    const repeated = await api(worker, `/v1/sessions/${sessionId}/events?limit=1&limit=2`, { token: worker.adminToken });
    expect(repeated.status).toBe(400);
    await repeated.body?.cancel();
  });
});

describe('lease answers as fences', () => {
  it('takes the acquire answer as is as the executionFence of the next append', async () => {
    const sessionId = freshSession();
    const acquired = await api(worker, `/v1/sessions/${sessionId}/lease/acquire`, {
      token: worker.adminToken,
      body: { ownerId: 'worker-1', leaseId: 'lease-1', ttlMs: 60_000 },
    });
    expect(acquired.status).toBe(200);
    const lease = (await acquired.json()) as Record<string, unknown>;
    const appended = await api(worker, `/v1/sessions/${sessionId}/events`, {
      token: worker.adminToken,
      body: { events: markerDrafts(1), executionFence: lease },
    });
    expect(appended.status).toBe(200);
    const renewed = await api(worker, `/v1/sessions/${sessionId}/lease/renew`, {
      token: worker.adminToken,
      body: { fence: lease, ttlMs: 60_000 },
    });
    expect(renewed.status).toBe(200);
    const stale = await api(worker, `/v1/sessions/${sessionId}/events`, {
      token: worker.adminToken,
      body: { events: markerDrafts(1), executionFence: { ...lease, fencingToken: 99 } },
    });
    expect(stale.status).toBe(409);
    expect((await readProblem(stale)).code).toBe('DURABLE_EXECUTION_LEASE_LOST');
  });
});
