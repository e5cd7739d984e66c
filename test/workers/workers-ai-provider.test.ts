/**
 * Inside workerd: the Session with `workers-ai-provider` 4.x (`LanguageModelV4`), unmodified, over
 * a stand-in `AI` binding passed to `createWorkersAI({ binding })`. The stand-in answers
 * `binding.run(model, inputs, options)` as the Workers AI binding does: with `stream: true` a
 * `ReadableStream` of server-sent events in the Workers AI format (`{ "response": ... }` text
 * chunks, `tool_calls` deltas, usage, `[DONE]`), else one JSON result. What it answers is chosen by
 * the last user message: `weather` (a tool call, then an answer with the tool result), `truncated`
 * (text, then the stream ends without a finish reason or `[DONE]`), `binding error` (`run` throws,
 * as the binding does for a failed inference), and anything else an echo.
 */
import { createWorkersAI } from 'workers-ai-provider';
import { describe, expect, it } from 'vitest';
import { MemoryDurableEventStore, SessionId, type DurableEventEnvelope } from '../../src/index.js';
import { createSession, defineTool } from '../../src/session.js';

interface RunCall {
  model: string;
  inputs: { messages?: Array<{ role: string; content: unknown; tool_call_id?: string; tool_calls?: unknown }>; stream?: boolean; tools?: unknown[] };
}

const encoder = new TextEncoder();

function sse(events: readonly unknown[], done: boolean): ReadableStream<Uint8Array> {
  const lines = events.map((event) => `data: ${JSON.stringify(event)}\n\n`);
  if (done) lines.push('data: [DONE]\n\n');
  return new ReadableStream<Uint8Array>({
    start(controller) {
      for (const line of lines) controller.enqueue(encoder.encode(line));
      controller.close();
    },
  });
}

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map((part: { type?: string; text?: string }) => (part.type === 'text' ? (part.text ?? '') : '')).join('');
}

/** The stand-in `AI` binding (see the module header). */
function standInAi(): { binding: Ai; calls: RunCall[] } {
  const calls: RunCall[] = [];
  const binding = {
    // Async like the real binding: a throw becomes a rejected promise, as a failed inference is.
    async run(model: string, inputs: RunCall['inputs']): Promise<unknown> {
      calls.push({ model, inputs });
      const messages = inputs.messages ?? [];
      const users = messages.filter((message) => message.role === 'user');
      const said = textOf(users[users.length - 1]?.content);
      const toolResult = messages.find((message) => message.role === 'tool');
      if (said === 'binding error') throw new Error('3040: Capacity temporarily exceeded, please try again.');
      const usage = { prompt_tokens: 11, completion_tokens: 4, total_tokens: 15 };
      if (said === 'weather' && toolResult === undefined) {
        const call = { id: 'call_1', type: 'function', index: 0, function: { name: 'get_weather', arguments: '{"city":"Lisbon"}' } };
        if (inputs.stream !== true) return { response: '', tool_calls: [{ name: 'get_weather', arguments: { city: 'Lisbon' } }], usage, finish_reason: 'tool_calls' };
        return sse(
          [
            { response: 'Checking. ' },
            { tool_calls: [{ id: call.id, type: 'function', index: 0, function: { name: call.function.name } }] },
            { tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] },
            { tool_calls: [{ index: 0, function: { arguments: '"Lisbon"}' } }] },
            { tool_calls: [{ id: null, type: null, function: { name: null } }] },
            { response: '', usage, finish_reason: 'tool_calls' },
          ],
          true,
        );
      }
      const answer = said === 'weather' ? `Lisbon: ${textOf(toolResult?.content)}` : `echo: ${said}`;
      if (inputs.stream !== true) return { response: answer, usage, finish_reason: 'stop' };
      if (said === 'truncated') return sse([{ response: 'Half an ' }, { response: 'answer' }], false);
      return sse([{ response: answer.slice(0, 6) }, { response: answer.slice(6) }, { response: '', usage, finish_reason: 'stop' }], true);
    },
  };
  // SAFETY: the provider's chat model calls only `run` of the binding; the rest of `Ai` is absent on purpose.
  return { binding: binding as unknown as Ai, calls };
}

async function readAll(store: MemoryDurableEventStore, sessionId: string): Promise<DurableEventEnvelope[]> {
  return (await store.read(SessionId(sessionId), { limit: 1000 })).events;
}

const getWeather = defineTool({
  description: 'Current weather of a city',
  inputSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  sideEffect: 'pure',
  execute: ({ city }: { city: string }) => ({ city, sky: 'clear' }),
});

