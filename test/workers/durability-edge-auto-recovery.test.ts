/**
 * Inside workerd: a mount that asks for `EDGE_AUTO_RECOVERY_POLICY` (the fixture agent does for
 * sessions whose ID contains `-auto-`) continues a model stream cut off by an eviction without an
 * operator. The object is thrown away (`abortAllDurableObjects`) mid stream of `hang-once`; the new
 * instance records the cut attempt as `model_request_aborted` (`process_restart`), calls the model
 * again as a new attempt of the same Request and Turn, and the request completes. A subscriber
 * reconnecting with its last cursor sees every durable event once. The demo agent of the default
 * Worker mounts the policy. Under the default policy, a new message while a request is parked is
 * answered over the Worker with 409 `DURABLE_SESSION_RECOVERY_REQUIRED` saying why and what
 * unblocks it (also as the first request a new instance gets), and is not stored. Nothing waits
 * on time except bounded polling for a state.
 */
import { abortAllDurableObjects } from 'cloudflare:test';
import { env, exports } from 'cloudflare:workers';
import { mintSessionToken } from '../../src/app/auth.js';
import { SessionId } from '../../src/protocol/ids.js';
import { describe, expect, it } from 'vitest';
import type { AgentRequestAccepted, AgentStatus } from '../../src/adapters/durable-object/agent-rpc.js';
import { EDGE_AUTO_RECOVERY_POLICY } from '../../src/edge/agent-host.js';
import { unwrapRpcResult, type RpcResult } from '../../src/adapters/durable-object/rpc.js';
import type { DurableReadResult } from '../../src/core/store.js';
import type { DurableEventEnvelope } from '../../src/protocol/events.js';
import { demoAgent } from '../../worker/demo-agent.js';
import { freshSession, objectOf, until } from './durability-helpers.js';
import { TestSubscriber } from './session-object-helpers.js';

interface AgentApi {
  submitRequest(sessionId: string, input: { commandId: string; input: string }): Promise<RpcResult<AgentRequestAccepted>>;
  agentStatus(sessionId: string): Promise<RpcResult<AgentStatus>>;
  read(sessionId: string, options?: { limit?: number }): Promise<RpcResult<DurableReadResult>>;
  effects(): Promise<Record<string, number>>;
}

function api(sessionId: string): AgentApi {
  // SAFETY: the fixture object implements every AgentApi method.
  return objectOf(sessionId).api as unknown as AgentApi;
}

/** The fields of a logged event these checks read (scope IDs are absent on session-level events). */
type Logged = DurableEventEnvelope & { requestId?: string; turnId?: string; modelAttemptId?: string };

async function logOf(sessionId: string): Promise<Logged[]> {
  return unwrapRpcResult<DurableReadResult>(await api(sessionId).read(sessionId, { limit: 1000 })).events;
}

describe('EDGE_AUTO_RECOVERY_POLICY in the session object', () => {
  it('the demo agent of the default Worker asks for it', () => {
    expect(demoAgent().recoveryPolicy).toBe(EDGE_AUTO_RECOVERY_POLICY);
  });

  it('an eviction mid stream: the cut attempt is aborted (process_restart), the model is called again, the request completes', async () => {
    const sessionId = freshSession('edge-auto-stream');
    await logOf(sessionId);
    const before = await TestSubscriber.open(sessionId, { sessionId });
    const accepted = unwrapRpcResult<AgentRequestAccepted>(await api(sessionId).submitRequest(sessionId, { commandId: 'cmd-auto', input: 'hang-once' }));
    await before.until((s) => s.messages.filter((m) => m.type === 'text_delta').length === 2, 'two deltas');

    await abortAllDurableObjects();
    const status = await until(
      async () => unwrapRpcResult<AgentStatus>(await api(sessionId).agentStatus(sessionId)),
      (s) => s.state === 'idle' && s.activeRequestId === null,
      'the resumed request to end',
    );
    expect(status.plan).toBeNull();
    const log = await logOf(sessionId);
    const types = log.map((event) => event.type);
    expect(types.at(-1)).toBe('request_completed');
    const starts = log.filter((event) => event.type === 'model_request_started');
    expect(starts).toHaveLength(2);
    const [cut, again] = starts as [Logged, Logged];
    const aborted = log.filter((event) => event.type === 'model_request_aborted');
    expect(aborted.map((event) => [event.modelAttemptId, event.data])).toEqual([[cut.modelAttemptId, { reason: 'process_restart' }]]);
    // A new attempt of the same Request and Turn (no rollover).
    expect(again.modelAttemptId).not.toBe(cut.modelAttemptId);
    expect([again.requestId, again.turnId]).toEqual([accepted.requestId, cut.turnId]);
    expect(types.filter((type) => type === 'request_accepted')).toHaveLength(1);
    const completed = log.find((event) => event.type === 'model_request_completed');
    expect((completed?.data as { response: { content: unknown } }).response.content).toBe('Recovered answer');
    expect(await api(sessionId).effects()).toEqual({ 'hang-once': 1 });

    const after = await TestSubscriber.open(sessionId, { sessionId, after: before.events.at(-1)?.cursor as string });
    await after.until((s) => s.messages.some((m) => m.type === 'caught_up'), 'caught_up');
    const seen = [...before.events, ...after.events].map((frame) => frame.event.sequence);
    expect(seen).toEqual(log.map((event) => event.sequence));
    after.close();
  });
});

