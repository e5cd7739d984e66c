/**
 * Inside workerd: the agent Session running in the session object (`SessionObject.sessionAgent()`
 * of the fixture, see fixtures/edge-test-agent.ts).
 *
 * - a full run streams durable events and transient frames in order (deltas before the event
 *   that completes them, tool progress before the tool's outcome), nothing transient in the log;
 * - a subscriber that connects mid-response gets the partial text, then live deltas, with no gap
 *   and no duplicate;
 * - the object thrown away (`abortAllDurableObjects`: memory and pending work lost, storage kept)
 *   (1) mid streamed model response: the new instance parks on `reconcile_model_outcome`, the model
 *   is not called again; (2) while a non_idempotent tool runs: it parks on
 *   `reconcile_tool_outcomes`, the tool never runs again, and after an operator reconciles it under
 *   the lease the run finishes; (3) while a permission waits: the answer resumes it.
 * In each abort case a subscriber reconnecting with its last cursor sees a gapless,
 * duplicate-free log. Nothing here waits on time except bounded polling for a state.
 */
import { abortAllDurableObjects, runInDurableObject } from 'cloudflare:test';
import { env, exports } from 'cloudflare:workers';
import { mintSessionToken, type TokenScope } from '../../src/app/auth.js';
import { SessionId } from '../../src/protocol/ids.js';
import { sseRelayResponse } from '../../src/app/sse.js';
import { describe, expect, it } from 'vitest';
import type {
  AgentAbortResult,
  AgentPermissionReceipt,
  AgentRequestAccepted,
  AgentStatus,
  AgentSteerAccepted,
} from '../../src/adapters/durable-object/agent-rpc.js';
import { callOperation } from '../../src/adapters/durable-object/operation-client.js';
import { unwrapRpcResult, type RpcResult } from '../../src/adapters/durable-object/rpc.js';
import { sessionClient } from '../../src/adapters/durable-object/session-client.js';
import type { DurableExecutionLeaseRecord, DurableReadResult } from '../../src/core/store.js';
import type { DurableEventEnvelope } from '../../src/protocol/events.js';
import type { SubscriptionFrame } from '../../src/protocol/frames.js';
import { freshSession, objectOf, until } from './durability-helpers.js';
import { TestSubscriber } from './session-object-helpers.js';

/** The agent methods of the fixture stub. */
interface AgentApi {
  submitRequest(sessionId: string, input: { commandId: string; input: string; priority?: string }): Promise<RpcResult<AgentRequestAccepted>>;
  submitInput(sessionId: string, input: { input: string; priority?: string }): Promise<RpcResult<AgentSteerAccepted>>;
  abortRequest(sessionId: string, requestId: string): Promise<RpcResult<AgentAbortResult>>;
  answerPermission(sessionId: string, id: string, answer: { decision: string }): Promise<RpcResult<AgentPermissionReceipt>>;
  agentStatus(sessionId: string): Promise<RpcResult<AgentStatus>>;
  read(sessionId: string, options?: { after?: number; limit?: number }): Promise<RpcResult<DurableReadResult>>;
  acquireExecutionLease(sessionId: string, options: { ownerId: string; leaseId: string; ttlMs: number }): Promise<RpcResult<DurableExecutionLeaseRecord>>;
  releaseExecutionLease(sessionId: string, fence: { leaseId: string; ownerId: string; fencingToken: number }): Promise<RpcResult<null>>;
  recover(sessionId: string, operation: string, input: unknown, options?: unknown): Promise<RpcResult<unknown>>;
  inspectExecutionLease(sessionId: string): Promise<RpcResult<DurableExecutionLeaseRecord | null>>;
  appendJson(sessionId: string, draftsJson: string, options?: { executionFence?: unknown }): Promise<RpcResult<unknown>>;
  effects(): Promise<Record<string, number>>;
  releaseModel(): Promise<void>;
}

function api(sessionId: string): AgentApi {
  // SAFETY: the fixture object implements every AgentApi method.
  return objectOf(sessionId).api as unknown as AgentApi;
}

async function submit(sessionId: string, input: string, commandId = `cmd-${crypto.randomUUID()}`): Promise<AgentRequestAccepted> {
  return unwrapRpcResult(await api(sessionId).submitRequest(sessionId, { commandId, input }));
}

async function status(sessionId: string): Promise<AgentStatus> {
  return unwrapRpcResult(await api(sessionId).agentStatus(sessionId));
}

