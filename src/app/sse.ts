/**
 * Server-Sent Events subscriptions, served by the Worker: one writer ({@link sseStream}) over two
 * sources of frames.
 *
 * - {@link sseResponse}: durable frames, by long-polling the session object: replay up to the head
 *   seen by the first read, one `caught_up`, then live; an empty bounded wait (`waitForEvents`)
 *   sends a keep-alive.
 * - {@link sseRelayResponse} (`?frames=all`): every frame the object sends its WebSockets, transient
 *   ones included (token deltas, `partial_response`, tool progress), through one WebSocket to the
 *   object, so ordering, gaps and duplicates are the object's guarantees.
 *
 * The writer's rules, the same for both: the resume cursor (`Last-Event-ID`, else `?after=`) is
 * checked before the stream starts ({@link verifyCursor}; a bad one gets problem+json, never a
 * shifted stream); each frame is one message, `event: <type>`, `data: <frame JSON>` (the
 * WebSocket frame) and for `event` frames `id: <cursor>`, which EventSource resends as
 * `Last-Event-ID` to resume exactly after it; the body is pull-driven (a source is asked for
 * frames only when the reader reads); a failing source ends the stream with one `error` frame;
 * after `caught_up` the stream ends at {@link SSE_MAX_LIFETIME_MS} and EventSource reconnects.
 *
 * Pacing of the relay: the object pushes, so the relay queues at most
 * {@link SSE_RELAY_MAX_BUFFERED_BYTES} unread bytes; beyond that the stream ends with one `error`
 * frame (`DURABLE_EVENT_LIMIT_EXCEEDED`) and the object's socket is closed, so a slow reader never
 * makes the Worker (or the object) hold an unbounded backlog. It subscribes with `?ack=1` and
 * acknowledges frames only while its queue leaves {@link SSE_RELAY_ACK_HEADROOM_BYTES} free, else
 * when the reader pulls: a long replay waits in the log for a slow reader. When the object closes
 * the socket for falling behind (`SUBSCRIBER_SLOW_CLOSE_CODE`), the stream ends with the same error.
 */
import { callOperation } from '../adapters/durable-object/operation-client.js';
import {
  SUBSCRIBER_ACK_PARAM,
  SUBSCRIBER_PONG,
  SUBSCRIBER_SLOW_CLOSE_CODE,
  SUBSCRIBER_SLOW_ERROR_CODE,
  encodeSubscriberAck,
  frameByteLength,
  isSubscriberSlowNotice,
  type SubscriberMessage,
} from '../protocol/frames.js';
import { anchorCursor } from '../core/subscription/replay-start.js';
import { systemTime, type TimeSource } from '../core/time.js';
import { durableEventCursor, encodeDurableEventCursor, type DurableEventCursor } from '../protocol/cursor.js';
import { DurableEventStoreError, isDurableError } from '../protocol/errors.js';
import type { DurableEventEnvelope } from '../protocol/events.js';
import { EventSequence, type SessionId } from '../protocol/ids.js';

/** Longest life of one SSE response after `caught_up`; the client reconnects with `Last-Event-ID`. */
export const SSE_MAX_LIFETIME_MS = 5 * 60 * 1000;
/** Longest single wait on the object while live (a keep-alive comment follows an empty wait). */
export const SSE_LIVE_WAIT_MS = 20_000;
/** Events per replay page. */
export const SSE_PAGE_SIZE = 500;
/** Reconnect delay suggested to EventSource clients. */
export const SSE_RETRY_MS = 1000;
/** Most unread bytes one relayed SSE response may queue before it is ended. */
export const SSE_RELAY_MAX_BUFFERED_BYTES = 3 * 1024 * 1024;
/**
 * Free room the relay's queue must keep for it to acknowledge at once: the object's default
 * window (1 MiB) plus one frame of a 1 MiB event, with margin.
 */
export const SSE_RELAY_ACK_HEADROOM_BYTES = 2 * 1024 * 1024 + 64 * 1024;
/** WebSocket close code the relay uses toward the object when its reader fell behind. */
export const SLOW_SUBSCRIBER_CLOSE_CODE = 1013;

