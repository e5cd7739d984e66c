/**
 * WebSocket subscribers of a SessionObject, on the hibernation API, with flow control
 * (`socket-pacing.ts`).
 *
 * Connect (`accept`):
 * 1. accept the server end with `ctx.acceptWebSocket`, so the object may hibernate while the
 *    socket stays open;
 * 2. check the cursor against the log: it must name this session, not be ahead of the head, and
 *    name the event that really sits at its sequence; otherwise send one `error` frame and close
 *    with 1008;
 * 3. replay from the cursor (`#pump`) in pages bounded by the room left in the socket's window
 *    (bytes) and by a count. When the replay reaches the head, one `caught_up` frame, then, when
 *    an agent's model response is streaming, one `partial_response` frame with its text so far
 *    (`agent-stream.ts`). Each stretch of sending is synchronous (SQLite reads), so no append can
 *    slip between the replay and the moment the socket counts as live;
 * 4. when the window fills first, the replay waits for the client's acks (`receive`), which
 *    resume it; a client that does not ack (`?ack=1` absent) is closed with
 *    `SUBSCRIBER_SLOW_CLOSE_CODE` instead and resumes by reconnecting after its cursor;
 * 5. the socket's position and counters live in its attachment, which survives hibernation.
 *
 * After each committed append (`broadcast`): every live socket is sent the events after its
 * cursor, as far as its window allows; the rest waits in the log (the socket is behind and is
 * caught up from the log as acks arrive). Transient frames (`broadcastTransient`) go to live
 * sockets that are not held back; a held-back socket skips them and gets the text in flight again
 * (`partial_response`) when acks bring it back to the head; one that does not ack is closed (see
 * `socket-pacing.ts`). Sending never waits: a socket whose send throws is closed and dropped.
 */
import type { SqlEventLog } from '../adapters/sql/sql-event-log.js';
import {
  SUBSCRIBER_POLICY_CLOSE_CODE,
  SUBSCRIBER_SLOW_CLOSE_CODE,
  SUBSCRIBER_SLOW_ERROR_CODE,
  frameByteLength,
  parseSubscriberAck,
  type SubscriberMessage,
} from '../protocol/frames.js';
import { DurableError } from '../protocol/errors.js';
import { aheadOrThrow, anchorRead, checkAnchor, type AnchorPage } from '../core/subscription/replay-start.js';
import { decodeDurableEventCursor, durableEventCursor, encodeDurableEventCursor } from '../protocol/cursor.js';
import type { DurableEventEnvelope } from '../protocol/events.js';
import { EventSequence, SessionId } from '../protocol/ids.js';
import { MAX_READ_PAGE_BYTES } from '../protocol/limits.js';
import {
  applyAck,
  fits,
  inFlight,
  parseAttachment,
  resolvePacingLimits,
  roomFor,
  stalledTooLong,
  type SocketCursor,
  type SubscriberPacingLimits,
} from './socket-pacing.js';

export type { SocketCursor } from './socket-pacing.js';

/** WebSocket close code when a send fails (1011: unexpected condition). */
const SEND_FAILED_CLOSE_CODE = 1011;
/** Close reason sent with `SUBSCRIBER_SLOW_CLOSE_CODE`. */
const SLOW_REASON = 'subscriber too slow: reconnect after your last cursor';

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

/** Options of {@link SessionSockets}. */
interface SessionSocketsOptions {
  /** Flow-control bounds, read at each use (defaults: `DEFAULT_SUBSCRIBER_PACING`). */
  limits?: () => Partial<SubscriberPacingLimits> | undefined;
  /** The `partial_response` frame of a model response in flight, sent right after `caught_up`. */
  partialFrame?: () => string | undefined;
  /** Clock of the stall check (ms). */
  now?: () => number;
}

const registry = new WeakMap<DurableObjectState, SessionSockets>();

/** The subscriber sockets of an object's state, once constructed (for best-effort frames). */
export function subscriberSocketsOf(ctx: DurableObjectState): SessionSockets | undefined {
  return registry.get(ctx);
}

/** Subscriber sockets of one session object. */
export class SessionSockets {
  readonly #ctx: DurableObjectState;
  readonly #log: SqlEventLog;
  readonly #options: SessionSocketsOptions;
  /** In-memory copy of each socket's attachment (rebuilt from the attachment after hibernation). */
  readonly #cursors = new WeakMap<WebSocket, SocketCursor>();

