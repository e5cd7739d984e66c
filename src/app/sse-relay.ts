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
 */
import type { SessionId } from '../protocol/ids.js';
import { DurableEventStoreError } from '../protocol/errors.js';
import { SSE_MAX_LIFETIME_MS, SSE_RETRY_MS } from './sse.js';

/** Most unread bytes one relayed SSE response may queue before it is ended. */

/** The server end of a Workers WebSocket, as the relay uses it. */
interface RelaySocket {
  accept(): void;
  close(code?: number, reason?: string): void;
  addEventListener(type: 'message', listener: (event: { data: unknown }) => void): void;
  addEventListener(type: 'close' | 'error', listener: () => void): void;
}

export const SSE_RELAY_MAX_BUFFERED_BYTES = 1024 * 1024;
/** WebSocket close code the relay uses toward the object when its reader fell behind. */
export const SLOW_SUBSCRIBER_CLOSE_CODE = 1013;

/** Options of {@link sseRelayResponse}. */
export interface SseRelayOptions {
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
        controller.enqueue(encoder.encode(`retry: ${SSE_RETRY_MS}\n\n`));
        socket.addEventListener('message', (event) => {
          if (!open) return;
          const text = typeof event.data === 'string' ? event.data : new TextDecoder().decode(event.data as ArrayBuffer);
          if (text === 'pong') return;
          const chunk = encoder.encode(sseMessage(text));
          if ((controller.desiredSize ?? 0) - chunk.byteLength < 0) {
            const frame = JSON.stringify({
              type: 'error',
              code: 'DURABLE_EVENT_LIMIT_EXCEEDED',
              message: `the subscriber fell more than ${limit} bytes behind; reconnect with Last-Event-ID`,
            });
            controller.enqueue(encoder.encode(`event: error\ndata: ${frame}\n\n`));
            closeSocket(SLOW_SUBSCRIBER_CLOSE_CODE, 'subscriber too slow');
            finish();
            return;
          }
          controller.enqueue(chunk);
        });
        socket.addEventListener('close', finish);
        socket.addEventListener('error', finish);
        lifetime = setTimeout(() => {
          closeSocket(1000, 'lifetime');
          finish();
        }, options.lifetimeMs ?? SSE_MAX_LIFETIME_MS);
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