async function logOf(sessionId: string): Promise<DurableEventEnvelope[]> {
  return unwrapRpcResult<DurableReadResult>(await api(sessionId).read(sessionId, { limit: 1000 })).events;
}

function types(events: readonly DurableEventEnvelope[]): string[] {
  return events.map((event) => event.type);
}

/** Text of the `text_delta` frames of one model attempt, checked against their offsets (no gap, no duplicate). */
function deltaText(frames: readonly SubscriptionFrame[], modelAttemptId: string): string {
  let text = '';
  for (const frame of frames) {
    if (frame.type === 'partial_response' && frame.modelAttemptId === modelAttemptId) text = frame.text;
    if (frame.type === 'text_delta' && frame.modelAttemptId === modelAttemptId) {
      expect(frame.offset).toBe(text.length);
      text += frame.delta;
    }
  }
  return text;
}

function responseText(event: DurableEventEnvelope): string {
  const content = (event.data as { response?: { content?: unknown } }).response?.content;
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((part: { text?: string }) => part.text ?? '').join('');
  return '';
}

/** Events of two subscriptions (the second resumed after the first's last cursor) form the log exactly. */
function expectGapless(before: TestSubscriber, after: TestSubscriber, log: readonly DurableEventEnvelope[]): void {
  const seen = [...before.events, ...after.events].map((frame) => frame.event.sequence);
  expect(seen).toEqual(log.map((event) => event.sequence));
}

function lastCursor(subscriber: TestSubscriber): string | undefined {
  return subscriber.events[subscriber.events.length - 1]?.cursor;
}

const hasEvent = (type: string) => (subscriber: TestSubscriber) => subscriber.events.some((frame) => frame.event.type === type);

