/**
 * Worker of the side-by-side benchmark against Cloudflare's `AIChatAgent` (`bench/peer-agent.bench.ts`;
 * bundled with esbuild, run on local workerd through Miniflare). Never deployed. Exports are entry
 * points only.
 *
 * Two Durable Object classes in one script, so both run in the same workerd under the same
 * compatibility date and flags (`nodejs_compat`, which the peer needs for `node:async_hooks`):
 * - `SessionObject`: the ledger's object with an agent mounted (the agent routes of
 *   `docs/edge-agents.md`, reached through the real app of `createApp()`).
 * - `PeerChatAgent`: an `AIChatAgent` of `@cloudflare/ai-chat` whose `onChatMessage` is the
 *   package's own example (`streamText` over `convertToModelMessages(this.messages)`, stop after
 *   5 steps, `toUIMessageStreamResponse()`), reached through `routeAgentRequest` at
 *   `/agents/peer-chat-agent/:name`.
 * Both run the same turn: the same {@link createBenchModel} instance kind (20 text deltas and one
 * `lookup` call, then, after the tool result, 40 text deltas and a stop; no delay, no network) and
 * the same pure `lookup` tool with the same JSON schema and result. Recovery after a crash: the
 * peer's default (`chatRecovery` on), ours `EDGE_AUTO_RECOVERY_POLICY` (the model called again).
 *
 * For `bench/peer-agent/kill-mid-answer.ts`: a user text containing `[slow]` makes the first model
 * call stream 100 ms per delta, and `GET /bench/model-calls` lists every model call of the isolate.
 */
import type { LanguageModelV3, LanguageModelV3CallOptions, LanguageModelV4, LanguageModelV4CallOptions } from '@ai-sdk/provider';
import { AIChatAgent } from '@cloudflare/ai-chat';
import { routeAgentRequest } from 'agents';
import { convertToModelMessages, jsonSchema, stepCountIs, streamText, tool, type JSONSchema7 } from 'ai';
import { createApp } from '../../src/app/app.js';
import type { SessionAgentMount } from '../../src/adapters/durable-object/agent-rpc.js';
import { EDGE_AUTO_RECOVERY_POLICY } from '../../src/edge/agent-host.js';
import { SessionObject as LedgerSessionObject } from '../../src/edge/session-object.js';
import type { JsonObject } from '../../src/protocol/json.js';
import { defineTool } from '../../src/session/session.js';
import type { Env } from '../../worker/env.js';

/** Text deltas before the tool call (first model call) and after the tool result (second call). */
const FIRST_CALL_DELTAS = 20;
const SECOND_CALL_DELTAS = 40;

interface BenchEnv extends Env {
  PeerChatAgent: DurableObjectNamespace<PeerChatAgent>;
}

/** The `lookup` tool's input schema (JSON Schema, the same object on both sides). */
const LOOKUP_SCHEMA = {
  type: 'object',
  properties: { key: { type: 'string' } },
  required: ['key'],
  additionalProperties: false,
} satisfies JsonObject & JSONSchema7;

/** The pure `lookup` tool's work, shared by both sides. */
function lookup(input: { key: string }): { key: string; value: string } {
  return { key: input.key, value: `value of ${input.key}` };
}

type BenchStreamPart =
  | { type: 'stream-start'; warnings: [] }
  | { type: 'text-start'; id: string }
  | { type: 'text-delta'; id: string; delta: string }
  | { type: 'text-end'; id: string }
  | { type: 'tool-call'; toolCallId: string; toolName: string; input: string }
  | {
      type: 'finish';
      finishReason: { unified: 'stop' | 'tool-calls'; raw: string };
      usage: {
        inputTokens: { total: number; noCache: number; cacheRead: number; cacheWrite: number };
        outputTokens: { total: number; text: number; reasoning: number };
      };
    };

/** A model call as the Worker saw it (`GET /bench/model-calls`, for the kill-mid-answer script). */
interface ModelCall {
  side: 'ours' | 'peer';
  afterTool: boolean;
  at: number;
}
/** Every model call of this isolate (both sides' objects run in it on local workerd). */
const modelCalls: ModelCall[] = [];

/** A user text with this marker makes the first call stream slowly (100 ms per delta), so a kill lands mid-answer. */
const SLOW_MARKER = '[slow]';
const SLOW_DELTA_MS = 100;

function lastUserText(prompt: LanguageModelV4CallOptions['prompt'] | LanguageModelV3CallOptions['prompt']): string {
  for (let index = prompt.length - 1; index >= 0; index--) {
    const message = prompt[index];
    if (message?.role === 'user') return message.content.map((part) => (part.type === 'text' ? part.text : '')).join('');
  }
  return '';
}

