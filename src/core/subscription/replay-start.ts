/**
 * Where a replay starts: the one cursor rule (for the subscription, `GET /events?after=`, SSE and
 * the session object's WebSockets) and the subscription's replay barrier.
 *
 * A cursor holds when one read of the event at its sequence proves it still names the same event:
 * same session, same sequence, and (for an encoded cursor) same event ID; that read also reports
 * the head. A cursor of another session, ahead of the head, or naming a replaced event is refused
 * (`DurableEventSubscriptionError`, or the caller's refusal) instead of silently skipping or
 * repeating data. Without a cursor a subscription starts at the first event, its barrier the head.
 */
import { withDeadline } from '../abort.js';
import { systemTime, type TimeSource } from '../time.js';
import type { DurableEventStore, DurableReadResult } from '../store.js';
import { DurableEventStoreError, DurableEventSubscriptionError, isDurableError, type DurableError } from '../../protocol/errors.js';
import { parseDurableEventCursor, type DurableEventCursor } from '../../protocol/cursor.js';
import type { DurableEventEnvelope } from '../../protocol/events.js';
import { EventSequence, type EventId, type SessionId } from '../../protocol/ids.js';

/** The checked starting point of a subscription. */
export interface ReplayStart {
  /** Last event already delivered (the cursor's), or `null` to start at the first event. */
  position: EventSequence | null;
  /** Head at open: the replay ends here and `caught_up` reports it. */
  barrier: EventSequence | null;
  /** True when the cursor names `session_closed` (nothing can follow). */
  closed: boolean;
}

/** What a resume point names: a sequence of a session and, for an encoded cursor, the event there. */
export interface CursorAnchor {
  sessionId: string;
  sequence: EventSequence;
  /** Absent for a bare sequence: any event at `sequence` holds it. */
  eventId?: EventId;
}

/** The event a cursor names, as the log holds it, and the head seen by the same read. */
export interface AnchoredCursor {
  event: DurableEventEnvelope;
  headSequence: EventSequence | null;
}

/** How a caller reports a cursor that does not hold (subscriptions and reads use different codes). */
export type CursorRefusal = (message: string, details: Record<string, unknown>, cause?: unknown) => DurableError;

/** The subscriptions' refusal: `DURABLE_EVENT_SUBSCRIPTION_INVALID`. */
export const refuseSubscriptionCursor: CursorRefusal = (message, details, cause) =>
  new DurableEventSubscriptionError(message, cause === undefined ? { details } : { details, cause });

/** The read that proves a cursor: one event, at its sequence. */
export type AnchorReadOptions = { after?: EventSequence; limit: 1 };

/** The answer of the anchor read, or `'ahead'` when the store refused it as past its head. */
export type AnchorPage = Pick<DurableReadResult, 'events' | 'headSequence'> | 'ahead';

/**
 * The resume cursor of an SSE request: `Last-Event-ID` (what EventSource sends on reconnect)
 * wins over `?after=`; an empty value names no cursor.
 */
export function resumeCursorText(lastEventId: string | null, after: string | undefined): string | undefined {
  return lastEventId !== null && lastEventId !== '' ? lastEventId : after === '' ? undefined : after;
}

/** The options of the anchor read of `anchor`. */
export function anchorRead(anchor: CursorAnchor): AnchorReadOptions {
  return anchor.sequence > 1 ? { after: EventSequence(anchor.sequence - 1), limit: 1 } : { limit: 1 };
}

/** Turns the store's refusal of the anchor read (a position past its head) into `'ahead'`; rethrows anything else. */
export function aheadOrThrow(error: unknown): 'ahead' {
  if (isDurableError(error) && error.code === 'DURABLE_EVENT_INVALID_CURSOR') return 'ahead';
  throw error;
}

function detailsOf(sessionId: string, anchor: CursorAnchor): Record<string, unknown> {
  return { sessionId, cursorSessionId: anchor.sessionId, sequence: anchor.sequence, eventId: anchor.eventId };
}