describe('an agent Session running inside the session object', () => {
  it('streams a one-tool run: deltas and progress before the events that complete them, nothing transient in the log', async () => {
    const sessionId = freshSession('edge-run');
    await logOf(sessionId); // binds the object to the session before subscribing
    const subscriber = await TestSubscriber.open(sessionId, { sessionId });
    await subscriber.until((s) => s.messages.some((m) => m.type === 'caught_up'), 'caught_up');
    const accepted = await submit(sessionId, 'tool', 'cmd-tool');
    expect(accepted).toMatchObject({ commandId: 'cmd-tool', created: true, status: 'queued' });
    await subscriber.until(hasEvent('request_completed'), 'request_completed');

    const again = await submit(sessionId, 'tool', 'cmd-tool');
    expect(again).toMatchObject({ requestId: accepted.requestId, inputId: accepted.inputId, created: false, status: 'completed' });

    const log = await logOf(sessionId);
    expect(types(log)).toContain('tool_completed');
    expect(log.find((event) => event.type === 'request_accepted')).toMatchObject({ requestId: accepted.requestId });
    const messages = subscriber.messages;
    const index = (predicate: (m: SubscriptionFrame) => boolean): number => messages.findIndex(predicate);
    const progress = messages.filter((m) => m.type === 'tool_progress');
    expect(progress.map((m) => (m.type === 'tool_progress' ? m.data : null))).toEqual([{ step: 1 }, { step: 2 }]);
    const toolCompleted = index((m) => m.type === 'event' && m.event.type === 'tool_completed');
    const toolStarted = index((m) => m.type === 'event' && m.event.type === 'tool_started');
    const lastProgress = messages.lastIndexOf(progress[progress.length - 1] as SubscriptionFrame);
    expect(toolStarted).toBeLessThan(index((m) => m.type === 'tool_progress'));
    expect(lastProgress).toBeLessThan(toolCompleted);

    // Every completed model response equals its deltas, and the event comes after the last delta.
    const completions = log.filter((event) => event.type === 'model_request_completed');
    expect(completions).toHaveLength(2);
    for (const completion of completions) {
      const attempt = (completion as unknown as { modelAttemptId: string }).modelAttemptId;
      expect(deltaText(messages, attempt)).toBe(responseText(completion));
      const lastDelta = messages.findLastIndex((m) => m.type === 'text_delta' && m.modelAttemptId === attempt);
      const event = index((m) => m.type === 'event' && m.event.eventId === completion.eventId);
      expect(lastDelta).toBeLessThan(event);
    }
    expect(responseText(completions[1] as DurableEventEnvelope)).toBe('Done: {"q":"answer","answer":42}');
    expect(subscriber.events.map((frame) => frame.event.sequence)).toEqual(log.map((event) => event.sequence));
    expect(await status(sessionId)).toMatchObject({ state: 'idle', queued: [] });
    subscriber.close();
  });

  it('gives a subscriber that connects mid-response the partial text, then live deltas, without gap or duplicate', async () => {
    const sessionId = freshSession('edge-partial');
    await logOf(sessionId);
    const early = await TestSubscriber.open(sessionId, { sessionId });
    await submit(sessionId, 'gated');
    await early.until((s) => s.messages.filter((m) => m.type === 'text_delta').length === 2, 'two deltas');

    const late = await TestSubscriber.open(sessionId, { sessionId });
    const resumeCursor = lastCursor(early) as string;
    const resumed = await TestSubscriber.open(sessionId, { sessionId, after: resumeCursor });
    for (const subscriber of [late, resumed]) {
      await subscriber.until((s) => s.messages.some((m) => m.type === 'partial_response'), 'partial_response');
    }
    expect(resumed.events).toEqual([]);
    const partial = late.messages.find((m) => m.type === 'partial_response');
    expect(partial).toMatchObject({ text: 'one two ' });
    expect(late.messages.findIndex((m) => m.type === 'caught_up')).toBe(late.messages.indexOf(partial as SubscriptionFrame) - 1);

    await api(sessionId).releaseModel();
    for (const subscriber of [early, late, resumed]) await subscriber.until(hasEvent('request_completed'), 'request_completed');
    const log = await logOf(sessionId);
    const completion = log.find((event) => event.type === 'model_request_completed') as DurableEventEnvelope;
    const attempt = (completion as unknown as { modelAttemptId: string }).modelAttemptId;
    for (const subscriber of [early, late, resumed]) expect(deltaText(subscriber.messages, attempt)).toBe('one two three');
    expect(late.events.map((frame) => frame.event.sequence)).toEqual(log.map((event) => event.sequence));
    expect([...early.events.slice(0, early.events.findIndex((f) => f.cursor === resumeCursor) + 1), ...resumed.events].map((f) => f.event.sequence)).toEqual(
      log.map((event) => event.sequence),
    );
    for (const subscriber of [early, late, resumed]) subscriber.close();
  });

  it('keeps the watchdog and the active flag while a request runs, and drops them when the last one ends, request after request', async () => {
    const sessionId = freshSession('edge-watch');
    const watch = () =>
      runInDurableObject(objectOf(sessionId).stub, (_instance, state) => ({
        timers: state.storage.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM timers WHERE kind = 'agent.watch'").one().n,
        active: state.storage.sql.exec<{ value: string }>("SELECT value FROM agent_meta WHERE key = 'active'").toArray()[0]?.value,
      }));
    const running = { timers: 1, active: '1' };
    const done = { timers: 0, active: '0' };
    const idle = () => until(() => status(sessionId), (s) => s.state === 'idle' && s.activeRequestId === null, 'an idle host');
    // 1: held by the gate while we look, then released.
    await submit(sessionId, 'gated');
    await until(() => logOf(sessionId), (log) => types(log).includes('model_request_started'), 'the gated call');
    expect(await watch()).toEqual(running);
    expect(await objectOf(sessionId).api.currentAlarm()).toEqual(expect.any(Number));
    await api(sessionId).releaseModel();
    await until(() => logOf(sessionId), (log) => types(log).includes('request_completed'), 'the first request to end');
    await idle();
    expect(await watch()).toEqual(done);
    // 2: a whole one-tool request after that.
    await submit(sessionId, 'tool');
    await until(() => logOf(sessionId), (log) => types(log).filter((type) => type === 'request_completed').length === 2, 'the second request to end');
    await idle();
    expect(await watch()).toEqual(done);
    // 3: a request that never ends is watched again.
    await submit(sessionId, 'hang-stream');
    await until(() => logOf(sessionId), (log) => types(log).filter((type) => type === 'model_request_started').length === 4, 'the hanging call');
    expect(await watch()).toEqual(running);
    await abortAllDurableObjects();
  });

  it('queues next requests behind the running one and lets a now request interrupt it', async () => {
    const sessionId = freshSession('edge-priority');
    const gated = await submit(sessionId, 'gated');
    await until(() => logOf(sessionId), (log) => types(log).includes('model_request_started'), 'the gated call');
    const queued = await submit(sessionId, 'queued one');
    expect((await status(sessionId)).queued).toEqual([queued.requestId]);
    const urgent = unwrapRpcResult<AgentRequestAccepted>(await api(sessionId).submitRequest(sessionId, { commandId: 'urgent', input: 'urgent', priority: 'now' }));
    await until(
      () => logOf(sessionId),
      (log) => log.filter((event) => event.type === 'request_completed').length === 2,
      'both later requests to finish',
    );
    const log = await logOf(sessionId);
    const terminal = (requestId: string) => log.find((e) => 'requestId' in e && e.requestId === requestId && e.type.startsWith('request_') && e.type !== 'request_accepted' && e.type !== 'request_started')?.type;
    expect(terminal(gated.requestId)).toBe('request_interrupted');
    expect(terminal(urgent.requestId)).toBe('request_completed');
    expect(terminal(queued.requestId)).toBe('request_completed');
    const accepted = log.filter((e) => e.type === 'request_accepted').map((e) => ('requestId' in e ? e.requestId : ''));
    expect(accepted).toEqual([gated.requestId, urgent.requestId, queued.requestId]);
  });

  it('(1) aborted mid streamed response: parks on reconcile_model_outcome and never calls the model again', async () => {
    const sessionId = freshSession('edge-abort-stream');
    await logOf(sessionId);
    const before = await TestSubscriber.open(sessionId, { sessionId });
    await submit(sessionId, 'hang-stream');
    await before.until((s) => s.messages.filter((m) => m.type === 'text_delta').length === 2, 'two deltas');
    expect((await status(sessionId)).state).toBe('running');
    // The watchdog alarm was armed before the model was called.
    expect(await objectOf(sessionId).api.currentAlarm()).toEqual(expect.any(Number));
    const oldLease = unwrapRpcResult<DurableExecutionLeaseRecord | null>(await api(sessionId).inspectExecutionLease(sessionId));
    expect(oldLease?.ownerId).toMatch(/^session-object:/);

    await abortAllDurableObjects();
    const parked = await until(() => status(sessionId), (s) => s.state === 'needs_recovery', 'the parked agent');
    expect(parked.plan).toMatchObject({ action: 'reconcile_model_outcome' });
    // The new instance took the lease over (a higher fencing token): a late commit of the old one is refused.
    const newLease = unwrapRpcResult<DurableExecutionLeaseRecord | null>(await api(sessionId).inspectExecutionLease(sessionId));
    expect(newLease?.fencingToken).toBeGreaterThan(oldLease?.fencingToken ?? 0);
    const late = await api(sessionId).appendJson(sessionId, JSON.stringify([{ type: 'session_closed', data: { reason: 'completed' } }]), {
      executionFence: { leaseId: oldLease?.leaseId, ownerId: oldLease?.ownerId, fencingToken: oldLease?.fencingToken },
    });
    expect(late).toMatchObject({ ok: false, error: { code: 'DURABLE_EXECUTION_LEASE_LOST' } });
    const log = await logOf(sessionId);
    expect(types(log).filter((type) => type === 'model_request_started')).toHaveLength(1);
    expect(types(log)).not.toContain('model_request_completed');

    const after = await TestSubscriber.open(sessionId, { sessionId, after: lastCursor(before) as string });
    await after.until((s) => s.messages.some((m) => m.type === 'caught_up'), 'caught_up');
    expect(after.messages.some((m) => m.type === 'partial_response')).toBe(false);
    expectGapless(before, after, log);
    after.close();
  });

  it('(2) aborted while a non_idempotent tool runs: never runs it again, parks it for reconciliation, then finishes', async () => {
    const sessionId = freshSession('edge-abort-tool');
    await logOf(sessionId);
    const before = await TestSubscriber.open(sessionId, { sessionId });
    await submit(sessionId, 'hang-tool');
    await before.until(hasEvent('tool_started'), 'tool_started');
    await until(() => api(sessionId).effects(), (effects) => effects['charge'] === 1, 'the charge');

    await abortAllDurableObjects();
    const parked = await until(() => status(sessionId), (s) => s.state === 'needs_recovery', 'the parked agent');
    expect(parked.plan).toMatchObject({ action: 'reconcile_tool_outcomes' });
    const unknown = (parked.plan as unknown as { unknownToolAttempts: Array<{ toolAttemptId: string; toolName: string }> }).unknownToolAttempts;
    expect(unknown.map((tool) => tool.toolName)).toEqual(['charge']);
    expect(await api(sessionId).effects()).toMatchObject({ charge: 1 });

    // An operator checks the card processor, then records the outcome under the lease.
    const lease = unwrapRpcResult<DurableExecutionLeaseRecord>(
      await api(sessionId).acquireExecutionLease(sessionId, { ownerId: 'operator', leaseId: `op-${crypto.randomUUID()}`, ttlMs: 60_000 }),
    );
    const fence = { leaseId: lease.leaseId, ownerId: lease.ownerId, fencingToken: lease.fencingToken };
    unwrapRpcResult(
      await api(sessionId).recover(
        sessionId,
        'reconcileToolOutcome',
        { commandId: `reconcile-${crypto.randomUUID()}`, toolAttemptId: unknown[0]?.toolAttemptId, outcome: { status: 'completed', result: { charged: 5 } } },
        { executionFence: fence },
      ),
    );
    unwrapRpcResult(await api(sessionId).releaseExecutionLease(sessionId, fence));

    const after = await TestSubscriber.open(sessionId, { sessionId, after: lastCursor(before) as string });
    await after.until(hasEvent('request_completed'), 'request_completed', 10_000);
    const log = await logOf(sessionId);
    expect(await api(sessionId).effects()).toMatchObject({ charge: 1 });
    const final = log.filter((event) => event.type === 'model_request_completed').at(-1) as DurableEventEnvelope;
    expect(responseText(final)).toBe('Done: {"charged":5}');
    expectGapless(before, after, log);
    after.close();
  });

  it('(3) aborted while a permission waits: the answer resumes the run in a new instance', async () => {
    const sessionId = freshSession('edge-abort-permission');
    await logOf(sessionId);
    const before = await TestSubscriber.open(sessionId, { sessionId });
    await submit(sessionId, 'permission');
    await before.until(hasEvent('permission_requested'), 'permission_requested');
    const waiting = await until(() => status(sessionId), (s) => s.state === 'waiting_permission', 'waiting');
    const permissionRequestId = waiting.pendingPermissions[0] as string;
    expect(await api(sessionId).effects()).not.toHaveProperty('approved');

    await abortAllDurableObjects();
    const after = await TestSubscriber.open(sessionId, { sessionId, after: lastCursor(before) as string });
    await after.until((s) => s.messages.some((m) => m.type === 'caught_up'), 'caught_up');
    const receipt = unwrapRpcResult(await api(sessionId).answerPermission(sessionId, permissionRequestId, { decision: 'allow' }));
    expect(receipt).toEqual({ permissionRequestId, decision: 'allow', created: true });
    await after.until(hasEvent('request_completed'), 'request_completed', 10_000);
    const repeat = unwrapRpcResult(await api(sessionId).answerPermission(sessionId, permissionRequestId, { decision: 'deny' }));
    expect(repeat).toEqual({ permissionRequestId, decision: 'allow', created: false });

    const log = await logOf(sessionId);
    expect(await api(sessionId).effects()).toMatchObject({ approved: 1 });
    expect(types(log).filter((type) => type === 'permission_resolved')).toHaveLength(1);
    const final = log.filter((event) => event.type === 'model_request_completed').at(-1) as DurableEventEnvelope;
    expect(responseText(final)).toBe('Done: {"approved":"deploy"}');
    expectGapless(before, after, log);
    after.close();
  });
});

