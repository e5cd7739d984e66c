/**
 * The SessionObject's journal and recovery RPC inside workerd (real objects, real SQLite):
 * `commit` (committed / replayed / conflicts / preview), `projection`, every `recover` operation
 * (the coordinator's own operation cases, driven over RPC), fencing, the cached journal that only
 * reads new pages, recovery from an unknown commit outcome, and WebSocket subscribers receiving
 * journal-committed events exactly like appended ones.
 */
import { abortAllDurableObjects, runInDurableObject } from 'cloudflare:test';
import { env } from 'cloudflare:workers';
import { afterEach, describe, expect, it } from 'vitest';
import { DurableObjectEventStore } from '../../src/adapters/durable-object/durable-object-store.js';
import type { DurableEventDraft } from '../../src/protocol/events.js';
import { RECOVERY_MUTATIONS, type RecoveryMutation } from '../../src/protocol/recovery-operations.js';
import {
  sessionJournalRpc,
  type RecoveryInputs,
  type RecoveryResults,
  type RpcJournalCallOptions,
  type SessionProjectionResult,
} from '../../src/adapters/durable-object/journal-rpc.js';
import { unwrapRpcResult } from '../../src/adapters/durable-object/rpc.js';
import { sessionClient } from '../../src/adapters/durable-object/session-client.js';
import type { SqlDurableEventStore } from '../../src/adapters/sql/sql-store.js';
import type { DurableCommitResult, DurableJournalCommand } from '../../src/core/journal/index.js';
import type { DurableSessionRecoveryCoordinator } from '../../src/core/recovery/index.js';
import type { DurableExecutionFence, DurableReadOptions } from '../../src/core/store.js';
import {
  DurableCommandConflictError,
  DurableCommandOutcomeUnknownError,
  DurableEventProjectionError,
  DurableEventSequenceConflictError,
  DurableExecutionLeaseError,
} from '../../src/protocol/errors.js';
import { CommandId, EventSequence, InputId, RequestId, ToolAttemptId, WorkerId, type SessionId } from '../../src/protocol/ids.js';
import { SessionObject } from '../../src/edge/session-object.js';
import { acceptedState, seedSession, unknownToolState } from '../recovery/helpers.js';
import { operationCases } from '../recovery/operation-cases.js';
import { freshSessionId, stubFor, TestSubscriber } from './session-object-helpers.js';

const store = new DurableObjectEventStore(env.SESSIONS);
const open: TestSubscriber[] = [];

afterEach(() => {
  SessionObject.testHooks = undefined;
  while (open.length > 0) open.pop()?.close();
});

function rpc(sessionId: string) {
  return sessionJournalRpc(env.SESSIONS, sessionId);
}

async function commit(sessionId: SessionId, command: DurableJournalCommand, options?: RpcJournalCallOptions) {
  return unwrapRpcResult<DurableCommitResult>(await rpc(sessionId).commit(sessionId, command, options));
}

async function projection(sessionId: SessionId) {
  return unwrapRpcResult<SessionProjectionResult>(await rpc(sessionId).projection(sessionId));
}

async function recover<O extends RecoveryMutation | 'planResume'>(
  sessionId: SessionId,
  operation: O,
  input: RecoveryInputs[O],
  options?: RpcJournalCallOptions,
) {
  return unwrapRpcResult<RecoveryResults[O]>(await rpc(sessionId).recover(sessionId, operation, input, options));
}

async function rejectionOf(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => expect.fail('expected a rejection'),
    (error: unknown) => error,
  );
}

/**
 * A stand-in for a coordinator whose operations run inside the session's object over RPC, so the
 * coordinator's own operation cases drive the `recover` method unchanged.
 */
function coordinatorOverRpc(sessionId: SessionId, options?: RpcJournalCallOptions): DurableSessionRecoveryCoordinator {
  const methods: Record<string, (input: unknown) => Promise<unknown>> = {};
  for (const operation of RECOVERY_MUTATIONS) {
    methods[operation] = (input) => recover(sessionId, operation, input as RecoveryInputs[RecoveryMutation], options);
  }
  // SAFETY: the operation cases call only the seven operation methods defined above.
  return methods as unknown as DurableSessionRecoveryCoordinator;
}

