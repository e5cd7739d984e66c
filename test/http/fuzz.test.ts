/**
 * Bad input fuzzed over HTTP with fast-check: random JSON values and raw strings as bodies,
 * random query strings, random session ids, against every write and read route of the local
 * Worker. Whatever arrives, the answer is never a 5xx, an error is always problem+json, and a
 * refused request never changes the log or the lease state of the session it targeted.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpDurableEventStore } from '../../src/client.js';
import { markerDrafts } from '../../src/conformance/fixtures.js';
import { SessionId } from '../../src/protocol/ids.js';
import { startLocalWorker, type LocalWorker } from './local-worker.js';
import { sized } from '../deep.js';

let worker: LocalWorker;
let store: HttpDurableEventStore;
const SESSION = SessionId('fuzz-target');
const RUNS = sized(20, 60);

beforeAll(async () => {
  worker = await startLocalWorker();
  store = new HttpDurableEventStore({ baseUrl: worker.url, token: worker.adminToken });
  await store.append(SESSION, markerDrafts(3, 'fuzz'), { expectedLastSequence: null });
});

afterAll(async () => {
  await worker?.stop();
});

/** The session's whole observable state. */
async function snapshot(): Promise<string> {
  const page = await store.read(SESSION, { limit: 1000 });
  const lease = await store.inspectExecutionLease(SESSION);
  return JSON.stringify({ page, lease });
}

async function send(method: string, path: string, body: string | undefined): Promise<Response> {
  return fetch(worker.href(path), {
    method,
    headers: { authorization: `Bearer ${worker.adminToken}`, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body }),
  });
}

/** Checks the invariant of one fuzzed request: no 5xx, problem+json on errors. */
async function expectSane(response: Response, what: string): Promise<void> {
  expect(response.status, what).toBeLessThan(500);
  if (response.status >= 400) {
    expect(response.headers.get('content-type'), what).toMatch(/^application\/problem\+json/);
    const problem = (await response.json()) as { code?: unknown; status?: unknown };
    expect(typeof problem.code, what).toBe('string');
    expect(problem.status, what).toBe(response.status);
  } else {
    await response.body?.cancel();
  }
}

const WRITE_ROUTES = ['events', 'lease/acquire', 'lease/renew', 'lease/release', 'lease/assert'] as const;

/** Bodies close to valid ones, plus arbitrary JSON. */
const jsonBody = fc.oneof(
  fc.jsonValue(),
  fc.record(
    {
      events: fc.oneof(fc.jsonValue(), fc.array(fc.dictionary(fc.constantFrom('type', 'data', 'requestId', 'x'), fc.jsonValue()))),
      expectedLastSequence: fc.jsonValue(),
      executionFence: fc.jsonValue(),
      fence: fc.jsonValue(),
      ttlMs: fc.jsonValue(),
      ownerId: fc.jsonValue(),
      leaseId: fc.jsonValue(),
    },
    { requiredKeys: [] },
  ),
);

describe('fuzzed requests never cause a 5xx or a change', () => {
  it('random JSON bodies on every write route', async () => {
    const before = await snapshot();
    let accepted = 0;
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...WRITE_ROUTES), jsonBody, async (route, body) => {
        const response = await send('POST', `/v1/sessions/${SESSION}/${route}`, JSON.stringify(body));
        if (response.status < 400) accepted += 1;
        await expectSane(response, `${route} ${JSON.stringify(body).slice(0, 200)}`);
      }),
      { numRuns: RUNS * 2 },
    );
    expect(accepted).toBe(0);
    expect(await snapshot()).toBe(before);
  });

  it('raw, non-JSON bodies (any bytes a string can carry)', async () => {
    const before = await snapshot();
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...WRITE_ROUTES, '../../tokens'), fc.string({ unit: 'binary', maxLength: 200 }), async (route, body) => {
        const response = await send('POST', `/v1/sessions/${SESSION}/${route}`, body);
        await expectSane(response, `${route} raw`);
      }),
      { numRuns: RUNS },
    );
    expect(await snapshot()).toBe(before);
  });

  it('random query strings on the read, head, lease and subscribe routes', async () => {
    const before = await snapshot();
    const key = fc.oneof(fc.constantFrom('after', 'limit', 'waitMs', 'access_token', ''), fc.string({ maxLength: 8 }));
    const value = fc.oneof(fc.string({ unit: 'binary', maxLength: 24 }), fc.integer().map(String), fc.double().map(String));
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('events', 'head', 'lease', 'subscribe'),
        fc.array(fc.tuple(key, value), { maxLength: 4 }),
        async (route, pairs) => {
          const query = new URLSearchParams();
          for (const [k, v] of pairs) {
            // A valid positive wait would legitimately block; keep the fuzz fast.
            query.append(k, k === 'waitMs' && /^[1-9][0-9]*$/.test(v) ? '0' : v);
          }
          const response = await send('GET', `/v1/sessions/${SESSION}/${route}?${query.toString()}`, undefined);
          await expectSane(response, `${route}?${query.toString()}`);
        },
      ),
      { numRuns: RUNS * 2 },
    );
    expect(await snapshot()).toBe(before);
  });

  it('random session ids in the path', async () => {
    await fc.assert(
      fc.asyncProperty(fc.string({ unit: 'binary', minLength: 0, maxLength: 300 }), async (sessionId) => {
        const response = await send('GET', `/v1/sessions/${encodeURIComponent(sessionId)}/head`, undefined);
        expect(response.status).toBeLessThan(500);
        await response.body?.cancel();
      }),
      { numRuns: RUNS },
    );
    expect(await snapshot()).toContain('fuzz-2');
  });
});
