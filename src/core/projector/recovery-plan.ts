/**
 * Recovery classification: from a projection to one of nine actions plus the attempt lists a
 * recovery coordinator needs.
 *
 * The decision reads only the active Request (the projector already guarantees its consistency):
 * 1. no active Request -> `none`;
 * 2. `accepted` Request: no input applied -> `resume_request`; an input already applied ->
 *    `reconcile_request_inputs` (preparation may have had side effects);
 * 3. `started` Request without a Turn and no finished Turn: applied inputs exactly the initial
 *    input -> `rollover_request`; a missing initial input or any extra input ->
 *    `reconcile_request_inputs`;
 * 4. `started` Request without a Turn after at least one finished Turn: an input applied since that
 *    Turn ended -> `reconcile_request_inputs`; otherwise -> `reconcile_request_outcome`;
 * 5. active Turn, first match wins: a model attempt still `started` -> `reconcile_model_outcome`;
 *    a pending permission -> `resolve_permissions`; an unknown tool (see
 *    {@link classifyToolAttempt}) -> `reconcile_tool_outcomes`; otherwise -> `resume_turn`.
 * Tool lists are filled whatever the action, ordered by scheduling sequence.
 */
import { entriesOf, ownEntry, seal } from './frozen-data.js';
import type {
  DurableActiveRequestView,
  DurableActiveTurnView,
  DurableModelAttemptView,
  DurablePermissionView,
  DurableRecoveryAction,
  DurableRecoveryPlan,
  DurableSessionProjection,
  DurableToolAttemptView,
} from './projection-types.js';

/**
 * How recovery must treat one tool attempt of the active Turn.
 * - `settled`: completed, failed or cancelled; nothing to do;
 * - `pending_permission`: awaiting a permission decision (reported in `pendingPermissions`);
 * - `unknown`: started or outcome-unknown and `non_idempotent`; it may have had its side effect,
 *   so it must be reconciled against the external system and never run again;
 * - `retryable`: started or outcome-unknown, `pure` or `idempotent`, and produced by a completed
 *   (confirmed) model attempt; running it again is safe;
 * - `cancelable`: never started (scheduled, permission allowed or denied), or a retry-safe tool
 *   whose model response was never confirmed; recovery cancels it.
 */
type DurableToolRecoveryClass = 'settled' | 'pending_permission' | 'unknown' | 'retryable' | 'cancelable';

/** True when the model attempt that produced `tool` has a confirmed (completed) response. */
function isToolResponseConfirmed(tool: DurableToolAttemptView, turn: DurableActiveTurnView): boolean {
  return ownEntry(turn.modelAttempts, tool.modelAttemptId)?.status === 'completed';
}

/** Classifies one tool attempt of `turn` (see {@link DurableToolRecoveryClass}). */
export function classifyToolAttempt(tool: DurableToolAttemptView, turn: DurableActiveTurnView): DurableToolRecoveryClass {
  switch (tool.status) {
    case 'completed':
    case 'failed':
    case 'cancelled':
      return 'settled';
    case 'awaiting_permission':
      return 'pending_permission';
    case 'scheduled':
    case 'permission_allowed':
    case 'permission_denied':
      return 'cancelable';
    case 'started':
    case 'outcome_unknown':
      if (tool.sideEffect === 'non_idempotent') return 'unknown';
      return isToolResponseConfirmed(tool, turn) ? 'retryable' : 'cancelable';
  }
}

interface TurnFacts {
  activeModelAttempt: DurableModelAttemptView | null;
  retryable: DurableToolAttemptView[];
  cancelable: DurableToolAttemptView[];
  unknown: DurableToolAttemptView[];
  pendingPermissions: DurablePermissionView[];
  discarded: boolean;
}

