/**
 * `createScriptedModel`: a deterministic `LanguageModelV3` for tests, examples and demos.
 *
 * Each call takes the next step of the script (or asks the responder function), then answers it:
 * - `doStream`: `stream-start`, `response-metadata`, the text as `text-start` / `text-delta`* /
 *   `text-end`, each tool call as `tool-input-start` / `tool-input-delta` / `tool-input-end` /
 *   `tool-call`, then `finish` with usage and finish reason (or an `error` part);
 * - `doGenerate`: the same content in one result.
 * `hang` waits until the call's abort signal fires; an aborted signal rejects with its reason.
 * No timers and no wall clock: interleaving is controlled with the `betweenParts` hook.
 */
import type {
  LanguageModelV3CallOptions,
  LanguageModelV3Content,
  LanguageModelV3FinishReason,
  LanguageModelV3GenerateResult,
  LanguageModelV3StreamPart,
  LanguageModelV3StreamResult,
  LanguageModelV3Usage,
} from '@ai-sdk/provider';
import { abortReason } from '../core/abort.js';
import type { ScriptedModel, ScriptedModelOptions, ScriptedModelScript, ScriptedModelStep } from './scripted-model-types.js';

const DEFAULT_CHUNK_SIZE = 8;

function usageOf(step: ScriptedModelStep, options: LanguageModelV3CallOptions, text: string): LanguageModelV3Usage {
  const input = step.usage?.inputTokens ?? Math.ceil(JSON.stringify(options.prompt).length / 4);
  const output = step.usage?.outputTokens ?? Math.ceil(text.length / 4) + (step.toolCalls?.length ?? 0) * 8;
  return {
    inputTokens: { total: input, noCache: input, cacheRead: undefined, cacheWrite: undefined },
    outputTokens: { total: output, text: output, reasoning: undefined },
  };
}

function finishOf(step: ScriptedModelStep): LanguageModelV3FinishReason {
  return (step.toolCalls?.length ?? 0) > 0 ? { unified: 'tool-calls', raw: 'tool_calls' } : { unified: 'stop', raw: 'stop' };
}

function deltasOf(step: ScriptedModelStep, chunkSize: number): string[] {
  if (step.deltas !== undefined) return step.deltas;
  const text = step.text ?? '';
  const deltas: string[] = [];
  for (let i = 0; i < text.length; i += chunkSize) deltas.push(text.slice(i, i + chunkSize));
  return deltas;
}

function toolCallsOf(step: ScriptedModelStep, callIndex: number): Array<{ toolCallId: string; toolName: string; input: string }> {
  return (step.toolCalls ?? []).map((call, index) => ({
    toolCallId: call.toolCallId ?? `call-${callIndex}-${index}`,
    toolName: call.toolName,
    input: typeof call.input === 'string' ? call.input : JSON.stringify(call.input),
  }));
}

function waitForAbort(signal: AbortSignal | undefined): Promise<never> {
  return new Promise((_, reject) => {
    if (signal === undefined) return; // never settles: a hang without a signal hangs
    if (signal.aborted) {
      reject(abortReason(signal));
      return;
    }
    signal.addEventListener('abort', () => reject(abortReason(signal)), { once: true });
  });
}

/**
 * Creates a scripted model.
 *
 * @example
 * const model = createScriptedModel([
 *   { toolCalls: [{ toolName: 'add', input: { a: 2, b: 3 } }] },
 *   { text: 'The sum is 5.' },
 * ]);
 * const session = await createSession({ model, tools: { add } });
 */
export function createScriptedModel(script: ScriptedModelScript, options: ScriptedModelOptions = {}): ScriptedModel {
  const chunkSize = options.chunkSize ?? DEFAULT_CHUNK_SIZE;
  const calls: LanguageModelV3CallOptions[] = [];

  const next = (callOptions: LanguageModelV3CallOptions): { step: ScriptedModelStep; callIndex: number } => {
    const callIndex = calls.length;
    calls.push(callOptions);
    const step =
      typeof script === 'function'
        ? script({ callIndex, prompt: callOptions.prompt, options: callOptions })
        : script[callIndex];
    if (step === undefined) throw new Error(`scripted model: no step for call ${callIndex} (the script has ${Array.isArray(script) ? script.length : 0})`);
    return { step, callIndex };
  };

  const model: ScriptedModel = {
    specificationVersion: 'v3',
    provider: options.provider ?? 'scripted',
    modelId: options.modelId ?? 'scripted-model',
    supportedUrls: {},
    calls,

    async doGenerate(callOptions): Promise<LanguageModelV3GenerateResult> {
      const { step, callIndex } = next(callOptions);
      const signal = callOptions.abortSignal;
      if (signal?.aborted) throw abortReason(signal);
      if (step.hang === true) return waitForAbort(signal);
      if (step.error !== undefined) throw new Error(step.error);
      const text = deltasOf(step, chunkSize).join('');
      const content: LanguageModelV3Content[] = [];
      if (text.length > 0) content.push({ type: 'text', text });
      for (const call of toolCallsOf(step, callIndex)) content.push({ type: 'tool-call', ...call });
      return { content, finishReason: finishOf(step), usage: usageOf(step, callOptions, text), warnings: [] };
    },

    async doStream(callOptions): Promise<LanguageModelV3StreamResult> {
      const { step, callIndex } = next(callOptions);
      const signal = callOptions.abortSignal;
      if (signal?.aborted) throw abortReason(signal);
      if (step.error !== undefined && step.errorAfterOutput !== true) throw new Error(step.error);
      const parts: LanguageModelV3StreamPart[] = [{ type: 'stream-start', warnings: [] }];
      parts.push({ type: 'response-metadata', id: `scripted-${callIndex}`, modelId: model.modelId });
      const deltas = deltasOf(step, chunkSize);
      if (deltas.length > 0) {
        parts.push({ type: 'text-start', id: 't0' });
        for (const delta of deltas) parts.push({ type: 'text-delta', id: 't0', delta });
        parts.push({ type: 'text-end', id: 't0' });
      }
      for (const call of toolCallsOf(step, callIndex)) {
        parts.push({ type: 'tool-input-start', id: call.toolCallId, toolName: call.toolName });
        parts.push({ type: 'tool-input-delta', id: call.toolCallId, delta: call.input });
        parts.push({ type: 'tool-input-end', id: call.toolCallId });
        parts.push({ type: 'tool-call', ...call });
      }
      const text = deltas.join('');
      const betweenParts = options.betweenParts;
      let index = 0;
      const stream = new ReadableStream<LanguageModelV3StreamPart>({
        async pull(controller) {
          if (signal?.aborted) {
            controller.error(abortReason(signal));
            return;
          }
          if (betweenParts !== undefined && index > 0) await betweenParts();
          const part = parts[index++];
          if (part !== undefined) {
            controller.enqueue(part);
            return;
          }
          if (step.hang === true) {
            try {
              await waitForAbort(signal);
            } catch (error) {
              controller.error(error);
            }
            return;
          }
          if (step.error !== undefined) {
            controller.enqueue({ type: 'error', error: new Error(step.error) });
          } else {
            controller.enqueue({ type: 'finish', usage: usageOf(step, callOptions, text), finishReason: finishOf(step) });
          }
          controller.close();
        },
      });
      return { stream };
    },
  };
  return model;
}