/** Refuses a cursor of another session (checked before any read). */
export function checkCursorSession(sessionId: string, anchor: CursorAnchor, refuse: CursorRefusal = refuseSubscriptionCursor): void {
  if (anchor.sessionId !== sessionId) {
    throw refuse(`the cursor names session ${anchor.sessionId}, not ${sessionId}`, detailsOf(sessionId, anchor));
  }
}

/** The cursor rule: checks `anchor` against the page of its anchor read (see the module header). */
export function checkAnchor(
  sessionId: string,
  anchor: CursorAnchor,
  page: AnchorPage,
  refuse: CursorRefusal = refuseSubscriptionCursor,
): AnchoredCursor {
  checkCursorSession(sessionId, anchor, refuse);
  const details = detailsOf(sessionId, anchor);
  const head = page === 'ahead' ? undefined : page.headSequence;
  const event = page === 'ahead' ? undefined : page.events[0];
  if (event === undefined || head === null || head === undefined || head < anchor.sequence) {
    const of = head === undefined ? '' : ` ${String(head)}`;
    throw refuse(`the cursor (sequence ${anchor.sequence}) is ahead of the head${of}`, { ...details, headSequence: head ?? null });
  }
  if (event.sequence !== anchor.sequence || event.sessionId !== sessionId) {
    throw refuse(`the store returned sequence ${String(event.sequence)} where the cursor's sequence ${anchor.sequence} belongs`, details);
  }
  if (anchor.eventId !== undefined && event.eventId !== anchor.eventId) {
    throw refuse(`event ${anchor.sequence} is no longer ${anchor.eventId}: the log was replaced`, { ...details, storedEventId: event.eventId });
  }
  return { event, headSequence: head };
}

/** Checks `anchor` with one read through the caller's store call (`read` gets the anchor read's options). */
export async function anchorCursor(
  sessionId: string,
  anchor: CursorAnchor,
  read: (options: AnchorReadOptions) => Promise<Pick<DurableReadResult, 'events' | 'headSequence'>>,
  refuse: CursorRefusal = refuseSubscriptionCursor,
): Promise<AnchoredCursor> {
  checkCursorSession(sessionId, anchor, refuse);
  return checkAnchor(sessionId, anchor, await read(anchorRead(anchor)).catch(aheadOrThrow), refuse);
}

/** Deadline-bounded store call of a subscription. */
export function subscriptionCall<T>(
  timeoutMs: number,
  signal: AbortSignal | undefined,
  sessionId: SessionId,
  call: (signal: AbortSignal) => Promise<T>,
  time: TimeSource = systemTime,
): Promise<T> {
  return withDeadline(
    timeoutMs,
    signal,
    call,
    () =>
      new DurableEventStoreError('DURABLE_EVENT_IO_TIMEOUT', `subscription store call exceeded its deadline of ${timeoutMs} ms`, {
        details: { timeoutMs, sessionId },
      }),
    time,
  );
}

/** Checks `after` against the log and captures the replay barrier. */
export async function resolveReplayStart(
  store: DurableEventStore,
  sessionId: SessionId,
  after: DurableEventCursor | null | undefined,
  timeoutMs: number,
  signal: AbortSignal | undefined,
  time: TimeSource = systemTime,
): Promise<ReplayStart> {
  if (after === undefined || after === null) {
    const barrier = await subscriptionCall(timeoutMs, signal, sessionId, (callSignal) =>
      store.getHeadSequence(sessionId, { signal: callSignal }),
      time,
    );
    return { position: null, barrier, closed: false };
  }
  let cursor: DurableEventCursor;
  try {
    cursor = parseDurableEventCursor(after);
  } catch (error) {
    throw refuseSubscriptionCursor(`the resume cursor is malformed: ${error instanceof Error ? error.message : String(error)}`, {}, error);
  }
  const { event, headSequence } = await anchorCursor(sessionId, cursor, (options) =>
    subscriptionCall(timeoutMs, signal, sessionId, (callSignal) => store.read(sessionId, { ...options, signal: callSignal }), time),
  );
  return { position: cursor.sequence, barrier: headSequence, closed: event.type === 'session_closed' };
}
