/**
 * Acting on a recovery plan when a Session resumes.
 *
 * `planResumeStep` reads the journal's plan and returns what the Session does next:
 * - `none` -> idle;
 * - `resume_request` with a complete execution snapshot (`resume_accepted_request`) -> drive that
 *   same Request;
 * - every other action -> the policy's mapping to a recovery-coordinator call (or, for a resumed
 *   Turn or a Turn that ended with tool calls, driving the Request in place), else
 *   `DurableSessionRecoveryRequiredError` carrying the plan.
 * `applyRecoveryPolicy` repeats that until the Session can run, refreshing the journal after each
 * coordinator command. Nothing here re-runs a non_idempotent tool or re-issues a model call whose
 * outcome is unknown: those only move on with an outcome a policy callback states
 * (`recallModelOnUnknownOutcome` / `AUTO_RECOVERY_POLICY` state one for model calls).
 */
import { DurableSessionRecoveryCoordinator } from '../core/recovery/coordinator.js';
import { entriesOf } from '../core/projector/frozen-data.js';
import type { DurableActiveRequestView, DurableModelAttemptView, DurableRecoveryPlan } from '../core/projector/projection-types.js';
import type { DurableModelOutcome } from '../core/recovery/coordinator-types.js';
import type { DurableExecutionLeaseStore } from '../core/store.js';
import {
  DurableSessionRecoveryRequiredError,
  isDurableSessionRecoveryError,
  type DurableErrorDetails,
} from '../protocol/errors.js';
import { CommandId, InputId, PermissionRequestId, RequestId, TurnId } from '../protocol/ids.js';
import type { JsonValue } from '../protocol/json.js';
import { MAX_READ_LIMIT } from '../protocol/limits.js';
import type { SessionCore } from './core.js';
import type { SessionPermissionDecision, SessionRecoveryContext, SessionRecoveryPolicy } from './types.js';

/** What the Session does after recovery. */
type RecoveryOutcome = { kind: 'idle' } | { kind: 'drive'; request: DurableActiveRequestView };

/** Most recovery commands one resume applies before giving up (a plan that never converges is a bug). */
const MAX_RECOVERY_STEPS = 64;

/**
 * The policy `resumeSession` users are pointed to: everything the seed lets a writer do without a
 * human. Rolls over a Request that ran no Turn, rolls over an active Turn (continuing in place only
 * when a non_idempotent tool already has a terminal outcome), continues after a Turn that ended
 * with tool calls, and presents pending permissions to the host again. Unknown tool, model, input
 * and Request outcomes are left to the host's own callbacks.
 */
export const SAFE_RECOVERY_POLICY: Readonly<SessionRecoveryPolicy> = Object.freeze({
  rolloverRequest: true,
  resumeTurn: 'rollover_or_in_place',
  continueAfterToolTurn: true,
  resolvePermissions: 'ask',
});

/**
 * Most model attempts of one Turn that {@link recallModelOnUnknownOutcome} records as cut off by
 * a restart: a model call that takes the process down every time parks after this many.
 */
export const MAX_MODEL_RECALLS_PER_TURN = 3;

/**
 * A `reconcileModelOutcome` callback that needs no person: the started model call whose outcome
 * is unknown is recorded as cut off (`model_request_aborted`, reason `process_restart`), and the
 * Session calls the model again as a new attempt. The cut-off call may have completed at the
 * provider and been billed: this accepts a possibly billed duplicate call in exchange for an
 * answer that continues by itself. After {@link MAX_MODEL_RECALLS_PER_TURN} such attempts in one
 * Turn it answers `undefined` (the Session parks with `reconcile_model_outcome`).
 */
export function recallModelOnUnknownOutcome(
  attempt: DurableModelAttemptView,
  context: SessionRecoveryContext,
): DurableModelOutcome | undefined {
  void attempt;
  const turn = context.request?.activeTurn;
  const recalled = turn === null || turn === undefined ? 0 : entriesOf(turn.modelAttempts).filter((a) => a.status === 'aborted' && a.reason === 'process_restart').length;
  if (recalled >= MAX_MODEL_RECALLS_PER_TURN) return undefined;
  return { status: 'aborted', reason: 'process_restart' };
}