const created = (commandId: string): DurableJournalCommand => ({
  commandId: CommandId(commandId),
  events: [{ type: 'session_created', data: { source: 'create' } }],
});

/** A steering input applied to a started Request: valid in the log after `accepted`. */
function steering(requestId: string, label: string): DurableEventDraft {
  return { type: 'input_applied', requestId: RequestId(requestId), data: { inputId: InputId(`steer-${label}`), priority: 'next' } };
}

const accepted = (commandId: string, requestId: string): DurableJournalCommand => ({
  commandId: CommandId(commandId),
  events: [
    { type: 'request_accepted', requestId: RequestId(requestId), data: { inputId: InputId(`input-${requestId}`), input: 'go', priority: 'next' } },
    { type: 'request_started', requestId: RequestId(requestId), data: {} },
  ],
});

describe('SessionObject.commit', () => {
  it('commits, replays an identical command, and refuses a different one under the same id', async () => {
    const sessionId = freshSessionId('journal-commit');
    const first = await commit(sessionId, created('create'));
    expect(first).toMatchObject({ status: 'committed', commandId: 'create', headSequence: 1 });
    expect(first.events.map((event) => [event.sequence, event.commandId])).toEqual([[1, 'create']]);
    expect(first.projection.status).toBe('open');

    const again = await commit(sessionId, created('create'));
    expect(again.status).toBe('replayed');
    expect(again.events).toEqual(first.events);

    const different: DurableJournalCommand = { ...created('create'), events: [{ type: 'session_created', data: { source: 'fork' } }] };
    expect(await rejectionOf(commit(sessionId, different))).toBeInstanceOf(DurableCommandConflictError);
    expect(await store.getHeadSequence(sessionId)).toBe(1);
  });

  it('pins the head, previews the command and commits its events as one batch', async () => {
    const sessionId = freshSessionId('journal-pin');
    await commit(sessionId, created('create'));
    const stale = await rejectionOf(commit(sessionId, { ...accepted('accept', 'req-1'), expectedHeadSequence: null }));
    expect(stale).toBeInstanceOf(DurableEventSequenceConflictError);
    expect(stale).toMatchObject({ expected: null, actual: 1 });

    // A Request terminal event without an active Request breaks an invariant: nothing is written.
    const invalid: DurableJournalCommand = {
      commandId: CommandId('orphan'),
      events: [{ type: 'request_completed', requestId: RequestId('nobody'), data: {} }],
    };
    expect(await rejectionOf(commit(sessionId, invalid))).toBeInstanceOf(DurableEventProjectionError);

    const ok = await commit(sessionId, { ...accepted('accept', 'req-1'), expectedHeadSequence: EventSequence(1) });
    expect(ok.events.map((event) => event.type)).toEqual(['request_accepted', 'request_started']);
    expect(ok.events.every((event) => event.commandId === 'accept')).toBe(true);
    expect(await store.getHeadSequence(sessionId)).toBe(3);
  });

  it('pushes journal-committed events to WebSocket subscribers like any append', async () => {
    const sessionId = freshSessionId('journal-push');
    await commit(sessionId, created('create'));
    const subscriber = await TestSubscriber.open(sessionId, { sessionId });
    open.push(subscriber);
    await subscriber.until((s) => s.messages.some((m) => m.type === 'caught_up'), 'caught_up');

    const result = await commit(sessionId, accepted('accept', 'req-1'));
    await subscriber.until((s) => s.events.length === 3, 'two live journal events');
    expect(subscriber.events.slice(1).map((frame) => frame.event)).toEqual(result.events);

    // An RPC append and a journal command arrive in log order on the same socket.
    await store.append(sessionId, [steering('req-1', 'direct')]);
    await commit(sessionId, { commandId: CommandId('steer'), events: [steering('req-1', 'journal')] });
    await subscriber.until((s) => s.events.length === 5, 'the append and the next command');
    expect(subscriber.events.map((frame) => frame.event.sequence)).toEqual([1, 2, 3, 4, 5]);
    expect(subscriber.events.map((frame) => frame.event.commandId ?? null)).toEqual(['create', 'accept', 'accept', null, 'steer']);
  });

  it('refuses malformed arguments with a classified error', async () => {
    const sessionId = freshSessionId('journal-garbage');
    // SAFETY: deliberately wrong shapes, as an untyped caller could send them.
    const garbage = { commandId: '', events: 'nope' } as unknown as DurableJournalCommand;
    expect(await rpc(sessionId).commit(sessionId, garbage)).toMatchObject({ ok: false, error: { code: 'DURABLE_SESSION_JOURNAL_INVALID' } });
    const badOptions = { executionFence: { leaseId: 'x' } } as unknown as RpcJournalCallOptions;
    expect(await rpc(sessionId).commit(sessionId, created('c'), badOptions)).toMatchObject({
      ok: false,
      error: { code: 'DURABLE_EXECUTION_LEASE_INVALID' },
    });
    const nullFence = { executionFence: null } as unknown as RpcJournalCallOptions;
    expect(await rpc(sessionId).commit(sessionId, created('c'), nullFence)).toMatchObject({
      ok: false,
      error: { code: 'DURABLE_EXECUTION_LEASE_INVALID' },
    });
    expect(await rpc(sessionId).commit(sessionId, created('c'), { other: 1 } as never)).toMatchObject({
      ok: false,
      error: { code: 'DURABLE_EVENT_INVALID_INPUT' },
    });
    expect(await rpc(sessionId).recover(sessionId, 'no-such-operation' as never, {} as never)).toMatchObject({
      ok: false,
      error: { code: 'DURABLE_EVENT_INVALID_INPUT' },
    });
    expect(await rpc(sessionId).commit('another-session', created('c'))).toMatchObject({
      ok: false,
      error: { code: 'DURABLE_EVENT_INVALID_INPUT' },
    });
    expect(await store.getHeadSequence(sessionId)).toBeNull();
  });

  it('reports a commit whose answer is lost as an unknown outcome of that command (sessionClient)', async () => {
    const sessionId = freshSessionId('journal-lost');
    const session = sessionClient(env.SESSIONS, sessionId);
    // SAFETY: a value Workers RPC cannot serialize: the call fails in transit, before the object runs it.
    const unsendable = Symbol('unsendable') as unknown as string;
    const lost = { commandId: CommandId('lost'), events: [{ type: 'session_created', data: { source: unsendable } }] } as DurableJournalCommand;
    const error = await rejectionOf(session.commit(lost));
    expect(error).toBeInstanceOf(DurableCommandOutcomeUnknownError);
    expect(error).toMatchObject({ code: 'DURABLE_COMMAND_OUTCOME_UNKNOWN', details: { commandId: 'lost' } });
    expect(await session.projection()).toMatchObject({ headSequence: null });
  });
});

