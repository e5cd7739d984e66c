/**
 * The model port against the real AI SDK provider packages, unmodified, over real HTTP (the local
 * chat-completions server of chat-server.ts): the current `@ai-sdk/openai-compatible` (3.x,
 * `LanguageModelV4`) and the previous major (2.x, `LanguageModelV3`, installed as
 * `@ai-sdk/openai-compatible-v2`). Both go through the same cases: a streamed tool call with usage,
 * the same through `doGenerate`, an error chunk mid-stream, a dropped connection, a response that
 * ends without a finish reason, an HTTP 500, and a user message with images (the one prompt part
 * whose shape differs between V3 and V4). Then the finish reasons that fail an attempt (a model of
 * the V4 specification's bare shape), and the refusal of any other `specificationVersion`.
 */
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import type { LanguageModelV4, LanguageModelV4FinishReason, LanguageModelV4StreamPart } from '@ai-sdk/provider';
import { createOpenAICompatible as createOpenAICompatibleV2 } from '@ai-sdk/openai-compatible-v2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DurableEventEnvelope } from '../../src/index.js';
import { createSession, defineTool, type SessionLanguageModel } from '../../src/session.js';
import { startChatServer, type ChatServer } from './chat-server.js';
import { collect, memoryStore, readAll, types } from './helpers.js';

let server: ChatServer;

beforeAll(async () => {
  server = await startChatServer();
});

afterAll(async () => {
  await server.close();
});

const getWeather = defineTool({
  description: 'Current weather of a city',
  inputSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  sideEffect: 'pure',
  execute: ({ city }: { city: string }) => ({ city, sky: 'sunny', celsius: 21 }),
});

const PROVIDERS: ReadonlyArray<{ name: string; version: 'v4' | 'v3'; model: () => SessionLanguageModel }> = [
  {
    name: '@ai-sdk/openai-compatible 3.x',
    version: 'v4',
    model: () => createOpenAICompatible({ name: 'local', baseURL: server.baseURL, apiKey: 'test-key', includeUsage: true }).chatModel('local-model'),
  },
  {
    name: '@ai-sdk/openai-compatible 2.x',
    version: 'v3',
    model: () => createOpenAICompatibleV2({ name: 'local', baseURL: server.baseURL, apiKey: 'test-key', includeUsage: true }).chatModel('local-model'),
  },
];

function dataOf(events: readonly DurableEventEnvelope[], type: DurableEventEnvelope['type']): Record<string, unknown> | undefined {
  // SAFETY: every event's data is a JSON object.
  return events.find((event) => event.type === type)?.data as Record<string, unknown> | undefined;
}

