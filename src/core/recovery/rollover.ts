/**
 * The two rollovers: an unfinished Request (or Turn) is closed and a recovery Request takes its
 * place, all in one journal command so that no observer ever sees one half.
 *
 * Pre-Turn rollover (`prepareRequestRecovery`, plans `rollover_request` / `reconcile_request_inputs`):
 *   [request_started] -> turn_started (synthetic, turn = lastTurn + 1) -> turn_aborted ->
 *   request_interrupted -> request_accepted { recovery: { requestId, turnId, turn } }
 * `request_started` is written only while the source is still `accepted`. The recovery Request
 * carries the caller's prepared input and the source's priority, maxTurns, model and context.
 *
 * Active-Turn rollover (`prepareTurnRecovery`, plan `resume_turn`):
 *   tool_cancelled* (unfinished tools, reason process_restart) -> turn_aborted ->
 *   request_interrupted -> request_accepted { recovery, input: continuation }
 * Before anything, every tool is checked: a `non_idempotent` tool that crossed its execution
 * boundary (started, outcome unknown, or completed / failed / cancelled after it started) makes
 * the rollover `DURABLE_RECOVERY_UNSAFE_ROLLOVER`, because a continuation could repeat an effect
 * whose outcome only the external system knows. The continuation format is in `continuation.ts`.
 */
import type { DurableInput, DurableReason } from '../../protocol/event-payloads.js';
import { describeInvalidId, type InputId, type RequestId, type TurnId } from '../../protocol/ids.js';
import type { DurableCommandEventDraft } from '../journal/journal-options.js';
import type { DurableActiveRequestView, DurableActiveTurnView, DurableToolAttemptView } from '../projector/projection-types.js';
import {
  boundedModelResponses,
  buildContinuationInput,
  type DurableContinuationTool,
  type DurableContinuationToolStatus,
  type DurableRecoveryContinuation,
} from './continuation.js';
import type { DurableRecoveryView, PrepareRequestRecoveryInput, PrepareTurnRecoveryInput } from './coordinator-types.js';
import { checkCommandFields, checkId, checkShape, COMMAND_KEYS, invalidInput, OPTIONAL_COMMAND_KEYS } from './input-checks.js';
import {
  activeRequestOf,
  activeTurnOf,
  isToolSettled,
  ownValue,
  recoveryError,
  requirePlanAction,
  toolCrossedExecutionBoundary,
  valuesOf,
} from './targets.js';

/** Reason of every event a rollover writes to close the source. */
const ROLLOVER_REASON: DurableReason = 'process_restart';

/** The recovery Request: the source's execution snapshot with a new identity, input and provenance. */
function recoveryAccepted(
  source: DurableActiveRequestView,
  recoveryRequestId: RequestId,
  recoveryInputId: InputId,
  input: DurableInput,
  recovery: { requestId: RequestId; turnId: TurnId; turn: number },
): DurableCommandEventDraft {
  return {
    type: 'request_accepted',
    requestId: recoveryRequestId,
    data: {
      inputId: recoveryInputId,
      input,
      priority: source.priority,
      ...(source.maxTurns === undefined ? {} : { maxTurns: source.maxTurns }),
      ...(source.model === undefined ? {} : { model: source.model }),
      ...(source.context === undefined ? {} : { context: source.context }),
      recovery,
    },
  };
}

function checkDistinctIds(operation: string, input: { requestId: RequestId; recoveryRequestId: RequestId }): void {
  if (input.recoveryRequestId === input.requestId) {
    throw invalidInput(operation, 'recoveryRequestId must differ from requestId');
  }
}

// ---- prepareRequestRecovery ----

