/**
 * {@link AgentChatTransport}: the AI SDK UI `ChatTransport` (what `useChat` of `@ai-sdk/react`,
 * `@ai-sdk/svelte` and `@ai-sdk/vue` calls; AI SDK 6 and 7) over {@link AgentSessionClient}, so a
 * chat UI points at an agent session and gets the ledger's resume for free.
 *
 * This module does not import `ai`: the message and chunk types below are the subset of the AI
 * SDK's `UIMessage` and `UIMessageChunk` it reads and writes, declared structurally (the tests
 * check that the transport is assignable to `ChatTransport` of both majors).
 *
 * - `sendMessages` (`submit-message`): the last user message becomes a request (its text and file
 *   parts; the message ID is the `commandId`, so sending the same message twice runs it once),
 *   and the stream carries that request's run as chunks: a step per turn, text (and reasoning) per
 *   model attempt, a dynamic tool part per tool call with its output, and `finish` at its terminal
 *   event. `regenerate-message` sends the last user message again as a new request.
 * - Permissions: a tool waiting for a permission shows as `tool-approval-request` (the approval ID
 *   is the `permissionRequestId`) and the stream finishes there. `addToolApprovalResponse` then
 *   (with `sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses`) calls
 *   `sendMessages` with the answered assistant message: the transport answers the permissions
 *   (`allow`/`deny`, the reason as the message) and streams the rest of the same request into the
 *   same message.
 * - A dropped connection never reaches the chat: the client reconnects after its cursor and the
 *   text continues where it stopped. `reconnectToStream` (`resumeStream()`, e.g. after a reload)
 *   answers `null` when the agent is idle, else replays the running request from its first event
 *   (`resumeStreamIsReplay`), then follows it live.
 * - `stop()` aborts the request in the session object (`abortOnStop`, default true).
 */
import { DurableEventStoreError } from '../protocol/errors.js';
import type { ContentPart, DurableInput, ModelResponse } from '../protocol/event-payloads.js';
import type { DurableEventEnvelope } from '../protocol/events.js';
import {
  AgentSessionClient,
  type AgentSendOptions,
  type AgentSessionClientOptions,
  type AgentStream,
  type AgentStreamItem,
} from './agent-session-client.js';

/** The part of an AI SDK `UIMessage` part the transport reads (`type`, plus fields by kind). */
export interface AgentUIPartLike {
  readonly type: string;
}

/** The part of an AI SDK `UIMessage` the transport reads. */
export interface AgentUIMessageLike {
  readonly id: string;
  readonly role: 'system' | 'user' | 'assistant';
  readonly parts: readonly AgentUIPartLike[];
}

/** The AI SDK `UIMessageChunk`s the transport writes (the same shapes in AI SDK 6 and 7). */
export type AgentUIMessageChunk =
  | { type: 'start'; messageId?: string }
  | { type: 'start-step' }
  | { type: 'finish-step' }
  | { type: 'text-start'; id: string }
  | { type: 'text-delta'; id: string; delta: string }
  | { type: 'text-end'; id: string }
  | { type: 'reasoning-start'; id: string }
  | { type: 'reasoning-delta'; id: string; delta: string }
  | { type: 'reasoning-end'; id: string }
  | { type: 'tool-input-available'; toolCallId: string; toolName: string; input: unknown; dynamic?: boolean }
  | { type: 'tool-approval-request'; approvalId: string; toolCallId: string }
  | { type: 'tool-output-available'; toolCallId: string; output: unknown; dynamic?: boolean }
  | { type: 'tool-output-error'; toolCallId: string; errorText: string; dynamic?: boolean }
  | { type: 'tool-output-denied'; toolCallId: string }
  | { type: `data-${string}`; id?: string; data: unknown; transient?: boolean }
  | { type: 'error'; errorText: string }
  | { type: 'finish'; finishReason?: 'stop' | 'tool-calls' | 'error' | 'other' };