  constructor(ctx: DurableObjectState, log: SqlEventLog, options: SessionSocketsOptions = {}) {
    this.#ctx = ctx;
    this.#log = log;
    this.#options = options;
    registry.set(ctx, this);
  }

  /**
   * Accepts `server`, then validates, replays (as far as the window allows) and attaches, or
   * refuses with an error frame. `resolveSession` binds the requested session (it throws for a
   * foreign one). `paced`: the client sends acks (`?ack=1`).
   */
  accept(server: WebSocket, resolveSession: () => SessionId, afterCursor: string | null, paced = false): void {
    this.#ctx.acceptWebSocket(server);
    let start: SocketCursor;
    try {
      const sessionId = resolveSession();
      start = { ...this.#anchor(sessionId, afterCursor), caughtUp: false, paced, sent: 0, acked: 0, stalledAt: null, resync: false };
    } catch (error) {
      this.#refuse(server, error);
      return;
    }
    this.#attach(server, start);
    this.#pump(server, start, this.#objectInFlight());
  }

  /**
   * Handles a client text frame. Answers `false` when it is not an ack (the caller handles it).
   * An ack moves the socket's counters and resumes its replay, then any socket that was waiting
   * for room in the object's window. An ack of more than was sent closes the socket with 1008.
   */
  receive(ws: WebSocket, text: string): boolean {
    const ack = parseSubscriberAck(text);
    if (ack === undefined) return false;
    const cursor = this.#cursorOf(ws);
    if (cursor === null) return true;
    const outcome = applyAck(cursor, ack.bytes);
    if (outcome.kind === 'ignored') return true;
    if (outcome.kind === 'violation') {
      this.drop(ws, SUBSCRIBER_POLICY_CLOSE_CODE, outcome.reason);
      return true;
    }
    this.#attach(ws, outcome.cursor);
    if (this.#waiting(outcome.cursor)) this.#pump(ws, outcome.cursor, this.#objectInFlight());
    // Room may have opened in the object's window for others that wait.
    const limits = this.#limits();
    for (const other of this.#ctx.getWebSockets()) {
      if (other === ws) continue;
      const state = this.#cursorOf(other);
      if (state === null || !state.paced || state.stalledAt === null) continue;
      if (inFlight(state) >= limits.windowBytes) continue;
      this.#pump(other, state, this.#objectInFlight());
    }
    return true;
  }

  /**
   * Sends a transient frame (token delta, tool progress) to every live socket of the object, in
   * the order of the calls, interleaved with `broadcast`. A socket still replaying skips it (it
   * gets `partial_response` at `caught_up`); a live socket held back for lack of room skips it and
   * gets `partial_response` again when it is back at the head; a socket that does not ack, or has
   * been held back longer than `stallMs`, is closed with `SUBSCRIBER_SLOW_CLOSE_CODE`. Never throws.
   */
  broadcastTransient(frame: string): void {
    this.#sendTransient(undefined, frame, true);
  }

  /** Sends a best-effort frame (durability records) to live sockets of `sessionId` that have room. Never throws. */
  broadcastBestEffort(sessionId: string, frame: string): void {
    this.#sendTransient(sessionId, frame, false);
  }

  #sendTransient(sessionId: string | undefined, frame: string, resyncWhenHeld: boolean): void {
    const sockets = this.#ctx.getWebSockets();
    // Nobody listens (the common case while an agent streams): no size, limits or window to work out.
    if (sockets.length === 0) return;
    const bytes = frameByteLength(frame);
    const limits = this.#limits();
    const now = this.#now();
    let total = this.#objectInFlight();
    for (const ws of sockets) {
      const cursor = this.#cursorOf(ws);
      if (cursor === null || !cursor.caughtUp) continue;
      if (sessionId !== undefined && cursor.sessionId !== sessionId) continue;
      // Held back: events wait for acks (the log's head is not compared here: a commit's own
      // push may still be on its way when a delta goes out), or no room for this frame.
      if (cursor.stalledAt !== null || !fits(cursor, bytes, total, limits)) {
        if (!cursor.paced || stalledTooLong(cursor, now, limits)) {
          // It will not ack (or has not for too long): close it; it resumes from its cursor.
          total -= inFlight(cursor);
          this.#closeSlow(ws);
        } else if (resyncWhenHeld) {
          // Skipped: when acks let it reach the head again it gets the text in flight anew.
          this.#attach(ws, { ...cursor, resync: true, stalledAt: cursor.stalledAt ?? now });
        }
        continue;
      }
      if (!this.#sendRaw(ws, frame)) {
        total -= inFlight(cursor);
        continue;
      }
      this.#attach(ws, { ...cursor, sent: cursor.sent + bytes });
      total += bytes;
    }
  }

  /** Pushes a committed batch to every live socket of `sessionId`, within its window. Never throws. */
  broadcast(sessionId: SessionId, events: readonly DurableEventEnvelope[]): void {
    const first = events[0];
    const last = events[events.length - 1];
    if (first === undefined || last === undefined) return;
    const limits = this.#limits();
    const now = this.#now();
    let total = this.#objectInFlight();
    let frames: string[] | undefined;
    let sizes: number[] | undefined;
    for (const ws of this.#ctx.getWebSockets()) {
      const cursor = this.#cursorOf(ws);
      if (cursor === null || cursor.sessionId !== sessionId) continue;
      const at = cursor.cursorSequence ?? 0;
      if (at >= last.sequence) continue;
      const before = inFlight(cursor);
      if (cursor.stalledAt !== null) {
        // Waiting for acks: its next events are read from the log when they come.
        if (stalledTooLong(cursor, now, limits)) {
          total -= before;
          this.#closeSlow(ws);
        }
        continue;
      }
      if (!cursor.caughtUp || at + 1 < first.sequence) {
        // Behind the batch: catch up from the log instead of skipping anything.
        const after = this.#pump(ws, cursor, total);
        total += (after === null ? 0 : inFlight(after)) - before;
        continue;
      }
      frames ??= events.map(eventFrame);
      sizes ??= frames.map(frameByteLength);
      let next: SocketCursor = { ...cursor };
      let complete = true;
      try {
        for (let index = at + 1 - first.sequence; index < events.length; index += 1) {
          const frame = frames[index];
          const size = sizes[index];
          const event = events[index];
          if (frame === undefined || size === undefined || event === undefined) continue;
          if (!fits(next, size, total, limits)) {
            complete = false;
            break;
          }
          ws.send(frame);
          next = { ...next, cursorSequence: event.sequence, cursorEventId: event.eventId, sent: next.sent + size };
          total += size;
        }
      } catch {
        total -= inFlight(next);
        this.drop(ws, SEND_FAILED_CLOSE_CODE);
        continue;
      }
      if (!complete && !next.paced) {
        total -= inFlight(next);
        this.#attach(ws, next);
        this.#closeSlow(ws);
        continue;
      }
      if (!complete) next = { ...next, stalledAt: next.stalledAt ?? now };
      this.#attach(ws, next);
    }
  }

  /** Forgets a socket (closing it if still open). */
  drop(ws: WebSocket, code?: number, reason = 'subscriber dropped'): void {
    this.#cursors.delete(ws);
    try {
      ws.serializeAttachment(null);
    } catch {
      // A closed socket may refuse attachment writes; it is gone either way.
    }
    if (code !== undefined) {
      try {
        ws.close(code, reason);
      } catch {
        // Already closed.
      }
    }
  }

  // ---- internals --------------------------------------------------------------------------

  #limits(): SubscriberPacingLimits {
    return resolvePacingLimits(this.#options.limits?.());
  }

  #now(): number {
    return (this.#options.now ?? Date.now)();
  }

  #head(sessionId: string): number {
    return this.#log.getHeadSequence(SessionId(sessionId)) ?? 0;
  }

