/**
 * Types of the scripted model: a deterministic `LanguageModelV3` for tests, examples and demos.
 */
import type { LanguageModelV3, LanguageModelV3CallOptions, LanguageModelV3Prompt } from '@ai-sdk/provider';
import type { JsonValue } from '../protocol/json.js';

/** One tool call a scripted step emits. */
export interface ScriptedToolCall {
  /** Default: `call-<callIndex>-<index>`. */
  toolCallId?: string;
  toolName: string;
  /** Arguments; an object is sent as its JSON text, a string as is (so invalid JSON can be scripted). */
  input: JsonValue;
}

/** What one model call answers. */
export interface ScriptedModelStep {
  /** Assistant text (streamed as deltas: `deltas` when given, else split into `chunkSize` pieces). */
  text?: string;
  /** Explicit text deltas (their concatenation is the text). */
  deltas?: string[];
  /** Tool calls, after the text. */
  toolCalls?: ScriptedToolCall[];
  /** Fail the call: before any output, or after the text/tool calls were streamed (`errorAfterOutput`). */
  error?: string;
  errorAfterOutput?: boolean;
  /** Never finish: wait until the call's abort signal fires (then reject with an AbortError). */
  hang?: boolean;
  /** Usage reported in the finish part (default: derived from the prompt and text length). */
  usage?: { inputTokens: number; outputTokens: number };
}

/** What a responder sees of one call. */
export interface ScriptedModelCall {
  /** 0-based index of this call on the model. */
  callIndex: number;
  prompt: LanguageModelV3Prompt;
  options: LanguageModelV3CallOptions;
}

/** Either a fixed list of steps (one per call, in order) or a function of the call. */
export type ScriptedModelScript = readonly ScriptedModelStep[] | ((call: ScriptedModelCall) => ScriptedModelStep);

/** Options of `createScriptedModel`. */
export interface ScriptedModelOptions {
  /** Default `'scripted'`. */
  provider?: string;
  /** Default `'scripted-model'`. */
  modelId?: string;
  /** Characters per streamed text delta when `deltas` is not given (default 8). */
  chunkSize?: number;
  /**
   * Awaited between stream parts (default: none). Tests pass a promise-returning function to
   * interleave work deterministically; nothing here reads the wall clock.
   */
  betweenParts?: () => Promise<void>;
}

/** A scripted model: a `LanguageModelV3` plus the calls it received. */
export interface ScriptedModel extends LanguageModelV3 {
  /** Every call's options, in order. */
  readonly calls: LanguageModelV3CallOptions[];
}