/**
 * {@link SAFE_RECOVERY_POLICY} plus {@link recallModelOnUnknownOutcome}: a crash inside a model
 * call continues without an operator (the cut-off attempt is recorded, the model is called again;
 * with `rollover_or_in_place`, in the continuation Request the rollover accepts). Started
 * `non_idempotent` tools with an unknown outcome still park for a person
 * (`reconcile_tool_outcomes`), as do the other callbacks this policy leaves unset.
 */
export const AUTO_RECOVERY_POLICY: Readonly<SessionRecoveryPolicy> = Object.freeze({
  ...SAFE_RECOVERY_POLICY,
  reconcileModelOutcome: recallModelOnUnknownOutcome,
});

/** The plan a `DurableSessionRecoveryRequiredError` carries (`undefined` for other errors). */
export function recoveryPlanOf(error: unknown): DurableRecoveryPlan | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const details = (error as { details?: DurableErrorDetails }).details;
  const plan = details?.['plan'];
  return typeof plan === 'object' && plan !== null ? (plan as DurableRecoveryPlan) : undefined;
}

function required(plan: DurableRecoveryPlan, why: string): DurableSessionRecoveryRequiredError {
  return new DurableSessionRecoveryRequiredError(`session needs recovery (${plan.action}): ${why}`, {
    // SAFETY: the plan is plain frozen data (IDs, strings, numbers, views of JSON payloads).
    details: { plan: plan as unknown as JsonValue },
  });
}

function decisionOf(answer: SessionPermissionDecision): { decision: 'allow' | 'deny' | 'cancel'; message?: string } {
  return typeof answer === 'string' ? { decision: answer } : answer;
}

/** Resume settings the recovery step needs. */
interface RecoverySettings {
  policy: SessionRecoveryPolicy;
  storeTimeoutMs: number;
  leaseStore: DurableExecutionLeaseStore | undefined;
}