  /** True when the socket has events (or its `caught_up`) still to receive. */
  #waiting(cursor: SocketCursor): boolean {
    return (
      !cursor.caughtUp || cursor.resync || cursor.stalledAt !== null || (cursor.cursorSequence ?? 0) < this.#head(cursor.sessionId)
    );
  }

  /** Unacknowledged bytes of every open socket of the object. */
  #objectInFlight(): number {
    let total = 0;
    for (const ws of this.#ctx.getWebSockets()) {
      const cursor = this.#cursorOf(ws);
      if (cursor !== null) total += inFlight(cursor);
    }
    return total;
  }

  /** Checks a saved cursor against the log (`checkAnchor`); returns the position to replay after. */
  #anchor(sessionId: SessionId, afterCursor: string | null): Pick<SocketCursor, 'sessionId' | 'cursorSequence' | 'cursorEventId'> {
    if (afterCursor === null) return { sessionId, cursorSequence: null, cursorEventId: null };
    const cursor = decodeDurableEventCursor(afterCursor);
    let page: AnchorPage;
    try {
      page = this.#log.read(sessionId, anchorRead(cursor));
    } catch (error) {
      page = aheadOrThrow(error);
    }
    checkAnchor(sessionId, cursor, page);
    return { sessionId, cursorSequence: cursor.sequence, cursorEventId: cursor.eventId };
  }

  /**
   * Sends the events after the socket's cursor, page by page, while its window and the object's
   * have room; at the head, `caught_up` (once) and the partial text in flight. Stopped by the
   * window: a paced socket waits for acks (`stalledAt`), any other is closed. Returns the new
   * state, or `null` when the socket was dropped. Never throws.
   */
  #pump(ws: WebSocket, start: SocketCursor, objectInFlight: number): SocketCursor | null {
    const limits = this.#limits();
    let cursor: SocketCursor = { ...start };
    let total = objectInFlight;
    let stopped = false;
    try {
      const sessionId = SessionId(cursor.sessionId);
      const head = this.#head(sessionId);
      while ((cursor.cursorSequence ?? 0) < head) {
        const room = roomFor(cursor, total, limits);
        if (room <= 0) {
          stopped = true;
          break;
        }
        const at = cursor.cursorSequence;
        const page = this.#log.read(sessionId, {
          after: at === null ? undefined : EventSequence(at),
          limit: limits.pageEvents,
          maxBytes: Math.min(room, MAX_READ_PAGE_BYTES),
        });
        if (page.events.length === 0) break;
        for (const event of page.events) {
          const frame = eventFrame(event);
          const size = frameByteLength(frame);
          if (!fits(cursor, size, total, limits)) {
            stopped = true;
            break;
          }
          ws.send(frame);
          cursor = { ...cursor, cursorSequence: event.sequence, cursorEventId: event.eventId, sent: cursor.sent + size };
          total += size;
        }
        if (stopped) break;
      }
      if (!stopped) {
        if (!cursor.caughtUp) {
          const caughtUp: SubscriberMessage = {
            type: 'caught_up',
            headSequence: cursor.cursorSequence === null ? null : EventSequence(cursor.cursorSequence),
          };
          cursor = this.#sendCounted(ws, cursor, JSON.stringify(caughtUp));
          // Still synchronous: the text of a model response in flight, before any later delta.
          const partial = this.#options.partialFrame?.();
          if (partial !== undefined) cursor = this.#sendCounted(ws, cursor, partial);
          cursor = { ...cursor, caughtUp: true, resync: false };
        } else if (cursor.resync) {
          // Transient frames were skipped while it was held back: the text in flight, anew.
          const partial = this.#options.partialFrame?.();
          if (partial !== undefined) cursor = this.#sendCounted(ws, cursor, partial);
          cursor = { ...cursor, resync: false };
        }
        cursor = { ...cursor, stalledAt: null };
      } else if (!cursor.paced) {
        this.#attach(ws, cursor);
        this.#closeSlow(ws);
        return null;
      } else {
        cursor = { ...cursor, stalledAt: cursor.stalledAt ?? this.#now() };
      }
    } catch {
      this.drop(ws, SEND_FAILED_CLOSE_CODE);
      return null;
    }
    this.#attach(ws, cursor);
    return cursor;
  }

  #sendCounted(ws: WebSocket, cursor: SocketCursor, frame: string): SocketCursor {
    ws.send(frame);
    return { ...cursor, sent: cursor.sent + frameByteLength(frame) };
  }

  #attach(ws: WebSocket, cursor: SocketCursor): void {
    ws.serializeAttachment(cursor);
    this.#cursors.set(ws, cursor);
  }

  #cursorOf(ws: WebSocket): SocketCursor | null {
    const cached = this.#cursors.get(ws);
    if (cached !== undefined) return cached;
    let restored: SocketCursor | null;
    try {
      restored = parseAttachment(ws.deserializeAttachment());
    } catch {
      return null;
    }
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

  #closeSlow(ws: WebSocket): void {
    // The notice first: the client can reconnect on it without waiting for the close handshake.
    const notice: SubscriberMessage = { type: 'error', code: SUBSCRIBER_SLOW_ERROR_CODE, message: SLOW_REASON };
    try {
      ws.send(JSON.stringify(notice));
    } catch {
      // Already closing: the close below is all that is left.
    }
    this.drop(ws, SUBSCRIBER_SLOW_CLOSE_CODE, SLOW_REASON);
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
}
