/**
 * The journal and the recovery coordinator at the edge, against the real Worker started locally:
 * 1. client side: `DurableSessionJournal` and `DurableSessionRecoveryCoordinator` run unchanged
 *    over `HttpDurableEventStore` (commit, replay, conflicts, reopen, every recovery operation);
 * 2. server side: `POST /commands`, `GET /projection`, every `POST /recovery/<operation>` and
 *    `GET /recovery/plan-resume` run the same code inside the session's object: happy paths,
 *    idempotent retries, stale preconditions with their codes and statuses, body validation,
 *    unknown operations, scopes, fencing, and WebSocket subscribers receiving committed commands.
 * Response bodies are checked against the zod schemas the OpenAPI document is generated from.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { RECOVERY_MUTATIONS, RECOVERY_OPERATIONS, type RecoveryMutation } from '../../src/protocol/recovery-operations.js';
import { HttpDurableEventStore, errorFromProblemResponse } from '../../src/client.js';
import { DurableSessionJournal, type DurableJournalCommand } from '../../src/core/journal/index.js';
import type { DurableSessionProjection } from '../../src/core/projector/index.js';
import { DurableSessionRecoveryCoordinator } from '../../src/core/recovery/index.js';
import {
  DurableCommandConflictError,
  DurableEventSequenceConflictError,
  DurableExecutionLeaseError,
} from '../../src/protocol/errors.js';
import type { DurableEventDraft, DurableEventEnvelope } from '../../src/protocol/events.js';
import { CommandId, EventSequence, InputId, RequestId, SessionId, WorkerId } from '../../src/protocol/ids.js';
import {
  commandResponseSchema,
  planResumeResponseSchema,
  projectionResponseSchema,
  recoveryCommandResponseSchema,
  startToolAttemptResponseSchema,
  turnRecoveryResponseSchema,
} from '../../src/app/schemas-recovery.js';
import { acceptedState, readAll, rejectionOf, seedSession, unknownToolState } from '../recovery/helpers.js';
import { operationCases } from '../recovery/operation-cases.js';
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

/** A fresh session id that needs URL encoding. */
function freshSession(label: string): SessionId {
  counter += 1;
  return SessionId(`journal ${label}/${counter}-${Date.now()}`);
}

function sessionPath(sessionId: string, rest: string): string {
  return `/v1/sessions/${encodeURIComponent(sessionId)}/${rest}`;
}

const created = (commandId: string): DurableJournalCommand => ({
  commandId: CommandId(commandId),
  events: [{ type: 'session_created', data: { source: 'create' } }],
});

const accepted = (commandId: string, requestId: string): DurableJournalCommand => ({
  commandId: CommandId(commandId),
  events: [
    { type: 'request_accepted', requestId: RequestId(requestId), data: { inputId: InputId(`input-${requestId}`), input: 'go', priority: 'next' } },
    { type: 'request_started', requestId: RequestId(requestId), data: {} },
  ],
});

function steering(requestId: string, label: string): DurableEventDraft {
  return { type: 'input_applied', requestId: RequestId(requestId), data: { inputId: InputId(`steer-${label}`), priority: 'next' } };
}

function responseSchemaOf(operation: RecoveryMutation) {
  if (operation === 'startToolAttempt') return startToolAttemptResponseSchema;
  if (operation === 'prepareTurnRecovery') return turnRecoveryResponseSchema;
  return recoveryCommandResponseSchema;
}

/** Every mutation with its URL path segment. */
const MUTATIONS: Array<[string, RecoveryMutation]> = RECOVERY_MUTATIONS.map((method) => [RECOVERY_OPERATIONS[method].segment, method]);

/**
 * A stand-in for a coordinator whose operations are the Worker's recovery routes, so the
 * coordinator's own operation cases drive them. `extra` is merged into every body.
 */
function coordinatorOverRoutes(
  sessionId: SessionId,
  options: { token?: string; extra?: Record<string, unknown>; statuses?: number[] } = {},
): DurableSessionRecoveryCoordinator {
  const methods: Record<string, (input: object) => Promise<unknown>> = {};
  for (const [operation, method] of MUTATIONS) {
    methods[method] = async (input) => {
      const response = await api(worker, sessionPath(sessionId, `recovery/${operation}`), {
        token: options.token ?? worker.adminToken,
        body: { ...input, ...options.extra },
      });
      options.statuses?.push(response.status);
      if (!response.ok) throw await errorFromProblemResponse(response);
      return responseSchemaOf(method).parse(await response.json());
    };
  }
  // SAFETY: the operation cases call only the seven operation methods defined above.
  return methods as unknown as DurableSessionRecoveryCoordinator;
}