export function parsePrepareRequestRecovery(value: unknown): PrepareRequestRecoveryInput {
  const op = 'prepareRequestRecovery';
  const input = checkShape(
    op,
    'input',
    value,
    [...COMMAND_KEYS, 'requestId', 'inputId', 'sourceLastTurn', 'recoveryTurnId', 'recoveryRequestId', 'recoveryInputId', 'preparation'],
    OPTIONAL_COMMAND_KEYS,
  );
  const preparation = checkShape(op, 'preparation', input['preparation'], ['status', 'appliedInputIds', 'input']);
  if (preparation['status'] !== 'reconciled') throw invalidInput(op, "preparation.status must be 'reconciled'");
  const applied = preparation['appliedInputIds'];
  if (!Array.isArray(applied)) throw invalidInput(op, 'preparation.appliedInputIds must be an array');
  const appliedInputIds = applied.map((id: unknown, index: number) => {
    const problem = describeInvalidId(id);
    if (problem !== undefined) throw invalidInput(op, `preparation.appliedInputIds[${index}] ${problem}`);
    // SAFETY: validated just above.
    return id as InputId;
  });
  const sourceLastTurn = input['sourceLastTurn'];
  if (typeof sourceLastTurn !== 'number' || !Number.isSafeInteger(sourceLastTurn) || sourceLastTurn < 0) {
    throw invalidInput(op, 'sourceLastTurn must be an integer >= 0');
  }
  const parsed: PrepareRequestRecoveryInput = {
    ...checkCommandFields(op, input),
    requestId: checkId<RequestId>(op, input, 'requestId'),
    inputId: checkId<InputId>(op, input, 'inputId'),
    sourceLastTurn,
    recoveryTurnId: checkId<TurnId>(op, input, 'recoveryTurnId'),
    recoveryRequestId: checkId<RequestId>(op, input, 'recoveryRequestId'),
    recoveryInputId: checkId<InputId>(op, input, 'recoveryInputId'),
    // SAFETY: the input's shape is checked by the request_accepted draft schema when built.
    preparation: { status: 'reconciled', appliedInputIds, input: preparation['input'] as DurableInput },
  };
  checkDistinctIds(op, parsed);
  return parsed;
}

function sameIds(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((id, index) => id === b[index]);
}

/** The pre-Turn rollover command (see the module header). */
export function buildRequestRecovery(input: PrepareRequestRecoveryInput, view: DurableRecoveryView): DurableCommandEventDraft[] {
  const source = activeRequestOf(view, input.requestId);
  requirePlanAction(view, 'prepareRequestRecovery', ['rollover_request', 'reconcile_request_inputs']);
  const stale = (what: string, expected: unknown, actual: unknown): never => {
    throw recoveryError(
      'DURABLE_RECOVERY_INVALID_STATE',
      `prepareRequestRecovery: ${what} is ${JSON.stringify(actual)}, not the observed ${JSON.stringify(expected)}`,
      { requestId: source.requestId, field: what, expected, actual },
    );
  };
  if (source.inputId !== input.inputId) stale('inputId', input.inputId, source.inputId);
  if (source.lastTurn !== input.sourceLastTurn) stale('sourceLastTurn', input.sourceLastTurn, source.lastTurn);
  if (!sameIds(source.appliedInputIds, input.preparation.appliedInputIds)) {
    stale('appliedInputIds', input.preparation.appliedInputIds, source.appliedInputIds);
  }
  if (source.activeTurn !== null) stale('activeTurn', null, source.activeTurn.turnId);
  const turn = source.lastTurn + 1;
  const turnScope = { requestId: source.requestId, turnId: input.recoveryTurnId };
  const events: DurableCommandEventDraft[] = [];
  if (source.status === 'accepted') events.push({ type: 'request_started', requestId: source.requestId, data: {} });
  events.push(
    { type: 'turn_started', ...turnScope, data: { turn } },
    { type: 'turn_aborted', ...turnScope, data: { turn, reason: ROLLOVER_REASON } },
    { type: 'request_interrupted', requestId: source.requestId, data: { reason: ROLLOVER_REASON } },
    recoveryAccepted(source, input.recoveryRequestId, input.recoveryInputId, input.preparation.input, {
      requestId: source.requestId,
      turnId: input.recoveryTurnId,
      turn,
    }),
  );
  return events;
}

// ---- prepareTurnRecovery ----

export function parsePrepareTurnRecovery(value: unknown): PrepareTurnRecoveryInput {
  const op = 'prepareTurnRecovery';
  const input = checkShape(
    op,
    'input',
    value,
    [...COMMAND_KEYS, 'requestId', 'turnId', 'recoveryRequestId', 'recoveryInputId'],
    OPTIONAL_COMMAND_KEYS,
  );
  const parsed: PrepareTurnRecoveryInput = {
    ...checkCommandFields(op, input),
    requestId: checkId<RequestId>(op, input, 'requestId'),
    turnId: checkId<TurnId>(op, input, 'turnId'),
    recoveryRequestId: checkId<RequestId>(op, input, 'recoveryRequestId'),
    recoveryInputId: checkId<InputId>(op, input, 'recoveryInputId'),
  };
  checkDistinctIds(op, parsed);
  return parsed;
}

