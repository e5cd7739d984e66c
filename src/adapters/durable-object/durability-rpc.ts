/**
 * The SessionObject's durability RPC surface and the shapes it exchanges, runtime-neutral (no
 * `cloudflare:*` imports), shared by the object, the Worker's `runs` routes and
 * `DurableObjectEventStore`.
 *
 * Like the store methods (see `rpc.ts`), every method answers with an `RpcResult` envelope, so a
 * `DurabilityError` keeps its class and code across RPC. A tool call started here runs INSIDE the
 * session's object; its progress is recorded in the session's durability records (`run_event`
 * records under the call's scope) and pushed to WebSocket subscribers as
 * {@link SubscriberDurabilityMessage} frames.
 */
import type {
  DurabilityReadResult,
  DurabilityRecord,
  DurabilityRecordDraft,
  DurabilityRecordResult,
} from '../../core/durability/record-contract.js';
import type { SubscriberDurabilityFrame } from '../../protocol/frames.js';
import type { DeliveryReceipt } from '../../core/durability/port-types.js';
import type { JsonValue } from '../../protocol/json.js';
import type { RpcResult } from './rpc.js';

/** Where a tool call the object runs stands. */
export type ToolRunStatus = 'running' | 'completed' | 'failed';

/** Input of `startToolCall`: one call of a tool mounted on the object, identified stably. */
export interface StartToolCallInput {
  runId: string;
  agent: string;
  toolName: string;
  /** Must be stable: a replay finds the call's records under `(runId, toolName, toolCallId)`. */
  toolCallId: string;
  /** Lossless JSON; stored, so a replay after eviction gets the same input. */
  input: JsonValue;
}

/** Answer of `startToolCall`: the call is running (or had already finished). */
export interface ToolCallAccepted {
  runId: string;
  toolCallId: string;
  status: ToolRunStatus;
}

/** One tool call of a run, as `getRun` reports it. */
export interface ToolCallState {
  toolCallId: string;
  agent: string;
  toolName: string;
  status: ToolRunStatus;
  /** Failed executions so far (each recorded as a `run_event` `attempt-<n>`, then retried). */
  attempts: number;
  /** True while an execution of the call is in the object's memory. */
  live: boolean;
  /** The tool's output, once `completed`. */
  result?: JsonValue;
  /** The last error (`{ name, message, code? }`), once `failed`. */
  error?: JsonValue;
}

/** A run's tool calls. `status`: `unknown` (no call), `running` (any), `failed` (any), else `completed`. */
export interface RunState {
  runId: string;
  status: ToolRunStatus | 'unknown';
  toolCalls: ToolCallState[];
}

/** Input of `deliver`: a delivery to `waitFor(key)` in run `runId`, idempotent by `deliveryId`. */
export interface RunDeliveryInput {
  runId: string;
  key: string;
  deliveryId: string;
  payload: JsonValue;
}

/** Answer of `deliver`: the durability receipt, and the tool calls resumed by replay (evicted waiters). */
export interface RunDeliveryReceipt extends DeliveryReceipt {
  resumed: string[];
}

/** Read options of `readDurability` that cross RPC. */
export interface RpcDurabilityReadOptions {
  after?: number | undefined;
  limit?: number | undefined;
}

/**
 * The durability methods of the per-session object. Every method names the session; the object
 * serves exactly one and refuses any other.
 */
export interface SessionObjectDurabilityRpc {
  recordDurability(sessionId: string, draft: DurabilityRecordDraft): Promise<RpcResult<DurabilityRecordResult>>;
  readDurability(sessionId: string, options?: RpcDurabilityReadOptions): Promise<RpcResult<DurabilityReadResult>>;
  /** Starts (or, when it exists and nothing runs it, resumes) a tool call inside the object. */
  startToolCall(sessionId: string, input: StartToolCallInput): Promise<RpcResult<ToolCallAccepted>>;
  /**
   * Starts the call like `startToolCall`, then answers once this execution settled (completed,
   * failed, or a retry scheduled). For short calls: a sleeping call holds the RPC.
   */
  runToolCall(sessionId: string, input: StartToolCallInput): Promise<RpcResult<ToolCallState>>;
  /** Records a delivery, wakes live waiters and resumes evicted ones of the run by replay. */
  deliver(sessionId: string, input: RunDeliveryInput): Promise<RpcResult<RunDeliveryReceipt>>;
  /** The run's tool calls, from the object's run table and durability records. */
  getRun(sessionId: string, runId: string): Promise<RpcResult<RunState>>;
}

/**
 * The WebSocket frame a session's subscribers receive for every durability record created in the
 * session (steps, sleeps, waits, deliveries, run progress), once it committed: the `durability`
 * row of `src/protocol/frames.ts`, with the record typed. It carries no cursor (records have their
 * own `sequence`) and is not replayed on connect — read the durability records (`readDurability`) for history.
 */
export type SubscriberDurabilityMessage = SubscriberDurabilityFrame<DurabilityRecord>;