async function projectionOf(sessionId: SessionId, token = worker.adminToken) {
  const response = await api(worker, sessionPath(sessionId, 'projection'), { token });
  expect(response.status).toBe(200);
  return projectionResponseSchema.parse(await response.json()) as unknown as {
    projection: DurableSessionProjection;
    recoveryPlan: { action: string; headSequence: number | null };
    headSequence: number | null;
  };
}

async function postCommand(sessionId: SessionId, body: unknown, token = worker.adminToken): Promise<Response> {
  return api(worker, sessionPath(sessionId, 'commands'), { token, body });
}

async function expectProblem(response: Response, status: number, code: string): Promise<string> {
  expect(response.status, code).toBe(status);
  const problem = await readProblem(response);
  expect(problem.code).toBe(code);
  return problem.detail;
}

describe('DurableSessionJournal over HttpDurableEventStore (client side)', () => {
  it('commits, replays, refuses conflicts, and reopens from the edge', async () => {
    const sessionId = freshSession('client');
    const journal = await DurableSessionJournal.open(store, sessionId);
    const first = await journal.commit(created('create'));
    expect(first).toMatchObject({ status: 'committed', headSequence: 1 });
    expect((await journal.commit(created('create'))).status).toBe('replayed');
    const forked: DurableJournalCommand = { ...created('create'), events: [{ type: 'session_created', data: { source: 'fork' } }] };
    expect(await rejectionOf(journal.commit(forked))).toBeInstanceOf(DurableCommandConflictError);

    // A second client decides on the same head; the first one's write makes its pinned command stale.
    const other = await DurableSessionJournal.open(new HttpDurableEventStore({ baseUrl: worker.url, token: worker.adminToken }), sessionId);
    await journal.commit(accepted('accept', 'req-1'));
    const stale = await rejectionOf(other.commit({ ...accepted('accept-2', 'req-2'), expectedHeadSequence: EventSequence(1) }));
    expect(stale).toBeInstanceOf(DurableEventSequenceConflictError);
    // An unpinned command follows the head after a compare-and-append conflict.
    const followed = await other.commit({ commandId: CommandId('steer'), events: [steering('req-1', 'client')] });
    expect(followed).toMatchObject({ status: 'committed', headSequence: 4 });

    const reopened = await DurableSessionJournal.open(store, sessionId);
    expect(reopened.getProjection()).toEqual(other.getProjection());
    expect(reopened.getProjection().activeRequest?.appliedInputIds).toEqual(['steer-client']);
  });

  it('sees commands committed through the Worker route, and the route sees its commands', async () => {
    const sessionId = freshSession('mixed');
    const journal = await DurableSessionJournal.open(store, sessionId);
    await journal.commit(created('create'));
    const response = await postCommand(sessionId, accepted('accept', 'req-1'));
    expect(response.status).toBe(200);
    await journal.refresh();
    expect(journal.getProjection().activeRequest?.requestId).toBe('req-1');
    // The client's own copy of the route's command replays instead of duplicating it.
    expect((await journal.commit(accepted('accept', 'req-1'))).status).toBe('replayed');
    expect((await projectionOf(sessionId)).headSequence).toBe(3);
  });
});

describe.each(operationCases)('DurableSessionRecoveryCoordinator over HttpDurableEventStore: $name', (op) => {
  it('commits one command and reconciles a retry from another client', async () => {
    const sessionId = freshSession(`client-${op.name}`);
    const head = (await seedSession(store, sessionId, op.state().events)) ?? 0;
    const coordinator = await DurableSessionRecoveryCoordinator.open(store, sessionId);
    const observed = coordinator.getProjection();
    const result = await op.run(coordinator, CommandId('rc-1'), observed);
    expect(result.status).toBe('committed');
    expect(result.events.map((event) => event.type)).toEqual(op.types);
    expect(result.headSequence).toBe(head + op.types.length);

    const other = await DurableSessionRecoveryCoordinator.open(new HttpDurableEventStore({ baseUrl: worker.url, token: worker.adminToken }), sessionId);
    const again = await op.run(other, CommandId('rc-1'), observed);
    expect(again.status).toBe('reconciled');
    expect(again.events).toEqual(result.events);
    expect(await store.getHeadSequence(sessionId)).toBe(result.headSequence);
  });
});

