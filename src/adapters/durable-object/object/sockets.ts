/**
 * WebSocket subscribers of a SessionObject, on the hibernation API.
 *
 * Connect (`accept`):
 * 1. accept the server end with `ctx.acceptWebSocket`, so the object may hibernate while the
 *    socket stays open;
 * 2. check the cursor against the log: it must name this session, not be ahead of the head, and
 *    name the event that really sits at its sequence; otherwise send one `error` frame and close
 *    with 1008;
 * 3. replay from the cursor in pages of up to 1000 events, then send one `caught_up` frame. All of
 *    this is synchronous (SQLite reads), so no append can slip between the replay and the moment
 *    the socket counts as live;
 * 4. store `{ cursorSequence, cursorEventId }` in the socket's attachment, which survives
 *    hibernation.
 *
 * 5. when an agent's model response is streaming, one `partial_response` frame with its text so
 *    far (`agent-stream.ts`), still in the same synchronous turn, so the live deltas follow it.
 *
 * After each committed append (`broadcast`): every attached socket is sent the events after its
 * cursor and its attachment moves forward. A socket whose cursor lags the batch (it cannot, while
 * this object is the only writer, but a wrong attachment must not skip events) is first caught up
 * from the log. Sending never waits: a socket whose send throws is closed and dropped.
 */
import type { SqlEventLog } from '../../sql/sql-event-log.js';
import { SUBSCRIBER_REPLAY_PAGE_SIZE } from '../socket-protocol.js';
import { SUBSCRIBER_POLICY_CLOSE_CODE, type SubscriberMessage } from '../../../protocol/frames.js';
import { DurableError, DurableEventSubscriptionError } from '../../../protocol/errors.js';
import { decodeDurableEventCursor, durableEventCursor, encodeDurableEventCursor } from '../../../protocol/cursor.js';
import type { DurableEventEnvelope } from '../../../protocol/events.js';
import { EventSequence, type SessionId } from '../../../protocol/ids.js';

/** What a socket's attachment holds: the last event it was sent (or `null` before the first). */
export interface SocketCursor {
  sessionId: string;
  cursorSequence: number | null;
  cursorEventId: string | null;
}

/** WebSocket close code when a send fails (1011: unexpected condition). */
const SEND_FAILED_CLOSE_CODE = 1011;

function parseAttachment(value: unknown): SocketCursor | null {
  if (typeof value !== 'object' || value === null) return null;
  const v = value as Partial<SocketCursor>;
  if (typeof v.sessionId !== 'string') return null;
  const sequenceOk = v.cursorSequence === null || (typeof v.cursorSequence === 'number' && v.cursorSequence >= 1);
  const eventOk = v.cursorEventId === null || typeof v.cursorEventId === 'string';
  if (!sequenceOk || !eventOk || (v.cursorSequence === null) !== (v.cursorEventId === null)) return null;
  return { sessionId: v.sessionId, cursorSequence: v.cursorSequence ?? null, cursorEventId: v.cursorEventId ?? null };
}

/** The JSON frame of one event (the same text for every socket). */
export function eventFrame(event: DurableEventEnvelope): string {
  const message: SubscriberMessage = {
    type: 'event',
    event,
    cursor: encodeDurableEventCursor(durableEventCursor(event)),
  };
  return JSON.stringify(message);
}

function describe(error: unknown): { code: string; message: string } {
  if (error instanceof DurableError) return { code: error.code, message: error.message };
  return { code: 'DURABLE_EVENT_UNAVAILABLE', message: 'the subscription could not be started' };
}

/** Subscriber sockets of one session object. */
export class SessionSockets {
  readonly #ctx: DurableObjectState;
  readonly #eventLog: SqlEventLog;
  /** In-memory copy of each socket's attachment (rebuilt from the attachment after hibernation). */
  readonly #cursors = new WeakMap<WebSocket, SocketCursor>();

  constructor(ctx: DurableObjectState, ledger: SqlEventLog) {
    this.#ctx = ctx;
    this.#eventLog = ledger;
  }