/** One SSE message: the frame's type, its JSON text, and for `event` frames the cursor as `id`. */
export interface SseFrame {
  type: string;
  data: string;
  id?: string;
}

/** What the writer streams. */
export interface SseSource {
  /**
   * The next frames: `[]` when a wait ended with nothing (the writer sends a keep-alive), `null` at
   * the end. `remainingMs`: the stream's lifetime left; a wait should not outlast it.
   */
  next(remainingMs: number): Promise<readonly SseFrame[] | null>;
  /** The stream is over (lifetime, reader gone, failure): release what the source holds. */
  close(reason: string): void;
}

/** The SSE message of a frame; `event` frames carry their cursor as `id`. */
function sseFrame(type: string, data: string, cursor: unknown): SseFrame {
  return type === 'event' && typeof cursor === 'string' ? { type, data, id: cursor } : { type, data };
}

function messageFrame(message: SubscriberMessage): SseFrame {
  return sseFrame(message.type, JSON.stringify(message), message.type === 'event' ? message.cursor : undefined);
}

function formatFrame(frame: SseFrame): string {
  return `${frame.id === undefined ? '' : `id: ${frame.id}\n`}event: ${frame.type}\ndata: ${frame.data}\n\n`;
}

function errorFrame(error: unknown): SseFrame {
  const known = isDurableError(error);
  const code = known ? error.code : 'DURABLE_EVENT_UNAVAILABLE';
  return messageFrame({ type: 'error', code, message: known ? error.message : 'the subscription failed' });
}

/** Options of {@link sseStream}. */
export interface SseStreamOptions {
  /** Override of {@link SSE_MAX_LIFETIME_MS} (tests). */
  lifetimeMs?: number | undefined;
  /** Clock and timer of the lifetime (default: the system's). */
  time?: TimeSource | undefined;
}

/** The SSE response that streams `source` (see the module header for its rules). */
export function sseStream(source: SseSource, options: SseStreamOptions = {}): Response {
  const time = options.time ?? systemTime;
  const lifetimeMs = options.lifetimeMs ?? SSE_MAX_LIFETIME_MS;
  const deadline = time.monotonicNow() + lifetimeMs;
  const encoder = new TextEncoder();
  let caughtUp = false;
  let expired = false;
  let closed = false;
  const close = (reason: string): void => {
    if (closed) return;
    closed = true;
    time.clearTimer(timer);
    source.close(reason);
  };
  const timer = time.setTimer(() => {
    expired = true;
    if (caughtUp) close('lifetime');
  }, lifetimeMs);
  const body = new ReadableStream<Uint8Array>(
    {
      start(controller) {
        controller.enqueue(encoder.encode(`retry: ${SSE_RETRY_MS}\n\n`));
      },
      async pull(controller) {
        let frames: readonly SseFrame[] | null;
        try {
          frames = await source.next(Math.max(0, deadline - time.monotonicNow()));
        } catch (error) {
          close('failed');
          controller.enqueue(encoder.encode(formatFrame(errorFrame(error))));
          controller.close();
          return;
        }
        if (frames === null) {
          close('end');
          controller.close();
          return;
        }
        controller.enqueue(encoder.encode(frames.length === 0 ? ': keep-alive\n\n' : frames.map(formatFrame).join('')));
        if (!caughtUp && frames.some((frame) => frame.type === 'caught_up')) {
          caughtUp = true;
          // Replaying past the lifetime: end once the reader has the caught_up.
          if (expired) close('lifetime');
        }
      },
      cancel() {
        close('client gone');
      },
    },
    { highWaterMark: 0 },
  );
  return new Response(body, {
    headers: {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      'x-accel-buffering': 'no',
    },
  });
}

function unavailable(cause: unknown): DurableEventStoreError {
  return new DurableEventStoreError('DURABLE_EVENT_UNAVAILABLE', 'the session object did not answer', { cause });
}

