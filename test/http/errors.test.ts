/**
 * problem+json round trips: each domain failure produced over real HTTP comes back from
 * HttpDurableEventStore as the same error class with the same code and details, and its status is
 * the one `worker/http-errors.ts` maps the code to. Also: size limits (413 before the body is
 * read), unknown routes and methods, and what the client reports when the network itself fails.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpDurableEventStore, errorFromProblem } from '../../src/client.js';
import { markerDraft, markerDrafts, oversizedDraft } from '../../src/conformance/fixtures.js';
import {
  DurableEventSequenceConflictError,
  DurableEventStoreError,
  DurableExecutionLeaseError,
  DurableExecutionLeaseTimeoutError,
  durableErrorFromJson,
  isDurableEventSequenceConflictError,
  isDurableExecutionLeaseError,
} from '../../src/protocol/errors.js';
import { EventSequence, FencingToken, SessionId, WorkerId } from '../../src/protocol/ids.js';
import { MAX_BATCH_EVENTS } from '../../src/protocol/limits.js';
import { STATUS_BY_CODE } from '../../src/app/http-errors.js';
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

/**
 * A full batch as Python's json.dumps spells it: nine events of 900,000 UTF-8 bytes each ('é' is
 * two bytes, six when escaped), about 8.1 MB as the store encodes it (within MAX_BATCH_BYTES),
 * about 24 MB on the wire. Built before any request of the file: building it keeps the event loop
 * busy for seconds on a loaded machine, and a kept-alive connection the runtime closes for
 * idleness meanwhile would be taken for the next request (EPIPE) before the client sees it close.
 */
