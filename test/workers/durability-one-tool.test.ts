/**
 * Inside workerd, over HTTP through the fixture Worker: one tool, defined once with `defineTool`
 * and mounted once (`SessionObject.sessionAgent()` of the fixture), is
 * (a) called by the model in an agent request (`POST .../requests`), and
 * (b) started as a run (`POST .../runs/:runId/tool-calls`),
 * each with its durable step recorded once under its own scope. The tool's side-effect class and
 * permission hold in a run too: a tool that needs permission is refused as a run, and a
 * non_idempotent run cut off by the loss of its instance is recorded failed, never executed again.
 */
import { abortAllDurableObjects } from 'cloudflare:test';
import { env, exports } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import type { AgentRequestAccepted } from '../../src/adapters/durable-object/agent-rpc.js';
import type { RunState } from '../../src/adapters/durable-object/durability-rpc.js';
import { unwrapRpcResult, type RpcResult } from '../../src/adapters/durable-object/rpc.js';
import type { DurabilityRecord } from '../../src/core/durability/record-contract.js';
import { toolCallScope } from '../../src/core/durability/scope.js';
import type { DurableReadResult } from '../../src/core/store.js';
import { freshSession, ledger, objectOf, TEST_AGENT, until } from './durability-helpers.js';

const BASE = 'http://agent-ledger.test';
const admin = env.ADMIN_TOKEN;

function call(method: string, path: string, body?: unknown): Promise<Response> {
  return exports.default.fetch(`${BASE}${path}`, {
    method,
    headers: { authorization: `Bearer ${admin}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
}

async function json<T>(response: Response): Promise<T> {
  return (await response.json()) as T;
}

async function eventsOf(sessionId: string): Promise<Array<{ type: string; data: Record<string, unknown> }>> {
  // SAFETY: the fixture object has the store's `read` method.
  const api = objectOf(sessionId).api as unknown as { read(id: string, options: { limit: number }): Promise<RpcResult<DurableReadResult>> };
  const page = unwrapRpcResult<DurableReadResult>(await api.read(sessionId, { limit: 1000 }));
  return page.events.map((event) => ({ type: event.type, data: event.data as Record<string, unknown> }));
}

function steps(records: readonly DurabilityRecord[]): Array<{ scope: string; key: string }> {
  return records.flatMap((record) => (record.kind === 'step' ? [{ scope: record.scope, key: record.key }] : []));
}

async function runOf(sessionId: string, runId: string): Promise<RunState> {
  return json<RunState>(await call('GET', `/v1/sessions/${sessionId}/runs/${runId}`));
}

describe('one tool, mounted once', () => {
  it('is called by the model in an agent request and started as a run, its step recorded once in each', async () => {
    const sessionId = freshSession('one-tool');
    const { api } = objectOf(sessionId);

    // (a) The model calls it.
    const accepted = await call('POST', `/v1/sessions/${sessionId}/requests`, { commandId: 'cmd-1', input: 'remember' });
    expect(accepted.status).toBe(202);
    const { requestId } = await json<AgentRequestAccepted>(accepted);
    const events = await until(() => eventsOf(sessionId), (log) => log.some((event) => event.type === 'request_completed'), 'the request');
    const completed = events.find((event) => event.type === 'tool_completed');
    expect(completed?.data).toMatchObject({ toolName: 'remember', result: { saved: 'milk' } });
    const modelCallId = String(completed?.data['toolCallId']);

    // (b) The same tool, started as a run over HTTP.
    const body = { agent: TEST_AGENT, toolName: 'remember', toolCallId: 'call-1', input: { note: 'eggs' } };
    const started = await call('POST', `/v1/sessions/${sessionId}/runs/run-1/tool-calls`, body);
    expect(started.status).toBe(202);
    const run = await until(() => runOf(sessionId, 'run-1'), (state) => state.status === 'completed', 'the run');
    expect(run.toolCalls).toEqual([
      { toolCallId: 'call-1', agent: TEST_AGENT, toolName: 'remember', status: 'completed', attempts: 0, live: false, result: { saved: 'eggs' } },
    ]);
    // Starting it again is idempotent: nothing runs again.
    const again = await call('POST', `/v1/sessions/${sessionId}/runs/run-1/tool-calls`, body);
    expect(await json(again)).toEqual({ runId: 'run-1', toolCallId: 'call-1', status: 'completed' });

    // One step per call, each under its call's scope; the effect ran once per call.
    expect(steps(await ledger(api, sessionId))).toEqual([
      { scope: toolCallScope(requestId, 'remember', modelCallId), key: 'save' },
      { scope: toolCallScope('run-1', 'remember', 'call-1'), key: 'save' },
    ]);
    expect((await api.effects())['remember']).toBe(2);
  });

  it('refuses as a run a tool that needs permission', async () => {
    const sessionId = freshSession('one-tool-permission');
    const refused = await call('POST', `/v1/sessions/${sessionId}/runs/r/tool-calls`, {
      agent: TEST_AGENT,
      toolName: 'approve_me',
      toolCallId: 'c',
      input: { what: 'deploy' },
    });
    expect(refused.status).toBe(400);
    expect(await json(refused)).toMatchObject({ code: 'DURABILITY_INVALID_INPUT' });
    expect((await objectOf(sessionId).api.effects())['approved']).toBeUndefined();
  });

  it('never executes a non_idempotent run again after its instance was lost', async () => {
    const sessionId = freshSession('one-tool-charge');
    const { api } = objectOf(sessionId);
    const started = await call('POST', `/v1/sessions/${sessionId}/runs/r/tool-calls`, {
      agent: TEST_AGENT,
      toolName: 'charge',
      toolCallId: 'c',
      input: { amount: 5, hang: true },
    });
    expect(started.status).toBe(202);
    await until(() => api.effects(), (effects) => effects['charge'] === 1, 'the charge');
    await abortAllDurableObjects();

    // The new instance's wake-up finds the call running and nothing executing it.
    const failed = await until(() => runOf(sessionId, 'r'), (state) => state.status === 'failed', 'the recorded failure');
    expect(failed.toolCalls[0]).toMatchObject({ status: 'failed', error: { code: 'TOOL_OUTCOME_UNKNOWN' } });
    expect((await objectOf(sessionId).api.effects())['charge']).toBe(1);
  });
});
