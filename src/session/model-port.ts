/**
 * The model port: the only file that knows the AI SDK provider specification (`LanguageModelV3`
 * of `@ai-sdk/provider` 3.x). Moving to another specification version means rewriting this file.
 *
 * 1. `toPrompt` turns the projected history into a V3 prompt (system, user, assistant with tool
 *    calls, tool results grouped into one tool message per assistant turn).
 * 2. `callLanguageModel` calls `doStream` (or `doGenerate`), forwards text and reasoning deltas,
 *    hands every complete tool call to `onToolCall` as soon as the provider emits it (streaming
 *    providers may emit it before their terminal `finish` part), and resolves with the complete
 *    response in the ledger's shape. A stream `error` part, a thrown error or an abort rejects.
 */
import type {
  LanguageModelV3,
  LanguageModelV3CallOptions,
  LanguageModelV3FilePart,
  LanguageModelV3FinishReason,
  LanguageModelV3FunctionTool,
  LanguageModelV3Message,
  LanguageModelV3Prompt,
  LanguageModelV3TextPart,
  LanguageModelV3ToolResultOutput,
  LanguageModelV3ToolResultPart,
  LanguageModelV3Usage,
} from '@ai-sdk/provider';
import { abortReason } from '../core/abort.js';
import type { ContentPart, DurableInput, ModelResponse, ModelStopReason, ModelToolCall, ModelUsage } from '../protocol/event-payloads.js';
import { isLosslessJson, type JsonObject, type JsonValue } from '../protocol/json.js';
import type { AnySessionTool, SessionHistoryMessage } from './types.js';

/** `api` recorded in `modelIdentity` unless the host names another. */
export const MODEL_PORT_API = 'ai-sdk.language-model.v3';

function userParts(content: DurableInput): Array<LanguageModelV3TextPart | LanguageModelV3FilePart> {
  if (typeof content === 'string') return [{ type: 'text', text: content }];
  return content.map((part: ContentPart): LanguageModelV3TextPart | LanguageModelV3FilePart => {
    if (part.type === 'text') return { type: 'text', text: part.text };
    const data = part.data ?? new URL(part.url ?? '');
    return {
      type: 'file',
      mediaType: part.mediaType,
      data,
      ...(part.type === 'file' && part.name !== undefined ? { filename: part.name } : {}),
    };
  });
}

function textOf(content: DurableInput): string {
  if (typeof content === 'string') return content;
  return content.map((part) => (part.type === 'text' ? part.text : '')).join('');
}

function toolOutput(message: Extract<SessionHistoryMessage, { role: 'tool' }>): LanguageModelV3ToolResultOutput {
  switch (message.outcome) {
    case 'completed':
      return typeof message.result === 'string' ? { type: 'text', value: message.result } : { type: 'json', value: message.result };
    case 'failed':
      return { type: 'error-json', value: message.result };
    case 'cancelled':
      return { type: 'execution-denied', reason: typeof message.result === 'string' ? message.result : JSON.stringify(message.result) };
  }
}

/** Builds the V3 prompt from the system prompt and the projected history. */
export function toPrompt(system: string | undefined, history: readonly SessionHistoryMessage[]): LanguageModelV3Prompt {
  const prompt: LanguageModelV3Prompt = [];
  if (system !== undefined && system.length > 0) prompt.push({ role: 'system', content: system });
  let toolMessage: Extract<LanguageModelV3Message, { role: 'tool' }> | null = null;
  for (const message of history) {
    if (message.role === 'tool') {
      const part: LanguageModelV3ToolResultPart = {
        type: 'tool-result',
        toolCallId: message.toolCallId,
        toolName: message.toolName,
        output: toolOutput(message),
      };
      if (toolMessage === null) {
        toolMessage = { role: 'tool', content: [part] };
        prompt.push(toolMessage);
      } else {
        toolMessage.content.push(part);
      }
      continue;
    }
    toolMessage = null;
    if (message.role === 'user') {
      prompt.push({ role: 'user', content: userParts(message.content) });
      continue;
    }
    const text = textOf(message.content);
    prompt.push({
      role: 'assistant',
      content: [
        ...(text.length > 0 ? [{ type: 'text' as const, text }] : []),
        ...message.toolCalls.map((call) => ({
          type: 'tool-call' as const,
          toolCallId: call.toolCallId,
          toolName: call.toolName,
          input: call.input,
        })),
      ],
    });
  }
  return prompt;
}

/** The tool declarations the model sees. */
export function toTools(tools: Readonly<Record<string, AnySessionTool>>): LanguageModelV3FunctionTool[] {
  const declarations: LanguageModelV3FunctionTool[] = [];
  for (const name of Object.keys(tools)) {
    // SAFETY: an own key of `tools`.
    const tool = tools[name] as AnySessionTool;
    // SAFETY: a JSON object is structurally a JSON Schema document; the provider validates it.
    const inputSchema = (tool.inputSchema ?? { type: 'object' }) as LanguageModelV3FunctionTool['inputSchema'];
    // Two literals rather than a spread of an optional field: the same keys in the same order.
    declarations.push(
      tool.description === undefined
        ? { type: 'function', name, inputSchema }
        : { type: 'function', name, description: tool.description, inputSchema },
    );
  }
  return declarations;
}

