/**
 * Event type names of protocol v4.
 *
 * The 23 lifecycle event types, grouped by scope (session, request, turn, model attempt, tool
 * attempt, permission, input), plus small predicates the projector uses to recognise terminal
 * events of each scope.
 */

/** Version stamped on every stored envelope. The runtime reads and writes this version only. */
export const DURABLE_EVENT_SCHEMA_VERSION = 4;

/**
 * Every event type, by constant name.
 *
 * @example
 * const draft = { type: DurableEventType.REQUEST_STARTED, requestId, data: {} };
 */
export const DurableEventType = {
  SESSION_CREATED: 'session_created',
  SESSION_CLOSED: 'session_closed',
  REQUEST_ACCEPTED: 'request_accepted',
  REQUEST_STARTED: 'request_started',
  REQUEST_COMPLETED: 'request_completed',
  REQUEST_FAILED: 'request_failed',
  REQUEST_INTERRUPTED: 'request_interrupted',
  TURN_STARTED: 'turn_started',
  TURN_COMPLETED: 'turn_completed',
  TURN_ABORTED: 'turn_aborted',
  MODEL_REQUEST_STARTED: 'model_request_started',
  MODEL_REQUEST_COMPLETED: 'model_request_completed',
  MODEL_REQUEST_FAILED: 'model_request_failed',
  MODEL_REQUEST_ABORTED: 'model_request_aborted',
  TOOL_SCHEDULED: 'tool_scheduled',
  TOOL_STARTED: 'tool_started',
  TOOL_COMPLETED: 'tool_completed',
  TOOL_FAILED: 'tool_failed',
  TOOL_CANCELLED: 'tool_cancelled',
  TOOL_OUTCOME_UNKNOWN: 'tool_outcome_unknown',
  PERMISSION_REQUESTED: 'permission_requested',
  PERMISSION_RESOLVED: 'permission_resolved',
  INPUT_APPLIED: 'input_applied',
} as const;

/** One of the 23 event type names. */
export type DurableEventType = (typeof DurableEventType)[keyof typeof DurableEventType];

/** Every event type name, in declaration order. */
export const DURABLE_EVENT_TYPES: readonly DurableEventType[] = Object.freeze(Object.values(DurableEventType));

const TYPE_SET: ReadonlySet<string> = new Set(DURABLE_EVENT_TYPES);

/** True when `value` names one of the 23 event types. */
export function isDurableEventType(value: unknown): value is DurableEventType {
  return typeof value === 'string' && TYPE_SET.has(value);
}

export type RequestTerminalType = 'request_completed' | 'request_failed' | 'request_interrupted';
export type TurnTerminalType = 'turn_completed' | 'turn_aborted';
export type ModelTerminalType = 'model_request_completed' | 'model_request_failed' | 'model_request_aborted';
/** Terminal tool events. `tool_outcome_unknown` is not terminal: it needs reconciliation. */
export type ToolTerminalType = 'tool_completed' | 'tool_failed' | 'tool_cancelled';

/** True for `request_completed`, `request_failed` and `request_interrupted`. */
export function isRequestTerminalType(type: DurableEventType): type is RequestTerminalType {
  return type === 'request_completed' || type === 'request_failed' || type === 'request_interrupted';
}

/** True for `turn_completed` and `turn_aborted`. */
export function isTurnTerminalType(type: DurableEventType): type is TurnTerminalType {
  return type === 'turn_completed' || type === 'turn_aborted';
}

/** True for `model_request_completed`, `model_request_failed` and `model_request_aborted`. */
export function isModelTerminalType(type: DurableEventType): type is ModelTerminalType {
  return type === 'model_request_completed' || type === 'model_request_failed' || type === 'model_request_aborted';
}

/** True for `tool_completed`, `tool_failed` and `tool_cancelled` (not `tool_outcome_unknown`). */
export function isToolTerminalType(type: DurableEventType): type is ToolTerminalType {
  return type === 'tool_completed' || type === 'tool_failed' || type === 'tool_cancelled';
}
