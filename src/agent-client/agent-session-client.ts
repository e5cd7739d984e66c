/**
 * {@link AgentSessionClient}: one agent session of an agent-ledger Worker, from a browser app or
 * Node, with `fetch` only (no WebSocket, no EventSource, no framework).
 *
 * - Actions are the agent routes (`docs/edge-agents.md`): {@link AgentSessionClient.send} a
 *   request (idempotent by `commandId`), {@link AgentSessionClient.steer},
 *   {@link AgentSessionClient.abort}, {@link AgentSessionClient.answerPermission},
 *   {@link AgentSessionClient.status}.
 * - {@link AgentSessionClient.stream} reads `GET .../subscribe?frames=all` as Server-Sent Events
 *   over a streamed fetch body: the durable `event` frames (each with its cursor), `caught_up`,
 *   and the transient frames of the run (token deltas, tool progress). When the connection drops
 *   it reconnects after the cursor of the last event it handed out: the server replays the events
 *   after it, so none is missed or repeated (the client also drops any event at or below the last
 *   sequence it handed out), and the text in flight continues where the consumer left it
 *   (`response-text.ts`).
 * - The last cursor is kept by the client and, with a {@link AgentCursorStore}, saved where the
 *   app wants (`localStorage` through {@link webStorageCursorStore}), so a reloaded page resumes too.
 *
 * Errors are the ledger's classes with their codes: a problem+json answer is rebuilt into its
 * class (`errorFromProblemResponse`), a transport failure of an action is
 * `DURABLE_EVENT_WRITE_FAILED` (outcome unknown: `send` again with the same `commandId`) or, for
 * reads, `DURABLE_EVENT_UNAVAILABLE`; a deadline is `DURABLE_EVENT_IO_TIMEOUT`.
 */
import type {
  AgentAbortResult,
  AgentPermissionReceipt,
  AgentRequestAccepted,
  AgentStatus,
  AgentSteerAccepted,
} from '../adapters/durable-object/agent-rpc.js';
import { errorFromProblemResponse } from '../adapters/http/problem.js';
import { systemTime, type TimeSource } from '../core/time.js';
import { decodeDurableEventCursor } from '../protocol/cursor.js';
import { DurableError, DurableEventStoreError, durableErrorFromJson, type DurableEventStoreErrorCode } from '../protocol/errors.js';
import type { DurableInput, PermissionDecision } from '../protocol/event-payloads.js';
import {
  SUBSCRIBER_SLOW_ERROR_CODE,
  parseSubscriptionFrame,
  type SubscriberErrorMessage,
  type SubscriptionFrame,
} from '../protocol/frames.js';
import { HTTP_PATHS, httpPath } from '../protocol/http-paths.js';
import { isValidId } from '../protocol/ids.js';
import type { JsonObject } from '../protocol/json.js';
import { ResponseTextTracker } from './response-text.js';
import { readSseMessages } from './sse-reader.js';

/** Default deadline of one action call. */
export const AGENT_CLIENT_TIMEOUT_MS = 30_000;

/** `fetch` as the client calls it. */
export type AgentClientFetch = (input: string, init: RequestInit) => Promise<Response>;

/** Where the client keeps the last cursor it handed out (see {@link webStorageCursorStore}). */
export interface AgentCursorStore {
  /** The saved cursor, if any (called once, before the first stream connects). */
  load(): string | null | undefined | Promise<string | null | undefined>;
  /** Saves a cursor (called for every event handed out; keep it cheap and synchronous). */
  save(cursor: string): void;
}

/** The two methods of the Web Storage API (`localStorage`, `sessionStorage`) the store uses. */
export interface WebStorageLike {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
}

/** A cursor store over `localStorage` or `sessionStorage`, under one key. */
export function webStorageCursorStore(storage: WebStorageLike, key: string): AgentCursorStore {
  return {
    load: () => storage.getItem(key),
    save: (cursor) => storage.setItem(key, cursor),
  };
}