describe('POST /v1/sessions/{sessionId}/commands', () => {
  it('commits, replays the identical command, and answers 409 for other content under the same id', async () => {
    const sessionId = freshSession('route');
    const first = await postCommand(sessionId, created('create'));
    expect(first.status).toBe(200);
    const body = commandResponseSchema.parse(await first.json());
    expect(body).toMatchObject({ status: 'committed', commandId: 'create', headSequence: 1 });
    expect(body.events[0]).toMatchObject({ sequence: 1, sessionId, commandId: 'create', type: 'session_created' });

    const again = commandResponseSchema.parse(await (await postCommand(sessionId, created('create'))).json());
    expect(again.status).toBe('replayed');
    expect(again.events).toEqual(body.events);

    const other = { ...created('create'), events: [{ type: 'session_created', data: { source: 'fork' } }] };
    await expectProblem(await postCommand(sessionId, other), 409, 'DURABLE_COMMAND_CONFLICT');
    expect(await store.getHeadSequence(sessionId)).toBe(1);
  });

  it('answers a stale pinned head with 409 and an invariant violation with 422, writing nothing', async () => {
    const sessionId = freshSession('route-stale');
    await postCommand(sessionId, created('create'));
    const stale = await postCommand(sessionId, { ...accepted('accept', 'req-1'), expectedHeadSequence: null });
    await expectProblem(stale, 409, 'DURABLE_EVENT_SEQUENCE_CONFLICT');
    const orphan = { commandId: 'orphan', events: [{ type: 'request_completed', requestId: 'nobody', data: {} }] };
    await expectProblem(await postCommand(sessionId, orphan), 422, 'DURABLE_EVENT_PROJECTION_INVALID');
    expect(await store.getHeadSequence(sessionId)).toBe(1);
    const pinned = await postCommand(sessionId, { ...accepted('accept', 'req-1'), expectedHeadSequence: 1 });
    expect(commandResponseSchema.parse(await pinned.json())).toMatchObject({ status: 'committed', headSequence: 3 });
  });

  it('validates the body before it reaches the object, with the journal own error', async () => {
    const sessionId = freshSession('route-invalid');
    const cases: Array<[unknown, number, string]> = [
      [{ commandId: 'c', events: [] }, 400, 'DURABLE_SESSION_JOURNAL_INVALID'],
      [{ commandId: '', events: created('x').events }, 400, 'DURABLE_SESSION_JOURNAL_INVALID'],
      [{ commandId: 'c', events: [{ type: 'session_created', data: { source: 'nope' } }] }, 400, 'DURABLE_SESSION_JOURNAL_INVALID'],
      [{ commandId: 'c', events: [{ ...created('x').events[0], commandId: 'other' }] }, 400, 'DURABLE_SESSION_JOURNAL_INVALID'],
      [{ ...created('c'), extra: true }, 400, 'DURABLE_SESSION_JOURNAL_INVALID'],
      [{ ...created('c'), executionFence: { leaseId: 'l' } }, 400, 'DURABLE_EXECUTION_LEASE_INVALID'],
      ['not an object', 400, 'DURABLE_SESSION_JOURNAL_INVALID'],
    ];
    for (const [body, status, code] of cases) {
      await expectProblem(await postCommand(sessionId, body), status, code);
    }
    const detail = await expectProblem(await postCommand(sessionId, { commandId: 'c', events: [] }), 400, 'DURABLE_SESSION_JOURNAL_INVALID');
    expect(detail).toContain('non-empty array of events');
    expect(await store.getHeadSequence(sessionId)).toBeNull();
  });

  it('pushes committed commands to WebSocket subscribers', async () => {
    const sessionId = freshSession('route-push');
    await postCommand(sessionId, created('create'));
    const url = new URL(worker.href(sessionPath(sessionId, 'subscribe')));
    url.protocol = 'ws:';
    url.searchParams.set('access_token', await worker.mintToken(sessionId, ['subscribe']));
    const socket = new WebSocket(url.href);
    const frames: Array<{ type: string; event?: DurableEventEnvelope }> = [];
    const waiters: Array<() => void> = [];
    socket.on('message', (data) => {
      frames.push(JSON.parse(String(data)) as { type: string; event?: DurableEventEnvelope });
      for (const wake of waiters.splice(0)) wake();
    });
    const until = async (predicate: () => boolean): Promise<void> => {
      while (!predicate()) await new Promise<void>((resolve) => waiters.push(resolve));
    };
    try {
      await until(() => frames.some((frame) => frame.type === 'caught_up'));
      const committed = commandResponseSchema.parse(await (await postCommand(sessionId, accepted('accept', 'req-1'))).json());
      await until(() => frames.filter((frame) => frame.type === 'event').length === 3);
      const live = frames.filter((frame) => frame.type === 'event').slice(1).map((frame) => frame.event);
      expect(live).toEqual(committed.events);
    } finally {
      socket.close();
    }
  });
});

