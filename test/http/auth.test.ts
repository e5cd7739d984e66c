/**
 * Authentication and authorization on every route of the local Worker. The route list comes
 * from the Worker's own OpenAPI document, so a route added later is covered here too.
 * - no token, a malformed, wrongly signed, expired or foreign-audience token: 401;
 * - a session token for another session, or without the route's scope: 403;
 * - a session token on an admin route: 403; the admin token passes everywhere;
 * - `?access_token=` counts only on the subscribe route.
 */
import { sign } from 'hono/jwt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { markerDrafts } from '../../src/conformance/fixtures.js';
import { api, concretePath, documentedOperations, readProblem, type DocumentedOperation } from './http-helpers.js';
import { ALL_SCOPES, LOCAL_WORKER_SECRETS, startLocalWorker, type LocalWorker, type TestTokenScope } from './local-worker.js';

let worker: LocalWorker;
let operations: DocumentedOperation[];

/** A session id that needs URL encoding (space, slash, non-ASCII). */
const SESSION_A = 'auth session/α';
const SESSION_B = 'auth-session-b';

beforeAll(async () => {
  worker = await startLocalWorker();
  operations = await documentedOperations(worker);
});

afterAll(async () => {
  await worker?.stop();
});

function call(operation: DocumentedOperation, token: string | undefined, extra: { query?: string } = {}) {
  return api(worker, `${concretePath(operation.path, SESSION_A)}${extra.query ?? ''}`, {
    method: operation.method,
    token,
    ...(operation.method === 'POST' ? { body: {} } : {}),
  });
}

async function expectStatus(response: Response, status: number, code: string, what: string): Promise<void> {
  expect(response.status, what).toBe(status);
  const problem = await readProblem(response);
  expect(problem.code, what).toBe(code);
}

async function expectAllowed(response: Response, what: string): Promise<void> {
  expect([401, 403], `${what}: ${response.status}`).not.toContain(response.status);
  await response.body?.cancel();
}

