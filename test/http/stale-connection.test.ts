/**
 * The HTTP client after its process could not run for a while (a frozen serverless instance, a
 * long synchronous task), against the real Worker in wrangler's local runtime, whose server closes
 * idle keep-alive connections after about 5 s. Before the fix, every call after a 5.5 s stall
 * went out on the connection the server had closed and failed (`UND_ERR_SOCKET`); now the client
 * lets the runtime's timers drop such connections first. A read that still fails in transit is
 * sent once more; an append never is (its outcome is unknown).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpDurableEventStore } from '../../src/client.js';
import { SessionId } from '../../src/protocol/ids.js';
import { appendCycles } from '../checkpoint/lifecycle-log.js';
import { startLocalWorker, type LocalWorker } from './local-worker.js';

let worker: LocalWorker;

beforeAll(async () => {
  worker = await startLocalWorker();
}, 120_000);

afterAll(async () => {
  await worker?.stop();
});

/**
 * Keeps the event loop from running for `ms` (no timers, no socket events): the thread blocks in
 * `Atomics.wait`, as a frozen instance would, without spending a core on a busy loop.
 */
function stall(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/**
 * fetch on pooled keep-alive connections: the `http` project's setup file (fresh-connections.ts)
 * otherwise asks for a connection per request, and no idle connection would go stale.
 */
const keepAliveFetch: typeof fetch = (input, init) => {
  const headers = new Headers(init?.headers);
  headers.set('connection', 'keep-alive');
  return fetch(input, { ...init, headers });
};

describe('HttpDurableEventStore after a stalled event loop', () => {
  it('reads and appends on a fresh connection after the server closed the idle one', async () => {
    const store = new HttpDurableEventStore({ baseUrl: worker.url, token: worker.adminToken, fetch: keepAliveFetch });
    const sessionId = SessionId(`stale-${Date.now()}`);
    await appendCycles(store, sessionId, 0, 1);
    await store.read(sessionId, { limit: 1 });
    stall(5500);
    expect((await store.read(sessionId, { limit: 10 })).events).toHaveLength(6);
    stall(5500);
    const appended = await appendCycles(store, sessionId, 1, 1);
    expect(appended).toBe(11);
  }, 60_000);

  it('sends a read again once after a transport failure, and never an append', async () => {
    const calls: string[] = [];
    let failNext = 0;
    const store = new HttpDurableEventStore({
      baseUrl: worker.url,
      token: worker.adminToken,
      fetch: async (input, init) => {
        calls.push(init?.method ?? 'GET');
        if (failNext > 0) {
          failNext -= 1;
          throw new TypeError('fetch failed');
        }
        return fetch(input, init);
      },
    });
    const sessionId = SessionId(`stale-retry-${Date.now()}`);
    await appendCycles(store, sessionId, 0, 1);
    calls.length = 0;
    failNext = 1;
    expect((await store.read(sessionId, { limit: 10 })).events).toHaveLength(6);
    expect(calls).toEqual(['GET', 'GET']);
    calls.length = 0;
    failNext = 2;
    await expect(store.read(sessionId, { limit: 10 })).rejects.toMatchObject({ code: 'DURABLE_EVENT_UNAVAILABLE' });
    expect(calls).toEqual(['GET', 'GET']);
    calls.length = 0;
    failNext = 1;
    await expect(store.append(sessionId, [{ type: 'session_created', data: { source: 'create' } }])).rejects.toMatchObject({ code: 'DURABLE_EVENT_WRITE_FAILED' });
    expect(calls).toEqual(['POST']);
    expect(await store.getHeadSequence(sessionId)).toBe(6);
  }, 60_000);
});