describe('GET /v1/sessions/{sessionId}/projection', () => {
  it('returns the projection, the recovery plan and the head, following every writer', async () => {
    const sessionId = freshSession('projection');
    expect(await projectionOf(sessionId)).toMatchObject({ headSequence: null, projection: { status: 'empty' }, recoveryPlan: { action: 'none' } });
    const head = await seedSession(store, sessionId, unknownToolState().events);
    const seen = await projectionOf(sessionId);
    expect(seen).toMatchObject({ headSequence: head, recoveryPlan: { action: 'reconcile_tool_outcomes', headSequence: head } });
    expect(seen.projection.headSequence).toBe(head);
    const reference = await DurableSessionJournal.open(store, sessionId);
    expect(seen.projection).toEqual(reference.getProjection());
    expect(seen.recoveryPlan).toEqual(reference.getRecoveryPlan());
  });
});

describe.each(MUTATIONS.map(([operation, method]) => ({ operation, method })))('POST /recovery/$operation', ({ operation, method }) => {
  const op = operationCases.find((candidate) => candidate.name === method);
  if (op === undefined) throw new Error(`no operation case for ${method}`);

  it('commits one command, then reconciles a retry with the same commandId', async () => {
    const sessionId = freshSession(`route-${operation}`);
    const head = (await seedSession(store, sessionId, op.state().events)) ?? 0;
    const observed = (await projectionOf(sessionId)).projection;
    const statuses: number[] = [];
    const coordinator = coordinatorOverRoutes(sessionId, { statuses });
    const result = await op.run(coordinator, CommandId('rc-1'), observed);
    expect(result).toMatchObject({ status: 'committed', commandId: 'rc-1', headSequence: head + op.types.length });
    expect(result.events.map((event) => event.type)).toEqual(op.types);
    const again = await op.run(coordinator, CommandId('rc-1'), observed);
    expect(again.status).toBe('reconciled');
    expect(again.events).toEqual(result.events);
    expect(statuses).toEqual([200, 200]);
    expect(await readAll(store, sessionId)).toHaveLength(head + op.types.length);
  });

  it('answers 409 DURABLE_EVENT_SEQUENCE_CONFLICT when the observed head is stale, writing nothing', async () => {
    const sessionId = freshSession(`route-stale-${operation}`);
    const head = (await seedSession(store, sessionId, op.state().events)) ?? 0;
    const observed = (await projectionOf(sessionId)).projection;
    await store.append(sessionId, [steering('req-a', 'competitor')]);
    const statuses: number[] = [];
    const coordinator = coordinatorOverRoutes(sessionId, { extra: { expectedHeadSequence: head }, statuses });
    const error = await rejectionOf(op.run(coordinator, CommandId('rc-stale'), observed));
    expect(error).toBeInstanceOf(DurableEventSequenceConflictError);
    expect(error).toMatchObject({ expected: head, actual: head + 1 });
    expect(statuses).toEqual([409]);
    expect(await store.getHeadSequence(sessionId)).toBe(head + 1);
  });
});

/** A coordinator whose operations are `HttpDurableEventStore.recover` calls (the client side of the table). */
function coordinatorOverClient(sessionId: SessionId): DurableSessionRecoveryCoordinator {
  const methods: Record<string, (input: unknown) => Promise<unknown>> = {};
  for (const operation of RECOVERY_MUTATIONS) {
    methods[operation] = (input) => store.recover(sessionId, operation, input as never);
  }
  // SAFETY: the operation cases call only the seven operation methods defined above.
  return methods as unknown as DurableSessionRecoveryCoordinator;
}