/** Throws `DURABLE_RECOVERY_UNSAFE_ROLLOVER` when a non_idempotent tool crossed its execution boundary. */
function checkRolloverSafety(turn: DurableActiveTurnView, tools: readonly DurableToolAttemptView[]): void {
  const unsafe = tools.filter((tool) => tool.sideEffect === 'non_idempotent' && toolCrossedExecutionBoundary(tool));
  if (unsafe.length === 0) return;
  throw recoveryError(
    'DURABLE_RECOVERY_UNSAFE_ROLLOVER',
    `Turn ${turn.turnId} cannot roll over: non_idempotent tool(s) ${unsafe
      .map((tool) => `${tool.toolAttemptId} (${tool.status})`)
      .join(', ')} crossed their execution boundary, so only the external system knows their effect`,
    { turnId: turn.turnId, toolAttemptIds: unsafe.map((tool) => tool.toolAttemptId) },
  );
}

/** Continuation status of one tool, and whether the rollover must cancel it. */
function continuationStatus(tool: DurableToolAttemptView, confirmed: boolean): { status: DurableContinuationToolStatus; reason?: DurableReason } {
  switch (tool.status) {
    case 'completed':
    case 'failed':
      return { status: tool.status };
    case 'cancelled':
      return toolCrossedExecutionBoundary(tool)
        ? { status: 'cancelled', ...(tool.reason === undefined ? {} : { reason: tool.reason }) }
        : { status: 'not_started', ...(tool.reason === undefined ? {} : { reason: tool.reason }) };
    default:
      break;
  }
  if (!confirmed) return { status: 'discarded_unconfirmed_model_response' };
  if (tool.status === 'started' || tool.status === 'outcome_unknown') return { status: 'interrupted_before_trusted_completion' };
  if (tool.status === 'permission_denied') {
    return { status: 'not_started', reason: tool.permissionDecision === 'cancel' ? 'permission_cancelled' : 'permission_denied' };
  }
  return { status: 'not_started' };
}

function continuationTool(tool: DurableToolAttemptView, turn: DurableActiveTurnView): DurableContinuationTool {
  const confirmed = ownValue(turn.modelAttempts, tool.modelAttemptId)?.status === 'completed';
  const { status, reason } = continuationStatus(tool, confirmed);
  return {
    toolAttemptId: tool.toolAttemptId,
    toolCallId: tool.toolCallId,
    toolName: tool.toolName,
    modelAttemptId: tool.modelAttemptId,
    modelResponseConfirmed: confirmed,
    sideEffect: tool.sideEffect,
    input: tool.input,
    status,
    ...(tool.status === 'completed' && tool.result !== undefined ? { result: tool.result } : {}),
    ...(tool.status === 'failed' && tool.error !== undefined ? { error: tool.error } : {}),
    ...(reason === undefined ? {} : { reason }),
  };
}

/** The active-Turn rollover command (see the module header) and the continuation it carries. */
export function buildTurnRecovery(
  input: PrepareTurnRecoveryInput,
  view: DurableRecoveryView,
  maxResponseBytes: number,
): { events: DurableCommandEventDraft[]; continuation: DurableRecoveryContinuation } {
  const source = activeRequestOf(view, input.requestId);
  const turn = activeTurnOf(source, input.turnId);
  const tools = valuesOf(turn.toolAttempts).sort((a, b) => a.scheduledSequence - b.scheduledSequence);
  checkRolloverSafety(turn, tools);
  requirePlanAction(view, 'prepareTurnRecovery', ['resume_turn']);
  const turnScope = { requestId: source.requestId, turnId: turn.turnId };
  const cancels: DurableCommandEventDraft[] = tools
    .filter((tool) => !isToolSettled(tool))
    .map((tool) => ({
      type: 'tool_cancelled',
      ...turnScope,
      toolAttemptId: tool.toolAttemptId,
      data: { toolCallId: tool.toolCallId, toolName: tool.toolName, reason: ROLLOVER_REASON },
    }));
  const continuationTools = tools.map((tool) => continuationTool(tool, turn));
  const { input: continuationInput, continuation } = buildContinuationInput(source.input, {
    source: { requestId: source.requestId, turnId: turn.turnId, turn: turn.turn, inputId: source.inputId },
    tools: continuationTools,
    modelResponses: boundedModelResponses(turn, maxResponseBytes),
    discardedUnconfirmedModelResponse: continuationTools.some(
      (tool) => tool.status === 'discarded_unconfirmed_model_response',
    ),
  });
  const events: DurableCommandEventDraft[] = [
    ...cancels,
    { type: 'turn_aborted', ...turnScope, data: { turn: turn.turn, reason: ROLLOVER_REASON } },
    { type: 'request_interrupted', requestId: source.requestId, data: { reason: ROLLOVER_REASON } },
    recoveryAccepted(source, input.recoveryRequestId, input.recoveryInputId, continuationInput, {
      requestId: source.requestId,
      turnId: turn.turnId,
      turn: turn.turn,
    }),
  ];
  return { events, continuation };
}