/** The parts of one model call: after a tool result, 40 deltas and a stop; otherwise 20 deltas and a `lookup` call. */
function benchParts(afterTool: boolean): BenchStreamPart[] {
  const count = afterTool ? SECOND_CALL_DELTAS : FIRST_CALL_DELTAS;
  const parts: BenchStreamPart[] = [{ type: 'stream-start', warnings: [] }, { type: 'text-start', id: 'text-0' }];
  for (let index = 0; index < count; index++) parts.push({ type: 'text-delta', id: 'text-0', delta: `word${index} ` });
  parts.push({ type: 'text-end', id: 'text-0' });
  if (!afterTool) {
    parts.push({ type: 'tool-call', toolCallId: `call-${crypto.randomUUID()}`, toolName: 'lookup', input: JSON.stringify({ key: 'alpha' }) });
  }
  parts.push({
    type: 'finish',
    finishReason: { unified: afterTool ? 'stop' : 'tool-calls', raw: afterTool ? 'stop' : 'tool_calls' },
    usage: {
      inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 },
      outputTokens: { total: count, text: count, reasoning: 0 },
    },
  });
  return parts;
}

/**
 * The hand-written model of the bench: streams its parts one per read, with no delay. Spec `v4`
 * (the AI SDK 7 interface, what `ai` 7 and the ledger's model port take as is) or `v3` (for the
 * peer on `ai` 6: `PEER_AI=6`).
 */
function createBenchModel(spec: 'v4', side: ModelCall['side']): LanguageModelV4;
function createBenchModel(spec: 'v3', side: ModelCall['side']): LanguageModelV3;
function createBenchModel(spec: 'v4' | 'v3', side: ModelCall['side']): LanguageModelV4 | LanguageModelV3 {
  const doStream = (options: LanguageModelV4CallOptions | LanguageModelV3CallOptions) => {
    const afterTool = options.prompt[options.prompt.length - 1]?.role === 'tool';
    modelCalls.push({ side, afterTool, at: Date.now() });
    const slow = !afterTool && lastUserText(options.prompt).includes(SLOW_MARKER);
    const parts = benchParts(afterTool);
    let next = 0;
    const stream = new ReadableStream<BenchStreamPart>({
      async pull(controller) {
        const part = parts[next++];
        if (part === undefined) {
          controller.close();
          return;
        }
        if (slow && part.type === 'text-delta') await new Promise((resolve) => setTimeout(resolve, SLOW_DELTA_MS));
        controller.enqueue(part);
      },
    });
    return Promise.resolve({ stream });
  };
  const doGenerate = (): Promise<never> => Promise.reject(new Error('the bench model only streams'));
  const base = { provider: 'bench', modelId: 'bench-model', supportedUrls: {} };
  // SAFETY: the parts above are valid stream parts of both specification versions (the shared
  // subset: text, tool call, finish with the structured usage and finish reason).
  if (spec === 'v4') return { ...base, specificationVersion: 'v4', doStream, doGenerate } as unknown as LanguageModelV4;
  // SAFETY: as above, for the v3 stream parts.
  return { ...base, specificationVersion: 'v3', doStream, doGenerate } as unknown as LanguageModelV3;
}

/** Which model interface the peer's `ai` takes: `ai` 7 (default) or `ai` 6 (`PEER_AI=6`, set at bundle time). */
declare const PEER_AI_MAJOR: 6 | 7;
const MODEL_SPEC = PEER_AI_MAJOR === 6 ? 'v3' : 'v4';

/** Ours: the ledger's object with the bench agent mounted. */
export class SessionObject extends LedgerSessionObject {
  protected override sessionAgent(): SessionAgentMount {
    return {
      model: MODEL_SPEC === 'v3' ? createBenchModel('v3', 'ours') : createBenchModel('v4', 'ours'),
      tools: {
        lookup: defineTool({ description: 'Looks a key up.', inputSchema: LOOKUP_SCHEMA, sideEffect: 'pure', execute: lookup }),
      },
      // Continues a cut-off model call by itself, as the peer's default `chatRecovery` does.
      recoveryPolicy: EDGE_AUTO_RECOVERY_POLICY,
    };
  }
}

/** The peer: `AIChatAgent` with the package's own `onChatMessage` pattern. */
export class PeerChatAgent extends AIChatAgent<BenchEnv> {
  readonly #model = MODEL_SPEC === 'v3' ? createBenchModel('v3', 'peer') : createBenchModel('v4', 'peer');
  readonly #tools = {
    lookup: tool({
      description: 'Looks a key up.',
      inputSchema: jsonSchema<{ key: string }>(LOOKUP_SCHEMA),
      execute: (input: { key: string }) => Promise.resolve(lookup(input)),
    }),
  };

  override async onChatMessage(
    _onFinish: unknown,
    options?: { abortSignal?: AbortSignal | undefined },
  ): Promise<Response | undefined> {
    const result = streamText({
      model: this.#model,
      messages: await convertToModelMessages(this.messages),
      tools: this.#tools,
      stopWhen: stepCountIs(5),
      ...(options?.abortSignal === undefined ? {} : { abortSignal: options.abortSignal }),
    });
    return result.toUIMessageStreamResponse();
  }
}

const app = createApp();

export default {
  async fetch(request, env, ctx) {
    const pathname = new URL(request.url).pathname;
    if (pathname === '/bench/model-calls') return Response.json(modelCalls);
    if (pathname.startsWith('/agents/')) {
      return (await routeAgentRequest(request, env)) ?? new Response('no such agent', { status: 404 });
    }
    return app.fetch(request, env, ctx);
  },
} satisfies ExportedHandler<BenchEnv>;
