/**
 * Target resolution of the recovery coordinator: from the IDs a caller names to the views of the
 * projection it observed.
 *
 * The rule for errors is uniform:
 * - an ID that does not name what the projection holds *now* (no active Request, another Request,
 *   a Turn that is not the active one, an attempt or permission the active Turn does not hold, a
 *   tool that already ended) is `DURABLE_RECOVERY_TARGET_NOT_FOUND`;
 * - a target that exists but whose state or observed facts (plan action, status, input IDs, Turn
 *   number, anchor event) do not allow the operation is `DURABLE_RECOVERY_INVALID_STATE`.
 */
import { DurableSessionRecoveryError, type DurableSessionRecoveryErrorCode } from '../../protocol/errors.js';
import type { PermissionRequestId, RequestId, ToolAttemptId, TurnId } from '../../protocol/ids.js';
import type {
  DurableActiveRequestView,
  DurableActiveTurnView,
  DurableModelAttemptView,
  DurablePermissionView,
  DurableRecoveryAction,
  DurableToolAttemptView,
} from '../projector/projection-types.js';
import type { DurableRecoveryView } from './coordinator-types.js';

/** A `DurableSessionRecoveryError` with machine-readable details. */
export function recoveryError(
  code: DurableSessionRecoveryErrorCode,
  message: string,
  details: Record<string, unknown> = {},
): DurableSessionRecoveryError {
  return new DurableSessionRecoveryError(code, message, { details });
}

/** `record[key]` when it is an own property (IDs such as `"constructor"` are legal keys). */
export function ownValue<V>(record: Readonly<Record<string, V>>, key: string): V | undefined {
  return Object.prototype.hasOwnProperty.call(record, key) ? record[key] : undefined;
}

/** The own values of a frozen projection record. */
export function valuesOf<V>(record: Readonly<Record<string, V>>): V[] {
  return Object.keys(record).map((key) => record[key] as V);
}

/** The active Request; when `requestId` is given it must be that Request. */
export function activeRequestOf(view: DurableRecoveryView, requestId?: RequestId): DurableActiveRequestView {
  const request = view.projection.activeRequest;
  if (request === null) {
    throw recoveryError('DURABLE_RECOVERY_TARGET_NOT_FOUND', 'the session has no active Request', {
      requestId: requestId ?? null,
    });
  }
  if (requestId !== undefined && request.requestId !== requestId) {
    throw recoveryError(
      'DURABLE_RECOVERY_TARGET_NOT_FOUND',
      `Request ${requestId} is not the active Request (${request.requestId})`,
      { requestId, activeRequestId: request.requestId },
    );
  }
  return request;
}

/** The active Turn of `request`; when `turnId` is given it must be that Turn. */
export function activeTurnOf(request: DurableActiveRequestView, turnId?: TurnId): DurableActiveTurnView {
  const turn = request.activeTurn;
  if (turn === null) {
    throw recoveryError('DURABLE_RECOVERY_TARGET_NOT_FOUND', `Request ${request.requestId} has no active Turn`, {
      requestId: request.requestId,
      turnId: turnId ?? null,
    });
  }
  if (turnId !== undefined && turn.turnId !== turnId) {
    throw recoveryError(
      'DURABLE_RECOVERY_TARGET_NOT_FOUND',
      `Turn ${turnId} is not the active Turn (${turn.turnId}) of Request ${request.requestId}`,
      { requestId: request.requestId, turnId, activeTurnId: turn.turnId },
    );
  }
  return turn;
}

/** A tool attempt, with its scope. */
interface ToolTarget {
  request: DurableActiveRequestView;
  turn: DurableActiveTurnView;
  tool: DurableToolAttemptView;
}

const TERMINAL_TOOL_STATUSES: ReadonlySet<string> = new Set(['completed', 'failed', 'cancelled']);

/** True for `completed`, `failed` and `cancelled` tools. */
export function isToolSettled(tool: DurableToolAttemptView): boolean {
  return TERMINAL_TOOL_STATUSES.has(tool.status);
}

