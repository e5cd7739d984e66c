/**
 * Payload (`data`) types of protocol v4, one per event type, and the shared shapes they use.
 *
 * These are the compile-time view of `docs/protocol.md`; `event-schemas.ts` holds the matching
 * strict zod schemas and pins, at compile time, that both agree. Free-form values are
 * {@link JsonValue}s and are checked by the lossless-JSON validator.
 */
import type { InputId, PermissionRequestId, RequestId, SessionId, TurnId } from './ids.js';
import type { JsonObject, JsonValue } from './json.js';

/** Why something stopped, closed or was interrupted. */
export type DurableReason =
  | 'user_abort'
  | 'process_restart'
  | 'timeout'
  | 'superseded'
  | 'lease_lost'
  | 'permission_denied'
  | 'permission_cancelled'
  | 'max_turns'
  | 'recovery'
  | 'completed'
  | 'error';

/** A failure as stored in the log (a model, tool or Request error). */
export interface DurableErrorInfo {
  code: string;
  message: string;
  retryable?: boolean;
  details?: JsonValue;
}

/** Text content part. */
export interface TextContentPart {
  type: 'text';
  text: string;
}

/** Image content part: exactly one of `data` (base64) or `url`. */
export interface ImageContentPart {
  type: 'image';
  mediaType: string;
  data?: string;
  url?: string;
}

/** File content part: exactly one of `data` (base64) or `url`. */
export interface FileContentPart {
  type: 'file';
  mediaType: string;
  name?: string;
  data?: string;
  url?: string;
}

/** One part of a multimodal input or response. */
export type ContentPart = TextContentPart | ImageContentPart | FileContentPart;

/** A Request input or model response content: plain text or 1..256 content parts. */
export type DurableInput = string | ContentPart[];

/** The model a Request or Turn asked for. */
export interface ModelSelection {
  provider: string;
  model: string;
  api?: string;
}

/** Logical provider and API adapter that served a model attempt. */
export interface ModelIdentity {
  provider: string;
  api: string;
}

/** Token usage of a whole Request (integers >= 0). */
export interface RequestUsage {
  inputTokens: number;
  outputTokens: number;
  totalTokens: number;
  cacheReadTokens?: number;
  cacheWriteTokens?: number;
}

/** Token usage of one model attempt (integers >= 0). */
export interface ModelUsage {
  promptTokens: number;
  completionTokens: number;
  totalTokens: number;
}

/** A tool call as the model emitted it; `arguments` is the provider's original value. */
export interface ModelToolCall {
  id: string;
  name: string;
  arguments: JsonValue;
}

/** Why the model stopped producing output. */
export type ModelStopReason = 'end_turn' | 'tool_use' | 'max_tokens' | 'stop_sequence' | 'refusal' | 'other';

/** The complete response of one model attempt. */
export interface ModelResponse {
  content: DurableInput;
  toolCalls?: ModelToolCall[];
  stopReason?: ModelStopReason;
  usage?: ModelUsage;
}

/** Whether replaying a tool is safe. */
export type SideEffect = 'pure' | 'idempotent' | 'non_idempotent';
/** What a tool does when new input interrupts the Turn. */
export type InterruptBehavior = 'cancel' | 'block';
/** When a new input should be applied. */
export type Priority = 'now' | 'next' | 'later';
/** A permission decision. */
export type PermissionDecision = 'allow' | 'deny' | 'cancel';
/** How a Session came to exist. */
export type SessionSource = 'create' | 'fork' | 'restore';

/** Provenance of a Request that replaces an interrupted one (the rolled-over Turn). */
export interface RequestRecovery {
  requestId: RequestId;
  turnId: TurnId;
  turn: number;
}

/** The two tool identity fields, flattened into each tool and permission payload. */
export interface ToolIdentity {
  toolCallId: string;
  toolName: string;
}

