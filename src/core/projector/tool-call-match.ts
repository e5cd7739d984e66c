/**
 * Matching scheduled tools against the confirmed model response.
 *
 * A tool attempt names the model attempt whose response produced it. Once that response is
 * confirmed (`model_request_completed`), every tool scheduled under it must correspond to one of
 * its `toolCalls`: same call ID, same tool name, and the same original arguments compared as
 * canonical JSON (key order does not matter). The check runs when the response arrives (covering
 * tools a streaming writer dispatched early) and at `tool_scheduled` for responses already known.
 */
import type { ModelResponse, ModelToolCall } from '../../protocol/event-payloads.js';
import { canonicalJson, type JsonValue } from '../../protocol/json.js';
import { reject, type FoldContext } from './fold-state.js';

/** The parts of a tool attempt the match needs. */
interface ScheduledToolCall {
  readonly toolAttemptId: string;
  readonly toolCallId: string;
  readonly toolName: string;
  readonly modelInput: JsonValue;
}

function findCall(response: ModelResponse, toolCallId: string): ModelToolCall | undefined {
  return response.toolCalls?.find((call) => call.id === toolCallId);
}

/** Rejects unless `tool` is one of `response.toolCalls` (ID, name, canonical arguments). */
export function checkToolCallMatches(ctx: FoldContext, response: ModelResponse, tool: ScheduledToolCall): void {
  const call = findCall(response, tool.toolCallId);
  if (call === undefined) {
    reject(
      ctx,
      'tool_call_mismatch',
      `tool attempt ${tool.toolAttemptId}: the confirmed model response has no tool call ${tool.toolCallId}`,
    );
  }
  if (call.name !== tool.toolName) {
    reject(
      ctx,
      'tool_call_mismatch',
      `tool attempt ${tool.toolAttemptId}: tool name ${tool.toolName} differs from the response's ${call.name}`,
    );
  }
  if (canonicalJson(call.arguments) !== canonicalJson(tool.modelInput)) {
    reject(
      ctx,
      'tool_call_mismatch',
      `tool attempt ${tool.toolAttemptId}: modelInput differs from the response's arguments for ${tool.toolCallId}`,
    );
  }
}
