/**
 * Recovery coordinator conformance checks: `DurableSessionRecoveryCoordinator` run against the
 * store under test.
 *
 * The coordinator's decisions live in core, but they rest on the store: a head-pinned
 * compare-and-append that refuses a competitor's stale decision, reads that return a committed
 * command intact (a retry is recognized by reading the log), durability of a rollover across a
 * restart, and the lease fence on every recovery append. Each check seeds a session with the
 * journal a crashed writer would leave, then drives the coordinator.
 *
 * Pass them to `runStoreConformance({ extraChecks: recoveryConformanceChecks })`.
 */
import { DurableSessionRecoveryCoordinator } from '../core/recovery/index.js';
import type { DurableEventStore } from '../core/store.js';
import {
  isDurableEventSequenceConflictError,
  isDurableSessionRecoveryError,
} from '../protocol/errors.js';
import type { DurableEventDraft } from '../protocol/events.js';
import {
  CommandId,
  InputId,
  ModelAttemptId,
  RequestId,
  ToolAttemptId,
  TurnId,
  WorkerId,
  type SessionId,
} from '../protocol/ids.js';
import { assert, assertEqual, describeValue, expectCode, expectResolves, fail } from './assertions.js';
import { fenceOf, leaseStoreOf, LONG_LEASE_TTL_MS } from './checks-lease.js';
import type { ConformanceCheck, ConformanceContext } from './types.js';

type Check = ConformanceCheck<DurableEventStore>;
type Ctx = ConformanceContext<DurableEventStore>;

const REQUEST = RequestId('conformance-request');
const TURN = TurnId('conformance-turn');
const MODEL = ModelAttemptId('conformance-model');
const TOOL = ToolAttemptId('conformance-tool');

/** The journal of a writer that stopped after a `non_idempotent` tool started (plan `reconcile_tool_outcomes`). */
function seedUnknownTool(ctx: Ctx, sessionId: SessionId): Promise<number> {
  return seedTurnWithTool(ctx, sessionId, 'started');
}

/**
 * Writes, one append per writer step, a Request in Turn 1 whose model called one `non_idempotent`
 * tool, which then either started (`started`) or was cancelled before it ran. Returns the head.
 */
async function seedTurnWithTool(ctx: Ctx, sessionId: SessionId, last: 'started' | 'cancelled_before_start'): Promise<number> {
  const turn = { requestId: REQUEST, turnId: TURN };
  const call = { toolCallId: 'call-1', toolName: 'deploy' };
  const steps: DurableEventDraft[][] = [
    [{ type: 'session_created', data: { source: 'create' } }],
    [
      {
        type: 'request_accepted',
        requestId: REQUEST,
        commandId: CommandId('conformance-accept'),
        data: { inputId: InputId('conformance-input'), input: 'deploy', priority: 'next' },
      },
    ],
    [
      { type: 'request_started', requestId: REQUEST, data: {} },
      { type: 'input_applied', requestId: REQUEST, data: { inputId: InputId('conformance-input'), priority: 'next' } },
    ],
    [
      { type: 'turn_started', ...turn, data: { turn: 1 } },
      { type: 'model_request_started', ...turn, modelAttemptId: MODEL, data: { model: 'm', streaming: false } },
    ],
    [
      {
        type: 'model_request_completed',
        ...turn,
        modelAttemptId: MODEL,
        data: { response: { content: '', toolCalls: [{ id: 'call-1', name: 'deploy', arguments: { env: 'prod' } }] } },
      },
      {
        type: 'tool_scheduled',
        ...turn,
        modelAttemptId: MODEL,
        toolAttemptId: TOOL,
        data: { ...call, modelInput: { env: 'prod' }, input: { env: 'prod' }, sideEffect: 'non_idempotent', interruptBehavior: 'block' },
      },
    ],
    [
      last === 'started'
        ? { type: 'tool_started', ...turn, toolAttemptId: TOOL, data: { ...call, input: { env: 'prod' }, sideEffect: 'non_idempotent' } }
        : { type: 'tool_cancelled', ...turn, toolAttemptId: TOOL, data: { ...call, reason: 'user_abort' } },
    ],
  ];
  let head = 0;
  for (const drafts of steps) head = (await ctx.store.append(sessionId, drafts)).lastSequence;
  return head;
}

function reconcile(coordinator: DurableSessionRecoveryCoordinator, commandId: string) {
  return coordinator.reconcileToolOutcome({
    commandId: CommandId(commandId),
    toolAttemptId: TOOL,
    outcome: { status: 'completed', result: { deploymentId: 'dep-1' } },
  });
}

function rollover(coordinator: DurableSessionRecoveryCoordinator, commandId: string) {
  return coordinator.prepareTurnRecovery({
    commandId: CommandId(commandId),
    requestId: REQUEST,
    turnId: TURN,
    recoveryRequestId: RequestId('conformance-recovery'),
    recoveryInputId: InputId('conformance-recovery-input'),
  });
}

/** Seeds a Turn whose only tool was cancelled before it ran (plan `resume_turn`). Returns the head. */
function seedResumableTurn(ctx: Ctx, sessionId: SessionId): Promise<number> {
  return seedTurnWithTool(ctx, sessionId, 'cancelled_before_start');
}