const FULL_BATCH = (() => {
  const text = 'é'.repeat(450_000);
  const events = Array.from({ length: 9 }, (_, index) => markerDraft(`${index}`, `${index}:${text}`));
  const rawBody = JSON.stringify({ events }).replace(/[\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  return { text, rawBody };
})();

function freshSession(): SessionId {
  counter += 1;
  return SessionId(`errors-${counter}-${Date.now()}`);
}

async function rejectionOf(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

describe('domain errors over HTTP', () => {
  it('rebuilds a sequence conflict with expected and actual', async () => {
    const sessionId = freshSession();
    await store.append(sessionId, markerDrafts(2), { expectedLastSequence: null });
    const error = await rejectionOf(store.append(sessionId, [markerDraft('x')], { expectedLastSequence: EventSequence(1) }));
    expect(error).toBeInstanceOf(DurableEventSequenceConflictError);
    expect(isDurableEventSequenceConflictError(error)).toBe(true);
    expect(error).toMatchObject({ code: 'DURABLE_EVENT_SEQUENCE_CONFLICT', expected: 1, actual: 2 });

    const raw = await api(worker, `/v1/sessions/${sessionId}/events`, {
      token: worker.adminToken,
      body: { events: [markerDraft('x')], expectedLastSequence: null },
    });
    expect(raw.status).toBe(409);
    const problem = await readProblem(raw);
    expect(problem).toMatchObject({
      title: 'DurableEventSequenceConflictError',
      code: 'DURABLE_EVENT_SEQUENCE_CONFLICT',
      details: { expected: null, actual: 2 },
    });
    expect(errorFromProblem(raw.status, problem)).toBeInstanceOf(DurableEventSequenceConflictError);
  });

  it('rebuilds lease conflict (409), required (428) and lost (409) as DurableExecutionLeaseError', async () => {
    const sessionId = freshSession();
    const held = await store.acquireExecutionLease(sessionId, { ownerId: WorkerId('a'), leaseId: 'lease-a', ttlMs: 60_000 });
    const conflict = await rejectionOf(
      store.acquireExecutionLease(sessionId, { ownerId: WorkerId('b'), leaseId: 'lease-b', ttlMs: 60_000 }),
    );
    expect(conflict).toBeInstanceOf(DurableExecutionLeaseError);
    expect(conflict).toMatchObject({ code: 'DURABLE_EXECUTION_LEASE_CONFLICT' });

    const required = await rejectionOf(store.append(sessionId, [markerDraft('unfenced')]));
    expect(isDurableExecutionLeaseError(required)).toBe(true);
    expect(required).toMatchObject({ code: 'DURABLE_EXECUTION_LEASE_REQUIRED' });
    const rawRequired = await api(worker, `/v1/sessions/${sessionId}/events`, {
      token: worker.adminToken,
      body: { events: [markerDraft('unfenced')] },
    });
    expect(rawRequired.status).toBe(428);

    const stale = { leaseId: held.leaseId, ownerId: held.ownerId, fencingToken: FencingToken(held.fencingToken + 1) };
    const lost = await rejectionOf(store.append(sessionId, [markerDraft('stale')], { executionFence: stale }));
    expect(lost).toBeInstanceOf(DurableExecutionLeaseError);
    expect(lost).toMatchObject({ code: 'DURABLE_EXECUTION_LEASE_LOST' });

    const malformed = await api(worker, `/v1/sessions/${sessionId}/lease/renew`, {
      token: worker.adminToken,
      body: { fence: { leaseId: 'x' }, ttlMs: 1000 },
    });
    expect(malformed.status).toBe(400);
    expect((await readProblem(malformed)).code).toBe('DURABLE_EXECUTION_LEASE_INVALID');
    expect(await store.requiresExecutionLease(sessionId)).toBe(true);
  });

  it('maps invalid input and cursors to 400 with the store codes', async () => {
    const sessionId = freshSession();
    const badDraft = await rejectionOf(
      store.append(sessionId, [{ type: 'request_completed', data: {} } as unknown as ReturnType<typeof markerDraft>]),
    );
    expect(badDraft).toBeInstanceOf(DurableEventStoreError);
    expect(badDraft).toMatchObject({ code: 'DURABLE_EVENT_INVALID_INPUT' });

    // The same draft sent raw (bypassing the client's own validation) gets the same code from the Worker.
    const raw = await api(worker, `/v1/sessions/${sessionId}/events`, {
      token: worker.adminToken,
      body: { events: [{ type: 'request_completed', data: {} }] },
    });
    expect(raw.status).toBe(400);
    expect((await readProblem(raw)).code).toBe('DURABLE_EVENT_INVALID_INPUT');

    const ahead = await rejectionOf(store.read(sessionId, { after: EventSequence(5) }));
    expect(ahead).toMatchObject({ code: 'DURABLE_EVENT_INVALID_CURSOR' });
    const rawAhead = await api(worker, `/v1/sessions/${sessionId}/events?after=abc`, { token: worker.adminToken });
    expect(rawAhead.status).toBe(400);
    expect((await readProblem(rawAhead)).code).toBe('DURABLE_EVENT_INVALID_CURSOR');
    const badLimit = await api(worker, `/v1/sessions/${sessionId}/events?limit=1001`, { token: worker.adminToken });
    expect((await readProblem(badLimit)).code).toBe('DURABLE_EVENT_INVALID_INPUT');
    const unknownParam = await api(worker, `/v1/sessions/${sessionId}/events?afer=1`, { token: worker.adminToken });
    expect(unknownParam.status).toBe(400);
    await unknownParam.body?.cancel();
    expect(await store.getHeadSequence(sessionId)).toBeNull();
  });

  it('answers oversized events and batches with 413 DURABLE_EVENT_LIMIT_EXCEEDED', async () => {
    const sessionId = freshSession();
    const oneTooBig = await rejectionOf(store.append(sessionId, [oversizedDraft()]));
    expect(oneTooBig).toMatchObject({ code: 'DURABLE_EVENT_LIMIT_EXCEEDED' });
    const tooMany = await api(worker, `/v1/sessions/${sessionId}/events`, {
      token: worker.adminToken,
      body: { events: markerDrafts(MAX_BATCH_EVENTS + 1) },
    });
    expect(tooMany.status).toBe(413);
    expect((await readProblem(tooMany)).code).toBe('DURABLE_EVENT_LIMIT_EXCEEDED');
    expect(await store.getHeadSequence(sessionId)).toBeNull();
  });

  it('admits a full batch however the client escapes it (Python json.dumps: every non-ASCII character as \\u)', async () => {
    const sessionId = freshSession();
    const { text, rawBody } = FULL_BATCH;
    expect(rawBody.length).toBeGreaterThan(24_000_000);
    const response = await api(worker, `/v1/sessions/${sessionId}/events`, {
      token: worker.adminToken,
      rawBody,
      headers: { 'content-type': 'application/json' },
    });
    expect(response.status).toBe(200);
    await response.body?.cancel();
    const page = await store.read(sessionId, { limit: 1 });
    expect((page.events[0]?.data as { output?: string }).output).toBe(`0:${text}`);
    expect(await store.getHeadSequence(sessionId)).toBe(9);
  });

  it('refuses a huge body with 413 from Content-Length and from a streamed count', async () => {
    const sessionId = freshSession();
    // A declared length past the wire limit (eight times the compact limit) is refused from the header.
    const huge = new TextEncoder().encode(`{"events":[${'0,'.repeat(37 * 1024 * 1024)}0]}`);
    const declaredLength = huge.byteLength;
    const declaredResponse = await fetch(worker.href(`/v1/sessions/${encodeURIComponent(sessionId)}/events`), {
      method: 'POST',
      headers: { authorization: `Bearer ${worker.adminToken}`, 'content-type': 'application/json' },
      body: huge,
    });
    expect(declaredResponse.status).toBe(413);
    const declaredProblem = await readProblem(declaredResponse);
    expect(declaredProblem).toMatchObject({ code: 'DURABLE_EVENT_LIMIT_EXCEEDED' });
    // Refused from the header: the declared size is reported.
    expect(declaredProblem.details?.['actual']).toBe(declaredLength);

    // No Content-Length: a chunked upload is counted while it streams.
    const chunk = new TextEncoder().encode('0,'.repeat(512 * 1024));
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent === 0) controller.enqueue(new TextEncoder().encode('{"events":['));
        if (sent > 40) {
          controller.enqueue(new TextEncoder().encode('0]}'));
          controller.close();
          return;
        }
        sent += 1;
        controller.enqueue(chunk);
      },
    });
    const streamed = await fetch(worker.href(`/v1/sessions/${encodeURIComponent(sessionId)}/events`), {
      method: 'POST',
      headers: { authorization: `Bearer ${worker.adminToken}`, 'content-type': 'application/json' },
      body: stream,
      duplex: 'half',
    } as RequestInit);
    expect(streamed.status).toBe(413);
    const streamedProblem = await readProblem(streamed);
    expect(streamedProblem).toMatchObject({ code: 'DURABLE_EVENT_LIMIT_EXCEEDED' });
    // Refused while counting: no size was declared.
    expect(streamedProblem.details).not.toHaveProperty('actual');
    expect(await store.getHeadSequence(sessionId)).toBeNull();
  });

  it('maps every domain code through durableErrorFromJson to a class whose status is fixed', () => {
    for (const [code, status] of Object.entries(STATUS_BY_CODE)) {
      const error = errorFromProblem(status, { code, detail: 'x', details: { expected: 1, actual: 2 } });
      expect(error.code).toBe(code);
      expect(error.constructor).toBe(durableErrorFromJson({ code, message: 'x' }).constructor);
      expect(status).toBeGreaterThanOrEqual(400);
    }
  });
});