describe('steering input across an eviction', () => {
  it('an input the object took (but had not applied) when it was thrown away is applied, with its text, by the new instance', async () => {
    const sessionId = freshSession('edge-steer-evict');
    await logOf(sessionId);
    const accepted = await submit(sessionId, 'permission');
    const waiting = await until(() => status(sessionId), (s) => s.state === 'waiting_permission', 'waiting');
    const permissionRequestId = waiting.pendingPermissions[0] as string;
    const steered = unwrapRpcResult<AgentSteerAccepted>(await api(sessionId).submitInput(sessionId, { input: 'also mention the weather' }));
    expect(steered.requestId).toBe(accepted.requestId);
    expect(types(await logOf(sessionId)).filter((type) => type === 'input_applied')).toHaveLength(1);

    await abortAllDurableObjects();
    unwrapRpcResult(await api(sessionId).answerPermission(sessionId, permissionRequestId, { decision: 'allow' }));
    await until(() => logOf(sessionId), (log) => log.some((event) => event.type === 'request_completed'), 'request_completed', 10_000);
    const applied = (await logOf(sessionId)).filter((event) => event.type === 'input_applied');
    expect(applied.map((event) => (event.data as { inputId: string }).inputId)).toEqual([accepted.inputId, steered.inputId]);
    expect(applied[1]?.data).toMatchObject({ input: 'also mention the weather' });
  });
});

