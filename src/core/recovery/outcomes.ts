/**
 * The five single-target recovery commands: reconcile a tool outcome, reconcile a model outcome,
 * resolve a permission, start a tool attempt, reconcile a Request outcome.
 *
 * Each has a `parse*` step (strict argument check, no state) and a `build*` step: a pure function
 * of the parsed input and a {@link DurableRecoveryView} that resolves the target, checks the
 * observed facts (see `targets.ts` for which error means what) and returns the drafts of exactly
 * one journal command. Being pure, a build can be repeated against the state a command was first
 * decided on, which is how a retry proves it is the same command.
 */
import type { DurableReason, PermissionDecision } from '../../protocol/event-payloads.js';
import type {
  EventId,
  ModelAttemptId,
  PermissionRequestId,
  RequestId,
  ToolAttemptId,
  TurnId,
} from '../../protocol/ids.js';
import type { DurableCommandEventDraft } from '../journal/journal-options.js';
import type {
  DurableModelOutcome,
  DurableRecoveryView,
  DurableRequestOutcome,
  DurableToolOutcome,
  ReconcileModelOutcomeInput,
  ReconcileRequestOutcomeInput,
  ReconcileToolOutcomeInput,
  ResolvePermissionInput,
  StartToolAttemptInput,
} from './coordinator-types.js';
import {
  checkCommandFields,
  checkId,
  checkOneOf,
  checkShape,
  COMMAND_KEYS,
  invalidInput,
  OPTIONAL_COMMAND_KEYS,
  type CheckedInput,
} from './input-checks.js';
import {
  activeRequestOf,
  activeTurnOf,
  modelAttemptOf,
  openToolOf,
  ownValue,
  pendingPermissionOf,
  recoveryError,
  requirePlanAction,
} from './targets.js';

/** Reason recorded when a caller cancels or aborts without naming one. */
const DEFAULT_RECOVERY_REASON: DurableReason = 'recovery';

function commandShape(operation: string, value: unknown, required: readonly string[], optional: readonly string[] = []): CheckedInput {
  return checkShape(operation, 'input', value, [...COMMAND_KEYS, ...required], [...OPTIONAL_COMMAND_KEYS, ...optional]);
}

function parseToolOutcome(operation: string, value: unknown): DurableToolOutcome {
  const status = checkOneOf(operation, 'outcome.status', (value as { status?: unknown } | null)?.status, [
    'completed',
    'failed',
    'cancelled',
  ] as const);
  if (status === 'completed') checkShape(operation, 'outcome', value, ['status', 'result']);
  if (status === 'failed') checkShape(operation, 'outcome', value, ['status', 'error']);
  if (status === 'cancelled') checkShape(operation, 'outcome', value, ['status'], ['reason']);
  // SAFETY: shape checked above; payload values are checked by the draft schema when built.
  return value as DurableToolOutcome;
}

function parseModelOutcome(operation: string, value: unknown): DurableModelOutcome {
  const status = checkOneOf(operation, 'outcome.status', (value as { status?: unknown } | null)?.status, [
    'completed',
    'failed',
    'aborted',
  ] as const);
  if (status === 'completed') checkShape(operation, 'outcome', value, ['status', 'response']);
  if (status === 'failed') checkShape(operation, 'outcome', value, ['status', 'error']);
  if (status === 'aborted') checkShape(operation, 'outcome', value, ['status'], ['reason']);
  // SAFETY: shape checked above; payload values are checked by the draft schema when built.
  return value as DurableModelOutcome;
}

function parseRequestOutcome(operation: string, value: unknown): DurableRequestOutcome {
  const status = checkOneOf(operation, 'outcome.status', (value as { status?: unknown } | null)?.status, [
    'completed',
    'failed',
    'interrupted',
  ] as const);
  if (status === 'completed') checkShape(operation, 'outcome', value, ['status'], ['output', 'usage']);
  if (status === 'failed') checkShape(operation, 'outcome', value, ['status', 'error']);
  if (status === 'interrupted') checkShape(operation, 'outcome', value, ['status', 'reason']);
  // SAFETY: shape checked above; payload values are checked by the draft schema when built.
  return value as DurableRequestOutcome;
}

// ---- reconcileToolOutcome ----

export function parseReconcileToolOutcome(value: unknown): ReconcileToolOutcomeInput {
  const op = 'reconcileToolOutcome';
  const input = commandShape(op, value, ['toolAttemptId', 'outcome']);
  return {
    ...checkCommandFields(op, input),
    toolAttemptId: checkId<ToolAttemptId>(op, input, 'toolAttemptId'),
    outcome: parseToolOutcome(op, input['outcome']),
  };
}