describe.each(operationCases)('HttpDurableEventStore.recover: $name', (op) => {
  it('runs the operation inside the object through its route, idempotent by commandId', async () => {
    const sessionId = freshSession(`client-${op.name}`);
    const head = (await seedSession(store, sessionId, op.state().events)) ?? 0;
    const observed = (await store.projection(sessionId)).projection;
    const coordinator = coordinatorOverClient(sessionId);
    const result = await op.run(coordinator, CommandId('cl-1'), observed);
    expect(result).toMatchObject({ status: 'committed', headSequence: head + op.types.length });
    expect((await op.run(coordinator, CommandId('cl-1'), observed)).status).toBe('reconciled');
  });
});

describe('HttpDurableEventStore: commit, projection, planResume', () => {
  it('commits a command and answers planResume through the client', async () => {
    const sessionId = freshSession('client-commit');
    expect(await store.commit(sessionId, created('c-1'))).toMatchObject({ status: 'committed', headSequence: 1 });
    expect(await store.commit(sessionId, created('c-1'))).toMatchObject({ status: 'replayed' });
    const conflict = await rejectionOf(store.commit(sessionId, { ...created('c-1'), events: [steering('x', 'y')] }));
    expect(conflict).toBeInstanceOf(DurableCommandConflictError);
    expect(await store.recover(sessionId, 'planResume', undefined)).toMatchObject({ action: 'none', headSequence: 1 });
    expect((await store.projection(sessionId)).headSequence).toBe(1);
  });
});

describe('recovery routes: errors, plan-resume, routing', () => {
  it('answers the coordinator codes for a missing target, a wrong state and a malformed body', async () => {
    const sessionId = freshSession('recovery-errors');
    await seedSession(store, sessionId, unknownToolState().events);
    const post = (operation: string, body: unknown) => api(worker, sessionPath(sessionId, `recovery/${operation}`), { token: worker.adminToken, body });
    await expectProblem(
      await post('reconcile-tool-outcome', { commandId: 'c1', toolAttemptId: 'no-such-tool', outcome: { status: 'cancelled' } }),
      404,
      'DURABLE_RECOVERY_TARGET_NOT_FOUND',
    );
    await expectProblem(await post('start-tool-attempt', { commandId: 'c2', toolAttemptId: 'tool-1' }), 409, 'DURABLE_RECOVERY_INVALID_STATE');
    const detail = await expectProblem(
      await post('start-tool-attempt', { commandId: 'c3', toolAttemptId: 'tool-1', sideEffect: 'pure' }),
      400,
      'DURABLE_EVENT_INVALID_INPUT',
    );
    expect(detail).toContain('sideEffect');
    await expectProblem(
      await post('reconcile-tool-outcome', { commandId: 'c4', toolAttemptId: 'tool-1', outcome: { status: 'failed', error: { code: 'E' } } }),
      400,
      'DURABLE_EVENT_INVALID_INPUT',
    );
    await expectProblem(
      await post('start-tool-attempt', { commandId: 'c5', toolAttemptId: 'tool-1', executionFence: { fencingToken: 0 } }),
      400,
      'DURABLE_EXECUTION_LEASE_INVALID',
    );
    expect((await projectionOf(sessionId)).recoveryPlan.action).toBe('reconcile_tool_outcomes');
  });

  it('answers plan-resume without writing, and routes unknown operations to 404', async () => {
    const sessionId = freshSession('plan-resume');
    const head = await seedSession(store, sessionId, acceptedState().events);
    const response = await api(worker, sessionPath(sessionId, 'recovery/plan-resume'), { token: worker.adminToken });
    expect(response.status).toBe(200);
    const decision = planResumeResponseSchema.parse(await response.json());
    expect(decision).toMatchObject({ action: 'resume_accepted_request', headSequence: head, request: { requestId: 'req-a' } });

    await expectProblem(
      await api(worker, sessionPath(sessionId, 'recovery/rewrite-history'), { token: worker.adminToken, body: {} }),
      404,
      'HTTP_NOT_FOUND',
    );
    const wrongMethod = await api(worker, sessionPath(sessionId, 'recovery/plan-resume'), { token: worker.adminToken, body: {} });
    expect(wrongMethod.headers.get('allow')).toContain('GET');
    await expectProblem(wrongMethod, 405, 'HTTP_METHOD_NOT_ALLOWED');
    await expectProblem(await api(worker, sessionPath(sessionId, 'recovery/start-tool-attempt'), { token: worker.adminToken }), 405, 'HTTP_METHOD_NOT_ALLOWED');
    expect(await store.getHeadSequence(sessionId)).toBe(head);
  });
});

