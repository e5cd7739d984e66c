/**
 * `GET /v1/sessions/{sessionId}/digests`: the stored per-event digests, read through the Worker.
 * The operation is one row of `SESSION_OPERATIONS` and one method of the object's log host; the
 * route, the RPC dispatch and `HttpDurableEventStore.readEventDigests` are derived from the row.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpDurableEventStore } from '../../src/client.js';
import { markerDrafts } from '../../src/conformance/fixtures.js';
import { eventDigest, isEventDigestStore } from '../../src/store-kit.js';
import { SessionId } from '../../src/protocol/ids.js';
import { api, readProblem } from './http-helpers.js';
import { startLocalWorker, type LocalWorker } from './local-worker.js';

let worker: LocalWorker;
let store: HttpDurableEventStore;

beforeAll(async () => {
  worker = await startLocalWorker();
  store = new HttpDurableEventStore({ baseUrl: worker.url, token: worker.adminToken });
});

afterAll(async () => {
  await worker?.stop();
});

const freshSession = (): SessionId => SessionId(`digests-${crypto.randomUUID()}`);

describe('per-event digests over HTTP', () => {
  it('answers the digest the object stored for every event, in pages, the same as eventDigest of the read events', async () => {
    const sessionId = freshSession();
    await store.append(sessionId, markerDrafts(600, 'digest-a'));
    await store.append(sessionId, markerDrafts(600, 'digest-b'));
    const events = [];
    for (let after: number | undefined; ; ) {
      const page = await store.read(sessionId, { ...(after === undefined ? {} : { after: after as never }), limit: 1000 });
      events.push(...page.events);
      if (!page.hasMore) break;
      after = page.nextCursor ?? undefined;
    }
    expect(isEventDigestStore(store)).toBe(true);
    // 1,150 rows need two requests of at most 1,000.
    const rows = await store.readEventDigests(sessionId, { after: 25, limit: 1_150 });
    expect(rows).toEqual(events.slice(25, 1_175).map((event) => ({ sequence: event.sequence, digest: eventDigest(event) })));
    expect(await store.readEventDigests(sessionId, { after: 1_200, limit: 10 })).toEqual([]);
    expect(await store.readEventDigests(freshSession(), { limit: 10 })).toEqual([]);
  });

  it('refuses a bad query with 400 and needs the read scope', async () => {
    const sessionId = freshSession();
    await store.append(sessionId, markerDrafts(2, 'scope'));
    const bad = await api(worker, `/v1/sessions/${sessionId}/digests?limit=0`, { token: worker.adminToken });
    expect(bad.status).toBe(400);
    expect((await readProblem(bad)).code).toBe('DURABLE_EVENT_INVALID_INPUT');

    const appendOnly = await worker.mintToken(sessionId, ['append']);
    const refused = await api(worker, `/v1/sessions/${sessionId}/digests`, { token: appendOnly });
    expect(refused.status).toBe(403);
    await refused.body?.cancel();

    const reader = await worker.mintToken(sessionId, ['read']);
    const allowed = await api(worker, `/v1/sessions/${sessionId}/digests?after=1`, { token: reader });
    expect(allowed.status).toBe(200);
    const body = (await allowed.json()) as { digests: { sequence: number; digest: number }[] };
    expect(body.digests.map((row) => row.sequence)).toEqual([2]);
  });
});
