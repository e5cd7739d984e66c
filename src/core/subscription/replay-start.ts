/**
 * Where a subscription starts: the resume cursor checked against the canonical log, and the
 * replay barrier.
 *
 * Without a cursor the replay starts at the first event and the barrier is the current head.
 * With one, a single read proves the cursor still names the same event: it reads one event at
 * the cursor's sequence and requires the same session, the same sequence and the same event ID.
 * That read also reports the head, which becomes the barrier. A cursor of another session, one
 * ahead of the head, or one naming an event that has been replaced fails closed with
 * `DurableEventSubscriptionError` instead of silently skipping or repeating data.
 */
import { withDeadline } from '../abort.js';
import { systemTime, type TimeSource } from '../time.js';
import type { DurableEventStore } from '../store.js';
import { DurableEventStoreError, DurableEventSubscriptionError, isDurableEventStoreError } from '../../protocol/errors.js';
import { parseDurableEventCursor, type DurableEventCursor } from '../../protocol/cursor.js';
import { EventSequence, type SessionId } from '../../protocol/ids.js';

/** The checked starting point of a subscription. */
export interface ReplayStart {
  /** Last event already delivered (the cursor's), or `null` to start at the first event. */
  position: EventSequence | null;
  /** Head at open: the replay ends here and `caught_up` reports it. */
  barrier: EventSequence | null;
  /** True when the cursor names `session_closed` (nothing can follow). */
  closed: boolean;
}

function refuse(message: string, details: Record<string, unknown>, cause?: unknown): DurableEventSubscriptionError {
  return new DurableEventSubscriptionError(message, cause === undefined ? { details } : { details, cause });
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
    throw refuse(`the resume cursor is malformed: ${error instanceof Error ? error.message : String(error)}`, {}, error);
  }
  const details = { sessionId, cursorSessionId: cursor.sessionId, sequence: cursor.sequence, eventId: cursor.eventId };
  if (cursor.sessionId !== sessionId) {
    throw refuse(`the resume cursor belongs to session ${cursor.sessionId}, not ${sessionId}`, details);
  }
  let page;
  try {
    page = await subscriptionCall(timeoutMs, signal, sessionId, (callSignal) =>
      store.read(sessionId, {
        after: cursor.sequence > 1 ? EventSequence(cursor.sequence - 1) : undefined,
        limit: 1,
        signal: callSignal,
      }),
      time,
    );
  } catch (error) {
    if (isDurableEventStoreError(error) && error.code === 'DURABLE_EVENT_INVALID_CURSOR') {
      throw refuse(`the resume cursor (sequence ${cursor.sequence}) is ahead of the log's head`, details, error);
    }
    throw error;
  }
  const anchor = page.events[0];
  if (anchor === undefined || page.headSequence === null || page.headSequence < cursor.sequence) {
    throw refuse(
      `the resume cursor (sequence ${cursor.sequence}) is ahead of the log's head ${String(page.headSequence)}`,
      { ...details, headSequence: page.headSequence },
    );
  }
  if (anchor.sequence !== cursor.sequence || anchor.sessionId !== sessionId) {
    throw refuse(
      `the store returned sequence ${String(anchor.sequence)} where the resume cursor's sequence ${cursor.sequence} belongs`,
      details,
    );
  }
  if (anchor.eventId !== cursor.eventId) {
    throw refuse(
      `the log holds event ${anchor.eventId} at sequence ${cursor.sequence}, not the cursor's ${cursor.eventId}: it was replaced`,
      { ...details, storedEventId: anchor.eventId },
    );
  }
  return { position: cursor.sequence, barrier: page.headSequence, closed: anchor.type === 'session_closed' };
}