describe('workers-ai-provider inside workerd (stand-in AI binding)', () => {
  it.each([true, false])('streaming %s: a tool call, its result in the next prompt, usage, and modelIdentity v4', async (streaming) => {
    const ai = standInAi();
    const workersai = createWorkersAI({ binding: ai.binding });
    const model = workersai('@cf/meta/llama-3.1-8b-instruct');
    expect(model.specificationVersion).toBe('v4');
    const store = new MemoryDurableEventStore();
    const sessionId = `wai-${String(streaming)}`;
    const session = await createSession({ sessionId, model, streaming, tools: { get_weather: getWeather }, durableEventStore: store });
    const result = await session.run('weather');
    await session.close();
    expect(result).toMatchObject({ status: 'completed', output: 'Lisbon: {"city":"Lisbon","sky":"clear"}', usage: { inputTokens: 22, outputTokens: 8, totalTokens: 30 } });

    const events = await readAll(store, sessionId);
    const started = events.find((event) => event.type === 'model_request_started');
    expect(started?.data).toEqual({ model: '@cf/meta/llama-3.1-8b-instruct', modelIdentity: { provider: 'workersai.chat', api: 'ai-sdk.language-model.v4' }, streaming });
    const scheduled = events.find((event) => event.type === 'tool_scheduled');
    expect(scheduled?.data).toMatchObject({ toolName: 'get_weather', modelInput: { city: 'Lisbon' } });
    const completed = events.find((event) => event.type === 'model_request_completed');
    expect(completed?.data).toMatchObject({
      response: { toolCalls: [{ name: 'get_weather', arguments: { city: 'Lisbon' } }], stopReason: 'tool_use', usage: { promptTokens: 11, completionTokens: 4, totalTokens: 15 } },
    });

    expect(ai.calls.map((call) => [call.model, call.inputs.stream === true])).toEqual([
      ['@cf/meta/llama-3.1-8b-instruct', streaming],
      ['@cf/meta/llama-3.1-8b-instruct', streaming],
    ]);
    expect(ai.calls[0]?.inputs.tools).toHaveLength(1);
    const second = ai.calls[1]?.inputs.messages ?? [];
    expect(second.map((message) => message.role)).toEqual(['user', 'assistant', 'tool']);
    expect(JSON.parse(textOf(second[2]?.content))).toEqual({ city: 'Lisbon', sky: 'clear' });
  });

  it('a stream that ends without a finish reason or [DONE] fails the attempt (finish reason error, stream-truncated)', async () => {
    const ai = standInAi();
    const store = new MemoryDurableEventStore();
    const session = await createSession({ sessionId: 'wai-truncated', model: createWorkersAI({ binding: ai.binding })('@cf/meta/llama-3.1-8b-instruct'), durableEventStore: store });
    const result = await session.run('truncated');
    await session.close();
    expect(result).toMatchObject({ status: 'failed', error: { code: 'MODEL_CALL_FAILED' } });
    expect(result.error?.message).toContain('stream-truncated');
    const types = (await readAll(store, 'wai-truncated')).map((event) => event.type);
    expect(types).not.toContain('model_request_completed');
    expect(types.slice(-5)).toEqual(['model_request_started', 'model_request_failed', 'turn_aborted', 'request_failed', 'session_closed']);
  });

  it('a binding error fails the attempt with its message', async () => {
    const ai = standInAi();
    const store = new MemoryDurableEventStore();
    const session = await createSession({ sessionId: 'wai-error', model: createWorkersAI({ binding: ai.binding })('@cf/meta/llama-3.1-8b-instruct'), durableEventStore: store });
    const result = await session.run('binding error');
    await session.close();
    expect(result).toMatchObject({ status: 'failed', error: { code: 'MODEL_CALL_FAILED' } });
    expect(result.error?.message).toContain('Capacity temporarily exceeded');
  });

  it('an image given as base64 reaches the binding as a data URL (the V4 file part)', async () => {
    const ai = standInAi();
    const session = await createSession({ sessionId: 'wai-image', model: createWorkersAI({ binding: ai.binding })('@cf/meta/llama-3.2-11b-vision-instruct') });
    const result = await session.run([
      { type: 'text', text: 'look' },
      { type: 'image', mediaType: 'image/png', data: 'iVBORw0KGgo=' },
    ]);
    await session.close();
    expect(result).toMatchObject({ status: 'completed', output: 'echo: look' });
    expect(ai.calls[0]?.inputs.messages?.[0]?.content).toEqual([
      { type: 'text', text: 'look' },
      { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } },
    ]);
  });
});