/** `tool_completed` / `tool_failed` / `tool_cancelled` for a tool still addressable. */
export function buildReconcileToolOutcome(input: ReconcileToolOutcomeInput, view: DurableRecoveryView): DurableCommandEventDraft[] {
  const { request, turn, tool } = openToolOf(view, input.toolAttemptId);
  const outcome = input.outcome;
  if (tool.status === 'awaiting_permission') {
    throw recoveryError(
      'DURABLE_RECOVERY_INVALID_STATE',
      `tool attempt ${tool.toolAttemptId} awaits permission ${tool.permissionRequestId ?? ''}; resolve it first`,
      { toolAttemptId: tool.toolAttemptId, status: tool.status },
    );
  }
  const started = tool.status === 'started' || tool.status === 'outcome_unknown';
  if (outcome.status !== 'cancelled' && !started) {
    throw recoveryError(
      'DURABLE_RECOVERY_INVALID_STATE',
      `tool attempt ${tool.toolAttemptId} is ${tool.status} and never started; only a cancellation can be recorded`,
      { toolAttemptId: tool.toolAttemptId, status: tool.status, outcome: outcome.status },
    );
  }
  const scope = { requestId: request.requestId, turnId: turn.turnId, toolAttemptId: tool.toolAttemptId };
  const identity = { toolCallId: tool.toolCallId, toolName: tool.toolName };
  switch (outcome.status) {
    case 'completed':
      return [{ type: 'tool_completed', ...scope, data: { ...identity, result: outcome.result } }];
    case 'failed':
      return [{ type: 'tool_failed', ...scope, data: { ...identity, error: outcome.error } }];
    case 'cancelled':
      return [{ type: 'tool_cancelled', ...scope, data: { ...identity, reason: outcome.reason ?? DEFAULT_RECOVERY_REASON } }];
  }
}

// ---- reconcileModelOutcome ----

export function parseReconcileModelOutcome(value: unknown): ReconcileModelOutcomeInput {
  const op = 'reconcileModelOutcome';
  const input = commandShape(op, value, ['requestId', 'turnId', 'modelAttemptId', 'outcome']);
  return {
    ...checkCommandFields(op, input),
    requestId: checkId<RequestId>(op, input, 'requestId'),
    turnId: checkId<TurnId>(op, input, 'turnId'),
    modelAttemptId: checkId<ModelAttemptId>(op, input, 'modelAttemptId'),
    outcome: parseModelOutcome(op, input['outcome']),
  };
}

/** The model terminal event of a still-`started` attempt of the named Request and Turn. */
export function buildReconcileModelOutcome(input: ReconcileModelOutcomeInput, view: DurableRecoveryView): DurableCommandEventDraft[] {
  const request = activeRequestOf(view, input.requestId);
  const turn = activeTurnOf(request, input.turnId);
  const attempt = modelAttemptOf(turn, input.modelAttemptId);
  if (attempt.status !== 'started') {
    throw recoveryError(
      'DURABLE_RECOVERY_INVALID_STATE',
      `model attempt ${attempt.modelAttemptId} already ended as ${attempt.status}`,
      { modelAttemptId: attempt.modelAttemptId, status: attempt.status },
    );
  }
  const scope = { requestId: request.requestId, turnId: turn.turnId, modelAttemptId: attempt.modelAttemptId };
  const outcome = input.outcome;
  switch (outcome.status) {
    case 'completed':
      return [{ type: 'model_request_completed', ...scope, data: { response: outcome.response } }];
    case 'failed':
      return [{ type: 'model_request_failed', ...scope, data: { error: outcome.error } }];
    case 'aborted':
      return [{ type: 'model_request_aborted', ...scope, data: { reason: outcome.reason ?? DEFAULT_RECOVERY_REASON } }];
  }
}

// ---- resolvePermission ----

export function parseResolvePermission(value: unknown): ResolvePermissionInput {
  const op = 'resolvePermission';
  const input = commandShape(op, value, ['permissionRequestId', 'decision'], ['message']);
  const message = input['message'];
  if (message !== undefined && typeof message !== 'string') throw invalidInput(op, 'message must be a string');
  return {
    ...checkCommandFields(op, input),
    permissionRequestId: checkId<PermissionRequestId>(op, input, 'permissionRequestId'),
    decision: checkOneOf<PermissionDecision>(op, 'decision', input['decision'], ['allow', 'deny', 'cancel']),
    ...(message === undefined ? {} : { message }),
  };
}

