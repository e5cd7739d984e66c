/**
 * Flow control of the session object's WebSocket subscribers (the arithmetic; `sockets.ts` does
 * the sending).
 *
 * The runtime does not expose `bufferedAmount` on server-side WebSockets, so the object cannot see
 * a socket's backlog. It counts instead: every text frame it sends adds its UTF-8 size to the
 * socket's `sent`, and the client's `{ "type": "ack", "bytes": N }` frames move `acked` (see
 * `src/protocol/frames.ts`). `sent - acked` is what may still sit in buffers between the object
 * and the client's code: the object keeps it within
 *
 * - {@link SubscriberPacingLimits.windowBytes} per socket: replay reads the log in pages bounded by
 *   the room left in the window (bytes) and by {@link SubscriberPacingLimits.pageEvents} (count),
 *   and continues only when acks make room. Live events beyond the window are not pushed: the
 *   socket falls behind and is caught up from the log as acks arrive, so the object never queues
 *   anything in its own memory.
 * - {@link SubscriberPacingLimits.objectWindowBytes} for all the object's open sockets together.
 *
 * A socket may pass its window by one frame (an event larger than the room left still goes alone
 * when nothing else is in flight), so one socket holds at most `windowBytes` + one event frame.
 *
 * Sockets are closed with `SUBSCRIBER_SLOW_CLOSE_CODE` (4008) when:
 * - they did not subscribe with `?ack=1` (older clients) and the object had to stop sending to
 *   them (their window is full, or the object's): such a client gets at most one window per
 *   connection, then reconnects after its last cursor and gets the next one;
 * - they stayed stalled (window full, no ack) for longer than
 *   {@link SubscriberPacingLimits.stallMs}, checked when something new is due for them.
 *
 * Transient frames (token deltas, tool progress) are not in the log and cannot wait: a paced socket
 * held back for lack of room skips them and is marked `resync`; when acks bring it back to the head
 * it gets `partial_response` (the text of the model response in flight, so far) before the next
 * delta, so it can still render the whole answer. Skipped `tool_progress` frames are lost (they
 * are progress, and the tool outcome event follows in the log).
 *
 * All the state lives in the socket's attachment, so it survives hibernation.
 */

import { SUBSCRIBER_REPLAY_PAGE_SIZE } from '../adapters/durable-object/socket-protocol.js';

/** Bounds of the subscriber flow control (see the module header). */
export interface SubscriberPacingLimits {
  /** Unacknowledged bytes one socket may have (plus one frame). */
  windowBytes: number;
  /** Unacknowledged bytes all open sockets of one object may have together. */
  objectWindowBytes: number;
  /** Most events in one replay page. */
  pageEvents: number;
  /** A socket whose window stays full without an ack this long is closed when a new frame is due. */
  stallMs: number;
}

/** Defaults: 1 MiB per socket, 16 MiB per object (an object has 128 MB), 1000 events a page, 60 s. */
export const DEFAULT_SUBSCRIBER_PACING: Readonly<SubscriberPacingLimits> = Object.freeze({
  windowBytes: 1024 * 1024,
  objectWindowBytes: 16 * 1024 * 1024,
  pageEvents: SUBSCRIBER_REPLAY_PAGE_SIZE,
  stallMs: 60_000,
});

/** Bounds set by the Worker vars `SUBSCRIBER_WINDOW_BYTES`, `SUBSCRIBER_OBJECT_WINDOW_BYTES`, `SUBSCRIBER_STALL_MS`. */
export function pacingFromEnv(env: unknown): Partial<SubscriberPacingLimits> {
  if (typeof env !== 'object' || env === null) return {};
  const vars = env as Record<string, unknown>;
  const limits: Partial<SubscriberPacingLimits> = {};
  const read = (name: string): number | undefined => {
    const value = vars[name];
    const number = typeof value === 'string' && /^[0-9]+$/.test(value) ? Number(value) : value;
    return typeof number === 'number' && Number.isSafeInteger(number) && number > 0 ? number : undefined;
  };
  const window = read('SUBSCRIBER_WINDOW_BYTES');
  const objectWindow = read('SUBSCRIBER_OBJECT_WINDOW_BYTES');
  const stall = read('SUBSCRIBER_STALL_MS');
  if (window !== undefined) limits.windowBytes = window;
  if (objectWindow !== undefined) limits.objectWindowBytes = objectWindow;
  else if (window !== undefined) limits.objectWindowBytes = Math.max(window, DEFAULT_SUBSCRIBER_PACING.objectWindowBytes);
  if (stall !== undefined) limits.stallMs = stall;
  return limits;
}

