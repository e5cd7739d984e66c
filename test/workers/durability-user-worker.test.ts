/**
 * Inside workerd: a user's Worker as `agent-ledger/worker` lets them write it — their own
 * SessionObject subclass (the fixture's AgentSessionObject, with the test agent mounted) bound
 * under their own binding name (`AGENTS` here), every route mounted with one call to
 * `routeSessionRequest`, and the object called from Worker code through `sessionClient` with plain
 * results and typed errors.
 */
import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import {
  DurableCommandConflictError,
  DurableEventSequenceConflictError,
  DurableSessionRecoveryError,
} from '../../src/protocol/errors.js';
import { CommandId, EventSequence, InputId, RequestId, SessionId, ToolAttemptId } from '../../src/protocol/ids.js';
import {
  createApp,
  defineSessionRoute,
  routeSessionRequest,
  sessionClient,
  type RouteGroup,
} from '../../src/worker.js';
import { freshSession, TEST_AGENT, until } from './durability-helpers.js';

const BASE = 'http://user-worker.test';
/** The user's bindings: the same secrets, and the subclass's namespace under their own name. */
const userEnv = { ADMIN_TOKEN: env.ADMIN_TOKEN, TOKEN_SECRET: env.TOKEN_SECRET, AGENTS: env.SESSIONS };
const admin = env.ADMIN_TOKEN;

function request(method: string, path: string, body?: unknown, token: string | undefined = admin): Request {
  return new Request(`${BASE}${path}`, {
    method,
    headers: {
      ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
}

/** The user's whole Worker `fetch`. */
async function userFetch(req: Request): Promise<Response> {
  return (await routeSessionRequest(req, userEnv, { binding: 'AGENTS' })) ?? new Response('mine', { status: 418 });
}

describe('routeSessionRequest in a user Worker', () => {
  it('serves every ledger route over the configured binding and leaves other paths to the user', async () => {
    expect((await userFetch(request('GET', '/healthz'))).status).toBe(200);
    const other = await userFetch(request('GET', '/my/own/page'));
    expect(other.status).toBe(418);
    expect(await other.text()).toBe('mine');

    const sessionId = freshSession('user-events');
    const appended = await userFetch(
      request('POST', `/v1/sessions/${sessionId}/events`, { events: [{ type: 'session_created', data: { source: 'create' } }] }),
    );
    expect(appended.status).toBe(200);
    const page = (await (await userFetch(request('GET', `/v1/sessions/${sessionId}/events`))).json()) as { events: unknown[] };
    expect(page.events).toHaveLength(1);
  });

  it('runs a tool of the subclass through the run routes', async () => {
    const sessionId = freshSession('user-runs');
    const started = await userFetch(
      request('POST', `/v1/sessions/${sessionId}/runs/run-1/tool-calls`, {
        agent: TEST_AGENT,
        toolName: 'loop',
        toolCallId: 'call-1',
        input: { steps: 2 },
      }),
    );
    expect(started.status).toBe(202);
    const done = await until(
      async () => (await (await userFetch(request('GET', `/v1/sessions/${sessionId}/runs/run-1`))).json()) as { status: string },
      (state) => state.status === 'completed',
      'completion',
    );
    expect(done.status).toBe('completed');
  });

  it('answers 503 problem+json when the binding is missing, instead of throwing', async () => {
    const response = await routeSessionRequest(request('GET', '/v1/sessions/s/head'), { ADMIN_TOKEN: admin }, { binding: 'NOPE' });
    expect(response?.status).toBe(503);
    expect(await response?.json()).toMatchObject({ code: 'DURABLE_EVENT_UNAVAILABLE' });
  });

  it('mounts an extra route group with one option, documented in the OpenAPI document', async () => {
    const ping: RouteGroup = () => [
      defineSessionRoute({
        method: 'get',
        path: '/v1/sessions/{sessionId}/ping',
        operationId: 'userPing',
        summary: 'A user route',
        tags: ['user'],
        scope: 'read',
        errors: [],
        handle: ({ sessionId }) => ({ pong: sessionId }),
      }),
    ];
    const groups = [ping];
    const routed = await routeSessionRequest(request('GET', '/v1/sessions/s-1/ping'), userEnv, { binding: 'AGENTS', extraGroups: groups });
    expect(await routed?.json()).toEqual({ pong: 's-1' });
    const app = createApp({ binding: 'AGENTS', extraGroups: groups });
    const doc = (await (await app.fetch(request('GET', '/v1/openapi.json'), userEnv)).json()) as { paths: Record<string, unknown> };
    expect(Object.keys(doc.paths)).toContain('/v1/sessions/{sessionId}/ping');
  });
});

describe('sessionClient: the object over RPC with plain values and typed errors', () => {
  it('returns plain results', async () => {
    const sessionId = SessionId(freshSession('client-plain'));
    const session = sessionClient(userEnv.AGENTS, sessionId);
    expect(session.sessionId).toBe(sessionId);
    const appended = await session.append([{ type: 'session_created', data: { source: 'create' } }]);
    expect(appended.lastSequence).toBe(1);
    expect(await session.getHeadSequence()).toBe(1);
    const committed = await session.commit({
      commandId: CommandId('accept-1'),
      events: [
        { type: 'request_accepted', requestId: RequestId('req-1'), data: { inputId: InputId('in-1'), input: 'go', priority: 'next' } },
      ],
    });
    expect(committed).toMatchObject({ status: 'committed', headSequence: 2 });
    const { recoveryPlan, headSequence } = await session.projection();
    expect(headSequence).toBe(2);
    expect(recoveryPlan.action).toBe('resume_request');
    const decision = await session.recover('planResume', undefined);
    expect(decision).toMatchObject({ action: 'recovery_required', headSequence: 2 });
  });

  it('throws the typed error classes with their codes', async () => {
    const sessionId = SessionId(freshSession('client-errors'));
    const session = sessionClient(userEnv.AGENTS, sessionId);
    await session.append([{ type: 'session_created', data: { source: 'create' } }]);
    const stale = await session
      .append([{ type: 'session_closed', data: { reason: 'completed' } }], { expectedLastSequence: EventSequence(5) })
      .catch((error: unknown) => error);
    expect(stale).toBeInstanceOf(DurableEventSequenceConflictError);
    expect(stale).toMatchObject({ code: 'DURABLE_EVENT_SEQUENCE_CONFLICT' });

    const command = { commandId: CommandId('c-1'), events: [{ type: 'session_closed' as const, data: { reason: 'completed' as const } }] };
    await session.commit(command);
    const reused = await session
      .commit({ commandId: CommandId('c-1'), events: [{ type: 'session_closed', data: { reason: 'user_abort' } }] })
      .catch((error: unknown) => error);
    expect(reused).toBeInstanceOf(DurableCommandConflictError);

    const missing = await session
      .recover('startToolAttempt', { commandId: CommandId('r-1'), toolAttemptId: ToolAttemptId('no-such-tool') })
      .catch((error: unknown) => error);
    expect(missing).toBeInstanceOf(DurableSessionRecoveryError);
  });
});