/** Options of {@link AgentSessionClient}. */
export interface AgentSessionClientOptions {
  /** The Worker's origin, e.g. `https://agents.example.com` (paths are added to it). */
  baseUrl: string | URL;
  sessionId: string;
  /** Bearer token (a session token with `request`, `permission`, `subscribe`, `read`). */
  token?: string;
  /** Called before each call and each (re)connect instead of `token` (a token that expires). */
  getToken?: () => string | Promise<string>;
  /** Default: the global `fetch`. */
  fetch?: AgentClientFetch;
  /** Deadline of one action call (default {@link AGENT_CLIENT_TIMEOUT_MS}). */
  timeoutMs?: number;
  /** Where the last cursor is saved (default: in this client only). */
  cursorStore?: AgentCursorStore;
  /**
   * Delay before reconnect attempt `attempt` (1, 2, ...) after a failure; default 250 ms doubling
   * up to 5 s. A stream that ended normally (the server's lifetime) reconnects at once.
   */
  reconnectDelayMs?: (attempt: number) => number;
  /** Failed connects in a row before the stream gives up with the last error (default unlimited). */
  maxReconnectAttempts?: number;
  /** Clocks and timers (deadlines, reconnect delays); default the host's. */
  time?: TimeSource;
}

/** Options of {@link AgentSessionClient.send}. */
export interface AgentSendOptions {
  /** Idempotency key (default: a random UUID). Send again with the same one after an unknown outcome. */
  commandId?: string;
  /** `now` interrupts the running request; `next` (default) and `later` queue behind it. */
  priority?: 'now' | 'next' | 'later';
  maxTurns?: number;
  /** A model name the session object mounts. */
  model?: string;
  /** Runtime context persisted with the request and handed to tools. */
  context?: JsonObject;
}

/** What a stream hands out: every frame of the subscription except `error` (which ends or restarts it). */
export type AgentStreamItem = Exclude<SubscriptionFrame, SubscriberErrorMessage>;

/** A reconnect the stream is about to make. */
export interface AgentReconnectInfo {
  /** Failed connects in a row (0 after a stream that ended normally). */
  readonly attempt: number;
  /** Why the last connection ended (undefined when it ended normally). */
  readonly error: DurableError | undefined;
  readonly delayMs: number;
  /** The cursor it resumes after (undefined: from the first event). */
  readonly cursor: string | undefined;
}

/** Options of {@link AgentSessionClient.stream}. */
export interface AgentStreamOptions {
  /**
   * Where to start: a cursor (events after it), `null` (the whole log), or undefined (default: the
   * client's last cursor, loaded from the cursor store; the whole log when there is none).
   */
  after?: string | null;
  /** Ends the stream (the loop over it finishes without an error). */
  signal?: AbortSignal;
  /** Called before each reconnect. */
  onReconnect?: (info: AgentReconnectInfo) => void;
}

/** A running subscription: iterate it (once) for its items; `close()` ends it. */
export interface AgentStream extends AsyncIterable<AgentStreamItem> {
  /** The cursor of the last event handed out (undefined before the first). */
  readonly cursor: string | undefined;
  /** Ends the stream: the connection is closed and the iteration finishes. */
  close(): void;
}

