/**
 * The read routes over plain HTTP: paging, the head, and long polling (`waitMs`), which answers
 * as soon as an event after `after` exists, or with an empty page when the wait ends.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpDurableEventStore } from '../../src/client.js';
import { markerDrafts } from '../../src/conformance/fixtures.js';
import { SessionId } from '../../src/protocol/ids.js';
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
  events: Array<{ sequence: number }>;
  nextCursor: number | null;
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
    expect(first).toMatchObject({ nextCursor: 2, headSequence: 5, hasMore: true });
    const last = await readPage(sessionId, '?after=4&limit=2');
    expect(last.events.map((e) => e.sequence)).toEqual([5]);
    expect(last).toMatchObject({ nextCursor: 5, headSequence: 5, hasMore: false });
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
    expect(page).toEqual({ events: [], nextCursor: 1, headSequence: 1, hasMore: false });
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
    const repeated = await api(worker, `/v1/sessions/${sessionId}/events?limit=1&limit=2`, { token: worker.adminToken });
    expect(repeated.status).toBe(400);
    await repeated.body?.cancel();
  });
});