describe.each(PROVIDERS)('$name ($version) over real HTTP', ({ version, model }) => {
  it('reports the specification version the port expects', () => {
    expect(model().specificationVersion).toBe(version);
  });

  it.each([true, false])('streaming %s: a tool call with usage, then the answer; modelIdentity records the specification version', async (streaming) => {
    const sessionId = `s-${version}-${streaming ? 'stream' : 'generate'}`;
    const store = memoryStore();
    const session = await createSession({ sessionId, model: model(), streaming, tools: { get_weather: getWeather }, durableEventStore: store });
    const { frames, done } = collect(session);
    const before = server.received.length;
    const result = await session.run('weather in Paris?');
    await session.close();
    await done;
    expect(result).toMatchObject({ status: 'completed', output: 'The weather in Paris is sunny.', usage: { inputTokens: 60, outputTokens: 15, totalTokens: 75 } });

    const events = await readAll(store, sessionId);
    expect(types(events).slice(4, 11)).toEqual(
      streaming
        ? ['turn_started', 'model_request_started', 'tool_scheduled', 'model_request_completed', 'tool_started', 'tool_completed', 'turn_completed']
        : ['turn_started', 'model_request_started', 'model_request_completed', 'tool_scheduled', 'tool_started', 'tool_completed', 'turn_completed'],
    );
    expect(dataOf(events, 'model_request_started')).toEqual({
      model: 'local-model',
      modelIdentity: { provider: 'local.chat', api: `ai-sdk.language-model.${version}` },
      streaming,
    });
    expect(dataOf(events, 'tool_scheduled')).toMatchObject({ toolCallId: 'call_abc', toolName: 'get_weather', modelInput: { city: 'Paris' } });
    expect(dataOf(events, 'model_request_completed')?.['response']).toEqual({
      content: 'Let me check. ',
      toolCalls: [{ id: 'call_abc', name: 'get_weather', arguments: { city: 'Paris' } }],
      stopReason: 'tool_use',
      usage: { promptTokens: 20, completionTokens: 9, totalTokens: 29 },
    });
    const deltas = frames.flatMap((frame) => (frame.type === 'text_delta' ? [frame.delta] : []));
    expect(deltas.join('')).toBe(streaming ? 'Let me check. The weather in Paris is sunny.' : '');

    // The second request carries the history projected from the log, tool call and result included.
    const requests = server.received.slice(before);
    expect(requests.map((request) => request.stream === true)).toEqual([streaming, streaming]);
    expect(requests[0]?.tools?.map((tool) => tool.function.name)).toEqual(['get_weather']);
    const second = requests[1]?.messages ?? [];
    expect(second.find((message) => message.role === 'assistant')?.tool_calls).toEqual([
      { id: 'call_abc', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
    ]);
    const toolMessage = second.find((message) => message.role === 'tool');
    expect(toolMessage?.tool_call_id).toBe('call_abc');
    expect(JSON.parse(String(toolMessage?.content))).toEqual({ city: 'Paris', sky: 'sunny', celsius: 21 });
  });

  it('an error chunk mid-stream fails the attempt: model_request_failed, nothing completed', async () => {
    const sessionId = `s-${version}-error`;
    const store = memoryStore();
    const session = await createSession({ sessionId, model: model(), durableEventStore: store });
    const result = await session.run('error mid-stream');
    await session.close();
    expect(result).toMatchObject({ status: 'failed', error: { code: 'MODEL_CALL_FAILED' } });
    expect(result.error?.message).toContain('upstream overloaded');
    const events = await readAll(store, sessionId);
    expect(types(events)).not.toContain('model_request_completed');
    expect(types(events).slice(-5)).toEqual(['model_request_started', 'model_request_failed', 'turn_aborted', 'request_failed', 'session_closed']);
  });

  it('a dropped connection fails the attempt: the partial text is never committed as a response', async () => {
    const sessionId = `s-${version}-drop`;
    const store = memoryStore();
    const session = await createSession({ sessionId, model: model(), durableEventStore: store });
    const result = await session.run('drop');
    await session.close();
    expect(result).toMatchObject({ status: 'failed', error: { code: 'MODEL_CALL_FAILED' } });
    const events = await readAll(store, sessionId);
    expect(types(events)).not.toContain('model_request_completed');
    expect(types(events).slice(-5)).toEqual(['model_request_started', 'model_request_failed', 'turn_aborted', 'request_failed', 'session_closed']);
  });

  it('a response that ends without a finish reason fails the attempt', async () => {
    const sessionId = `s-${version}-cut`;
    const store = memoryStore();
    const session = await createSession({ sessionId, model: model(), durableEventStore: store });
    const result = await session.run('cut');
    await session.close();
    expect(result).toMatchObject({ status: 'failed', error: { code: 'MODEL_CALL_FAILED' } });
    expect(types(await readAll(store, sessionId))).not.toContain('model_request_completed');
  });

  it('an HTTP 500 fails the attempt with the provider message', async () => {
    const sessionId = `s-${version}-500`;
    const store = memoryStore();
    const session = await createSession({ sessionId, model: model(), durableEventStore: store });
    const result = await session.run('status 500');
    await session.close();
    expect(result).toMatchObject({ status: 'failed', error: { code: 'MODEL_CALL_FAILED' } });
    expect(result.error?.message).toContain('model overloaded');
  });

  it('a user image (bytes and URL) reaches the provider in its prompt shape', async () => {
    const store = memoryStore();
    const session = await createSession({ sessionId: `s-${version}-image`, model: model(), durableEventStore: store });
    const before = server.received.length;
    const result = await session.run([
      { type: 'text', text: 'describe' },
      { type: 'image', mediaType: 'image/png', data: 'iVBORw0KGgo=' },
      { type: 'image', mediaType: 'image/png', url: 'https://example.test/cat.png' },
    ]);
    await session.close();
    expect(result).toMatchObject({ status: 'completed', output: 'echo: describe' });
    const user = server.received[before]?.messages.find((message) => message.role === 'user');
    expect(user?.content).toEqual([
      { type: 'text', text: 'describe' },
      { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } },
      { type: 'image_url', image_url: { url: 'https://example.test/cat.png' } },
    ]);
  });
});