/** The options `useChat` passes to `sendMessages` that the transport reads. */
export interface AgentSendMessagesOptions {
  trigger: 'submit-message' | 'regenerate-message';
  chatId: string;
  messageId: string | undefined;
  messages: readonly AgentUIMessageLike[];
  abortSignal: AbortSignal | undefined;
  /** `useChat`'s request body: `priority`, `maxTurns`, `model`, `context` are passed to the request. */
  body?: object | undefined;
}

/** The options `useChat` passes to `reconnectToStream` that the transport reads. */
export interface AgentReconnectToStreamOptions {
  chatId: string;
  abortSignal?: AbortSignal | undefined;
}

/** Options of {@link AgentChatTransport}: the client's, without the session (one per chat). */
export interface AgentChatTransportOptions extends Omit<AgentSessionClientOptions, 'sessionId' | 'cursorStore'> {
  /** The session of a chat (default: the chat ID). */
  sessionIdOf?: (chatId: string) => string;
  /** `stop()` aborts the running request in the session object (default true). */
  abortOnStop?: boolean;
}

/** Where an answered permission's request continues. */
interface ApprovalPoint {
  requestId: string;
  /** Cursor and sequence of its `permission_requested` event. */
  cursor: string;
  sequence: number;
}

function field(part: AgentUIPartLike, key: string): unknown {
  return (part as unknown as Record<string, unknown>)[key];
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The request input of a user message: its text parts, and its file parts as content parts. */
function inputOf(message: AgentUIMessageLike): DurableInput {
  const parts: ContentPart[] = [];
  for (const part of message.parts) {
    const text = field(part, 'text');
    const url = field(part, 'url');
    const mediaType = field(part, 'mediaType');
    if (part.type === 'text' && typeof text === 'string') {
      parts.push({ type: 'text', text });
    } else if (part.type === 'file' && typeof url === 'string' && typeof mediaType === 'string') {
      const name = field(part, 'filename');
      parts.push(
        mediaType.startsWith('image/')
          ? { type: 'image', mediaType, url }
          : { type: 'file', mediaType, url, ...(typeof name === 'string' ? { name } : {}) },
      );
    }
  }
  if (parts.length === 0) throw new DurableEventStoreError('DURABLE_EVENT_INVALID_INPUT', 'the message has no text or file part to send');
  if (parts.every((part) => part.type === 'text')) return parts.map((part) => (part as { text: string }).text).join('\n');
  return parts;
}

/** The request options a chat may pass in its body. */
function sendOptionsOf(body: object | undefined): Omit<AgentSendOptions, 'commandId'> {
  if (!isRecord(body)) return {};
  const options: Omit<AgentSendOptions, 'commandId'> = {};
  const { priority, maxTurns, model, context } = body;
  if (priority === 'now' || priority === 'next' || priority === 'later') options.priority = priority;
  if (typeof maxTurns === 'number') options.maxTurns = maxTurns;
  if (typeof model === 'string') options.model = model;
  // SAFETY: the server validates the context as JSON; a wrong value is refused with a 400.
  if (isRecord(context)) options.context = context as AgentSendOptions['context'];
  return options;
}

/** The text of a completed model response. */
function responseText(response: ModelResponse): string {
  const content = response.content;
  return typeof content === 'string' ? content : content.map((part) => (part.type === 'text' ? part.text : '')).join('');
}

/** Turns the stream items of one request into chunks (see the module header). */
class RequestChunks {
  /** Text handed out per model attempt whose text part is open. */
  readonly #text = new Map<string, string>();
  readonly #reasoning = new Set<string>();
  #stepOpen = false;
  #caughtUp = false;
  /** Permissions asked during the replay and not yet answered in it. */
  readonly #asked = new Set<string>();
  finished = false;

  constructor(
    readonly requestId: string,
    /** Permissions whose `permission_requested` must pass before anything is handed out. */
    readonly skipThrough: Set<string>,
    readonly onApproval: (permissionRequestId: string, point: ApprovalPoint) => void,
  ) {}

  map(item: AgentStreamItem): AgentUIMessageChunk[] {
    if (item.type === 'caught_up') {
      this.#caughtUp = true;
      return this.#asked.size > 0 && this.skipThrough.size === 0 ? this.#finish('tool-calls') : [];
    }
    if (item.type === 'durability') return [];
    const requestId = item.type === 'event' ? ('requestId' in item.event ? item.event.requestId : undefined) : item.requestId;
    if (requestId === undefined || requestId !== this.requestId) return [];
    if (item.type !== 'event') {
      if (this.skipThrough.size > 0) return [];
      return this.#transient(item);
    }
    const event = item.event;
    if (this.skipThrough.size > 0) {
      if (event.type === 'permission_requested') this.skipThrough.delete(event.data.permissionRequestId);
      return [];
    }
    return this.#event(event, item.cursor);
  }

  #transient(item: Exclude<AgentStreamItem, { type: 'event' | 'caught_up' | 'durability' }>): AgentUIMessageChunk[] {
    switch (item.type) {
      case 'text_delta': {
        const seen = this.#text.get(item.modelAttemptId);
        this.#text.set(item.modelAttemptId, (seen ?? '') + item.delta);
        return [
          ...(seen === undefined ? [{ type: 'text-start' as const, id: item.modelAttemptId }] : []),
          { type: 'text-delta', id: item.modelAttemptId, delta: item.delta },
        ];
      }
      case 'reasoning_delta': {
        const id = `${item.modelAttemptId}:reasoning`;
        const started = this.#reasoning.has(id);
        this.#reasoning.add(id);
        return [...(started ? [] : [{ type: 'reasoning-start' as const, id }]), { type: 'reasoning-delta', id, delta: item.delta }];
      }
      case 'tool_progress':
        return [
          {
            type: 'data-tool-progress',
            id: item.toolAttemptId,
            data: { toolCallId: item.toolCallId, toolName: item.toolName, progress: item.data },
            transient: true,
          },
        ];
      default:
        // A partial_response that does not extend the text handed out cannot be expressed as chunks.
        return [];
    }
  }

  #event(event: DurableEventEnvelope, cursor: string): AgentUIMessageChunk[] {
    switch (event.type) {
      case 'turn_started':
        this.#stepOpen = true;
        return [{ type: 'start-step' }];
      case 'turn_completed':
      case 'turn_aborted':
        return this.#endStep();
      case 'model_request_completed': {
        const full = responseText(event.data.response);
        const seen = this.#text.get(event.modelAttemptId);
        const out: AgentUIMessageChunk[] = [];
        // Replayed from the log (no deltas), or the tail the deltas did not bring.
        if (seen === undefined && full !== '') out.push({ type: 'text-start', id: event.modelAttemptId });
        if (full.length > (seen ?? '').length && full.startsWith(seen ?? '')) {
          out.push({ type: 'text-delta', id: event.modelAttemptId, delta: full.slice((seen ?? '').length) });
        }
        if (seen !== undefined || full !== '') this.#text.set(event.modelAttemptId, full);
        return [...out, ...this.#endAttempt(event.modelAttemptId)];
      }
      case 'model_request_failed':
      case 'model_request_aborted':
        return this.#endAttempt(event.modelAttemptId);
      case 'tool_scheduled':
        return [{ type: 'tool-input-available', toolCallId: event.data.toolCallId, toolName: event.data.toolName, input: event.data.input, dynamic: true }];
      case 'tool_completed':
        return [{ type: 'tool-output-available', toolCallId: event.data.toolCallId, output: event.data.result, dynamic: true }];
      case 'tool_failed':
        return [{ type: 'tool-output-error', toolCallId: event.data.toolCallId, errorText: event.data.error.message, dynamic: true }];
      case 'tool_cancelled':
        return event.data.reason === 'permission_denied' || event.data.reason === 'permission_cancelled'
          ? [{ type: 'tool-output-denied', toolCallId: event.data.toolCallId }]
          : [{ type: 'tool-output-error', toolCallId: event.data.toolCallId, errorText: `cancelled (${event.data.reason})`, dynamic: true }];
      case 'permission_requested': {
        const id = event.data.permissionRequestId;
        this.onApproval(id, { requestId: event.requestId, cursor, sequence: event.sequence });
        const ask: AgentUIMessageChunk = { type: 'tool-approval-request', approvalId: id, toolCallId: event.data.toolCallId };
        if (this.#caughtUp) return [ask, ...this.#finish('tool-calls')];
        this.#asked.add(id);
        return [ask];
      }
      case 'permission_resolved':
        this.#asked.delete(event.data.permissionRequestId);
        return [];
      case 'request_completed':
        return this.#finish('stop');
      case 'request_interrupted':
        return this.#finish('other');
      case 'request_failed':
        return [...this.#closeParts(), { type: 'error', errorText: event.data.error.message }, ...this.#finishOnly('error')];
      default:
        return [];
    }
  }

  #endAttempt(modelAttemptId: string): AgentUIMessageChunk[] {
    const out: AgentUIMessageChunk[] = [];
    if (this.#text.delete(modelAttemptId)) out.push({ type: 'text-end', id: modelAttemptId });
    const reasoning = `${modelAttemptId}:reasoning`;
    if (this.#reasoning.delete(reasoning)) out.push({ type: 'reasoning-end', id: reasoning });
    return out;
  }

  #closeParts(): AgentUIMessageChunk[] {
    const out: AgentUIMessageChunk[] = [];
    for (const id of this.#text.keys()) out.push({ type: 'text-end', id });
    for (const id of this.#reasoning) out.push({ type: 'reasoning-end', id });
    this.#text.clear();
    this.#reasoning.clear();
    return out;
  }

  #endStep(): AgentUIMessageChunk[] {
    const out = this.#closeParts();
    if (this.#stepOpen) out.push({ type: 'finish-step' });
    this.#stepOpen = false;
    return out;
  }

  #finishOnly(reason: 'stop' | 'tool-calls' | 'error' | 'other'): AgentUIMessageChunk[] {
    this.finished = true;
    return [{ type: 'finish', finishReason: reason }];
  }

  #finish(reason: 'stop' | 'tool-calls' | 'other'): AgentUIMessageChunk[] {
    return [...this.#endStep(), ...this.#finishOnly(reason)];
  }
}

/** The chat transport (see the module header). */
export class AgentChatTransport {
  /** A reconnect replays the running request from its start. */
  readonly resumeStreamIsReplay = true;
  readonly #options: AgentChatTransportOptions;
  readonly #clients = new Map<string, AgentSessionClient>();
  readonly #approvals = new Map<string, ApprovalPoint>();
  readonly #open = new Set<AgentStream>();

  constructor(options: AgentChatTransportOptions) {
    this.#options = options;
  }

  /** The client of a chat's session (one per chat, kept by the transport). */
  client(chatId: string): AgentSessionClient {
    let client = this.#clients.get(chatId);
    if (client === undefined) {
      const { sessionIdOf, abortOnStop: _abortOnStop, ...clientOptions } = this.#options;
      client = new AgentSessionClient({ ...clientOptions, sessionId: sessionIdOf === undefined ? chatId : sessionIdOf(chatId) });
      this.#clients.set(chatId, client);
    }
    return client;
  }

  /** `ChatTransport.sendMessages` (see the module header). */
  async sendMessages(options: AgentSendMessagesOptions): Promise<ReadableStream<AgentUIMessageChunk>> {
    const client = this.client(options.chatId);
    const last = options.messages.at(-1);
    if (last?.role === 'assistant') return this.#continueAfterApprovals(client, last, options.abortSignal);
    const user = options.messages.findLast((message) => message.role === 'user');
    if (user === undefined) throw new DurableEventStoreError('DURABLE_EVENT_INVALID_INPUT', 'there is no user message to send');
    const after = client.cursor ?? null;
    const accepted = await client.send(inputOf(user), {
      ...sendOptionsOf(options.body),
      ...(options.trigger === 'submit-message' ? { commandId: user.id } : {}),
    });
    return this.#requestStream(client, new RequestChunks(accepted.requestId, new Set(), this.#remember), after, options.abortSignal);
  }

  /** `ChatTransport.reconnectToStream`: the running request replayed from its start, or null. */
  async reconnectToStream(options: AgentReconnectToStreamOptions): Promise<ReadableStream<AgentUIMessageChunk> | null> {
    const client = this.client(options.chatId);
    const status = await client.status();
    if (status.activeRequestId === null) return null;
    return this.#requestStream(client, new RequestChunks(status.activeRequestId, new Set(), this.#remember), null, options.abortSignal);
  }

  /** Ends every stream the transport has open. */
  close(): void {
    for (const stream of this.#open) stream.close();
    this.#open.clear();
  }

  readonly #remember = (permissionRequestId: string, point: ApprovalPoint): void => {
    this.#approvals.set(permissionRequestId, point);
  };

  async #continueAfterApprovals(
    client: AgentSessionClient,
    message: AgentUIMessageLike,
    abortSignal: AbortSignal | undefined,
  ): Promise<ReadableStream<AgentUIMessageChunk>> {
    const answers: Array<{ id: string; approved: boolean; reason: string | undefined }> = [];
    for (const part of message.parts) {
      const approval = field(part, 'approval');
      if (field(part, 'state') !== 'approval-responded' || !isRecord(approval) || typeof approval['id'] !== 'string') continue;
      const reason = approval['reason'];
      answers.push({ id: approval['id'], approved: approval['approved'] === true, reason: typeof reason === 'string' ? reason : undefined });
    }
    if (answers.length === 0) {
      throw new DurableEventStoreError('DURABLE_EVENT_INVALID_INPUT', 'the last message is the assistant’s and answers no approval');
    }
    for (const answer of answers) {
      await client.answerPermission(answer.id, answer.approved ? 'allow' : 'deny', answer.reason === undefined ? {} : { message: answer.reason });
    }
    const points = answers.map((answer) => this.#approvals.get(answer.id));
    const known = points.every((point) => point !== undefined);
    const requestId = points.find((point) => point !== undefined)?.requestId ?? (await client.status()).activeRequestId;
    if (requestId === null) throw new DurableEventStoreError('DURABLE_EVENT_INVALID_INPUT', 'no request waits for these approvals');
    // Known points: continue after the last of them. Otherwise (a reloaded page) replay the log and
    // hand out nothing up to the answered permission requests.
    let after: string | null = null;
    if (known) {
      const last = points.reduce((latest, point) => (point !== undefined && point.sequence > (latest?.sequence ?? 0) ? point : latest));
      after = last?.cursor ?? null;
    }
    const skip = known ? new Set<string>() : new Set(answers.map((answer) => answer.id));
    return this.#requestStream(client, new RequestChunks(requestId, skip, this.#remember), after, abortSignal, false);
  }

  #requestStream(
    client: AgentSessionClient,
    chunks: RequestChunks,
    after: string | null,
    abortSignal: AbortSignal | undefined,
    start = true,
  ): ReadableStream<AgentUIMessageChunk> {
    const stream = client.stream({ after });
    this.#open.add(stream);
    const items = stream[Symbol.asyncIterator]();
    const end = (): void => {
      stream.close();
      this.#open.delete(stream);
    };
    if (abortSignal !== undefined) {
      const onStop = (): void => {
        end();
        if (this.#options.abortOnStop !== false && !chunks.finished) {
          client.abort(chunks.requestId).catch(() => undefined);
        }
      };
      if (abortSignal.aborted) onStop();
      else abortSignal.addEventListener('abort', onStop, { once: true });
    }
    return new ReadableStream<AgentUIMessageChunk>(
      {
        start(controller) {
          if (start) controller.enqueue({ type: 'start', messageId: chunks.requestId });
        },
        async pull(controller) {
          try {
            for (;;) {
              const next = await items.next();
              if (next.done === true) {
                end();
                controller.close();
                return;
              }
              const out = chunks.map(next.value);
              for (const chunk of out) controller.enqueue(chunk);
              if (chunks.finished) {
                end();
                controller.close();
                return;
              }
              if (out.length > 0) return;
            }
          } catch (error) {
            end();
            controller.error(error);
          }
        },
        cancel() {
          end();
        },
      },
      { highWaterMark: 0 },
    );
  }
}

/** A {@link AgentChatTransport}: `useChat({ id: sessionId, transport: createAgentChatTransport({ baseUrl, token }) })`. */
export function createAgentChatTransport(options: AgentChatTransportOptions): AgentChatTransport {
  return new AgentChatTransport(options);
}
