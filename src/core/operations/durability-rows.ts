/**
 * The rows of the session operation table for the durability records and durable tool calls (host
 * `durability`), and the shapes a tool call run by the session object exchanges. A tool call
 * started here runs INSIDE the session's object; its progress is recorded in the session's
 * durability records (`run_event` records under the call's scope).
 */
import { z } from 'zod';
import { HTTP_PATHS } from '../../protocol/http-paths.js';
import type { JsonValue } from '../../protocol/json.js';
import type { DeliveryReceipt } from '../durability/port-types.js';
import {
  MAX_DURABILITY_READ_LIMIT,
  type DurabilityReadResult,
  type DurabilityRecordDraft,
  type DurabilityRecordResult,
} from '../durability/record-contract.js';
import { integerQuery, type OperationSpec } from './spec.js';

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
 * The durability rows. Their inputs cross RPC as the caller built them: the host checks them
 * (the store validates a draft and a page request, the object's durability part a tool call).
 * A lost answer of a write leaves its outcome unknown: each write is idempotent, repeat it.
 */
export const DURABILITY_ROWS = {
  recordDurability: {
    kind: 'write',
    host: 'durability',
    input: z.custom<DurabilityRecordDraft>(),
    output: z.custom<DurabilityRecordResult>(),
    rpcArgs: (draft: DurabilityRecordDraft) => draft,
  },
  readDurability: {
    kind: 'read',
    host: 'durability',
    input: z.strictObject({
      after: integerQuery(1, Number.MAX_SAFE_INTEGER, 'after').optional().meta({ description: 'Exclusive lower bound (a record sequence).' }),
      limit: integerQuery(1, MAX_DURABILITY_READ_LIMIT, 'limit').optional().meta({ description: 'Page size (default 100).' }),
    }),
    output: z.custom<DurabilityReadResult>(),
    rpcArgs: (options?: RpcDurabilityReadOptions) => options,
    http: {
      method: 'get',
      path: HTTP_PATHS.durability,
      scope: 'read',
      summary: "Read one page of the session's durability records",
      tags: ['runs'],
      errors: ['DURABILITY_INVALID_INPUT', 'DURABILITY_CORRUPT_RECORD', 'DURABLE_EVENT_UNAVAILABLE'],
      inputErrorCode: 'DURABILITY_INVALID_INPUT',
      responseDescription: 'One page of records.',
    },
  },
  startToolCall: {
    // Starts (or, when it exists and nothing runs it, resumes) a tool call inside the object.
    kind: 'write',
    host: 'durability',
    input: z.custom<StartToolCallInput>(),
    output: z.custom<ToolCallAccepted>(),
    rpcArgs: (input: StartToolCallInput) => input,
  },
  runToolCall: {
    // Starts the call like `startToolCall`, then answers once this execution settled (completed,
    // failed, or a retry scheduled). For short calls: a sleeping call holds the RPC.
    kind: 'write',
    host: 'durability',
    input: z.custom<StartToolCallInput>(),
    output: z.custom<ToolCallState>(),
    rpcArgs: (input: StartToolCallInput) => input,
  },
  deliver: {
    // Records a delivery, wakes live waiters and resumes evicted ones of the run by replay.
    kind: 'write',
    host: 'durability',
    input: z.custom<RunDeliveryInput>(),
    output: z.custom<RunDeliveryReceipt>(),
    rpcArgs: (input: RunDeliveryInput) => input,
  },
  getRun: {
    // The run's tool calls, from the object's run table and durability records.
    kind: 'read',
    host: 'durability',
    input: z.strictObject({ runId: z.string() }),
    output: z.custom<RunState>(),
    rpcArgs: (runId: string) => ({ runId }),
  },
} as const satisfies Record<string, OperationSpec>;