/** Checks a resume cursor against the log by the cursor rule (`anchorCursor`). */
export async function verifyCursor(object: object, sessionId: SessionId, cursor: DurableEventCursor): Promise<void> {
  await anchorCursor(sessionId, cursor, (options) => callOperation(object, sessionId, 'read', options));
}

/** Options of {@link sseResponse}. */
export interface SseOptions extends SseStreamOptions {
  /** The session's object (a stub of `SessionObject` or a subclass). */
  object: object;
  sessionId: SessionId;
  /** Verified resume cursor, or `undefined` to start at the first event. */
  after: DurableEventCursor | undefined;
}

/** The long-polling source: replay up to the head seen by its first read, `caught_up`, then live. */
function pollSource(object: object, sessionId: SessionId, after: DurableEventCursor | undefined): SseSource {
  let position: number | null = after?.sequence ?? null;
  /** Head seen by the first replay read; `undefined` until then. */
  let replayHead: number | null | undefined;
  let live = false;
  let closed = false;
  const read = (from: number | null) => {
    const options = from === null ? { limit: SSE_PAGE_SIZE } : { after: EventSequence(from), limit: SSE_PAGE_SIZE };
    return callOperation(object, sessionId, 'read', options);
  };
  const eventFrame = (event: DurableEventEnvelope): SseFrame => {
    position = event.sequence;
    return messageFrame({ type: 'event', event, cursor: encodeDurableEventCursor(durableEventCursor(event)) });
  };
  return {
    async next(remainingMs) {
      for (;;) {
        if (closed) return null;
        if (!live) {
          const page = await read(position);
          if (replayHead === undefined) replayHead = page.headSequence;
          const head = replayHead;
          const frames = page.events.filter((event) => head !== null && event.sequence <= head).map(eventFrame);
          if (position === head || frames.length === 0) {
            live = true;
            frames.push(messageFrame({ type: 'caught_up', headSequence: head === null ? null : EventSequence(head) }));
          }
          return frames;
        }
        if (remainingMs <= 0) return null;
        const page = await read(position);
        if (page.events.length > 0) return page.events.map(eventFrame);
        const from = position;
        const waitMs = Math.min(remainingMs, SSE_LIVE_WAIT_MS);
        const waited = await callOperation(object, sessionId, 'waitForEvents', { after: from, waitMs });
        if (waited.headSequence === position) return [];
      }
    },
    close() {
      closed = true;
    },
  };
}

/** The SSE response of durable frames, by long-polling the object (the cursor must already be verified). */
export function sseResponse(options: SseOptions): Response {
  return sseStream(pollSource(options.object, options.sessionId, options.after), options);
}

/** The server end of a Workers WebSocket, as the relay uses it. */
interface RelaySocket {
  accept(): void;
  send(message: string): void;
  close(code?: number, reason?: string): void;
  addEventListener(type: 'message', listener: (event: { data: unknown }) => void): void;
  addEventListener(type: 'close', listener: (event: { code: number }) => void): void;
  addEventListener(type: 'error', listener: () => void): void;
}

/** Options of {@link sseRelayResponse}. */
export interface SseRelayOptions extends SseStreamOptions {
  /** The session object (`fetch` accepts the WebSocket subscription). */
  object: { fetch(request: Request): Promise<Response> };
  sessionId: SessionId;
  /** Encoded resume cursor, already checked for this session. */
  after: string | undefined;
  /** Override of {@link SSE_RELAY_MAX_BUFFERED_BYTES} (tests). */
  maxBufferedBytes?: number;
}

/** A relayed frame's fields (`type: 'message'` when it is not a JSON frame). */
function parseRelayed(text: string): { type: string; cursor?: unknown; code?: unknown } {
  try {
    const frame = JSON.parse(text) as { type?: unknown; cursor?: unknown; code?: unknown };
    return typeof frame.type === 'string' ? { type: frame.type, cursor: frame.cursor, code: frame.code } : { type: 'message' };
  } catch {
    return { type: 'message' };
  }
}