function turnFacts(turn: DurableActiveTurnView | null): TurnFacts {
  const facts: TurnFacts = {
    activeModelAttempt: null,
    retryable: [],
    cancelable: [],
    unknown: [],
    pendingPermissions: [],
    discarded: false,
  };
  if (turn === null) return facts;
  facts.activeModelAttempt = entriesOf(turn.modelAttempts).find((attempt) => attempt.status === 'started') ?? null;
  const tools = entriesOf(turn.toolAttempts).sort((a, b) => a.scheduledSequence - b.scheduledSequence);
  for (const tool of tools) {
    const recoveryClass = classifyToolAttempt(tool, turn);
    if (recoveryClass === 'retryable') facts.retryable.push(tool);
    if (recoveryClass === 'unknown') facts.unknown.push(tool);
    if (recoveryClass === 'cancelable') {
      facts.cancelable.push(tool);
      if (!isToolResponseConfirmed(tool, turn)) facts.discarded = true;
    }
    if (recoveryClass === 'pending_permission' && tool.permissionRequestId !== undefined) {
      const permission = ownEntry(turn.permissions, tool.permissionRequestId);
      if (permission !== undefined) facts.pendingPermissions.push(permission);
    }
  }
  return facts;
}

function decide(request: DurableActiveRequestView, facts: TurnFacts): { action: DurableRecoveryAction; reason: string } {
  const applied = request.appliedInputIds;
  if (request.status === 'accepted') {
    return applied.length === 0
      ? { action: 'resume_request', reason: 'the Request was accepted but never started' }
      : { action: 'reconcile_request_inputs', reason: 'an input was applied before the Request started' };
  }
  if (request.activeTurn === null) {
    if (request.lastTurn === 0) {
      return applied.length === 1 && applied[0] === request.inputId
        ? { action: 'rollover_request', reason: 'the Request started and applied exactly its initial input, with no Turn' }
        : {
            action: 'reconcile_request_inputs',
            reason: 'the inputs applied before the first Turn are not exactly the initial input',
          };
    }
    return request.inputAppliedSinceLastTurn
      ? { action: 'reconcile_request_inputs', reason: `an input was applied after Turn ${request.lastTurn} ended` }
      : { action: 'reconcile_request_outcome', reason: `Turn ${request.lastTurn} ended without a Request terminal event` };
  }
  if (facts.activeModelAttempt !== null) {
    return {
      action: 'reconcile_model_outcome',
      reason: `model attempt ${facts.activeModelAttempt.modelAttemptId} started without a terminal event`,
    };
  }
  if (facts.pendingPermissions.length > 0) {
    return { action: 'resolve_permissions', reason: `${facts.pendingPermissions.length} permission request(s) are pending` };
  }
  if (facts.unknown.length > 0) {
    return {
      action: 'reconcile_tool_outcomes',
      reason: `${facts.unknown.length} non-idempotent tool(s) started without a trusted outcome`,
    };
  }
  return { action: 'resume_turn', reason: 'the Turn can continue: model outcome known, no unsafe tool' };
}

/**
 * Derives the recovery plan of a projection (what `DurableSessionProjector.recoveryPlan()` returns).
 *
 * @example
 * const plan = planDurableRecovery(projector.snapshot());
 * if (plan.action === 'reconcile_tool_outcomes') for (const tool of plan.unknownToolAttempts) ask(tool);
 */
export function planDurableRecovery(projection: DurableSessionProjection): DurableRecoveryPlan {
  const request = projection.activeRequest;
  const facts = turnFacts(request?.activeTurn ?? null);
  const lists = {
    activeModelAttempt: facts.activeModelAttempt,
    retryableToolAttempts: seal(facts.retryable),
    cancelableToolAttempts: seal(facts.cancelable),
    unknownToolAttempts: seal(facts.unknown),
    pendingPermissions: seal(facts.pendingPermissions),
    discardedUnconfirmedModelResponse: facts.discarded,
  };
  if (request === null) {
    return seal({
      action: 'none',
      reason: projection.status === 'closed' ? 'the session is closed' : 'no Request is active',
      headSequence: projection.headSequence,
      ...lists,
      appliedInputIds: seal([]),
      lastTurn: 0,
    });
  }
  const { action, reason } = decide(request, facts);
  return seal({
    action,
    reason,
    headSequence: projection.headSequence,
    requestId: request.requestId,
    ...(request.activeTurn === null ? {} : { turnId: request.activeTurn.turnId }),
    requestStatus: request.status,
    ...(request.recoveryKind === undefined ? {} : { recoveryKind: request.recoveryKind }),
    ...lists,
    appliedInputIds: request.appliedInputIds,
    lastTurn: request.lastTurn,
    ...(request.lastTurnEventId === undefined ? {} : { lastTurnEventId: request.lastTurnEventId }),
  });
}