/** `permission_resolved`, plus the matching `tool_cancelled` in the same command for deny / cancel. */
export function buildResolvePermission(input: ResolvePermissionInput, view: DurableRecoveryView): DurableCommandEventDraft[] {
  const { request, turn, tool, permission } = pendingPermissionOf(view, input.permissionRequestId);
  const scope = { requestId: request.requestId, turnId: turn.turnId, toolAttemptId: tool.toolAttemptId };
  const resolved: DurableCommandEventDraft = {
    type: 'permission_resolved',
    ...scope,
    data: {
      permissionRequestId: permission.permissionRequestId,
      decision: input.decision,
      ...(input.message === undefined ? {} : { message: input.message }),
    },
  };
  if (input.decision === 'allow') return [resolved];
  const reason: DurableReason = input.decision === 'deny' ? 'permission_denied' : 'permission_cancelled';
  return [
    resolved,
    { type: 'tool_cancelled', ...scope, data: { toolCallId: tool.toolCallId, toolName: tool.toolName, reason } },
  ];
}

// ---- startToolAttempt ----

export function parseStartToolAttempt(value: unknown): StartToolAttemptInput {
  const op = 'startToolAttempt';
  const input = commandShape(op, value, ['toolAttemptId']);
  return { ...checkCommandFields(op, input), toolAttemptId: checkId<ToolAttemptId>(op, input, 'toolAttemptId') };
}

/**
 * `tool_started` from persisted facts only: the effective input as the log holds it, the
 * scheduled side-effect class, and `non_idempotent` for a tool resumed after a permission.
 */
export function buildStartToolAttempt(input: StartToolAttemptInput, view: DurableRecoveryView): DurableCommandEventDraft[] {
  const { request, turn, tool } = openToolOf(view, input.toolAttemptId);
  if (tool.status !== 'scheduled' && tool.status !== 'permission_allowed') {
    throw recoveryError(
      'DURABLE_RECOVERY_INVALID_STATE',
      `tool attempt ${tool.toolAttemptId} is ${tool.status}; only a scheduled or permitted tool can start`,
      { toolAttemptId: tool.toolAttemptId, status: tool.status },
    );
  }
  const model = ownValue(turn.modelAttempts, tool.modelAttemptId);
  if (model?.status !== 'completed') {
    throw recoveryError(
      'DURABLE_RECOVERY_INVALID_STATE',
      `the response of model attempt ${tool.modelAttemptId} is not confirmed (${model?.status ?? 'missing'}); reconcile it before starting its tools`,
      { toolAttemptId: tool.toolAttemptId, modelAttemptId: tool.modelAttemptId, modelStatus: model?.status ?? null },
    );
  }
  return [
    {
      type: 'tool_started',
      requestId: request.requestId,
      turnId: turn.turnId,
      toolAttemptId: tool.toolAttemptId,
      data: {
        toolCallId: tool.toolCallId,
        toolName: tool.toolName,
        input: tool.input,
        sideEffect: tool.resumedAfterPermission ? 'non_idempotent' : tool.scheduledSideEffect,
      },
    },
  ];
}

// ---- reconcileRequestOutcome ----

export function parseReconcileRequestOutcome(value: unknown): ReconcileRequestOutcomeInput {
  const op = 'reconcileRequestOutcome';
  const input = commandShape(op, value, ['requestId', 'lastTurnEventId', 'outcome']);
  return {
    ...checkCommandFields(op, input),
    requestId: checkId<RequestId>(op, input, 'requestId'),
    lastTurnEventId: checkId<EventId>(op, input, 'lastTurnEventId'),
    outcome: parseRequestOutcome(op, input['outcome']),
  };
}

/** The Request terminal event, anchored (`causationEventId`) to the terminal Turn event the caller inspected. */
export function buildReconcileRequestOutcome(
  input: ReconcileRequestOutcomeInput,
  view: DurableRecoveryView,
): DurableCommandEventDraft[] {
  const request = activeRequestOf(view, input.requestId);
  requirePlanAction(view, 'reconcileRequestOutcome', ['reconcile_request_outcome']);
  if (request.lastTurnEventId !== input.lastTurnEventId || request.latestBoundaryEventId !== input.lastTurnEventId) {
    throw recoveryError(
      'DURABLE_RECOVERY_INVALID_STATE',
      `lastTurnEventId ${input.lastTurnEventId} is not the last terminal Turn event (${String(request.lastTurnEventId)}) of Request ${request.requestId}`,
      { requestId: request.requestId, lastTurnEventId: input.lastTurnEventId, actual: request.lastTurnEventId ?? null },
    );
  }
  const scope = { requestId: request.requestId, causationEventId: input.lastTurnEventId };
  const outcome = input.outcome;
  switch (outcome.status) {
    case 'completed':
      return [
        {
          type: 'request_completed',
          ...scope,
          data: {
            ...(outcome.output === undefined ? {} : { output: outcome.output }),
            ...(outcome.usage === undefined ? {} : { usage: outcome.usage }),
          },
        },
      ];
    case 'failed':
      return [{ type: 'request_failed', ...scope, data: { error: outcome.error } }];
    case 'interrupted':
      return [{ type: 'request_interrupted', ...scope, data: { reason: outcome.reason } }];
  }
}