export interface SessionCreatedData {
  source?: SessionSource;
  parentSessionId?: SessionId;
}
export interface SessionClosedData {
  reason: DurableReason;
}
export interface RequestAcceptedData {
  inputId: InputId;
  input: DurableInput;
  priority: Priority;
  /** 1..10000 */
  maxTurns?: number;
  model?: ModelSelection;
  context?: JsonObject;
  recovery?: RequestRecovery;
}
/** `request_started` carries an empty object. */
export type RequestStartedData = Record<string, never>;
export interface RequestCompletedData {
  output?: JsonValue;
  usage?: RequestUsage;
}
export interface RequestFailedData {
  error: DurableErrorInfo;
}
export interface RequestInterruptedData {
  reason: DurableReason;
  byInputId?: InputId;
}
export interface TurnStartedData {
  /** Turn number within the Request, >= 1. */
  turn: number;
  model?: ModelSelection;
}
export interface TurnCompletedData {
  turn: number;
  hasToolCalls: boolean;
}
export interface TurnAbortedData {
  turn: number;
  reason: DurableReason;
}
export interface ModelRequestStartedData {
  model: string;
  modelIdentity?: ModelIdentity;
  streaming: boolean;
}
export interface ModelRequestCompletedData {
  response: ModelResponse;
}
export interface ModelRequestFailedData {
  error: DurableErrorInfo;
}
export interface ModelRequestAbortedData {
  reason: DurableReason;
}
export interface ToolScheduledData extends ToolIdentity {
  /** The provider's original arguments. */
  modelInput: JsonValue;
  /** The (possibly repaired) execution input. */
  input: JsonValue;
  sideEffect: SideEffect;
  interruptBehavior: InterruptBehavior;
}
export interface ToolStartedData extends ToolIdentity {
  input: JsonValue;
  sideEffect: SideEffect;
}
export interface ToolCompletedData extends ToolIdentity {
  result: JsonValue;
}
export interface ToolFailedData extends ToolIdentity {
  error: DurableErrorInfo;
}
export interface ToolCancelledData extends ToolIdentity {
  reason: DurableReason;
}
export interface ToolOutcomeUnknownData extends ToolIdentity {
  reason: DurableReason;
}
export interface PermissionRequestedData extends ToolIdentity {
  permissionRequestId: PermissionRequestId;
  input: JsonValue;
  message?: string;
}
export interface PermissionResolvedData {
  permissionRequestId: PermissionRequestId;
  decision: PermissionDecision;
  message?: string;
}
export interface InputAppliedData {
  inputId: InputId;
  priority: Priority;
  /**
   * The steering input's content (text or content parts, validated and size-limited exactly like
   * `request_accepted.input`). Written by the Session for every steering input, so the message
   * history can be restored from the log; absent on the initial input's application (its content
   * is `request_accepted.input`) and on logs written before this field existed.
   */
  input?: DurableInput;
}

/** The payload type of each event type. */
export interface DurableEventDataMap {
  session_created: SessionCreatedData;
  session_closed: SessionClosedData;
  request_accepted: RequestAcceptedData;
  request_started: RequestStartedData;
  request_completed: RequestCompletedData;
  request_failed: RequestFailedData;
  request_interrupted: RequestInterruptedData;
  turn_started: TurnStartedData;
  turn_completed: TurnCompletedData;
  turn_aborted: TurnAbortedData;
  model_request_started: ModelRequestStartedData;
  model_request_completed: ModelRequestCompletedData;
  model_request_failed: ModelRequestFailedData;
  model_request_aborted: ModelRequestAbortedData;
  tool_scheduled: ToolScheduledData;
  tool_started: ToolStartedData;
  tool_completed: ToolCompletedData;
  tool_failed: ToolFailedData;
  tool_cancelled: ToolCancelledData;
  tool_outcome_unknown: ToolOutcomeUnknownData;
  permission_requested: PermissionRequestedData;
  permission_resolved: PermissionResolvedData;
  input_applied: InputAppliedData;
}