const checks: Check[] = [
  {
    name: 'recovery-reconciles-a-tool-outcome-once',
    async run(ctx) {
      const sessionId = ctx.newSessionId();
      const head = await seedUnknownTool(ctx, sessionId);
      const first = await DurableSessionRecoveryCoordinator.open(ctx.store, sessionId);
      assertEqual(first.getRecoveryPlan().action, 'reconcile_tool_outcomes', 'plan of the seeded session');
      const committed = await expectResolves(reconcile(first, 'conformance-reconcile'), 'reconcileToolOutcome');
      assertEqual(committed.status, 'committed', 'first reconciliation');
      assertEqual(committed.headSequence, head + 1, 'head after the reconciliation');
      const second = await DurableSessionRecoveryCoordinator.open(ctx.store, sessionId);
      const retried = await expectResolves(reconcile(second, 'conformance-reconcile'), 'retry on a new coordinator');
      assertEqual(retried.status, 'reconciled', 'retry with the same commandId');
      assertEqual(retried.events[0]?.eventId, committed.events[0]?.eventId, 'the retry reports the stored event');
      assertEqual(await ctx.store.getHeadSequence(sessionId), head + 1, 'head after the retry');
    },
  },
  {
    name: 'recovery-racing-coordinators-commit-once',
    async run(ctx) {
      const sessionId = ctx.newSessionId();
      const head = await seedUnknownTool(ctx, sessionId);
      const a = await DurableSessionRecoveryCoordinator.open(ctx.store, sessionId);
      const b = await DurableSessionRecoveryCoordinator.open(ctx.store, sessionId);
      const settled = await Promise.allSettled([reconcile(a, 'conformance-race-a'), reconcile(b, 'conformance-race-b')]);
      const winners = settled.filter((outcome) => outcome.status === 'fulfilled');
      assertEqual(winners.length, 1, 'coordinators that committed');
      for (const outcome of settled) {
        if (outcome.status === 'fulfilled') continue;
        const error: unknown = outcome.reason;
        // The loser either lost the compare-and-append or already saw the winner's outcome.
        if (!isDurableEventSequenceConflictError(error) && !isDurableSessionRecoveryError(error)) {
          fail(`the losing coordinator failed with ${describeValue(error)}`, error);
        }
      }
      assertEqual(await ctx.store.getHeadSequence(sessionId), head + 1, 'head after the race');
    },
  },
  {
    name: 'recovery-turn-rollover-is-one-batch',
    async run(ctx) {
      const sessionId = ctx.newSessionId();
      const head = await seedResumableTurn(ctx, sessionId);
      const coordinator = await DurableSessionRecoveryCoordinator.open(ctx.store, sessionId);
      assertEqual(coordinator.getRecoveryPlan().action, 'resume_turn', 'plan of the seeded session');
      const result = await expectResolves(rollover(coordinator, 'conformance-rollover'), 'prepareTurnRecovery');
      const types = result.events.map((event) => event.type);
      assertEqual(types.join(','), 'turn_aborted,request_interrupted,request_accepted', 'rollover events');
      const page = await ctx.store.read(sessionId, { limit: 1000 });
      const stored = page.events.slice(head);
      assertEqual(stored.length, 3, 'events after the seeded head');
      assert(stored.every((event) => event.commandId === 'conformance-rollover'), 'every rollover event carries the command ID');
      const reopened = await DurableSessionRecoveryCoordinator.open(ctx.store, sessionId);
      assertEqual(reopened.getRecoveryPlan().action, 'resume_request', 'plan after the rollover');
      assertEqual(reopened.getProjection().activeRequest?.recoveryKind, 'active_turn', 'recovery kind of the new Request');
    },
  },
  {
    name: 'recovery-rollover-survives-restart-and-retry-reconciles',
    requires: ['restart'],
    async run(ctx) {
      const sessionId = ctx.newSessionId();
      await seedResumableTurn(ctx, sessionId);
      const before = await DurableSessionRecoveryCoordinator.open(ctx.store, sessionId);
      const committed = await expectResolves(rollover(before, 'conformance-rollover'), 'prepareTurnRecovery');
      await ctx.restart();
      const after = await DurableSessionRecoveryCoordinator.open(ctx.store, sessionId);
      assertEqual(after.getRecoveryPlan().action, 'resume_request', 'plan after the restart');
      const retried = await expectResolves(rollover(after, 'conformance-rollover'), 'retry after the restart');
      assertEqual(retried.status, 'reconciled', 'retry of the rollover after the restart');
      assertEqual(retried.headSequence, committed.headSequence, 'head after the retry');
    },
  },
  {
    name: 'recovery-commands-carry-the-lease-fence',
    requires: ['lease'],
    async run(ctx) {
      const store = leaseStoreOf(ctx);
      const sessionId = ctx.newSessionId();
      const head = await seedUnknownTool(ctx, sessionId);
      const owner = WorkerId('conformance-recovery-a');
      const record = await store.acquireExecutionLease(sessionId, { ownerId: owner, leaseId: 'recovery-a', ttlMs: LONG_LEASE_TTL_MS });
      const lease = { fence: fenceOf(record), signal: new AbortController().signal };
      await expectCode(
        DurableSessionRecoveryCoordinator.open(store, sessionId, { executionLeaseStore: store }),
        'DURABLE_EXECUTION_LEASE_REQUIRED',
        'open without a lease once lease state exists',
      );
      const fenced = await DurableSessionRecoveryCoordinator.open(store, sessionId, { executionLease: lease, executionLeaseStore: store });
      await store.releaseExecutionLease(sessionId, lease.fence);
      await store.acquireExecutionLease(sessionId, { ownerId: WorkerId('conformance-recovery-b'), leaseId: 'recovery-b', ttlMs: LONG_LEASE_TTL_MS });
      await expectCode(reconcile(fenced, 'conformance-stale'), 'DURABLE_EXECUTION_LEASE_LOST', 'a recovery command under a replaced lease');
      assertEqual(await store.getHeadSequence(sessionId), head, 'head after the stale recovery command');
    },
  },
];

/** Every recovery coordinator check, for `runStoreConformance({ extraChecks })`. */
export const recoveryConformanceChecks: Check[] = checks;
