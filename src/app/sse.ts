/**
 * Server-Sent Events subscriptions, served by the Worker by long-polling the session object.
 *
 * 1. Before the stream starts, the resume cursor (`Last-Event-ID`, else `?after=`) is checked
 *    against the log (same session, not ahead of the head, still naming the same event); a bad
 *    cursor is answered with problem+json, never with a silently shifted stream.
 * 2. Replay: pages are read from the cursor up to the head seen by the first read, each event sent
 *    as `event: event` with `id:` = its encoded cursor, so EventSource resends it as `Last-Event-ID`
 *    on reconnect; then one `event: caught_up`.
 * 3. Live: read after the last sent event; when nothing is there, ask the object to wait
 *    (`waitForEvents`, bounded) and send a `: keep-alive` comment if the wait ends empty.
 * 4. The stream is pull-driven (nothing is read while the client does not consume) and ends after
 *    {@link SSE_MAX_LIFETIME_MS}; EventSource then reconnects and resumes from the last id.
 * Data lines carry the same JSON objects as the WebSocket frames.
 */
import type { SessionObjectRpc } from '../adapters/durable-object/rpc.js';
import type { SubscriberMessage } from '../protocol/frames.js';
import type { DurableReadResult } from '../core/store.js';
import { durableEventCursor, encodeDurableEventCursor, type DurableEventCursor } from '../protocol/cursor.js';
import { DurableError, DurableEventStoreError, isDurableError } from '../protocol/errors.js';
import { anchorCursor } from '../core/subscription/replay-start.js';
import type { DurableEventEnvelope } from '../protocol/events.js';
import { EventSequence, type SessionId } from '../protocol/ids.js';
import { callObject } from './session-rpc.js';

/** Longest life of one SSE response; the client reconnects with `Last-Event-ID` after it. */
export const SSE_MAX_LIFETIME_MS = 5 * 60 * 1000;
/** Longest single wait on the object while live (a keep-alive comment follows an empty wait). */
const SSE_LIVE_WAIT_MS = 20_000;
/** Events per replay page. */
const SSE_PAGE_SIZE = 500;
/** Reconnect delay suggested to EventSource clients. */
export const SSE_RETRY_MS = 1000;

function unavailable(cause: unknown): DurableEventStoreError {
  return new DurableEventStoreError('DURABLE_EVENT_UNAVAILABLE', 'the session object did not answer', { cause });
}

async function readAfter(
  object: SessionObjectRpc,
  sessionId: SessionId,
  after: number | null,
  limit: number,
): Promise<DurableReadResult> {
  return callObject(
    () => object.read(sessionId, after === null ? { limit } : { after: EventSequence(after), limit }),
    unavailable,
  );
}

/** Checks a resume cursor against the log by the cursor rule (`anchorCursor`). */
export async function verifyCursor(object: SessionObjectRpc, sessionId: SessionId, cursor: DurableEventCursor): Promise<void> {
  await anchorCursor(sessionId, cursor, (options) => callObject(() => object.read(sessionId, options), unavailable));
}

function frame(message: SubscriberMessage, id?: string): string {
  return `${id === undefined ? '' : `id: ${id}\n`}event: ${message.type}\ndata: ${JSON.stringify(message)}\n\n`;
}

function eventFrame(event: DurableEventEnvelope): string {
  const cursor = encodeDurableEventCursor(durableEventCursor(event));
  return frame({ type: 'event', event, cursor }, cursor);
}

function errorFrame(error: unknown): string {
  const known = error instanceof DurableError || isDurableError(error);
  return frame({
    type: 'error',
    code: known ? (error as DurableError).code : 'DURABLE_EVENT_UNAVAILABLE',
    message: known ? (error as DurableError).message : 'the subscription failed',
  });
}

/** Options of {@link sseResponse}. */
interface SseOptions {
  object: SessionObjectRpc;
  sessionId: SessionId;
  /** Verified resume cursor, or `undefined` to start at the first event. */
  after: DurableEventCursor | undefined;
  /** Override of {@link SSE_MAX_LIFETIME_MS} (tests). */
  lifetimeMs?: number;
}

/** The streaming response of one SSE subscription (the cursor must already be verified). */
export function sseResponse(options: SseOptions): Response {
  const { object, sessionId } = options;
  const encoder = new TextEncoder();
  const deadline = Date.now() + (options.lifetimeMs ?? SSE_MAX_LIFETIME_MS);
  let position: number | null = options.after?.sequence ?? null;
  /** Head seen by the first replay read; `undefined` until then. */
  let replayHead: number | null | undefined;
  let live = false;
  let cancelled = false;

  /** Produces the next chunk of the stream, or `null` when the stream should end. */
  async function next(): Promise<string | null> {
    for (;;) {
      if (cancelled) return null;
      if (!live) {
        const page = await readAfter(object, sessionId, position, SSE_PAGE_SIZE);
        if (replayHead === undefined) replayHead = page.headSequence;
        const head = replayHead;
        let out = '';
        for (const event of page.events) {
          if (head === null || event.sequence > head) break;
          out += eventFrame(event);
          position = event.sequence;
        }
        if (position === head || out === '') {
          live = true;
          out += frame({ type: 'caught_up', headSequence: head === null ? null : EventSequence(head) });
        }
        return out;
      }
      const remaining = deadline - Date.now();
      if (remaining <= 0) return null;
      const page = await readAfter(object, sessionId, position, SSE_PAGE_SIZE);
      if (page.events.length > 0) {
        let out = '';
        for (const event of page.events) {
          out += eventFrame(event);
          position = event.sequence;
        }
        return out;
      }
      const waitMs = Math.min(remaining, SSE_LIVE_WAIT_MS);
      const after = position;
      const waited = await callObject(() => object.waitForEvents(sessionId, after, waitMs), unavailable);
      if (waited.headSequence === position) return ': keep-alive\n\n';
    }
  }

  const body = new ReadableStream<Uint8Array>(
    {
      start(controller) {
        controller.enqueue(encoder.encode(`retry: ${SSE_RETRY_MS}\n\n`));
      },
      async pull(controller) {
        try {
          const chunk = await next();
          if (chunk === null) {
            controller.close();
            return;
          }
          controller.enqueue(encoder.encode(chunk));
        } catch (error) {
          controller.enqueue(encoder.encode(errorFrame(error)));
          controller.close();
        }
      },
      cancel() {
        cancelled = true;
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