/** A Tool Attempt still addressable: in the active Turn and not terminal. */
export function openToolOf(view: DurableRecoveryView, toolAttemptId: ToolAttemptId): ToolTarget {
  const request = view.projection.activeRequest;
  const turn = request?.activeTurn ?? null;
  const tool = turn === null ? undefined : ownValue(turn.toolAttempts, toolAttemptId);
  if (request === null || turn === null || tool === undefined) {
    throw recoveryError(
      'DURABLE_RECOVERY_TARGET_NOT_FOUND',
      `tool attempt ${toolAttemptId} is not an attempt of the active Turn`,
      { toolAttemptId },
    );
  }
  if (isToolSettled(tool)) {
    throw recoveryError(
      'DURABLE_RECOVERY_TARGET_NOT_FOUND',
      `tool attempt ${toolAttemptId} already ended as ${tool.status}; it is no longer addressable`,
      { toolAttemptId, status: tool.status },
    );
  }
  return { request, turn, tool };
}

/** A pending permission request, with its tool and scope. */
interface PermissionTarget extends ToolTarget {
  permission: DurablePermissionView;
}

/** A permission request still pending in the active Turn. */
export function pendingPermissionOf(view: DurableRecoveryView, permissionRequestId: PermissionRequestId): PermissionTarget {
  const request = view.projection.activeRequest;
  const turn = request?.activeTurn ?? null;
  const permission = turn === null ? undefined : ownValue(turn.permissions, permissionRequestId);
  const tool = turn === null || permission === undefined ? undefined : ownValue(turn.toolAttempts, permission.toolAttemptId);
  if (request === null || turn === null || permission === undefined || tool === undefined) {
    throw recoveryError(
      'DURABLE_RECOVERY_TARGET_NOT_FOUND',
      `permission request ${permissionRequestId} is not pending in the active Turn`,
      { permissionRequestId },
    );
  }
  return { request, turn, tool, permission };
}

/** A model attempt of `turn`. */
export function modelAttemptOf(turn: DurableActiveTurnView, modelAttemptId: string): DurableModelAttemptView {
  const attempt = ownValue(turn.modelAttempts, modelAttemptId);
  if (attempt === undefined) {
    throw recoveryError(
      'DURABLE_RECOVERY_TARGET_NOT_FOUND',
      `model attempt ${modelAttemptId} is not an attempt of the active Turn ${turn.turnId}`,
      { modelAttemptId, turnId: turn.turnId },
    );
  }
  return attempt;
}

/** Throws `DURABLE_RECOVERY_INVALID_STATE` unless the plan's action is one of `allowed`. */
export function requirePlanAction(
  view: DurableRecoveryView,
  operation: string,
  allowed: readonly DurableRecoveryAction[],
): void {
  const action = view.plan.action;
  if (!allowed.includes(action)) {
    throw recoveryError(
      'DURABLE_RECOVERY_INVALID_STATE',
      `${operation} needs a ${allowed.join(' or ')} plan, but the plan is ${action} (${view.plan.reason})`,
      { operation, action, allowed: [...allowed] },
    );
  }
}

/**
 * True when the tool crossed its execution boundary (`tool_started` is in its history).
 *
 * `started`, `outcome_unknown`, `completed` and `failed` imply it (the projector admits an outcome
 * only after a start). For `cancelled` the view has no start marker, so the history length decides:
 * before a start an attempt holds `tool_scheduled`, plus `permission_requested` and
 * `permission_resolved` when it asked for permission (a pending permission cannot be cancelled, and
 * an attempt asks at most once); any event beyond those and the final `tool_cancelled` is
 * `tool_started` (possibly followed by `tool_outcome_unknown`).
 */
export function toolCrossedExecutionBoundary(tool: DurableToolAttemptView): boolean {
  switch (tool.status) {
    case 'started':
    case 'outcome_unknown':
    case 'completed':
    case 'failed':
      return true;
    case 'cancelled': {
      const beforeStart = tool.permissionRequestId === undefined ? 1 : 3;
      return tool.eventIds.length > beforeStart + 1;
    }
    default:
      return false;
  }
}
