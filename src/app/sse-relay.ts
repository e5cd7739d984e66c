/**
 * Server-Sent Events that carry every frame the session object sends its WebSockets, transient
 * ones included (token deltas, `partial_response`, tool progress): `GET .../subscribe?frames=all`
 * with `Accept: text/event-stream`.
 *
 * The Worker opens one WebSocket to the session object (the same subscription a WebSocket client
 * gets: replay from the cursor, `caught_up`, the in-flight partial text, then live frames in the
 * object's order) and writes each frame as one SSE message: `event: <type>`, `data: <frame>`,
 * and for `event` frames `id: <cursor>`, so EventSource resumes exactly after the last event with
 * `Last-Event-ID`. Ordering, gaps and duplicates are therefore the object's guarantees.
 *
 * Pacing: the response body queues at most {@link SSE_RELAY_MAX_BUFFERED_BYTES} bytes the client
 * has not read. Beyond that the stream sends one `error` frame (`DURABLE_EVENT_LIMIT_EXCEEDED`)
 * and ends, and the object's socket is closed: a slow reader can never make the Worker (or the
 * object) hold an unbounded backlog. EventSource reconnects with `Last-Event-ID` and is replayed
 * from the log, then gets the partial text again. The stream also ends after
 * `SSE_MAX_LIFETIME_MS`, like the long-polling SSE.
 *
 * Flow control toward the object: the relay subscribes with `?ack=1` and acknowledges the frames
 * it wrote into the response only while the response's queue leaves
 * {@link SSE_RELAY_ACK_HEADROOM_BYTES} free (room for the object's window and one more frame);
 * otherwise it acknowledges when the reader pulls. A long replay therefore waits in the log for
 * a reader that reads slowly instead of overflowing the relay; only a reader that stops reading
 * (or an object window larger than the headroom) reaches the bound. When the object closes the
 * socket for falling behind (`SUBSCRIBER_SLOW_CLOSE_CODE`), the stream ends with the same error.
 */
import type { SessionId } from '../protocol/ids.js';
import { DurableEventStoreError } from '../protocol/errors.js';
import { SSE_MAX_LIFETIME_MS, SSE_RETRY_MS } from './sse.js';
import {
  SUBSCRIBER_ACK_PARAM,
  SUBSCRIBER_PONG,
  SUBSCRIBER_SLOW_CLOSE_CODE,
  SUBSCRIBER_SLOW_ERROR_CODE,
  isSubscriberSlowNotice,
  encodeSubscriberAck,
  frameByteLength,
} from '../protocol/frames.js';

/** Most unread bytes one relayed SSE response may queue before it is ended. */

/** The server end of a Workers WebSocket, as the relay uses it. */
interface RelaySocket {
  accept(): void;
  send(message: string): void;
  close(code?: number, reason?: string): void;
  addEventListener(type: 'message', listener: (event: { data: unknown }) => void): void;
  addEventListener(type: 'close', listener: (event: { code: number }) => void): void;
  addEventListener(type: 'error', listener: () => void): void;
}

const SSE_RELAY_MAX_BUFFERED_BYTES = 3 * 1024 * 1024;
/**
 * Free room the response queue must keep for the relay to acknowledge at once: the object's
 * default window (1 MiB) plus one frame of a 1 MiB event, with margin.
 */
const SSE_RELAY_ACK_HEADROOM_BYTES = 2 * 1024 * 1024 + 64 * 1024;
/** WebSocket close code the relay uses toward the object when its reader fell behind. */
const SLOW_SUBSCRIBER_CLOSE_CODE = 1013;

/** Options of {@link sseRelayResponse}. */
interface SseRelayOptions {
  /** The session object (`fetch` accepts the WebSocket subscription). */
  object: { fetch(request: Request): Promise<Response> };
  sessionId: SessionId;
  /** Encoded resume cursor, already checked for this session. */
  after: string | undefined;
  /** Override of {@link SSE_RELAY_MAX_BUFFERED_BYTES} (tests). */
  maxBufferedBytes?: number;
  /** Override of `SSE_MAX_LIFETIME_MS` (tests). */
  lifetimeMs?: number;
}

function isSlowNotice(text: string): boolean {
  try {
    return isSubscriberSlowNotice(JSON.parse(text) as { type: string; code?: unknown });
  } catch {
    return false;
  }
}