describe('the cached journal', () => {
  it('reads only the pages appended since its last look, and sees writes made around it', async () => {
    const sessionId = freshSessionId('journal-cache');
    await commit(sessionId, created('create'));
    await store.append(sessionId, accepted('around', 'req-1').events.map((event) => ({ ...event, commandId: CommandId('around') })) as DurableEventDraft[]);
    await store.append(sessionId, [steering('req-1', 'a')]);
    const reads: Array<EventSequence | null> = [];
    await runInDurableObject(stubFor(sessionId), (instance) => {
      // SAFETY: `store` is the object's protected accessor; the test observes its reads.
      const inner = (instance as unknown as { store: SqlDurableEventStore }).store;
      const read = inner.read.bind(inner);
      inner.read = (id: SessionId, options?: DurableReadOptions) => {
        reads.push(options?.after ?? null);
        return read(id, options);
      };
    });
    const seen = await projection(sessionId);
    expect(seen.headSequence).toBe(4);
    expect(seen.projection.headSequence).toBe(4);
    // The journal had folded event 1: it re-reads from its anchor (after 0 = the start) only once,
    // then every later look starts at its own head minus one (the anchor check), never at the start.
    await store.append(sessionId, [steering('req-1', 'b'), steering('req-1', 'c')]);
    expect((await projection(sessionId)).headSequence).toBe(6);
    expect(reads.slice(-1)).toEqual([3]);
    expect(reads.filter((after) => after === null).length).toBeLessThanOrEqual(1);
  });

  it('reopens from the log after an unknown commit outcome instead of staying fenced', async () => {
    const sessionId = freshSessionId('journal-uncertain');
    await commit(sessionId, created('create'));
    SessionObject.testHooks = {
      beforeCommit: () => {
        throw new Error('injected');
      },
    };
    const error = await rejectionOf(commit(sessionId, accepted('lost', 'req-1')));
    SessionObject.testHooks = undefined;
    expect(error).toBeInstanceOf(DurableCommandOutcomeUnknownError);
    // The failed transaction wrote nothing, and the object knows it: another command commits.
    const next = await commit(sessionId, accepted('next', 'req-2'));
    expect(next).toMatchObject({ status: 'committed', headSequence: 3 });
  });

  it('survives an object reset (the journal is reopened from storage)', async () => {
    const sessionId = freshSessionId('journal-reset');
    const first = await commit(sessionId, created('create'));
    await abortAllDurableObjects();
    expect((await commit(sessionId, created('create'))).status).toBe('replayed');
    expect((await projection(sessionId)).headSequence).toBe(first.headSequence);
  });
});

