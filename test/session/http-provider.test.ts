/**
 * The Session over real HTTP: `@ai-sdk/openai-compatible` (an unchanged AI SDK provider) against a
 * small chat-completions server started here on 127.0.0.1, streaming a tool call as server-sent
 * events (arguments split across chunks), then a text answer once the tool result comes back.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSession, defineTool } from '../../src/session.js';
import { collect, memoryStore, readAll, types } from './helpers.js';

interface ChatRequest {
  model: string;
  stream?: boolean;
  messages: Array<{ role: string; content?: unknown; tool_calls?: unknown; tool_call_id?: string }>;
  tools?: Array<{ function: { name: string } }>;
}

const received: ChatRequest[] = [];
let server: Server;
let baseURL = '';
let failNext = false;

function chunk(delta: Record<string, unknown>, finish: string | null = null, usage?: Record<string, number>): string {
  return `data: ${JSON.stringify({
    id: 'chatcmpl-1',
    object: 'chat.completion.chunk',
    created: 1_700_000_000,
    model: 'local-model',
    choices: [{ index: 0, delta, finish_reason: finish }],
    ...(usage === undefined ? {} : { usage }),
  })}\n\n`;
}

async function body(request: IncomingMessage): Promise<string> {
  let text = '';
  for await (const part of request) text += String(part);
  return text;
}

beforeAll(async () => {
  server = createServer((request, response) => {
    void (async () => {
      if (request.method !== 'POST' || request.url !== '/v1/chat/completions') {
        response.writeHead(404).end();
        return;
      }
      const chat = JSON.parse(await body(request)) as ChatRequest;
      received.push(chat);
      if (failNext) {
        failNext = false;
        response.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: 'model overloaded' } }));
        return;
      }
      response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
      const hasToolResult = chat.messages.some((message) => message.role === 'tool');
      if (!hasToolResult) {
        response.write(chunk({ role: 'assistant', content: 'Let me check. ' }));
        response.write(
          chunk({ tool_calls: [{ index: 0, id: 'call_abc', type: 'function', function: { name: 'get_weather', arguments: '' } }] }),
        );
        response.write(chunk({ tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] }));
        response.write(chunk({ tool_calls: [{ index: 0, function: { arguments: '"Paris"}' } }] }));
        response.write(chunk({}, 'tool_calls', { prompt_tokens: 20, completion_tokens: 9, total_tokens: 29 }));
      } else {
        for (const piece of ['The weather ', 'in Paris ', 'is sunny.']) response.write(chunk({ content: piece }));
        response.write(chunk({}, 'stop', { prompt_tokens: 40, completion_tokens: 6, total_tokens: 46 }));
      }
      response.end('data: [DONE]\n\n');
    })();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseURL = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
});

afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

const getWeather = defineTool({
  description: 'Current weather of a city',
  inputSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  sideEffect: 'pure',
  execute: ({ city }: { city: string }) => ({ city, sky: 'sunny', celsius: 21 }),
});

function provider() {
  return createOpenAICompatible({ name: 'local', baseURL, apiKey: 'test-key', includeUsage: true });
}

describe('an AI SDK provider over real HTTP', () => {
  it('streams a tool call as SSE, schedules it before the terminal model event, and answers with the result', async () => {
    received.length = 0;
    const store = memoryStore();
    const session = await createSession({
      sessionId: 's-http',
      model: provider().chatModel('local-model'),
      tools: { get_weather: getWeather },
      durableEventStore: store,
    });
    const { frames, done } = collect(session);
    const result = await session.run('What is the weather in Paris?');
    await session.close();
    await done;
    expect(result).toMatchObject({ status: 'completed', output: 'The weather in Paris is sunny.', usage: { inputTokens: 60, outputTokens: 15, totalTokens: 75 } });

    const events = await readAll(store, 's-http');
    expect(types(events).slice(4, 11)).toEqual([
      'turn_started',
      'model_request_started',
      'tool_scheduled',
      'model_request_completed',
      'tool_started',
      'tool_completed',
      'turn_completed',
    ]);
    const started = events.find((event) => event.type === 'model_request_started');
    expect(started?.type === 'model_request_started' && started.data).toMatchObject({ model: 'local-model', modelIdentity: { provider: 'local.chat' } });
    const scheduled = events.find((event) => event.type === 'tool_scheduled');
    expect(scheduled?.type === 'tool_scheduled' && scheduled.data).toMatchObject({ toolCallId: 'call_abc', toolName: 'get_weather', modelInput: { city: 'Paris' } });
    const completed = events.find((event) => event.type === 'model_request_completed');
    expect(completed?.type === 'model_request_completed' && completed.data.response).toMatchObject({
      content: 'Let me check. ',
      toolCalls: [{ id: 'call_abc', name: 'get_weather', arguments: { city: 'Paris' } }],
      stopReason: 'tool_use',
      usage: { promptTokens: 20, completionTokens: 9, totalTokens: 29 },
    });
    const deltas = frames.flatMap((frame) => (frame.type === 'text_delta' ? [frame.delta] : []));
    expect(deltas.join('')).toBe('Let me check. The weather in Paris is sunny.');

    // The second HTTP request carries the history projected from the log.
    expect(received).toHaveLength(2);
    expect(received[0]?.stream).toBe(true);
    expect(received[0]?.tools?.map((tool) => tool.function.name)).toEqual(['get_weather']);
    const second = received[1]!.messages;
    expect(second.find((message) => message.role === 'assistant')?.tool_calls).toEqual([
      { id: 'call_abc', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
    ]);
    expect(second.find((message) => message.role === 'tool')).toMatchObject({ tool_call_id: 'call_abc' });
    expect(JSON.parse(String(second.find((message) => message.role === 'tool')?.content))).toEqual({ city: 'Paris', sky: 'sunny', celsius: 21 });
  });

  it('an HTTP failure becomes model_request_failed, then turn_aborted and request_failed', async () => {
    const store = memoryStore();
    const session = await createSession({ sessionId: 's-http-fail', model: provider().chatModel('local-model'), durableEventStore: store });
    failNext = true;
    const result = await session.run('hello');
    expect(result).toMatchObject({ status: 'failed', error: { code: 'MODEL_CALL_FAILED' } });
    expect(result.error?.message).toContain('model overloaded');
    expect(types(await readAll(store, 's-http-fail')).slice(-4)).toEqual(['model_request_started', 'model_request_failed', 'turn_aborted', 'request_failed']);
  });
});