/** The provider's original arguments as a JSON value: parsed JSON text, or the raw text when it does not parse. */
export function parseToolArguments(input: unknown): JsonValue {
  if (typeof input !== 'string') return isLosslessJson(input) ? input : String(input);
  if (input.trim() === '') return {};
  try {
    const parsed: unknown = JSON.parse(input);
    return isLosslessJson(parsed) ? parsed : input;
  } catch {
    return input;
  }
}

function stopReason(reason: LanguageModelV3FinishReason | undefined): ModelStopReason | undefined {
  switch (reason?.unified) {
    case undefined:
      return undefined;
    case 'stop':
      return 'end_turn';
    case 'tool-calls':
      return 'tool_use';
    case 'length':
      return 'max_tokens';
    case 'content-filter':
      return 'refusal';
    default:
      return 'other';
  }
}

function usage(value: LanguageModelV3Usage | undefined): ModelUsage | undefined {
  if (value === undefined) return undefined;
  const promptTokens = Math.max(0, Math.trunc(value.inputTokens?.total ?? 0));
  const completionTokens = Math.max(0, Math.trunc(value.outputTokens?.total ?? 0));
  return { promptTokens, completionTokens, totalTokens: promptTokens + completionTokens };
}

/** What `callLanguageModel` needs. */
export interface ModelCall {
  model: LanguageModelV3;
  streaming: boolean;
  prompt: LanguageModelV3Prompt;
  tools: LanguageModelV3FunctionTool[];
  settings: Omit<LanguageModelV3CallOptions, 'prompt' | 'tools' | 'abortSignal'> | undefined;
  signal: AbortSignal;
  onTextDelta(delta: string): void;
  onReasoningDelta(delta: string): void;
  /** Awaited before the stream is read further: the Session persists `tool_scheduled` here. */
  onToolCall(call: ModelToolCall): Promise<void>;
}

/** Thrown for a provider-reported failure (a stream `error` part or a rejected call). */
export class ModelCallError extends Error {
  constructor(
    message: string,
    readonly retryable: boolean,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'ModelCallError';
  }
}

function describe(error: unknown): string {
  if (error instanceof Error) return error.message;
  if (typeof error === 'string') return error;
  try {
    return JSON.stringify(error);
  } catch {
    return String(error);
  }
}

function retryableOf(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { isRetryable?: unknown }).isRetryable === true;
}

/** Calls the model once (one logical model attempt); see the module header. */
export async function callLanguageModel(call: ModelCall): Promise<ModelResponse> {
  const options: LanguageModelV3CallOptions = {
    ...call.settings,
    prompt: call.prompt,
    ...(call.tools.length > 0 ? { tools: call.tools, toolChoice: { type: 'auto' as const } } : {}),
    abortSignal: call.signal,
  };
  let text = '';
  const toolCalls: ModelToolCall[] = [];
  let finish: LanguageModelV3FinishReason | undefined;
  let used: LanguageModelV3Usage | undefined;
  const addToolCall = async (toolCallId: string, toolName: string, input: unknown): Promise<void> => {
    const modelCall: ModelToolCall = { id: toolCallId, name: toolName, arguments: parseToolArguments(input) };
    toolCalls.push(modelCall);
    await call.onToolCall(modelCall);
  };
  try {
    if (!call.streaming) {
      const result = await call.model.doGenerate(options);
      for (const part of result.content) {
        if (part.type === 'text') text += part.text;
        // Not streamed: the complete response is committed first, then its tools are scheduled.
        if (part.type === 'tool-call' && part.providerExecuted !== true) {
          toolCalls.push({ id: part.toolCallId, name: part.toolName, arguments: parseToolArguments(part.input) });
        }
      }
      finish = result.finishReason;
      used = result.usage;
    } else {
      const { stream } = await call.model.doStream(options);
      const reader = stream.getReader();
      // A stream read to its end is closed: its lock is kept (releasing it rejects the reader's
      // `closed` with a fresh TypeError, a stack capture per model call, and frees nothing).
      let ended = false;
      try {
        for (;;) {
          const { done, value: part } = await reader.read();
          if (done) {
            ended = true;
            break;
          }
          switch (part.type) {
            case 'text-delta':
              text += part.delta;
              call.onTextDelta(part.delta);
              break;
            case 'reasoning-delta':
              call.onReasoningDelta(part.delta);
              break;
            case 'tool-call':
              if (part.providerExecuted !== true) await addToolCall(part.toolCallId, part.toolName, part.input);
              break;
            case 'finish':
              finish = part.finishReason;
              used = part.usage;
              break;
            case 'error':
              throw new ModelCallError(describe(part.error), retryableOf(part.error), { cause: part.error });
            default:
              break;
          }
        }
      } finally {
        if (!ended) reader.releaseLock();
      }
    }
  } catch (error) {
    if (call.signal.aborted) throw abortReason(call.signal);
    if (error instanceof ModelCallError) throw error;
    throw new ModelCallError(describe(error), retryableOf(error), { cause: error });
  }
  if (call.signal.aborted) throw abortReason(call.signal);
  if (call.streaming && finish === undefined) throw new ModelCallError('the model stream ended without a finish part', true);
  const reason = stopReason(finish);
  const tokens = usage(used);
  return {
    content: text,
    ...(toolCalls.length > 0 ? { toolCalls } : {}),
    ...(reason === undefined ? {} : { stopReason: reason }),
    ...(tokens === undefined ? {} : { usage: tokens }),
  };
}

/** Shape check used when restoring: a JSON object. */
export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && isLosslessJson(value);
}