describe('a new message while a request is parked (default policy)', () => {
  const post = async (sessionId: string, route: string, body: unknown): Promise<Response> => {
    const { token } = await mintSessionToken(env, { sessionId: SessionId(sessionId), scopes: ['request', 'read'], ttlSeconds: 600 }, Date.now());
    return exports.default.fetch(`http://agent-ledger.test/v1/sessions/${sessionId}${route}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  };
  /** The problem+json body of an error answer. */
  interface Problem {
    code: string;
    detail: string;
    details: { plan: { action: string; requestId: string }; blockedRequestId: string; unblock: string };
  }

  it('is answered 409 DURABLE_SESSION_RECOVERY_REQUIRED with the plan and what unblocks it, even as the first request of a new instance', async () => {
    const sessionId = freshSession('edge-parked');
    const first = await post(sessionId, '/requests', { commandId: 'cmd-hang', input: 'hang-stream' });
    expect(first.status).toBe(202);
    const parkedRequest = ((await first.json()) as AgentRequestAccepted).requestId;
    await until(() => logOf(sessionId), (log) => log.some((event) => event.type === 'model_request_started'), 'the model call');
    await abortAllDurableObjects();

    // The first request the new instance gets: it waits for the instance's resume, which parks.
    const refused = await post(sessionId, '/requests', { commandId: 'cmd-next', input: 'hello' });
    expect(refused.status).toBe(409);
    const problem = (await refused.json()) as Problem;
    expect(problem.code).toBe('DURABLE_SESSION_RECOVERY_REQUIRED');
    expect(problem.details.plan).toMatchObject({ action: 'reconcile_model_outcome', requestId: parkedRequest });
    expect(problem.details.blockedRequestId).toBe(parkedRequest);
    expect(problem.details.unblock).toContain(`POST /v1/sessions/${sessionId}/recovery/reconcile-model-outcome`);
    expect(problem.details.unblock).toContain('EDGE_AUTO_RECOVERY_POLICY');
    expect(problem.detail).toContain('reconcile_model_outcome');
    // A steering input (which becomes a request when none runs) gets the same answer.
    const steered = await post(sessionId, '/inputs', { input: 'are you there?' });
    expect(steered.status).toBe(409);
    expect(((await steered.json()) as Problem).code).toBe('DURABLE_SESSION_RECOVERY_REQUIRED');
    // Nothing was stored or queued; the parked request's own commandId is still answered.
    const status = unwrapRpcResult<AgentStatus>(await api(sessionId).agentStatus(sessionId));
    expect(status).toMatchObject({ state: 'needs_recovery', queued: [] });
    const again = await post(sessionId, '/requests', { commandId: 'cmd-hang', input: 'hang-stream' });
    expect(again.status).toBe(202);
    expect(await again.json()).toMatchObject({ requestId: parkedRequest, created: false });
  });
});