function defaultReconnectDelay(attempt: number): number {
  return Math.min(5_000, 250 * 2 ** Math.max(0, attempt - 1));
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function hasStrings(value: unknown, keys: readonly string[]): value is Record<string, unknown> {
  return isRecord(value) && keys.every((key) => typeof value[key] === 'string');
}

function checkId(value: unknown, what: string): string {
  if (!isValidId(value)) throw new DurableEventStoreError('DURABLE_EVENT_INVALID_INPUT', `${what} must be a valid ID`);
  return value;
}

/** Statuses after which a reconnect may succeed (the server or a proxy was unavailable). */
function retryableStatus(status: number): boolean {
  return status >= 500 || status === 408 || status === 429;
}

/** Events that end a model attempt (its text in flight is settled). */
const MODEL_TERMINAL = new Set(['model_request_completed', 'model_request_failed', 'model_request_aborted']);

/** A subscription ended by the stream itself (close, signal). */
class StreamClosed extends Error {}

/** The client of one agent session (see the module header). */
export class AgentSessionClient {
  readonly sessionId: string;
  readonly #base: string;
  readonly #token: string | undefined;
  readonly #getToken: (() => string | Promise<string>) | undefined;
  readonly #fetch: AgentClientFetch;
  readonly #timeoutMs: number;
  readonly #cursorStore: AgentCursorStore | undefined;
  readonly #reconnectDelay: (attempt: number) => number;
  readonly #maxReconnects: number;
  readonly #time: TimeSource;
  #cursor: string | undefined;
  #cursorSequence = 0;
  #cursorLoaded = false;

  constructor(options: AgentSessionClientOptions) {
    this.sessionId = checkId(options.sessionId, 'sessionId');
    this.#base = String(options.baseUrl).replace(/\/+$/, '');
    this.#token = options.token;
    this.#getToken = options.getToken;
    this.#fetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
    this.#timeoutMs = options.timeoutMs ?? AGENT_CLIENT_TIMEOUT_MS;
    this.#cursorStore = options.cursorStore;
    this.#reconnectDelay = options.reconnectDelayMs ?? defaultReconnectDelay;
    this.#maxReconnects = options.maxReconnectAttempts ?? Number.POSITIVE_INFINITY;
    this.#time = options.time ?? systemTime;
  }

  /** The cursor of the last event any stream of this client handed out (or the loaded one). */
  get cursor(): string | undefined {
    return this.#cursor;
  }

  /** Sends a request to the agent; answers once it is stored (it runs in the session object). */
  async send(input: DurableInput, options: AgentSendOptions = {}): Promise<AgentRequestAccepted> {
    const commandId = options.commandId ?? globalThis.crypto.randomUUID();
    const body = {
      commandId,
      input,
      ...(options.priority === undefined ? {} : { priority: options.priority }),
      ...(options.maxTurns === undefined ? {} : { maxTurns: options.maxTurns }),
      ...(options.model === undefined ? {} : { model: options.model }),
      ...(options.context === undefined ? {} : { context: options.context }),
    };
    const answer = await this.#call('POST', httpPath(HTTP_PATHS.agentRequests, { sessionId: this.sessionId }), body, 'DURABLE_EVENT_WRITE_FAILED', { commandId });
    if (!hasStrings(answer, ['commandId', 'requestId', 'inputId', 'status']) || typeof answer['created'] !== 'boolean') throw malformed('send');
    // SAFETY: the fields the interface declares were checked just above.
    return answer as unknown as AgentRequestAccepted;
  }

  /**
   * Steers the running request (applied at its next turn boundary; `now` also aborts the model
   * call in flight); without one the input becomes a new request. Answers once it is durable.
   */
  async steer(input: DurableInput, options: { priority?: 'now' | 'next' } = {}): Promise<AgentSteerAccepted> {
    const body = { input, ...(options.priority === undefined ? {} : { priority: options.priority }) };
    const answer = await this.#call('POST', httpPath(HTTP_PATHS.agentInputs, { sessionId: this.sessionId }), body, 'DURABLE_EVENT_WRITE_FAILED');
    if (!hasStrings(answer, ['inputId', 'requestId'])) throw malformed('steer');
    return { inputId: answer['inputId'] as string, requestId: answer['requestId'] as string };
  }

  /** Aborts a request: the running one is interrupted (`user_abort`), a queued one dropped. */
  async abort(requestId: string, options: { reason?: string } = {}): Promise<AgentAbortResult> {
    const path = httpPath(HTTP_PATHS.agentRequestAbort, { sessionId: this.sessionId, requestId: checkId(requestId, 'requestId') });
    const answer = await this.#call('POST', path, options.reason === undefined ? {} : { reason: options.reason }, 'DURABLE_EVENT_WRITE_FAILED');
    if (!hasStrings(answer, ['requestId', 'status'])) throw malformed('abort');
    // SAFETY: both fields checked just above.
    return answer as unknown as AgentAbortResult;
  }

  /** Answers a permission the run waits for (the first answer wins). */
  async answerPermission(
    permissionRequestId: string,
    decision: PermissionDecision,
    options: { message?: string } = {},
  ): Promise<AgentPermissionReceipt> {
    const path = httpPath(HTTP_PATHS.agentPermission, {
      sessionId: this.sessionId,
      permissionRequestId: checkId(permissionRequestId, 'permissionRequestId'),
    });
    const body = { decision, ...(options.message === undefined ? {} : { message: options.message }) };
    const answer = await this.#call('POST', path, body, 'DURABLE_EVENT_WRITE_FAILED');
    if (!hasStrings(answer, ['permissionRequestId', 'decision']) || typeof answer['created'] !== 'boolean') throw malformed('answerPermission');
    // SAFETY: the fields the interface declares were checked just above.
    return answer as unknown as AgentPermissionReceipt;
  }

  /** What the agent is doing (running, waiting for a permission, idle...). */
  async status(): Promise<AgentStatus> {
    const answer = await this.#call('GET', httpPath(HTTP_PATHS.agentStatus, { sessionId: this.sessionId }), undefined, 'DURABLE_EVENT_UNAVAILABLE');
    if (!hasStrings(answer, ['state']) || !Array.isArray(answer['pendingPermissions']) || !Array.isArray(answer['queued'])) throw malformed('status');
    // SAFETY: the shape was checked above (`plan` is the server's recovery plan, passed through).
    return answer as unknown as AgentStatus;
  }

  /** Subscribes to the session: events, `caught_up` and the run's transient frames (see the module header). */
  stream(options: AgentStreamOptions = {}): AgentStream {
    const controller = new AbortController();
    const close = (): void => controller.abort(new StreamClosed('closed'));
    if (options.signal !== undefined) {
      if (options.signal.aborted) close();
      else options.signal.addEventListener('abort', close, { once: true });
    }
    const state: { cursor: string | undefined } = { cursor: undefined };
    const items = this.#run(options, controller.signal, state);
    let iterated = false;
    return {
      get cursor() {
        return state.cursor;
      },
      close,
      [Symbol.asyncIterator]() {
        if (iterated) throw new TypeError('an AgentStream can be iterated once');
        iterated = true;
        return items;
      },
    };
  }

  async *#run(options: AgentStreamOptions, signal: AbortSignal, state: { cursor: string | undefined }): AsyncGenerator<AgentStreamItem, void, undefined> {
    if (options.after === undefined) await this.#loadCursor();
    let cursor = options.after === undefined ? this.#cursor : (options.after ?? undefined);
    let lastSequence = cursor === undefined ? 0 : decodeDurableEventCursor(cursor).sequence;
    state.cursor = cursor;
    const text = new ResponseTextTracker();
    let failures = 0;
    let lastError: DurableError | undefined;
    let first = true;
    while (!signal.aborted) {
      if (!first) {
        const delayMs = lastError === undefined ? 0 : this.#reconnectDelay(failures);
        options.onReconnect?.({ attempt: failures, error: lastError, delayMs, cursor });
        if (delayMs > 0 && !(await this.#sleep(delayMs, signal))) return;
      }
      first = false;
      const connection = new AbortController();
      const onAbort = (): void => connection.abort(signal.reason);
      signal.addEventListener('abort', onAbort, { once: true });
      try {
        const response = await this.#connect(cursor, connection.signal);
        lastError = undefined;
        for await (const message of readSseMessages(response.body ?? new ReadableStream())) {
          let frame: SubscriptionFrame | undefined;
          try {
            frame = parseSubscriptionFrame(message.data);
          } catch (cause) {
            throw new DurableEventStoreError('DURABLE_EVENT_UNAVAILABLE', 'the server sent a malformed frame', { cause });
          }
          if (frame === undefined) continue;
          failures = 0;
          switch (frame.type) {
            case 'error':
              if (frame.code === SUBSCRIBER_SLOW_ERROR_CODE) {
                throw new DurableEventStoreError('DURABLE_EVENT_LIMIT_EXCEEDED', frame.message);
              }
              throw new TerminalError(durableErrorFromJson({ code: frame.code, message: frame.message }));
            case 'event': {
              if (frame.event.sequence <= lastSequence) continue;
              lastSequence = frame.event.sequence;
              cursor = frame.cursor;
              state.cursor = cursor;
              this.#remember(cursor, lastSequence);
              if (MODEL_TERMINAL.has(frame.event.type) && 'modelAttemptId' in frame.event) text.settle(frame.event.modelAttemptId);
              yield frame;
              break;
            }
            case 'text_delta': {
              const delta = text.delta(frame);
              if (delta !== undefined) yield delta;
              break;
            }
            case 'partial_response': {
              const item = text.partial(frame);
              if (item !== undefined) yield item;
              break;
            }
            default:
              yield frame;
          }
        }
        // The server ended the response (its lifetime): reconnect at once.
      } catch (error) {
        if (signal.aborted) return;
        if (error instanceof TerminalError) throw error.error;
        lastError = toStreamError(error);
        failures += 1;
        if (failures > this.#maxReconnects) throw lastError;
      } finally {
        signal.removeEventListener('abort', onAbort);
        connection.abort();
      }
    }
  }

  async #connect(cursor: string | undefined, signal: AbortSignal): Promise<Response> {
    const url = new URL(this.#base + httpPath(HTTP_PATHS.subscribe, { sessionId: this.sessionId }));
    url.searchParams.set('frames', 'all');
    if (cursor !== undefined) url.searchParams.set('after', cursor);
    const response = await this.#fetch(url.href, { method: 'GET', headers: await this.#headers({ accept: 'text/event-stream' }), signal });
    if (!response.ok) {
      const error = await errorFromProblemResponse(response);
      if (retryableStatus(response.status)) throw error;
      throw new TerminalError(error);
    }
    return response;
  }

  async #loadCursor(): Promise<void> {
    if (this.#cursorLoaded) return;
    this.#cursorLoaded = true;
    const saved = await this.#cursorStore?.load();
    if (typeof saved !== 'string' || saved === '' || this.#cursor !== undefined) return;
    const decoded = decodeDurableEventCursor(saved);
    if (decoded.sessionId !== this.sessionId) return;
    this.#cursor = saved;
    this.#cursorSequence = decoded.sequence;
  }

  #remember(cursor: string, sequence: number): void {
    if (sequence <= this.#cursorSequence) return;
    this.#cursor = cursor;
    this.#cursorSequence = sequence;
    this.#cursorStore?.save(cursor);
  }

  /** Waits `delayMs` on the client's clock; false when the stream was closed meanwhile. */
  #sleep(delayMs: number, signal: AbortSignal): Promise<boolean> {
    return new Promise((resolve) => {
      const onAbort = (): void => {
        this.#time.clearTimer(timer);
        resolve(false);
      };
      const timer = this.#time.setTimer(() => {
        signal.removeEventListener('abort', onAbort);
        resolve(true);
      }, delayMs);
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  async #headers(extra: Record<string, string>): Promise<Record<string, string>> {
    const token = this.#getToken === undefined ? this.#token : await this.#getToken();
    return { ...extra, ...(token === undefined ? {} : { authorization: `Bearer ${token}` }) };
  }

  async #call(
    method: 'GET' | 'POST',
    path: string,
    body: unknown,
    transportCode: Extract<DurableEventStoreErrorCode, 'DURABLE_EVENT_WRITE_FAILED' | 'DURABLE_EVENT_UNAVAILABLE'>,
    details?: Record<string, unknown>,
  ): Promise<unknown> {
    const controller = new AbortController();
    let timedOut = false;
    const timer = this.#time.setTimer(() => {
      timedOut = true;
      controller.abort();
    }, this.#timeoutMs);
    const what = `${method} ${path}`;
    const failed = (cause: unknown): DurableEventStoreError =>
      timedOut
        ? new DurableEventStoreError('DURABLE_EVENT_IO_TIMEOUT', `${what}: no answer within ${this.#timeoutMs} ms`, { cause, ...(details === undefined ? {} : { details }) })
        : new DurableEventStoreError(transportCode, `${what} failed in transit`, { cause, ...(details === undefined ? {} : { details }) });
    try {
      const headers = await this.#headers(body === undefined ? {} : { 'content-type': 'application/json' });
      let response: Response;
      try {
        response = await this.#fetch(this.#base + path, {
          method,
          headers,
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
          signal: controller.signal,
        });
      } catch (cause) {
        throw failed(cause);
      }
      if (!response.ok) throw await errorFromProblemResponse(response);
      try {
        return await response.json();
      } catch (cause) {
        throw failed(cause);
      }
    } finally {
      this.#time.clearTimer(timer);
    }
  }
}

/** A failure reconnecting cannot mend (refused token, invalid cursor...): the stream ends with it. */
class TerminalError extends Error {
  constructor(readonly error: DurableError) {
    super(error.message);
  }
}

function malformed(what: string): DurableEventStoreError {
  return new DurableEventStoreError('DURABLE_EVENT_UNAVAILABLE', `${what}: the server answered a malformed body`);
}

function toStreamError(error: unknown): DurableError {
  if (error instanceof DurableError) return error;
  return new DurableEventStoreError('DURABLE_EVENT_UNAVAILABLE', 'the subscription connection failed', { cause: error });
}