function sseMessage(text: string): string {
  let type = 'message';
  let id: string | undefined;
  try {
    const frame = JSON.parse(text) as { type?: unknown; cursor?: unknown };
    if (typeof frame.type === 'string') type = frame.type;
    if (type === 'event' && typeof frame.cursor === 'string') id = frame.cursor;
  } catch {
    // Not JSON: relayed as a plain message.
  }
  return `${id === undefined ? '' : `id: ${id}\n`}event: ${type}\ndata: ${text}\n\n`;
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
    throw new DurableEventStoreError('DURABLE_EVENT_UNAVAILABLE', 'the session object did not answer', { cause });
  }
  // Workers extend Response with `webSocket`; typed structurally (RelaySocket) so this module also
  // type-checks in the Node program, which reads the route declarations for docs/http-api.md.
  const socket = (upgrade as Response & { webSocket?: RelaySocket | null }).webSocket;
  if (socket === null || socket === undefined) {
    throw new DurableEventStoreError('DURABLE_EVENT_UNAVAILABLE', 'the session object refused the subscription');
  }
  socket.accept();
  const encoder = new TextEncoder();
  const limit = options.maxBufferedBytes ?? SSE_RELAY_MAX_BUFFERED_BYTES;
  let open = true;
  /** Flow control: bytes received from the object, and acknowledged to it. */
  let received = 0;
  let acked = 0;
  const ack = (): void => {
    if (!open || received === acked) return;
    try {
      socket.send(encodeSubscriberAck(received));
      acked = received;
    } catch {
      // Closing.
    }
  };
  let lifetime: ReturnType<typeof setTimeout> | undefined;
  const closeSocket = (code: number, reason: string): void => {
    try {
      socket.close(code, reason);
    } catch {
      // Already closed.
    }
  };
  const body = new ReadableStream<Uint8Array>(
    {
      start(controller) {
        const finish = (): void => {
          if (!open) return;
          open = false;
          if (lifetime !== undefined) clearTimeout(lifetime);
          try {
            controller.close();
          } catch {
            // Already closed or errored.
          }
        };
        const fellBehind = (): void => {
          if (!open) return;
          const frame = JSON.stringify({
            type: 'error',
            code: SUBSCRIBER_SLOW_ERROR_CODE,
            message: `the subscriber fell more than ${limit} bytes behind; reconnect with Last-Event-ID`,
          });
          controller.enqueue(encoder.encode(`event: error\ndata: ${frame}\n\n`));
          closeSocket(SLOW_SUBSCRIBER_CLOSE_CODE, 'subscriber too slow');
          finish();
        };
        controller.enqueue(encoder.encode(`retry: ${SSE_RETRY_MS}\n\n`));
        socket.addEventListener('message', (event) => {
          if (!open) return;
          const text = typeof event.data === 'string' ? event.data : new TextDecoder().decode(event.data as ArrayBuffer);
          if (text === SUBSCRIBER_PONG) return;
          // The object's notice before a 4008 close: end with the relay's own error event, once.
          if (text.startsWith('{"type":"error"') && isSlowNotice(text)) {
            fellBehind();
            return;
          }
          received += frameByteLength(text);
          const chunk = encoder.encode(sseMessage(text));
          if ((controller.desiredSize ?? 0) - chunk.byteLength < 0) {
            fellBehind();
            return;
          }
          controller.enqueue(chunk);
          // Written into the response: acknowledge now while there is room, else when the reader pulls.
          if ((controller.desiredSize ?? 0) > SSE_RELAY_ACK_HEADROOM_BYTES) ack();
        });
        socket.addEventListener('close', (event) => {
          if (event.code === SUBSCRIBER_SLOW_CLOSE_CODE) fellBehind();
          else finish();
        });
        socket.addEventListener('error', finish);
        lifetime = setTimeout(() => {
          closeSocket(1000, 'lifetime');
          finish();
        }, options.lifetimeMs ?? SSE_MAX_LIFETIME_MS);
      },
      pull(controller) {
        if ((controller.desiredSize ?? 0) > SSE_RELAY_ACK_HEADROOM_BYTES) ack();
      },
      cancel() {
        open = false;
        if (lifetime !== undefined) clearTimeout(lifetime);
        closeSocket(1000, 'client gone');
      },
    },
    { highWaterMark: limit, size: (chunk?: Uint8Array) => chunk?.byteLength ?? 0 },
  );
  return new Response(body, {
    headers: {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      'x-accel-buffering': 'no',
    },
  });
}
