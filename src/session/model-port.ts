/**
 * The model port: the only file that knows the AI SDK provider specification. It accepts
 * `LanguageModelV4` (`@ai-sdk/provider` 4.x, AI SDK 7) and `LanguageModelV3` (3.x, AI SDK 6) and
 * treats both through one normalisation.
 *
 * 1. `toPrompt` turns the projected history into a prompt (system, user, assistant with tool
 *    calls, tool results grouped into one tool message per assistant turn), in the V4 shape;
 *    `callLanguageModel` hands a V3 model the same prompt with its file parts in the V3 shape
 *    (the only difference between the two prompts the port builds).
 * 2. `callLanguageModel` calls `doStream` (or `doGenerate`), forwards text and reasoning deltas,
 *    hands every complete tool call to `onToolCall` as soon as the provider emits it (streaming
 *    providers may emit it before their terminal `finish` part), and resolves with the complete
 *    response in the ledger's shape. The stream parts, usage and finish reasons the port reads
 *    have one shape in both versions; V4 adds parts the port ignores (`ping`, `custom`,
 *    `reasoning-file`) and the finish reason `interrupted` (the provider stream ended without a
 *    completion signal). A stream `error` part, a finish reason `error` or `interrupted` (the
 *    response may be incomplete), a thrown error or an abort rejects.
 */
import type {
  LanguageModelV3FilePart,
  LanguageModelV3FinishReason,
  LanguageModelV3GenerateResult,
  LanguageModelV3Prompt,
  LanguageModelV3StreamPart,
  LanguageModelV3Usage,
  LanguageModelV4CallOptions,
  LanguageModelV4FilePart,
  LanguageModelV4FinishReason,
  LanguageModelV4FunctionTool,
  LanguageModelV4GenerateResult,
  LanguageModelV4Message,
  LanguageModelV4Prompt,
  LanguageModelV4StreamPart,
  LanguageModelV4TextPart,
  LanguageModelV4ToolResultOutput,
  LanguageModelV4ToolResultPart,
  LanguageModelV4Usage,
} from '@ai-sdk/provider';
import { abortReason } from '../core/abort.js';
import type { ContentPart, DurableInput, ModelIdentity, ModelResponse, ModelStopReason, ModelToolCall, ModelUsage } from '../protocol/event-payloads.js';
import { isLosslessJson, type JsonValue } from '../protocol/json.js';
import type { AnySessionTool, SessionHistoryMessage, SessionLanguageModel, SessionOptions } from './types.js';

/** Whether `value` is a model the port accepts (`specificationVersion` `'v4'` or `'v3'`). */
export function isSessionLanguageModel(value: unknown): value is SessionLanguageModel {
  if (typeof value !== 'object' || value === null) return false;
  const version = (value as { specificationVersion?: unknown }).specificationVersion;
  return version === 'v4' || version === 'v3';
}

/** The reason `value` is not a model the port accepts (the message of the `SESSION_DURABLE_RECORDER_INVALID` error). */
export function unsupportedModelMessage(value: unknown): string {
  const version = typeof value === 'object' && value !== null ? (value as { specificationVersion?: unknown }).specificationVersion : undefined;
  const seen = version === undefined ? 'no specificationVersion' : `specificationVersion ${JSON.stringify(version) ?? String(version)}`;
  return `model must be an AI SDK LanguageModelV4 or LanguageModelV3 (specificationVersion "v4" or "v3"); got ${seen}`;
}

/** The `api` of `modelIdentity` before the specification version (`ai-sdk.language-model.v4`). */
const MODEL_PORT_API = 'ai-sdk.language-model';

/** `modelIdentity` recorded unless the host names another: the provider and the specification version it implements. */
export function modelIdentityOf(model: SessionLanguageModel): ModelIdentity {
  return { provider: model.provider, api: `${MODEL_PORT_API}.${model.specificationVersion}` };
}