describe('authentication and authorization on every route', () => {
  it('documents the expected set of routes', () => {
    const ids = operations.map((operation) => operation.operationId).sort();
    expect(ids).toEqual(
      expect.arrayContaining([
        'acquireExecutionLease',
        'appendEvents',
        'assertExecutionLease',
        'docs',
        'getHeadSequence',
        'health',
        'inspectExecutionLease',
        'mintToken',
        'openapi',
        'readEvents',
        'releaseExecutionLease',
        'renewExecutionLease',
        'subscribe',
      ]),
    );
    for (const operation of operations) {
      // Every /v1 route needs a token, except the OpenAPI document (public so tools can read it).
      if (operation.path.startsWith('/v1/') && operation.path !== '/v1/openapi.json') {
        expect(operation.access.kind, operation.path).not.toBe('public');
      }
    }
  });

  it('answers 401 without a valid token on every protected route', async () => {
    const wrongSecret = await sign(
      { sub: SESSION_A, scopes: ALL_SCOPES, aud: 'agent-ledger', exp: Math.floor(Date.now() / 1000) + 600 },
      'not-the-secret',
      'HS256',
    );
    const expired = await sign(
      { sub: SESSION_A, scopes: ALL_SCOPES, aud: 'agent-ledger', exp: Math.floor(Date.now() / 1000) - 10 },
      LOCAL_WORKER_SECRETS.TOKEN_SECRET,
      'HS256',
    );
    const foreignAudience = await sign(
      { sub: SESSION_A, scopes: ALL_SCOPES, aud: 'someone-else', exp: Math.floor(Date.now() / 1000) + 600 },
      LOCAL_WORKER_SECRETS.TOKEN_SECRET,
      'HS256',
    );
    const noExpiry = await sign({ sub: SESSION_A, scopes: ALL_SCOPES, aud: 'agent-ledger' }, LOCAL_WORKER_SECRETS.TOKEN_SECRET, 'HS256');
    // Signed with the right secret but living longer than the 30-day cap (minting refuses these;
    // verification must too), or without an issue time to measure the lifetime from.
    const now = Math.floor(Date.now() / 1000);
    const thirtyDays = 30 * 24 * 60 * 60;
    const sign30 = (claims: Record<string, unknown>) =>
      sign({ sub: SESSION_A, scopes: ALL_SCOPES, aud: 'agent-ledger', ...claims }, LOCAL_WORKER_SECRETS.TOKEN_SECRET, 'HS256');
    const overLong = await sign30({ iat: now, exp: now + thirtyDays + 3600 });
    const yearLong = await sign30({ iat: now - 3600, exp: now + 365 * 24 * 3600 });
    const issuedInFuture = await sign30({ iat: now + 3600, exp: now + 7200 });
    const noIssuedAt = await sign30({ exp: now + 600 });
    const badTokens = [
      'garbage',
      'a.b.c',
      wrongSecret,
      expired,
      foreignAudience,
      noExpiry,
      overLong,
      yearLong,
      issuedInFuture,
      noIssuedAt,
      `${worker.adminToken}x`,
    ];
    for (const operation of operations.filter((op) => op.access.kind !== 'public')) {
      const what = `${operation.method} ${operation.path}`;
      const missing = await call(operation, undefined);
      expect(missing.headers.get('www-authenticate'), what).toMatch(/^Bearer/);
      await expectStatus(missing, 401, 'HTTP_UNAUTHORIZED', `${what} without a token`);
      for (const token of badTokens) {
        await expectStatus(await call(operation, token), 401, 'HTTP_UNAUTHORIZED', `${what} with a bad token`);
      }
      const basic = await api(worker, concretePath(operation.path, SESSION_A), {
        method: operation.method,
        headers: { authorization: 'Basic YWRtaW46YWRtaW4=' },
      });
      await expectStatus(basic, 401, 'HTTP_UNAUTHORIZED', `${what} with Basic auth`);
    }
  });

  it('answers 403 for another session, a missing scope, or a session token on admin routes', async () => {
    const everythingOnB = await worker.mintToken(SESSION_B, ALL_SCOPES);
    for (const operation of operations) {
      const what = `${operation.method} ${operation.path}`;
      const { kind, scope } = operation.access;
      if (kind === 'session') {
        await expectStatus(await call(operation, everythingOnB), 403, 'HTTP_FORBIDDEN', `${what} with a token for B`);
        const others = ALL_SCOPES.filter((s) => s !== scope);
        const withoutScope = await worker.mintToken(SESSION_A, others);
        await expectStatus(await call(operation, withoutScope), 403, 'HTTP_FORBIDDEN', `${what} without "${scope}"`);
        const onlyScope = await worker.mintToken(SESSION_A, [scope as TestTokenScope]);
        await expectAllowed(await call(operation, onlyScope), `${what} with exactly "${scope}"`);
      } else if (kind === 'admin') {
        await expectStatus(await call(operation, everythingOnB), 403, 'HTTP_FORBIDDEN', `${what} with a session token`);
      } else {
        await expectAllowed(await call(operation, everythingOnB), `${what} with any session token`);
      }
      await expectAllowed(await call(operation, worker.adminToken), `${what} with the admin token`);
    }
  });

  it('accepts ?access_token= on the subscribe route only', async () => {
    const token = await worker.mintToken(SESSION_A, ALL_SCOPES);
    const head = await api(worker, `${concretePath('/v1/sessions/{sessionId}/head', SESSION_A)}?access_token=${token}`);
    await expectStatus(head, 401, 'HTTP_UNAUTHORIZED', 'head with a query token');
    // Authenticated by the query token; then refused only for lacking an upgrade or Accept header.
    const subscribe = await api(worker, `${concretePath('/v1/sessions/{sessionId}/subscribe', SESSION_A)}?access_token=${token}`);
    await expectStatus(subscribe, 426, 'HTTP_UPGRADE_REQUIRED', 'subscribe with a query token');
  });

  it('lets a scoped session token do its work on its own session, and nothing else', async () => {
    const appendOnly = await worker.mintToken(SESSION_A, ['append']);
    const appended = await api(worker, concretePath('/v1/sessions/{sessionId}/events', SESSION_A), {
      token: appendOnly,
      body: { events: markerDrafts(1, 'auth') },
    });
    expect(appended.status).toBe(200);
    const body = (await appended.json()) as { events: Array<{ sessionId: string }> };
    expect(body.events[0]?.sessionId).toBe(SESSION_A);
    const read = await api(worker, concretePath('/v1/sessions/{sessionId}/events', SESSION_A), { token: appendOnly });
    await expectStatus(read, 403, 'HTTP_FORBIDDEN', 'read with an append-only token');
    const other = await api(worker, concretePath('/v1/sessions/{sessionId}/events', SESSION_B), {
      token: appendOnly,
      body: { events: markerDrafts(1, 'auth') },
    });
    await expectStatus(other, 403, 'HTTP_FORBIDDEN', 'append to another session');
    const head = await api(worker, concretePath('/v1/sessions/{sessionId}/head', SESSION_B), { token: worker.adminToken });
    expect(await head.json()).toEqual({ headSequence: null });
  });

  it('mints tokens only with valid requests', async () => {
    const mint = (body: unknown) => api(worker, '/v1/tokens', { token: worker.adminToken, body });
    const ok = await mint({ sessionId: 's', scopes: ['read'], ttlSeconds: 60 });
    expect(ok.status).toBe(201);
    const minted = (await ok.json()) as { token: string; expiresAt: string };
    expect(minted.token.split('.')).toHaveLength(3);
    expect(Date.parse(minted.expiresAt) - Date.now()).toBeLessThanOrEqual(61_000);
    // A token at exactly the cap is minted and accepted.
    const longest = await mint({ sessionId: 's', scopes: ['read'], ttlSeconds: 30 * 24 * 3600 });
    expect(longest.status).toBe(201);
    const longestToken = ((await longest.json()) as { token: string }).token;
    const headWithLongest = await api(worker, '/v1/sessions/s/head', { token: longestToken });
    expect(headWithLongest.status).toBe(200);
    await headWithLongest.body?.cancel();
    for (const body of [
      { sessionId: 's', scopes: [] },
      { sessionId: 's', scopes: ['admin'] },
      { sessionId: '', scopes: ['read'] },
      { sessionId: 's', scopes: ['read'], ttlSeconds: 31 * 24 * 3600 },
      { sessionId: 's', scopes: ['read'], ttlSeconds: 0 },
      { sessionId: 's', scopes: ['read'], extra: true },
    ]) {
      await expectStatus(await mint(body), 400, 'DURABLE_EVENT_INVALID_INPUT', JSON.stringify(body));
    }
  });

  it('never echoes a token in an error', async () => {
    const secretLooking = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl';
    const response = await api(worker, '/v1/sessions/s/head', { token: secretLooking });
    const text = await response.text();
    expect(response.status).toBe(401);
    expect(text).not.toContain(secretLooking);
    expect(text).not.toContain('c2lnbmF0dXJl');
  });
});