/** Checks and completes a partial set of limits. */
export function resolvePacingLimits(limits: Partial<SubscriberPacingLimits> | undefined): SubscriberPacingLimits {
  const resolved = { ...DEFAULT_SUBSCRIBER_PACING, ...limits };
  for (const [key, value] of Object.entries(resolved)) {
    if (!Number.isSafeInteger(value) || value < 1) throw new RangeError(`subscriber pacing: ${key} must be a positive integer`);
  }
  if (resolved.objectWindowBytes < resolved.windowBytes) {
    throw new RangeError('subscriber pacing: objectWindowBytes must be at least windowBytes');
  }
  return resolved;
}

/** What a subscribed socket's attachment holds (it survives hibernation). */
export interface SocketCursor {
  sessionId: string;
  /** The last event sent, or `null` before the first. */
  cursorSequence: number | null;
  cursorEventId: string | null;
  /** `caught_up` was sent: the socket is live. */
  caughtUp: boolean;
  /** The client subscribed with `?ack=1`. */
  paced: boolean;
  /** Cumulative UTF-8 bytes of the text frames sent (pong excluded). */
  sent: number;
  /** Cumulative bytes the client acknowledged. */
  acked: number;
  /** When the object last had to stop sending for lack of room (ms), `null` while it is not waiting. */
  stalledAt: number | null;
  /** Transient frames were skipped while it was held back: send `partial_response` at the head. */
  resync: boolean;
}

/** Parses an attachment; older attachments (before flow control) count as live legacy sockets. */
export function parseAttachment(value: unknown): SocketCursor | null {
  if (typeof value !== 'object' || value === null) return null;
  const v = value as Partial<SocketCursor>;
  if (typeof v.sessionId !== 'string') return null;
  const sequenceOk = v.cursorSequence === null || (typeof v.cursorSequence === 'number' && v.cursorSequence >= 1);
  const eventOk = v.cursorEventId === null || typeof v.cursorEventId === 'string';
  if (!sequenceOk || !eventOk || (v.cursorSequence === null) !== (v.cursorEventId === null)) return null;
  const count = (n: unknown): number => (typeof n === 'number' && Number.isSafeInteger(n) && n >= 0 ? n : 0);
  const sent = count(v.sent);
  return {
    sessionId: v.sessionId,
    cursorSequence: v.cursorSequence ?? null,
    cursorEventId: v.cursorEventId ?? null,
    caughtUp: v.caughtUp ?? true,
    paced: v.paced === true,
    sent,
    acked: Math.min(count(v.acked), sent),
    stalledAt: typeof v.stalledAt === 'number' ? v.stalledAt : null,
    resync: v.resync === true,
  };
}

/** Bytes sent to a socket and not acknowledged yet. */
export function inFlight(cursor: SocketCursor): number {
  return cursor.sent - cursor.acked;
}

/**
 * Room for the next frame(s) of a socket: the smaller of what is left in its window and in the
 * object's. Zero or less: send nothing, except that a socket with nothing in flight may always
 * take one frame while the object has room.
 */
export function roomFor(cursor: SocketCursor, objectInFlight: number, limits: SubscriberPacingLimits): number {
  return Math.min(limits.windowBytes - inFlight(cursor), limits.objectWindowBytes - objectInFlight);
}

/** True when a frame of `bytes` may go now (see {@link roomFor}). */
export function fits(cursor: SocketCursor, bytes: number, objectInFlight: number, limits: SubscriberPacingLimits): boolean {
  if (objectInFlight >= limits.objectWindowBytes) return false;
  if (inFlight(cursor) === 0) return true;
  return bytes <= roomFor(cursor, objectInFlight, limits);
}

/** The outcome of an ack. */
type AckOutcome = { kind: 'moved'; cursor: SocketCursor } | { kind: 'ignored' } | { kind: 'violation'; reason: string };

/** Applies an acknowledgement of `bytes` (cumulative) to a socket's counters. */
export function applyAck(cursor: SocketCursor, bytes: number): AckOutcome {
  if (bytes > cursor.sent) return { kind: 'violation', reason: `ack of ${bytes} bytes, only ${cursor.sent} sent` };
  if (bytes <= cursor.acked) return { kind: 'ignored' };
  return { kind: 'moved', cursor: { ...cursor, acked: bytes, stalledAt: null } };
}

/** True when a paced socket has waited for acks longer than the limit allows. */
export function stalledTooLong(cursor: SocketCursor, now: number, limits: SubscriberPacingLimits): boolean {
  return cursor.stalledAt !== null && now - cursor.stalledAt > limits.stallMs;
}