/** Settles with `promise`, or rejects when it has not settled within `ms` (an answer that never comes fails the test). */
function answered<T>(promise: Promise<T>, what: string, ms = 10_000): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | null = null;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer to ${what} within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => {
    if (timer !== null) clearTimeout(timer);
  });
}

describe('a permission wait presented again after an eviction', () => {
  /** Submits `permission`, waits for the wait, throws the object away, and waits for the new instance to present it again. */
  async function waitAcrossEviction(label: string): Promise<{ sessionId: string; accepted: AgentRequestAccepted; permissionRequestId: string }> {
    const sessionId = freshSession(label);
    await logOf(sessionId);
    const accepted = await submit(sessionId, 'permission');
    const waiting = await until(() => status(sessionId), (s) => s.state === 'waiting_permission', 'waiting');
    const permissionRequestId = waiting.pendingPermissions[0] as string;
    await abortAllDurableObjects();
    const again = await until(() => status(sessionId), (s) => s.state === 'waiting_permission', 'waiting again');
    expect(again).toMatchObject({ activeRequestId: accepted.requestId, pendingPermissions: [permissionRequestId] });
    return { sessionId, accepted, permissionRequestId };
  }

  it('is aborted: request_interrupted (user_abort) is written and the tool never runs', async () => {
    const { sessionId, accepted } = await waitAcrossEviction('edge-restored-abort');
    const aborted = unwrapRpcResult(await answered(api(sessionId).abortRequest(sessionId, accepted.requestId), 'the abort'));
    expect(aborted).toEqual({ requestId: accepted.requestId, status: 'interrupted' });
    const log = await logOf(sessionId);
    const interrupted = log.filter((event) => event.type === 'request_interrupted');
    expect(interrupted).toHaveLength(1);
    expect(interrupted[0]).toMatchObject({ requestId: accepted.requestId, data: { reason: 'user_abort' } });
    expect(await api(sessionId).effects()).not.toHaveProperty('approved');
    await until(() => status(sessionId), (s) => s.state === 'idle' && s.activeRequestId === null, 'idle');
  });

  it('takes a steering input at once, and the answered run applies it with its text', async () => {
    const { sessionId, accepted, permissionRequestId } = await waitAcrossEviction('edge-restored-steer');
    const steered = unwrapRpcResult<AgentSteerAccepted>(await answered(api(sessionId).submitInput(sessionId, { input: 'also mention the weather' }), 'the steering input'));
    expect(steered.requestId).toBe(accepted.requestId);
    unwrapRpcResult(await api(sessionId).answerPermission(sessionId, permissionRequestId, { decision: 'allow' }));
    await until(() => logOf(sessionId), (log) => log.some((event) => event.type === 'request_completed'), 'request_completed');
    const applied = (await logOf(sessionId)).filter((event) => event.type === 'input_applied');
    expect(applied.map((event) => (event.data as { inputId: string }).inputId)).toEqual([accepted.inputId, steered.inputId]);
    expect(applied[1]?.data).toMatchObject({ input: 'also mention the weather' });
    expect(await api(sessionId).effects()).toMatchObject({ approved: 1 });
  });
});

