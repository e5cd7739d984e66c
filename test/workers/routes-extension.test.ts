/**
 * Inside workerd: a route group added through `createApp({ extraGroups })` is routed,
 * authenticated, validated and documented exactly like the built-in ones. This is how the
 * journal, projection and recovery routes plug in (one file per group under worker/routes/).
 */
import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { SessionId } from '../../src/protocol/ids.js';
import { createApp } from '../../src/app/app.js';
import { mintSessionToken } from '../../src/app/auth.js';
import { defineSessionRoute } from '../../src/app/route-kit.js';

const echoBody = z.strictObject({ value: z.number().int() }).meta({ id: 'EchoRequest' });
const echoResponse = z.strictObject({ sessionId: z.string(), value: z.number() }).meta({ id: 'EchoResponse' });

const app = createApp({
  extraGroups: [
    () => [
      defineSessionRoute({
        method: 'post',
        path: '/v1/sessions/{sessionId}/echo',
        operationId: 'echo',
        summary: 'Echo (test route)',
        tags: ['test'],
        scope: 'deliver',
        body: echoBody,
        response: { schema: echoResponse, description: 'The echo.' },
        errors: ['DURABLE_EVENT_INVALID_INPUT'],
        handle: ({ sessionId, body }) => ({ sessionId, value: body.value }),
      }),
    ],
  ],
});

function post(path: string, token: string | undefined, body: unknown): Promise<Response> {
  return Promise.resolve(
    app.fetch(
      new Request(`http://ledger.test${path}`, {
        method: 'POST',
        headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
        body: JSON.stringify(body),
      }),
      env,
    ),
  );
}

describe('route groups plug into the app', () => {
  it('routes, authenticates and validates an added route', async () => {
    const deliver = (await mintSessionToken(env, { sessionId: SessionId('a b'), scopes: ['deliver'], ttlSeconds: 60 }, Date.now())).token;
    const readOnly = (await mintSessionToken(env, { sessionId: SessionId('a b'), scopes: ['read'], ttlSeconds: 60 }, Date.now())).token;

    const ok = await post('/v1/sessions/a%20b/echo', deliver, { value: 7 });
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual({ sessionId: 'a b', value: 7 });

    expect((await post('/v1/sessions/a%20b/echo', undefined, { value: 7 })).status).toBe(401);
    expect((await post('/v1/sessions/a%20b/echo', readOnly, { value: 7 })).status).toBe(403);
    expect((await post('/v1/sessions/other/echo', deliver, { value: 7 })).status).toBe(403);

    const invalid = await post('/v1/sessions/a%20b/echo', env.ADMIN_TOKEN, { value: 'seven' });
    expect(invalid.status).toBe(400);
    expect(invalid.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(await invalid.json()).toMatchObject({ code: 'DURABLE_EVENT_INVALID_INPUT', status: 400 });
  });

  it('documents the added route in the OpenAPI document', async () => {
    const response = await app.fetch(
      new Request('http://ledger.test/v1/openapi.json', { headers: { authorization: `Bearer ${env.ADMIN_TOKEN}` } }),
      env,
    );
    const document = (await response.json()) as {
      paths: Record<string, Record<string, { operationId: string; 'x-agent-ledger-access': unknown }>>;
      components: { schemas: Record<string, unknown> };
    };
    const echo = document.paths['/v1/sessions/{sessionId}/echo']?.['post'];
    expect(echo?.operationId).toBe('echo');
    expect(echo?.['x-agent-ledger-access']).toEqual({ kind: 'session', scope: 'deliver' });
    expect(Object.keys(document.components.schemas)).toEqual(expect.arrayContaining(['EchoRequest', 'EchoResponse']));
    expect(document.paths['/v1/sessions/{sessionId}/events']).toBeDefined();
  });
});