describe('HTTP-only failures', () => {
  it('answers unknown routes with 404 and wrong methods with 405 + Allow, as problem+json', async () => {
    const missing = await api(worker, '/v1/nope', { token: worker.adminToken });
    expect(missing.status).toBe(404);
    expect((await readProblem(missing)).code).toBe('HTTP_NOT_FOUND');
    const wrongMethod = await api(worker, '/v1/sessions/s/head', { token: worker.adminToken, method: 'DELETE' });
    expect(wrongMethod.status).toBe(405);
    expect(wrongMethod.headers.get('allow')).toContain('GET');
    expect((await readProblem(wrongMethod)).code).toBe('HTTP_METHOD_NOT_ALLOWED');
  });

  it('turns an auth failure into a classified store error with the HTTP status in its details', async () => {
    const anonymous = new HttpDurableEventStore({ baseUrl: worker.url, token: 'wrong-token' });
    const error = await rejectionOf(anonymous.getHeadSequence(SessionId('s')));
    expect(error).toBeInstanceOf(DurableEventStoreError);
    expect(error).toMatchObject({
      code: 'DURABLE_EVENT_UNAVAILABLE',
      details: { httpStatus: 401, remoteCode: 'HTTP_UNAUTHORIZED' },
    });
  });
});

describe('client-side failures', () => {
  let hanging: Server;
  let hangingUrl: string;

  beforeAll(async () => {
    // A real server that accepts requests and never answers them.
    hanging = createServer(() => undefined);
    await new Promise<void>((resolve) => hanging.listen(0, '127.0.0.1', resolve));
    hangingUrl = `http://127.0.0.1:${(hanging.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    hanging.closeAllConnections();
    await new Promise<void>((resolve) => hanging.close(() => resolve()));
  });

  it('reports a deadline as IO_TIMEOUT (store calls) or a lease timeout carrying the leaseId', async () => {
    const slow = new HttpDurableEventStore({ baseUrl: hangingUrl, token: 't', timeoutMs: 100 });
    expect(await rejectionOf(slow.read(SessionId('s')))).toMatchObject({ code: 'DURABLE_EVENT_IO_TIMEOUT' });
    expect(await rejectionOf(slow.append(SessionId('s'), [markerDraft('x')]))).toMatchObject({
      code: 'DURABLE_EVENT_IO_TIMEOUT',
    });
    const lease = await rejectionOf(
      slow.acquireExecutionLease(SessionId('s'), { ownerId: WorkerId('w'), leaseId: 'lease-7', ttlMs: 1000 }),
    );
    expect(lease).toBeInstanceOf(DurableExecutionLeaseTimeoutError);
    expect(lease).toMatchObject({ code: 'DURABLE_EXECUTION_LEASE_TIMEOUT', leaseId: 'lease-7' });
  });

  it('rejects with the abort reason when the caller aborts mid-request', async () => {
    const slow = new HttpDurableEventStore({ baseUrl: hangingUrl, token: 't' });
    const controller = new AbortController();
    const pending = slow.getHeadSequence(SessionId('s'), { signal: controller.signal });
    setTimeout(() => controller.abort(), 20);
    const error = await rejectionOf(pending);
    expect((error as Error).name).toBe('AbortError');
  });

  it('reports an unreachable Worker as WRITE_FAILED for appends (outcome unknown) and UNAVAILABLE for reads', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const offline = new HttpDurableEventStore({ baseUrl: `http://127.0.0.1:${port}`, token: 't' });
    expect(await rejectionOf(offline.append(SessionId('s'), [markerDraft('x')]))).toMatchObject({
      code: 'DURABLE_EVENT_WRITE_FAILED',
    });
    expect(await rejectionOf(offline.read(SessionId('s')))).toMatchObject({ code: 'DURABLE_EVENT_UNAVAILABLE' });
  });

  it('refuses session ids that cannot be a URL path segment, and validates before sending', async () => {
    const neverCalled = new HttpDurableEventStore({
      baseUrl: 'http://127.0.0.1:9',
      token: 't',
      fetch: () => Promise.reject(new Error('must not be called')),
    });
    for (const id of ['.', '..']) {
      expect(await rejectionOf(neverCalled.getHeadSequence(SessionId(id)))).toMatchObject({
        code: 'DURABLE_EVENT_INVALID_INPUT',
      });
    }
    expect(
      await rejectionOf(neverCalled.append(SessionId('s'), [{ ...markerDraft('x'), data: { output: Number.NaN } }])),
    ).toMatchObject({ code: 'DURABLE_EVENT_INVALID_INPUT' });
    expect(await rejectionOf(neverCalled.read(SessionId('s'), { limit: 0 }))).toMatchObject({
      code: 'DURABLE_EVENT_INVALID_INPUT',
    });
  });
});