describe('the agent operations over RPC', () => {
  it('check an untrusted input in the host, and report a lost answer by the row kind: a write of unknown outcome', async () => {
    const sessionId = SessionId(freshSession('agent-rpc'));
    const { stub } = objectOf(sessionId);
    // The object's one RPC entry serves the agent rows; the host checks what it is given.
    await expect(callOperation(stub, sessionId, 'agentStatus', {})).resolves.toMatchObject({ state: 'idle', activeRequestId: null });
    // SAFETY: deliberately not the rows' inputs.
    await expect(callOperation(stub, sessionId, 'abortRequest', null as never)).rejects.toThrow(/requestId must be/);
    await expect(callOperation(stub, sessionId, 'answerPermission', { permissionRequestId: 'p-1' } as never)).rejects.toThrow(
      /an answer needs \{ decision \}/,
    );
    // A symbol cannot cross RPC: the call fails in transit, and the outcome of a write is unknown.
    const unsendable = Symbol('unsendable') as unknown as string;
    const session = sessionClient(env.SESSIONS, sessionId);
    const writeFailed = { code: 'DURABLE_EVENT_WRITE_FAILED' };
    await expect(session.submitRequest({ commandId: 'c-lost', input: unsendable })).rejects.toMatchObject(writeFailed);
    await expect(session.submitInput({ input: unsendable })).rejects.toMatchObject(writeFailed);
    await expect(session.abortRequest(unsendable)).rejects.toMatchObject(writeFailed);
    await expect(session.answerPermission(unsendable, { decision: 'allow' })).rejects.toMatchObject(writeFailed);
    // Nothing reached the object.
    expect(await session.agentStatus()).toMatchObject({ state: 'idle', queued: [] });
  });
});