/** Applies the policy until the Session can run (see the module header). */
export async function applyRecoveryPolicy(core: SessionCore, settings: RecoverySettings): Promise<RecoveryOutcome> {
  const { policy } = settings;
  let coordinator: DurableSessionRecoveryCoordinator | undefined;
  const open = async (): Promise<DurableSessionRecoveryCoordinator> => {
    coordinator ??= await DurableSessionRecoveryCoordinator.open(core.store, core.sessionId, {
      storeTimeoutMs: settings.storeTimeoutMs,
      ...(core.lease === undefined ? {} : { executionLease: core.lease }),
      ...(settings.leaseStore === undefined ? {} : { executionLeaseStore: settings.leaseStore }),
    });
    await coordinator.refresh();
    return coordinator;
  };
  const id = (kind: 'request' | 'input' | 'turn'): string => core.newId(kind);
  const commandId = (): CommandId => CommandId(`recovery:${core.newId('request')}`);

  for (let step = 0; step < MAX_RECOVERY_STEPS; step++) {
    const plan = core.journal.getRecoveryPlan();
    const request = core.journal.getProjection().activeRequest;
    const context: SessionRecoveryContext = {
      sessionId: core.sessionId,
      plan,
      request,
      lastResponse: request === null ? undefined : core.history.facts(request.requestId).lastResponse,
    };
    if (plan.action === 'none') return { kind: 'idle' };
    if (request === null) throw required(plan, 'no active Request');
    switch (plan.action) {
      case 'resume_request':
        if (request.maxTurns === undefined || request.model === undefined || request.context === undefined) {
          throw required(plan, 'the accepted Request has no complete execution snapshot');
        }
        return { kind: 'drive', request };
      case 'rollover_request':
      case 'reconcile_request_inputs': {
        let input = request.input;
        if (plan.action === 'reconcile_request_inputs') {
          const prepared = await policy.reconcileRequestInputs?.(request, context);
          if (prepared === undefined) throw required(plan, 'no reconcileRequestInputs decision');
          input = prepared;
        } else if (policy.rolloverRequest !== true) {
          throw required(plan, 'the policy does not roll over Requests');
        }
        await (await open()).prepareRequestRecovery({
          commandId: commandId(),
          requestId: request.requestId,
          inputId: request.inputId,
          sourceLastTurn: request.lastTurn,
          recoveryTurnId: TurnId(id('turn')),
          recoveryRequestId: RequestId(id('request')),
          recoveryInputId: InputId(id('input')),
          preparation: { status: 'reconciled', appliedInputIds: request.appliedInputIds, input },
        });
        break;
      }
      case 'resume_turn': {
        const mode = policy.resumeTurn;
        if (mode === undefined) throw required(plan, 'the policy does not resume Turns');
        if (mode === 'in_place') return { kind: 'drive', request };
        const turn = request.activeTurn;
        if (turn === null) throw required(plan, 'no active Turn');
        try {
          await (await open()).prepareTurnRecovery({
            commandId: commandId(),
            requestId: request.requestId,
            turnId: turn.turnId,
            recoveryRequestId: RequestId(id('request')),
            recoveryInputId: InputId(id('input')),
          });
        } catch (error) {
          if (mode === 'rollover_or_in_place' && isDurableSessionRecoveryError(error) && error.code === 'DURABLE_RECOVERY_UNSAFE_ROLLOVER') {
            return { kind: 'drive', request };
          }
          throw error;
        }
        break;
      }
      case 'resolve_permissions': {
        const mode = policy.resolvePermissions;
        if (mode === undefined) throw required(plan, 'the policy does not resolve permissions');
        const handler = core.settings.onPermission;
        if (mode === 'ask' && handler === undefined) throw required(plan, 'no onPermission handler to ask');
        const turn = request.activeTurn;
        for (const permission of plan.pendingPermissions) {
          let answer: { decision: 'allow' | 'deny' | 'cancel'; message?: string } = { decision: mode === 'ask' ? 'cancel' : mode };
          if (mode === 'ask' && handler !== undefined && turn !== null) {
            answer = decisionOf(
              await handler({
                sessionId: core.sessionId,
                requestId: request.requestId,
                turnId: turn.turnId,
                toolAttemptId: permission.toolAttemptId,
                permissionRequestId: permission.permissionRequestId,
                toolCallId: permission.toolCallId,
                toolName: permission.toolName,
                input: permission.input,
                ...(permission.message === undefined ? {} : { message: permission.message }),
                restored: true,
                signal: new AbortController().signal,
              }),
            );
          }
          await (await open()).resolvePermission({
            commandId: commandId(),
            permissionRequestId: PermissionRequestId(permission.permissionRequestId),
            decision: answer.decision,
            ...(answer.message === undefined ? {} : { message: answer.message }),
          });
        }
        break;
      }
      case 'reconcile_tool_outcomes': {
        for (const tool of plan.unknownToolAttempts) {
          const outcome = await policy.reconcileToolOutcome?.(tool, context);
          if (outcome === undefined) throw required(plan, `no outcome for tool attempt ${tool.toolAttemptId}`);
          await (await open()).reconcileToolOutcome({ commandId: commandId(), toolAttemptId: tool.toolAttemptId, outcome });
        }
        break;
      }
      case 'reconcile_model_outcome': {
        const attempt = plan.activeModelAttempt;
        const turn = request.activeTurn;
        if (attempt === null || turn === null) throw required(plan, 'no active model attempt');
        const outcome = await policy.reconcileModelOutcome?.(attempt, context);
        if (outcome === undefined) throw required(plan, `no outcome for model attempt ${attempt.modelAttemptId}`);
        await (await open()).reconcileModelOutcome({
          commandId: commandId(),
          requestId: request.requestId,
          turnId: turn.turnId,
          modelAttemptId: attempt.modelAttemptId,
          outcome,
        });
        break;
      }
      case 'reconcile_request_outcome': {
        const facts = core.history.facts(request.requestId);
        const maxTurns = request.maxTurns ?? core.settings.maxTurns;
        if (policy.continueAfterToolTurn === true && facts.lastTurnHadToolCalls && request.lastTurn < maxTurns) {
          return { kind: 'drive', request };
        }
        const outcome = await policy.reconcileRequestOutcome?.(request, context);
        if (outcome === undefined || request.lastTurnEventId === undefined) throw required(plan, 'no outcome for the Request');
        await (await open()).reconcileRequestOutcome({
          commandId: commandId(),
          requestId: request.requestId,
          lastTurnEventId: request.lastTurnEventId,
          outcome,
        });
        break;
      }
    }
    await core.history.catchUp(core.store, core.sessionId, await core.journal.refresh(), MAX_READ_LIMIT);
  }
  throw required(core.journal.getRecoveryPlan(), `the plan did not converge after ${MAX_RECOVERY_STEPS} recovery commands`);
}
