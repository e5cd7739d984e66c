/**
 * How a SessionObject records and reports the outcome of the tool calls it runs.
 *
 * 1. Every execution ends in one `run_event` record under the call's scope: `attempt-<n>`
 *    (failed, retried later) or `run` (the final outcome: completed with `{ result }`, failed with
 *    `{ error, attempts }`). Errors are kept as `{ name, message, code? }`.
 * 2. The retry policy (`SessionObject.retryPolicy()`) bounds the executions; a malformed policy
 *    falls back to the default rather than stranding a call.
 * 3. `toolCallState` / `runStatus` turn the run table row plus the `run` record into what
 *    `getRun` reports.
 */
import type { RunState, ToolCallState } from '../core/operations/durability-rows.js';
import type { DurabilityRecord } from '../core/durability/record-contract.js';
import { durabilityIdentity } from '../core/durability/record-engine.js';
import type { JsonValue } from '../protocol/json.js';
import type { ToolRunRow } from './runs.js';

/** How often a throwing tool call is executed before it is recorded failed. */
export interface RunRetryPolicy {
  /** Executions in total, >= 1 (the first one included). */
  maxAttempts: number;
  /** Delay before retry `n` is `retryDelayMs * n` (linear backoff), in milliseconds. */
  retryDelayMs: number;
}

/** Three executions, 2 s then 4 s apart. */
export const DEFAULT_RUN_RETRY_POLICY: RunRetryPolicy = { maxAttempts: 3, retryDelayMs: 2_000 };
/** `run_event` key of a call's final outcome. */
export const RUN_OUTCOME_KEY = 'run';
/** Longest error message kept in a `run_event` record, in UTF-16 code units. */
const MAX_ERROR_MESSAGE_LENGTH = 2_000;

/** The JSON form of a thrown value kept in the durability records: `{ name, message, code? }`. */
export function describeError(error: unknown): JsonValue {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return {
      name: error.name,
      message: error.message.slice(0, MAX_ERROR_MESSAGE_LENGTH),
      ...(typeof code === 'string' ? { code } : {}),
    };
  }
  return { name: 'Error', message: String(error).slice(0, MAX_ERROR_MESSAGE_LENGTH) };
}

/** The policy if it is usable; otherwise the default (a bad override must not strand a run). */
export function checkedPolicy(policy: RunRetryPolicy): RunRetryPolicy {
  const ok =
    typeof policy === 'object' &&
    policy !== null &&
    Number.isSafeInteger(policy.maxAttempts) &&
    policy.maxAttempts >= 1 &&
    Number.isSafeInteger(policy.retryDelayMs) &&
    policy.retryDelayMs >= 0;
  if (ok) return policy;
  console.error('session object: retryPolicy() returned an invalid policy; using the default');
  return DEFAULT_RUN_RETRY_POLICY;
}

/** The record identity of the `run_event` `key` of a call's scope. */
export function runEventIdentity(scope: string, key: string): string {
  return durabilityIdentity({ kind: 'run_event', scope, key, status: 'completed', detail: null });
}

/** What `getRun` reports for one call: its row, plus result or error from its `run` record. */
export function toolCallState(run: ToolRunRow, live: boolean, outcome: DurabilityRecord | undefined): ToolCallState {
  const state: ToolCallState = {
    toolCallId: run.toolCallId,
    agent: run.agent,
    toolName: run.toolName,
    status: run.status,
    attempts: run.attempts,
    live,
  };
  if (run.status === 'running' || outcome?.kind !== 'run_event') return state;
  const detail = outcome.detail;
  if (typeof detail === 'object' && detail !== null && !Array.isArray(detail)) {
    const fields = detail as Record<string, JsonValue>;
    if (fields['result'] !== undefined) state.result = fields['result'];
    if (fields['error'] !== undefined) state.error = fields['error'];
  }
  return state;
}

/** A run's status: `unknown` without calls, `running` if any runs, `failed` if any failed, else `completed`. */
export function runStatus(toolCalls: readonly ToolCallState[]): RunState['status'] {
  const statuses = new Set(toolCalls.map((call) => call.status));
  if (toolCalls.length === 0) return 'unknown';
  if (statuses.has('running')) return 'running';
  return statuses.has('failed') ? 'failed' : 'completed';
}