describe('agent routes over HTTP', () => {
  const BASE = 'http://agent-ledger.test';
  const call = (method: string, route: string, token: string, body?: unknown): Promise<Response> =>
    exports.default.fetch(`${BASE}${route}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  const tokenFor = async (sessionId: string, scopes: TokenScope[]): Promise<string> =>
    (await mintSessionToken(env, { sessionId: SessionId(sessionId), scopes, ttlSeconds: 600 }, Date.now())).token;

  it('accept a request (202, idempotent by commandId) under the request scope, steer, abort, answer permissions under the permission scope', async () => {
    const sessionId = freshSession('edge-http');
    const reader = await tokenFor(sessionId, ['read']);
    const requester = await tokenFor(sessionId, ['request', 'read']);
    const permitter = await tokenFor(sessionId, ['permission']);
    const body = { commandId: 'c-1', input: 'permission' };
    expect((await call('POST', `/v1/sessions/${sessionId}/requests`, reader, body)).status).toBe(403);
    const accepted = await call('POST', `/v1/sessions/${sessionId}/requests`, requester, body);
    expect(accepted.status).toBe(202);
    const ids = (await accepted.json()) as AgentRequestAccepted;
    const repeated = await call('POST', `/v1/sessions/${sessionId}/requests`, requester, body);
    expect(repeated.status).toBe(202);
    expect(await repeated.json()).toMatchObject({ requestId: ids.requestId, created: false });
    const conflict = await call('POST', `/v1/sessions/${sessionId}/requests`, requester, { ...body, input: 'other' });
    expect(conflict.status).toBe(409);
    expect((await call('POST', `/v1/sessions/${sessionId}/requests`, requester, { commandId: 'c-2', input: 'x', model: 'nope' })).status).toBe(400);

    const waiting = await until(
      async () => (await (await call('GET', `/v1/sessions/${sessionId}/agent`, requester)).json()) as AgentStatus,
      (s) => s.state === 'waiting_permission',
      'waiting',
    );
    const permission = waiting.pendingPermissions[0] as string;
    expect((await call('POST', `/v1/sessions/${sessionId}/permissions/${permission}`, requester, { decision: 'deny' })).status).toBe(403);
    expect((await call('POST', `/v1/sessions/${sessionId}/permissions/nope`, permitter, { decision: 'deny' })).status).toBe(404);
    const denied = await call('POST', `/v1/sessions/${sessionId}/permissions/${permission}`, permitter, { decision: 'deny', message: 'not today' });
    expect(denied.status).toBe(200);
    await until(async () => logOf(sessionId), (log) => types(log).includes('request_completed'), 'completion');
    const log = await logOf(sessionId);
    expect(types(log)).toEqual(expect.arrayContaining(['permission_resolved', 'tool_cancelled']));
    expect(await api(sessionId).effects()).not.toHaveProperty('approved');

    // A request that never finishes is interrupted by the abort route.
    const hanging = (await (await call('POST', `/v1/sessions/${sessionId}/requests`, requester, { commandId: 'c-3', input: 'gated' })).json()) as AgentRequestAccepted;
    await until(async () => logOf(sessionId), (l) => l.some((e) => e.type === 'model_request_started' && 'requestId' in e && e.requestId === hanging.requestId), 'the gated call');
    const steered = await call('POST', `/v1/sessions/${sessionId}/inputs`, requester, { input: 'also this' });
    expect(steered.status).toBe(202);
    expect(await steered.json()).toMatchObject({ requestId: hanging.requestId });
    const aborted = await call('POST', `/v1/sessions/${sessionId}/requests/${hanging.requestId}/abort`, requester, {});
    expect(aborted.status).toBe(200);
    expect(await aborted.json()).toEqual({ requestId: hanging.requestId, status: 'interrupted' });

    const openapi = (await (await exports.default.fetch(`${BASE}/v1/openapi.json`, { headers: { authorization: `Bearer ${env.ADMIN_TOKEN}` } })).json()) as {
      paths: Record<string, Record<string, { operationId?: string }>>;
    };
    expect(openapi.paths['/v1/sessions/{sessionId}/requests']?.['post']?.operationId).toBe('submitRequest');
    expect(openapi.paths['/v1/sessions/{sessionId}/inputs']?.['post']?.operationId).toBe('submitInput');
    expect(openapi.paths['/v1/sessions/{sessionId}/requests/{requestId}/abort']?.['post']?.operationId).toBe('abortRequest');
    expect(openapi.paths['/v1/sessions/{sessionId}/permissions/{permissionRequestId}']?.['post']?.operationId).toBe('answerPermission');
  });
});

/** Reads SSE messages from a response body until `stop` holds or the stream ends. */
async function readSse(body: ReadableStream<Uint8Array>, stop: (messages: Array<{ event: string; id?: string; data: string }>) => boolean) {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  const messages: Array<{ event: string; id?: string; data: string }> = [];
  let buffer = '';
  const deadline = Date.now() + 10_000;
  while (!stop(messages) && Date.now() < deadline) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let end: number;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const fields = Object.fromEntries(block.split('\n').map((line) => [line.slice(0, line.indexOf(':')), line.slice(line.indexOf(':') + 2)]));
      if (fields['data'] !== undefined) messages.push({ event: fields['event'] ?? 'message', id: fields['id'], data: fields['data'] });
    }
  }
  await reader.cancel().catch(() => undefined);
  return messages;
}

describe('SSE with frames=all', () => {
  it('relays durable events and token deltas in the object order, with cursors as ids', async () => {
    const sessionId = freshSession('edge-sse');
    await logOf(sessionId);
    const response = await exports.default.fetch(`http://agent-ledger.test/v1/sessions/${sessionId}/subscribe?frames=all`, {
      headers: { authorization: `Bearer ${env.ADMIN_TOKEN}`, accept: 'text/event-stream' },
    });
    expect(response.status).toBe(200);
    const reading = readSse(response.body as ReadableStream<Uint8Array>, (messages) => messages.some((m) => m.data.includes('"request_completed"')));
    await submit(sessionId, 'tool');
    const messages = await reading;
    const frames = messages.map((m) => JSON.parse(m.data) as SubscriptionFrame);
    const log = await logOf(sessionId);
    expect(frames.filter((f) => f.type === 'event').map((f) => (f.type === 'event' ? f.event.sequence : 0))).toEqual(log.map((e) => e.sequence));
    for (const message of messages) if (message.event === 'event') expect(message.id).toBe((JSON.parse(message.data) as { cursor: string }).cursor);
    const completion = log.filter((event) => event.type === 'model_request_completed').at(-1) as DurableEventEnvelope;
    const attempt = (completion as unknown as { modelAttemptId: string }).modelAttemptId;
    expect(deltaText(frames, attempt)).toBe(responseText(completion));
    expect(frames.some((f) => f.type === 'tool_progress')).toBe(true);
  });

  it('ends a reader that falls behind the byte bound with an error frame, and closes the object socket', async () => {
    const sessionId = freshSession('edge-sse-slow');
    await logOf(sessionId);
    const response = await sseRelayResponse({ object: objectOf(sessionId).stub, sessionId: SessionId(sessionId), after: undefined, maxBufferedBytes: 2_000 });
    await submit(sessionId, 'tool');
    await until(() => logOf(sessionId), (log) => types(log).includes('request_completed'), 'completion');
    const messages = await readSse(response.body as ReadableStream<Uint8Array>, () => false);
    const last = messages.at(-1);
    expect(last?.event).toBe('error');
    expect(JSON.parse(last?.data ?? '{}')).toMatchObject({ code: 'DURABLE_EVENT_LIMIT_EXCEEDED' });
    const bytes = messages.reduce((sum, m) => sum + m.data.length, 0);
    expect(bytes).toBeLessThan(2_000 + 1_000);
  });
});