describe('SessionObject.projection', () => {
  it('returns the projection, its recovery plan and head', async () => {
    const sessionId = freshSessionId('projection');
    expect(await projection(sessionId)).toMatchObject({
      headSequence: null,
      projection: { status: 'empty' },
      recoveryPlan: { action: 'none' },
    });
    const head = await seedSession(store, sessionId, unknownToolState().events);
    const seen = await projection(sessionId);
    expect(seen.headSequence).toBe(head);
    expect(seen.projection.activeRequest?.requestId).toBe('req-a');
    expect(seen.recoveryPlan).toMatchObject({ action: 'reconcile_tool_outcomes', headSequence: head });
  });
});

describe.each(operationCases)('SessionObject.recover: $name', (op) => {
  const operation = (Object.entries(RECOVERY_MUTATIONS) as Array<[RecoveryMutation, string]>).find(([, m]) => m === op.name)?.[0];

  it('commits one command pinned to the observed head, and reconciles a retry', async () => {
    expect(operation).toBeDefined();
    const sessionId = freshSessionId(`recover-${op.name}`);
    const head = (await seedSession(store, sessionId, op.state().events)) ?? 0;
    const observed = (await projection(sessionId)).projection;
    const coordinator = coordinatorOverRpc(sessionId);
    const result = await op.run(coordinator, CommandId('rc-1'), observed);
    expect(result.status).toBe('committed');
    expect(result.events.map((event) => event.type)).toEqual(op.types);
    expect(result.events[0]?.sequence).toBe(head + 1);
    expect(result.headSequence).toBe(head + op.types.length);
    expect(result.recoveryPlan.headSequence).toBe(result.headSequence);

    const again = await op.run(coordinator, CommandId('rc-1'), observed);
    expect(again.status).toBe('reconciled');
    expect(again.events).toEqual(result.events);
    expect(await store.getHeadSequence(sessionId)).toBe(result.headSequence);
  });

  it('fails on a stale head and writes nothing', async () => {
    const sessionId = freshSessionId(`recover-stale-${op.name}`);
    const head = (await seedSession(store, sessionId, op.state().events)) ?? 0;
    const observed = (await projection(sessionId)).projection;
    await store.append(sessionId, [steering('req-a', 'competitor')]);
    // The caller's decision was taken at `head`: pin it.
    const pinned = coordinatorOverRpc(sessionId);
    const methods = pinned as unknown as Record<string, (input: Record<string, unknown>) => Promise<unknown>>;
    const wrapped = Object.fromEntries(
      Object.entries(methods).map(([name, call]) => [name, (input: Record<string, unknown>) => call({ ...input, expectedHeadSequence: head })]),
    );
    // SAFETY: same seven methods, with the observed head pinned.
    const error = await rejectionOf(op.run(wrapped as unknown as DurableSessionRecoveryCoordinator, CommandId('rc-stale'), observed));
    expect(error).toBeInstanceOf(DurableEventSequenceConflictError);
    expect(error).toMatchObject({ expected: head, actual: head + 1 });
    expect(await store.getHeadSequence(sessionId)).toBe(head + 1);
  });
});