describe('scopes and fencing', () => {
  it('needs "recover" for recovery routes, "append" for commands and "read" for the projection', async () => {
    const sessionId = freshSession('scopes');
    await seedSession(store, sessionId, unknownToolState().events);
    const body = { commandId: 'scoped', toolAttemptId: 'tool-1', outcome: { status: 'cancelled' } };
    const recoveryPath = sessionPath(sessionId, 'recovery/reconcile-tool-outcome');
    const noRecover = await worker.mintToken(sessionId, ['read', 'append', 'subscribe', 'lease', 'deliver']);
    await expectProblem(await api(worker, recoveryPath, { token: noRecover, body }), 403, 'HTTP_FORBIDDEN');
    await expectProblem(await api(worker, sessionPath(sessionId, 'recovery/plan-resume'), { token: noRecover }), 403, 'HTTP_FORBIDDEN');
    await expectProblem(await postCommand(sessionId, created('x'), await worker.mintToken(sessionId, ['read', 'recover'])), 403, 'HTTP_FORBIDDEN');
    const foreign = await worker.mintToken(`${sessionId}-other`, ['recover']);
    await expectProblem(await api(worker, recoveryPath, { token: foreign, body }), 403, 'HTTP_FORBIDDEN');
    await expectProblem(await api(worker, recoveryPath, { body }), 401, 'HTTP_UNAUTHORIZED');

    const onlyRead = await worker.mintToken(sessionId, ['read']);
    expect((await projectionOf(sessionId, onlyRead)).recoveryPlan.action).toBe('reconcile_tool_outcomes');
    const onlyRecover = await worker.mintToken(sessionId, ['recover']);
    const done = await api(worker, recoveryPath, { token: onlyRecover, body });
    expect(done.status).toBe(200);
    expect(recoveryCommandResponseSchema.parse(await done.json()).status).toBe('committed');
  });

  it('requires the lease fence on commands and recovery once the session has a lease', async () => {
    const sessionId = freshSession('fenced');
    const head = (await seedSession(store, sessionId, unknownToolState().events)) ?? 0;
    const lease = await store.acquireExecutionLease(sessionId, { ownerId: WorkerId('edge-worker'), leaseId: 'lease-1', ttlMs: 60_000 });
    const fence = { leaseId: lease.leaseId, ownerId: lease.ownerId, fencingToken: lease.fencingToken };
    const input = { commandId: 'fenced', toolAttemptId: 'tool-1', outcome: { status: 'completed', result: { ok: true } } };
    const recoveryPath = sessionPath(sessionId, 'recovery/reconcile-tool-outcome');
    await expectProblem(await api(worker, recoveryPath, { token: worker.adminToken, body: input }), 428, 'DURABLE_EXECUTION_LEASE_REQUIRED');
    const wrongToken = { ...fence, fencingToken: fence.fencingToken + 1 };
    await expectProblem(
      await api(worker, recoveryPath, { token: worker.adminToken, body: { ...input, executionFence: wrongToken } }),
      409,
      'DURABLE_EXECUTION_LEASE_LOST',
    );
    const ok = await api(worker, recoveryPath, { token: worker.adminToken, body: { ...input, executionFence: fence } });
    expect(ok.status).toBe(200);
    await expectProblem(await postCommand(sessionId, { commandId: 'steer', events: [steering('req-a', 'fenced')] }), 428, 'DURABLE_EXECUTION_LEASE_REQUIRED');
    const steer = await postCommand(sessionId, { commandId: 'steer', events: [steering('req-a', 'fenced')], executionFence: fence });
    expect(commandResponseSchema.parse(await steer.json())).toMatchObject({ status: 'committed', headSequence: head + 2 });

    // The client-side coordinator gets the same refusal from the store.
    const unfenced = await rejectionOf(
      (await DurableSessionJournal.open(store, sessionId)).commit({ commandId: CommandId('client'), events: [steering('req-a', 'client')] }),
    );
    expect(unfenced).toBeInstanceOf(DurableExecutionLeaseError);
    expect(unfenced).toMatchObject({ code: 'DURABLE_EXECUTION_LEASE_REQUIRED' });
  });
});
