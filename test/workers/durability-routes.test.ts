/**
 * Inside workerd, over HTTP through the fixture Worker (the ledger's app, `SESSIONS` bound to a
 * SessionObject subclass with the test agent): start a tool call (202), watch its status, deliver
 * to it, read the ledger — with the API's authentication, validation and problem+json errors.
 */
import { abortAllDurableObjects } from 'cloudflare:test';
import { env, exports } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import type { RunState } from '../../src/adapters/durable-object/durability-rpc.js';
import { SessionId } from '../../src/protocol/ids.js';
import { mintSessionToken, type TokenScope } from '../../src/app/auth.js';
import * as fixture from './fixtures/agents-worker.js';
import { freshSession, TEST_AGENT, until } from './durability-helpers.js';

const BASE = 'http://agent-ledger.test';

function call(method: string, path: string, token: string, body?: unknown): Promise<Response> {
  return exports.default.fetch(`${BASE}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
}

async function json<T>(response: Response): Promise<T> {
  return (await response.json()) as T;
}

async function tokenFor(sessionId: string, scopes: TokenScope[]): Promise<string> {
  return (await mintSessionToken(env, { sessionId: SessionId(sessionId), scopes, ttlSeconds: 600 }, Date.now())).token;
}

const admin = env.ADMIN_TOKEN;

describe('run routes', () => {
  it('start a tool call (202), report its progress, and read the ledger', async () => {
    const sessionId = freshSession('http');
    const started = await call('POST', `/v1/sessions/${sessionId}/runs/run-1/tool-calls`, admin, {
      agent: TEST_AGENT,
      toolName: 'loop',
      toolCallId: 'call-1',
      input: { steps: 2 },
    });
    expect(started.status).toBe(202);
    expect(await json(started)).toEqual({ runId: 'run-1', toolCallId: 'call-1', status: 'running' });

    const done = await until(
      async () => json<RunState>(await call('GET', `/v1/sessions/${sessionId}/runs/run-1`, admin)),
      (state) => state.status === 'completed',
      'completion',
    );
    expect(done.toolCalls).toEqual([
      {
        toolCallId: 'call-1',
        agent: TEST_AGENT,
        toolName: 'loop',
        status: 'completed',
        attempts: 0,
        live: false,
        result: { steps: 2, sum: 1 },
      },
    ]);
    const page = await json<{ records: Array<{ kind: string; key: string }>; headSequence: number }>(
      await call('GET', `/v1/sessions/${sessionId}/durability?limit=2`, admin),
    );
    expect(page.records.map((r) => `${r.kind}:${r.key}`)).toEqual(['step:s0', 'step:s1']);
    expect(page.headSequence).toBe(3);

    const unknown = await json<RunState>(await call('GET', `/v1/sessions/${sessionId}/runs/other`, admin));
    expect(unknown).toEqual({ runId: 'other', status: 'unknown', toolCalls: [] });
  });

  it('deliver to a waiting call, resuming it after its object was thrown away', async () => {
    const sessionId = freshSession('http-deliver');
    const starter = await tokenFor(sessionId, ['append', 'read']);
    const deliverer = await tokenFor(sessionId, ['deliver']);
    const started = await call('POST', `/v1/sessions/${sessionId}/runs/r/tool-calls`, starter, {
      agent: TEST_AGENT,
      toolName: 'waiter',
      toolCallId: 'c',
      input: { timeoutMs: 600_000 },
    });
    expect(started.status).toBe(202);
    await until(
      async () => json<{ records: Array<{ kind: string }> }>(await call('GET', `/v1/sessions/${sessionId}/durability`, starter)),
      (page) => page.records.some((r) => r.kind === 'wait'),
      'the wait record',
    );
    await abortAllDurableObjects();

    // The delivering token may deliver, and nothing else.
    const forbidden = await call('POST', `/v1/sessions/${sessionId}/runs/r/tool-calls`, deliverer, {
      agent: TEST_AGENT,
      toolName: 'waiter',
      toolCallId: 'c2',
    });
    expect(forbidden.status).toBe(403);
    const delivered = await call('POST', `/v1/sessions/${sessionId}/runs/r/deliveries`, deliverer, {
      key: 'approval',
      deliveryId: 'd-1',
      payload: { approved: true },
    });
    expect(delivered.status).toBe(200);
    expect(await json(delivered)).toMatchObject({ deliveryId: 'd-1', created: true, resumed: ['c'] });
    const done = await until(
      async () => json<RunState>(await call('GET', `/v1/sessions/${sessionId}/runs/r`, starter)),
      (state) => state.status === 'completed',
      'completion',
    );
    expect(done.toolCalls[0]?.result).toMatchObject({ reply: { approved: true } });

    const conflict = await call('POST', `/v1/sessions/${sessionId}/runs/r/deliveries`, deliverer, {
      key: 'approval',
      deliveryId: 'd-1',
      payload: { approved: false },
    });
    expect(conflict.status).toBe(409);
    expect(await json(conflict)).toMatchObject({ code: 'DURABILITY_CONFLICT' });
  });

  it('refuse bad requests with problem+json', async () => {
    const sessionId = freshSession('http-bad');
    const path = `/v1/sessions/${sessionId}/runs/r/tool-calls`;
    const unknownTool = await call('POST', path, admin, { agent: TEST_AGENT, toolName: 'nope', toolCallId: 'c' });
    expect(unknownTool.status).toBe(400);
    expect(unknownTool.headers.get('content-type')).toMatch(/problem\+json/);
    expect(await json(unknownTool)).toMatchObject({ code: 'DURABILITY_INVALID_INPUT' });

    const extraField = await call('POST', path, admin, { agent: TEST_AGENT, toolName: 'loop', toolCallId: 'c', extra: 1 });
    expect(extraField.status).toBe(400);
    expect(await json(extraField)).toMatchObject({ code: 'DURABILITY_INVALID_INPUT' });

    const negativeZero = await exports.default.fetch(`${BASE}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
      body: `{"agent":"${TEST_AGENT}","toolName":"loop","toolCallId":"c","input":{"steps":-0}}`,
    });
    expect(negativeZero.status).toBe(400);
    expect(await json(negativeZero)).toMatchObject({ code: 'DURABILITY_INVALID_VALUE' });

    const noToken = await exports.default.fetch(`${BASE}${path}`, { method: 'POST', body: '{}' });
    expect(noToken.status).toBe(401);
    await noToken.body?.cancel();
    const badCursor = await call('GET', `/v1/sessions/${sessionId}/durability?after=5`, admin);
    expect(badCursor.status).toBe(400);
    expect(await json(badCursor)).toMatchObject({ code: 'DURABILITY_INVALID_INPUT' });
  });

  it('are listed in the OpenAPI document', async () => {
    const doc = await json<{ paths: Record<string, Record<string, { responses: Record<string, unknown> }>> }>(
      await call('GET', '/v1/openapi.json', admin),
    );
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining([
        '/v1/sessions/{sessionId}/runs/{runId}/tool-calls',
        '/v1/sessions/{sessionId}/runs/{runId}/deliveries',
        '/v1/sessions/{sessionId}/runs/{runId}',
        '/v1/sessions/{sessionId}/durability',
      ]),
    );
    expect(Object.keys(doc.paths['/v1/sessions/{sessionId}/runs/{runId}/tool-calls']?.['post']?.responses ?? {})).toContain('202');
  });
});

describe('the fixture worker', () => {
  it('exports only entry points (wrangler dev would refuse anything else)', () => {
    for (const [name, value] of Object.entries(fixture)) {
      if (name === 'default') expect(value).toHaveProperty('fetch', expect.any(Function));
      else expect({ name, type: typeof value }).toEqual({ name, type: 'function' });
    }
  });
});