/** The relay source: the object's socket frames, queued up to `limit` bytes (see the module header). */
function relaySource(socket: RelaySocket, limit: number): SseSource {
  const queue: Array<{ frame: SseFrame; bytes: number }> = [];
  let queued = 0;
  let ended = false;
  let failure: DurableEventStoreError | undefined;
  let wake: (() => void) | undefined;
  /** Flow control: bytes received from the object, and acknowledged to it. */
  let received = 0;
  let acked = 0;
  const ack = (): void => {
    if (ended || received === acked || limit - queued <= SSE_RELAY_ACK_HEADROOM_BYTES) return;
    try {
      socket.send(encodeSubscriberAck(received));
      acked = received;
    } catch {
      // Closing.
    }
  };
  const closeSocket = (code: number, reason: string): void => {
    try {
      socket.close(code, reason);
    } catch {
      // Already closed.
    }
  };
  const end = (error?: DurableEventStoreError): void => {
    if (ended) return;
    ended = true;
    failure = error;
    wake?.();
  };
  const fellBehind = (): void => {
    if (ended) return;
    closeSocket(SLOW_SUBSCRIBER_CLOSE_CODE, 'subscriber too slow');
    const message = `the subscriber fell more than ${limit} bytes behind; reconnect with Last-Event-ID`;
    end(new DurableEventStoreError(SUBSCRIBER_SLOW_ERROR_CODE, message));
  };
  socket.addEventListener('message', (event) => {
    if (ended) return;
    const text = typeof event.data === 'string' ? event.data : new TextDecoder().decode(event.data as ArrayBuffer);
    if (text === SUBSCRIBER_PONG) return;
    const parsed = parseRelayed(text);
    // The object's notice before a 4008 close: end with the relay's own error, once.
    if (isSubscriberSlowNotice(parsed)) return fellBehind();
    const bytes = frameByteLength(text);
    received += bytes;
    if (queued + bytes > limit) return fellBehind();
    queue.push({ frame: sseFrame(parsed.type, text, parsed.cursor), bytes });
    queued += bytes;
    ack();
    wake?.();
  });
  socket.addEventListener('close', (event) => (event.code === SUBSCRIBER_SLOW_CLOSE_CODE ? fellBehind() : end()));
  socket.addEventListener('error', () => end());
  return {
    async next() {
      while (queue.length === 0 && !ended) await new Promise<void>((resolve) => (wake = resolve));
      if (queue.length === 0) {
        if (failure !== undefined) throw failure;
        return null;
      }
      const frames = queue.splice(0).map((entry) => entry.frame);
      queued = 0;
      ack();
      return frames;
    },
    close(reason) {
      if (!ended) closeSocket(1000, reason);
      end();
    },
  };
}

/** Opens the object's subscription and relays it as Server-Sent Events (see the module header). */
export async function sseRelayResponse(options: SseRelayOptions): Promise<Response> {
  const target = new URL('https://session-object.internal/subscribe');
  target.searchParams.set('sessionId', options.sessionId);
  if (options.after !== undefined) target.searchParams.set('after', options.after);
  target.searchParams.set(SUBSCRIBER_ACK_PARAM, '1');
  let upgrade: Response;
  try {
    upgrade = await options.object.fetch(new Request(target, { headers: { Upgrade: 'websocket' } }));
  } catch (cause) {
    throw unavailable(cause);
  }
  // Workers extend Response with `webSocket`; typed structurally (RelaySocket) so this module also
  // type-checks in the Node program, which reads the route declarations for docs/http-api.md.
  const socket = (upgrade as Response & { webSocket?: RelaySocket | null }).webSocket;
  if (socket === null || socket === undefined) {
    throw new DurableEventStoreError('DURABLE_EVENT_UNAVAILABLE', 'the session object refused the subscription');
  }
  socket.accept();
  return sseStream(relaySource(socket, options.maxBufferedBytes ?? SSE_RELAY_MAX_BUFFERED_BYTES), options);
}
