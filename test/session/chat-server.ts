/**
 * A small OpenAI-compatible chat-completions server on 127.0.0.1 for the provider tests: real HTTP,
 * real server-sent events, and the failures a provider meets in the field. What it answers is
 * chosen by the text of the request's last user message:
 *
 * - `weather ...` (or a message with the word ` weather `): a call of the request's weather tool
 *   (`get_weather` unless it offers another, arguments split across chunks) with usage, then, once
 *   the request carries the tool result, a streamed text answer with usage;
 * - `error mid-stream`: two text chunks, then an error chunk (`{ "error": { ... } }`) and the end;
 * - `drop`: two text chunks, then the connection is destroyed (no finish, no `[DONE]`);
 * - `cut`: two text chunks, then an orderly end of the response without a finish reason or `[DONE]`;
 * - `status 500`: an HTTP 500 with an error body;
 * - anything else: the text `echo: <the message>` (all parts of a user message that are text).
 *
 * A request with `stream: false` gets the same answers as one JSON completion (`drop`, `cut` and
 * `error mid-stream` apart, which only make sense streamed). Every parsed request is recorded.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ChatMessage {
  role: string;
  content?: unknown;
  tool_calls?: unknown;
  tool_call_id?: string;
}

export interface ChatRequest {
  model: string;
  stream?: boolean;
  messages: ChatMessage[];
  tools?: Array<{ function: { name: string } }>;
}

export interface ChatServer {
  /** `http://127.0.0.1:<port>/v1` */
  baseURL: string;
  received: ChatRequest[];
  close(): Promise<void>;
}

type Usage = { prompt_tokens: number; completion_tokens: number; total_tokens: number };
type ToolCall = { id: string; name: string; arguments: string };

function chunk(delta: Record<string, unknown>, finish: string | null = null, usage?: Usage): string {
  return `data: ${JSON.stringify({
    id: 'chatcmpl-1',
    object: 'chat.completion.chunk',
    created: 1_700_000_000,
    model: 'local-model',
    choices: [{ index: 0, delta, finish_reason: finish }],
    ...(usage === undefined ? {} : { usage }),
  })}\n\n`;
}

function completion(content: string, toolCalls: ToolCall[], usage: Usage): string {
  return JSON.stringify({
    id: 'chatcmpl-1',
    object: 'chat.completion',
    created: 1_700_000_000,
    model: 'local-model',
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content,
          ...(toolCalls.length === 0
            ? {}
            : { tool_calls: toolCalls.map((call) => ({ id: call.id, type: 'function', function: { name: call.name, arguments: call.arguments } })) }),
        },
        finish_reason: toolCalls.length === 0 ? 'stop' : 'tool_calls',
      },
    ],
    usage,
  });
}

async function body(request: IncomingMessage): Promise<string> {
  let text = '';
  for await (const part of request) text += String(part);
  return text;
}

/** The text parts of a message's content (a string, or OpenAI content parts). */
export function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map((part: { type?: string; text?: string }) => (part.type === 'text' ? (part.text ?? '') : '')).join('');
}

function answer(chat: ChatRequest, response: ServerResponse): void {
  const users = chat.messages.filter((message) => message.role === 'user');
  const said = textOf(users[users.length - 1]?.content);
  const hasToolResult = chat.messages.some((message) => message.role === 'tool');
  if (said === 'status 500') {
    response.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: 'model overloaded' } }));
    return;
  }
  let text: string[];
  let toolCalls: ToolCall[] = [];
  let usage: Usage;
  // The request's own weather tool (`get_weather`, `getWeather`, ...), if it offers one.
  const weatherTool = chat.tools?.map((tool) => tool.function.name).find((name) => /weather/i.test(name)) ?? 'get_weather';
  const aboutWeather = said.startsWith('weather') || said.includes(' weather ');
  if (aboutWeather && !hasToolResult) {
    text = ['Let me check. '];
    toolCalls = [{ id: 'call_abc', name: weatherTool, arguments: '{"city":"Paris"}' }];
    usage = { prompt_tokens: 20, completion_tokens: 9, total_tokens: 29 };
  } else if (aboutWeather) {
    text = ['The weather ', 'in Paris ', 'is sunny.'];
    usage = { prompt_tokens: 40, completion_tokens: 6, total_tokens: 46 };
  } else {
    text = ['echo: ', said];
    usage = { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 };
  }
  if (chat.stream !== true) {
    response.writeHead(200, { 'content-type': 'application/json' }).end(completion(text.join(''), toolCalls, usage));
    return;
  }
  response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
  if (said === 'error mid-stream' || said === 'drop' || said === 'cut') {
    response.write(chunk({ role: 'assistant', content: 'Partial ' }));
    response.write(chunk({ content: 'answer' }));
    if (said === 'drop') {
      // The socket goes away mid-response: no finish reason, no [DONE], no orderly end.
      response.socket?.destroy();
      return;
    }
    if (said === 'cut') {
      response.end();
      return;
    }
    response.end(`data: ${JSON.stringify({ error: { message: 'upstream overloaded', type: 'server_error', code: 'overloaded' } })}\n\n`);
    return;
  }
  for (const [index, piece] of text.entries()) response.write(chunk(index === 0 ? { role: 'assistant', content: piece } : { content: piece }));
  for (const [index, call] of toolCalls.entries()) {
    response.write(chunk({ tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } }] }));
    // The arguments arrive split across chunks, as real providers send them.
    const half = Math.floor(call.arguments.length / 2);
    response.write(chunk({ tool_calls: [{ index, function: { arguments: call.arguments.slice(0, half) } }] }));
    response.write(chunk({ tool_calls: [{ index, function: { arguments: call.arguments.slice(half) } }] }));
  }
  response.write(chunk({}, toolCalls.length === 0 ? 'stop' : 'tool_calls', usage));
  response.end('data: [DONE]\n\n');
}

/** Starts the server on an ephemeral port of 127.0.0.1. */
export async function startChatServer(): Promise<ChatServer> {
  const received: ChatRequest[] = [];
  const server: Server = createServer((request, response) => {
    void (async () => {
      if (request.method !== 'POST' || request.url !== '/v1/chat/completions') {
        response.writeHead(404).end();
        return;
      }
      const chat = JSON.parse(await body(request)) as ChatRequest;
      received.push(chat);
      answer(chat, response);
    })();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    baseURL: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    received,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