  /**
   * Accepts `server`, then validates, replays and attaches, or refuses with an error frame.
   * `resolveSession` binds the requested session (it throws for a foreign one).
   */
  accept(server: WebSocket, resolveSession: () => SessionId, afterCursor: string | null, afterCaughtUp?: () => string | undefined): void {
    this.#ctx.acceptWebSocket(server);
    let caughtUp: SubscriberMessage;
    try {
      const sessionId = resolveSession();
      const position = this.#replay(server, sessionId, this.#anchor(sessionId, afterCursor));
      // The replay read up to the head synchronously: the socket's position IS the head.
      caughtUp = {
        type: 'caught_up',
        headSequence: position.cursorSequence === null ? null : EventSequence(position.cursorSequence),
      };
    } catch (error) {
      this.#refuse(server, error);
      return;
    }
    if (!this.#sendRaw(server, JSON.stringify(caughtUp))) return;
    // Still synchronous: the text of a model response in flight, before any later delta.
    const partial = afterCaughtUp?.();
    if (partial !== undefined) this.#sendRaw(server, partial);
  }

  /**
   * Sends a transient frame (token delta, tool progress) to every subscribed socket of the object,
   * in the order of the calls, interleaved with `broadcast`. Never throws.
   */
  broadcastTransient(frame: string): void {
    for (const ws of this.#ctx.getWebSockets()) {
      if (this.#cursorOf(ws) === null) continue;
      this.#sendRaw(ws, frame);
    }
  }

  /** Checks a saved cursor against the log; returns the position to replay after. */
  #anchor(sessionId: SessionId, afterCursor: string | null): SocketCursor {
    if (afterCursor === null) return { sessionId, cursorSequence: null, cursorEventId: null };
    const cursor = decodeDurableEventCursor(afterCursor);
    if (cursor.sessionId !== sessionId) {
      throw new DurableEventSubscriptionError(`the cursor names session ${cursor.sessionId}, not ${sessionId}`);
    }
    const head = this.#eventLog.getHeadSequence(sessionId);
    if (head === null || cursor.sequence > head) {
      throw new DurableEventSubscriptionError(
        `the cursor (sequence ${cursor.sequence}) is ahead of the head ${String(head)}`,
        { details: { sequence: cursor.sequence, headSequence: head } },
      );
    }
    const page = this.#eventLog.read(sessionId, {
      after: cursor.sequence === 1 ? undefined : EventSequence(cursor.sequence - 1),
      limit: 1,
    });
    const anchored = page.events[0];
    if (anchored === undefined || anchored.eventId !== cursor.eventId) {
      throw new DurableEventSubscriptionError(
        `event ${cursor.sequence} is no longer ${cursor.eventId}: the log was replaced`,
        { details: { sequence: cursor.sequence } },
      );
    }
    return { sessionId, cursorSequence: cursor.sequence, cursorEventId: cursor.eventId };
  }

  /** Sends every event after `cursor` up to the head, page by page, then attaches the socket. */
  #replay(ws: WebSocket, sessionId: SessionId, cursor: SocketCursor): SocketCursor {
    let position = cursor;
    for (;;) {
      const page = this.#eventLog.read(sessionId, {
        after: position.cursorSequence === null ? undefined : EventSequence(position.cursorSequence),
        limit: SUBSCRIBER_REPLAY_PAGE_SIZE,
      });
      for (const event of page.events) ws.send(eventFrame(event));
      const last = page.events[page.events.length - 1];
      if (last !== undefined) position = { sessionId, cursorSequence: last.sequence, cursorEventId: last.eventId };
      if (!page.hasMore) break;
    }
    this.#attach(ws, position);
    return position;
  }

  #attach(ws: WebSocket, cursor: SocketCursor): void {
    ws.serializeAttachment(cursor);
    this.#cursors.set(ws, cursor);
  }

  #cursorOf(ws: WebSocket): SocketCursor | null {
    const cached = this.#cursors.get(ws);
    if (cached !== undefined) return cached;
    const restored = parseAttachment(ws.deserializeAttachment());
    if (restored !== null) this.#cursors.set(ws, restored);
    return restored;
  }

  #refuse(ws: WebSocket, error: unknown): void {
    const { code, message } = describe(error);
    this.#sendRaw(ws, JSON.stringify({ type: 'error', code, message } satisfies SubscriberMessage));
    try {
      ws.close(SUBSCRIBER_POLICY_CLOSE_CODE, code);
    } catch {
      // Already closing.
    }
  }

  #sendRaw(ws: WebSocket, frame: string): boolean {
    try {
      ws.send(frame);
      return true;
    } catch {
      this.drop(ws, SEND_FAILED_CLOSE_CODE);
      return false;
    }
  }

  /** Forgets a socket (closing it if still open). */
  drop(ws: WebSocket, code?: number): void {
    this.#cursors.delete(ws);
    try {
      ws.serializeAttachment(null);
    } catch {
      // A closed socket may refuse attachment writes; it is gone either way.
    }
    if (code !== undefined) {
      try {
        ws.close(code, 'subscriber dropped');
      } catch {
        // Already closed.
      }
    }
  }

  /** Pushes a committed batch to every attached socket of `sessionId`. Never throws. */
  broadcast(sessionId: SessionId, events: readonly DurableEventEnvelope[]): void {
    const first = events[0];
    const last = events[events.length - 1];
    if (first === undefined || last === undefined) return;
    let frames: string[] | undefined;
    for (const ws of this.#ctx.getWebSockets()) {
      const cursor = this.#cursorOf(ws);
      if (cursor === null || cursor.sessionId !== sessionId) continue;
      const at = cursor.cursorSequence ?? 0;
      if (at >= last.sequence) continue;
      try {
        if (at + 1 < first.sequence) {
          // Behind the batch: replay from the log instead of skipping anything.
          this.#replay(ws, sessionId, cursor);
          continue;
        }
        frames ??= events.map(eventFrame);
        for (let index = at + 1 - first.sequence; index < events.length; index += 1) {
          const frame = frames[index];
          if (frame !== undefined) ws.send(frame);
        }
        this.#attach(ws, { sessionId, cursorSequence: last.sequence, cursorEventId: last.eventId });
      } catch {
        this.drop(ws, SEND_FAILED_CLOSE_CODE);
      }
    }
  }
}