function userParts(content: DurableInput): Array<LanguageModelV4TextPart | LanguageModelV4FilePart> {
  if (typeof content === 'string') return [{ type: 'text', text: content }];
  return content.map((part: ContentPart): LanguageModelV4TextPart | LanguageModelV4FilePart => {
    if (part.type === 'text') return { type: 'text', text: part.text };
    const data = part.data === undefined ? { type: 'url' as const, url: new URL(part.url ?? '') } : { type: 'data' as const, data: part.data };
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

function toolOutput(message: Extract<SessionHistoryMessage, { role: 'tool' }>): LanguageModelV4ToolResultOutput {
  switch (message.outcome) {
    case 'completed':
      return typeof message.result === 'string' ? { type: 'text', value: message.result } : { type: 'json', value: message.result };
    case 'failed':
      return { type: 'error-json', value: message.result };
    case 'cancelled':
      return { type: 'execution-denied', reason: typeof message.result === 'string' ? message.result : JSON.stringify(message.result) };
  }
}

/** Builds the prompt (V4 shape) from the system prompt and the projected history. */
export function toPrompt(system: string | undefined, history: readonly SessionHistoryMessage[]): LanguageModelV4Prompt {
  const prompt: LanguageModelV4Prompt = [];
  if (system !== undefined && system.length > 0) prompt.push({ role: 'system', content: system });
  let toolMessage: Extract<LanguageModelV4Message, { role: 'tool' }> | null = null;
  for (const message of history) {
    if (message.role === 'tool') {
      const part: LanguageModelV4ToolResultPart = {
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

/**
 * The same prompt for a V3 model. The parts the port builds differ only in a user file part's
 * `data`: V4 tags it (`{ type: 'data', data }` or `{ type: 'url', url }`), V3 holds the bytes,
 * base64 text or URL itself. Messages without a file part are shared, not copied.
 */
function toV3Prompt(prompt: LanguageModelV4Prompt): LanguageModelV3Prompt {
  return prompt.map((message) => {
    if (message.role !== 'user' || !message.content.some((part) => part.type === 'file')) {
      // SAFETY: system, assistant and tool messages the port builds (text, tool-call and
      // tool-result parts with text / json / error-json / execution-denied outputs) have the same
      // shape in V3 and V4.
      return message as LanguageModelV3Prompt[number];
    }
    return {
      role: 'user',
      content: message.content.map((part): LanguageModelV3FilePart | { type: 'text'; text: string } => {
        if (part.type === 'text') return { type: 'text', text: part.text };
        const data = part.data.type === 'url' ? part.data.url : part.data.type === 'data' ? part.data.data : '';
        return { type: 'file', mediaType: part.mediaType, data, ...(part.filename === undefined ? {} : { filename: part.filename }) };
      }),
    };
  });
}

/** The tool declarations the model sees. */
export function toTools(tools: Readonly<Record<string, AnySessionTool>>): LanguageModelV4FunctionTool[] {
  const declarations: LanguageModelV4FunctionTool[] = [];
  for (const name of Object.keys(tools)) {
    // SAFETY: an own key of `tools`.
    const tool = tools[name] as AnySessionTool;
    // SAFETY: a JSON object is structurally a JSON Schema document; the provider validates it.
    const inputSchema = (tool.inputSchema ?? { type: 'object' }) as LanguageModelV4FunctionTool['inputSchema'];
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
function parseToolArguments(input: unknown): JsonValue {
  if (typeof input !== 'string') return isLosslessJson(input) ? input : String(input);
  if (input.trim() === '') return {};
  try {
    const parsed: unknown = JSON.parse(input);
    return isLosslessJson(parsed) ? parsed : input;
  } catch {
    return input;
  }
}

function stopReason(reason: FinishReason | undefined): ModelStopReason | undefined {
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

function usage(value: Usage | undefined): ModelUsage | undefined {
  if (value === undefined) return undefined;
  const promptTokens = Math.max(0, Math.trunc(value.inputTokens?.total ?? 0));
  const completionTokens = Math.max(0, Math.trunc(value.outputTokens?.total ?? 0));
  return { promptTokens, completionTokens, totalTokens: promptTokens + completionTokens };
}

/** What `callLanguageModel` needs. */
interface ModelCall {
  model: SessionLanguageModel;
  streaming: boolean;
  prompt: LanguageModelV4Prompt;
  tools: LanguageModelV4FunctionTool[];
  settings: SessionOptions['callSettings'];
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

/** A stream part, generate result, finish reason or usage of either version (one shape for every field the port reads). */
type StreamPart = LanguageModelV4StreamPart | LanguageModelV3StreamPart;
type GenerateResult = LanguageModelV4GenerateResult | LanguageModelV3GenerateResult;
type FinishReason = LanguageModelV4FinishReason | LanguageModelV3FinishReason;
type Usage = LanguageModelV4Usage | LanguageModelV3Usage;

/** `doGenerate` of either version: a V3 model gets the prompt in its shape. */
function generate(model: SessionLanguageModel, options: LanguageModelV4CallOptions): PromiseLike<GenerateResult> {
  if (model.specificationVersion === 'v4') return model.doGenerate(options);
  return model.doGenerate({ ...options, prompt: toV3Prompt(options.prompt) });
}

/** `doStream` of either version: a V3 model gets the prompt in its shape. */
async function streamOf(model: SessionLanguageModel, options: LanguageModelV4CallOptions): Promise<ReadableStream<StreamPart>> {
  if (model.specificationVersion === 'v4') return (await model.doStream(options)).stream;
  return (await model.doStream({ ...options, prompt: toV3Prompt(options.prompt) })).stream;
}

/** Calls the model once (one logical model attempt); see the module header. */
export async function callLanguageModel(call: ModelCall): Promise<ModelResponse> {
  const options: LanguageModelV4CallOptions = {
    ...call.settings,
    prompt: call.prompt,
    ...(call.tools.length > 0 ? { tools: call.tools, toolChoice: { type: 'auto' as const } } : {}),
    abortSignal: call.signal,
  };
  let text = '';
  const toolCalls: ModelToolCall[] = [];
  let finish: FinishReason | undefined;
  let used: Usage | undefined;
  const addToolCall = async (toolCallId: string, toolName: string, input: unknown): Promise<void> => {
    const modelCall: ModelToolCall = { id: toolCallId, name: toolName, arguments: parseToolArguments(input) };
    toolCalls.push(modelCall);
    await call.onToolCall(modelCall);
  };
  try {
    if (!call.streaming) {
      const result = await generate(call.model, options);
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
      const reader = (await streamOf(call.model, options)).getReader();
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
  // The provider reports that the generation stopped on an error (`error`, e.g. a truncated
  // stream) or that its stream ended without a completion signal (`interrupted`, V4): the
  // response may be incomplete, so it is never committed as the attempt's response.
  if (finish?.unified === 'error' || finish?.unified === 'interrupted') {
    throw new ModelCallError(`the model stopped with finish reason ${finish.unified}${finish.raw === undefined ? '' : ` (${finish.raw})`}`, true);
  }
  const reason = stopReason(finish);
  const tokens = usage(used);
  return {
    content: text,
    ...(toolCalls.length > 0 ? { toolCalls } : {}),
    ...(reason === undefined ? {} : { stopReason: reason }),
    ...(tokens === undefined ? {} : { usage: tokens }),
  };
}