describe('SessionObject.recover: plan-resume and errors', () => {
  it('answers plan-resume read-only, with the head it decided on', async () => {
    const sessionId = freshSessionId('plan-resume');
    const head = await seedSession(store, sessionId, acceptedState().events);
    const decision = await recover(sessionId, 'planResume', undefined);
    expect(decision).toMatchObject({ action: 'resume_accepted_request', headSequence: head, request: { requestId: 'req-a' } });
    expect(await store.getHeadSequence(sessionId)).toBe(head);
    expect(await rpc(sessionId).recover(sessionId, 'planResume', { extra: 1 } as never)).toMatchObject({
      ok: false,
      error: { code: 'DURABLE_EVENT_INVALID_INPUT' },
    });
  });

  it('keeps the coordinator error codes across RPC', async () => {
    const sessionId = freshSessionId('recover-errors');
    await seedSession(store, sessionId, unknownToolState().events);
    const missing = await rpc(sessionId).recover(sessionId, 'reconcileToolOutcome', {
      commandId: CommandId('missing'),
      toolAttemptId: ToolAttemptId('no-such-tool'),
      outcome: { status: 'cancelled' },
    });
    expect(missing).toMatchObject({ ok: false, error: { code: 'DURABLE_RECOVERY_TARGET_NOT_FOUND' } });
    const malformed = await rpc(sessionId).recover(sessionId, 'startToolAttempt', {
      commandId: CommandId('extra'),
      toolAttemptId: ToolAttemptId('tool-1'),
      sideEffect: 'pure',
    } as never);
    expect(malformed).toMatchObject({ ok: false, error: { code: 'DURABLE_EVENT_INVALID_INPUT' } });
  });
});

describe('fencing', () => {
  async function leased(sessionId: SessionId, ownerId: string): Promise<DurableExecutionFence> {
    const lease = await store.acquireExecutionLease(sessionId, { ownerId: WorkerId(ownerId), leaseId: `lease-${ownerId}`, ttlMs: 60_000 });
    return { leaseId: lease.leaseId, ownerId: lease.ownerId, fencingToken: lease.fencingToken };
  }

  it('requires the current fence once the session has lease state, also for a replay', async () => {
    const sessionId = freshSessionId('fence');
    await commit(sessionId, created('create'));
    const fence = await leased(sessionId, 'a');
    const unfenced = await rejectionOf(commit(sessionId, accepted('accept', 'req-1')));
    expect(unfenced).toMatchObject({ code: 'DURABLE_EXECUTION_LEASE_REQUIRED' });
    // Even a command already in the log is not handed back without the fence.
    expect(await rejectionOf(commit(sessionId, created('create')))).toMatchObject({ code: 'DURABLE_EXECUTION_LEASE_REQUIRED' });

    const fenced = await commit(sessionId, accepted('accept', 'req-1'), { executionFence: fence });
    expect(fenced.status).toBe('committed');
    expect((await commit(sessionId, created('create'), { executionFence: fence })).status).toBe('replayed');
    // Reads need no fence.
    expect((await projection(sessionId)).headSequence).toBe(3);
  });

  it('refuses a replaced fence and accepts its successor, for commits and recovery', async () => {
    const sessionId = freshSessionId('fence-takeover');
    const head = (await seedSession(store, sessionId, unknownToolState().events)) ?? 0;
    const first = await leased(sessionId, 'a');
    await store.releaseExecutionLease(sessionId, first);
    const second = await leased(sessionId, 'b');
    expect(second.fencingToken).toBeGreaterThan(first.fencingToken);

    const input = { commandId: CommandId('reconcile'), toolAttemptId: ToolAttemptId('tool-1'), outcome: { status: 'cancelled' as const } };
    const lost = await rejectionOf(recover(sessionId, 'reconcileToolOutcome', input, { executionFence: first }));
    expect(lost).toBeInstanceOf(DurableExecutionLeaseError);
    expect(lost).toMatchObject({ code: 'DURABLE_EXECUTION_LEASE_LOST' });
    expect(await rejectionOf(recover(sessionId, 'reconcileToolOutcome', input))).toMatchObject({
      code: 'DURABLE_EXECUTION_LEASE_REQUIRED',
    });
    const done = await recover(sessionId, 'reconcileToolOutcome', input, { executionFence: second });
    expect(done).toMatchObject({ status: 'committed', headSequence: head + 1 });
    expect(await recover(sessionId, 'reconcileToolOutcome', input, { executionFence: second })).toMatchObject({ status: 'reconciled' });
  });
});
