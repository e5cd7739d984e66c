/**
 * Messages a SessionObject sends to a WebSocket subscriber (JSON text frames), runtime-neutral.
 *
 * 1. `event` frames replay the log from the subscriber's cursor, in order, each with the encoded
 *    cursor of that event (save it to resume exactly after it).
 * 2. One `caught_up` frame marks the end of the replay: every event up to `headSequence` was sent.
 * 3. Then one `event` frame per event, as soon as its append commits.
 * 4. On a refused subscription (bad, foreign or stale cursor; wrong session) one `error` frame,
 *    then the socket closes with {@link SUBSCRIBER_POLICY_CLOSE_CODE}.
 * A text frame `ping` is answered with `pong` without waking the object.
 */
import type { DurableEventEnvelope } from '../../protocol/events.js';
import type { EventSequence } from '../../protocol/ids.js';

/** One replayed or live event. */
export interface SubscriberEventMessage {
  type: 'event';
  event: DurableEventEnvelope;
  /** `encodeDurableEventCursor` of this event. */
  cursor: string;
}

/** End of the replay. */
export interface SubscriberCaughtUpMessage {
  type: 'caught_up';
  headSequence: EventSequence | null;
}

/** The subscription was refused; the socket closes next. */
export interface SubscriberErrorMessage {
  type: 'error';
  code: string;
  message: string;
}

/** Any frame a subscriber receives (besides `pong`). */
export type SubscriberMessage = SubscriberEventMessage | SubscriberCaughtUpMessage | SubscriberErrorMessage;

/** WebSocket close code after an `error` frame (1008: policy violation). */
export const SUBSCRIBER_POLICY_CLOSE_CODE = 1008;
/** Text frame a client may send to check liveness; answered with {@link SUBSCRIBER_PONG}. */
export const SUBSCRIBER_PING = 'ping';
/** Answer to {@link SUBSCRIBER_PING}. */
export const SUBSCRIBER_PONG = 'pong';
/** Most events replayed per page when a subscriber connects. */
export const SUBSCRIBER_REPLAY_PAGE_SIZE = 1000;