describe('finish reasons that say the response may be incomplete', () => {
  /** A V4 model (the specification's shape, nothing else) that streams some text, then finishes with `reason`. */
  function finishingWith(reason: LanguageModelV4FinishReason): LanguageModelV4 {
    const parts: LanguageModelV4StreamPart[] = [
      { type: 'stream-start', warnings: [] },
      { type: 'text-start', id: 't' },
      { type: 'text-delta', id: 't', delta: 'Partial' },
      { type: 'text-end', id: 't' },
      { type: 'ping' },
      {
        type: 'finish',
        finishReason: reason,
        usage: { inputTokens: { total: 3, noCache: 3, cacheRead: undefined, cacheWrite: undefined }, outputTokens: { total: 1, text: 1, reasoning: undefined } },
      },
    ];
    return {
      specificationVersion: 'v4',
      provider: 'spec',
      modelId: 'spec-model',
      supportedUrls: {},
      doGenerate: () => Promise.reject(new Error('unused')),
      doStream: () =>
        Promise.resolve({
          stream: new ReadableStream<LanguageModelV4StreamPart>({
            start(controller) {
              for (const part of parts) controller.enqueue(part);
              controller.close();
            },
          }),
        }),
    };
  }

  it.each([
    { unified: 'interrupted', raw: undefined },
    { unified: 'error', raw: 'stream-truncated' },
  ] as const)('finish reason $unified fails the attempt instead of committing the partial text', async (reason) => {
    const sessionId = `s-finish-${reason.unified}`;
    const store = memoryStore();
    const session = await createSession({ sessionId, model: finishingWith(reason), durableEventStore: store });
    const result = await session.run('hello');
    await session.close();
    expect(result).toMatchObject({ status: 'failed', error: { code: 'MODEL_CALL_FAILED' } });
    expect(result.error?.message).toContain(`finish reason ${reason.unified}`);
    expect(types(await readAll(store, sessionId))).not.toContain('model_request_completed');
  });

  it('finish reason other completes (a ping part is ignored)', async () => {
    const store = memoryStore();
    const session = await createSession({ sessionId: 's-finish-other', model: finishingWith({ unified: 'other', raw: 'whatever' }), durableEventStore: store });
    const result = await session.run('hello');
    await session.close();
    expect(result).toMatchObject({ status: 'completed', output: 'Partial' });
  });
});

describe('models of other specification versions', () => {
  const v2 = { specificationVersion: 'v2', provider: 'old', modelId: 'old-model', supportedUrls: {}, doGenerate: () => Promise.reject(new Error('unused')), doStream: () => Promise.reject(new Error('unused')) };

  it('createSession refuses them with SESSION_DURABLE_RECORDER_INVALID naming the versions it accepts', async () => {
    // SAFETY: a model of a specification the port does not accept, on purpose.
    const options = { model: v2 as unknown as SessionLanguageModel };
    await expect(createSession(options)).rejects.toMatchObject({
      code: 'SESSION_DURABLE_RECORDER_INVALID',
      message: expect.stringContaining('LanguageModelV4 or LanguageModelV3') as unknown,
    });
    await expect(createSession(options)).rejects.toThrow(/got specificationVersion "v2"/);
    // SAFETY: not a model at all, on purpose.
    await expect(createSession({ model: {} as unknown as SessionLanguageModel })).rejects.toThrow(/got no specificationVersion/);
  });

  it('send({ model }) refuses them before anything is written', async () => {
    const store = memoryStore();
    const session = await createSession({ sessionId: 's-v2-send', model: PROVIDERS[0]!.model(), durableEventStore: store });
    const head = (await readAll(store, 's-v2-send')).length;
    // SAFETY: a model of a specification the port does not accept, on purpose.
    await expect(session.send('hi', { model: v2 as unknown as SessionLanguageModel })).rejects.toMatchObject({ code: 'SESSION_DURABLE_RECORDER_INVALID' });
    expect(await readAll(store, 's-v2-send')).toHaveLength(head);
    await session.close();
  });
});
