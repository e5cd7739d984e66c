/**
 * Options and messages of {@link DurableEventSubscription}, and their validation.
 *
 * A bad option throws `DurableEventSubscriptionError` before any store call.
 */
import { checkTimeoutMs } from '../abort.js';
import { isTimeSource, systemTime, type TimeSource } from '../time.js';
import { DurableEventSubscriptionError } from '../../protocol/errors.js';
import type { DurableEventCursor } from '../../protocol/cursor.js';
import type { DurableEventEnvelope } from '../../protocol/events.js';
import type { EventSequence } from '../../protocol/ids.js';
import { DEFAULT_READ_LIMIT, DEFAULT_STORE_TIMEOUT_MS, MAX_DURABLE_STORE_TIMEOUT_MS, MAX_READ_LIMIT } from '../../protocol/limits.js';

/** Default wait between two reads of a store that cannot push (`watch`-less). */
const DEFAULT_POLL_INTERVAL_MS = 250;
/** Longest accepted `pollIntervalMs`. */
const MAX_POLL_INTERVAL_MS = 60_000;

/** Options of {@link DurableEventSubscription.open}. */
export interface DurableEventSubscriptionOptions {
  /**
   * Resume after this event (exclusive). It must name an event of this session that the log
   * still holds at that sequence with that ID; otherwise `open` fails closed. `null` or omitted:
   * replay from the first event.
   */
  after?: DurableEventCursor | null;
  /** Events per read, 1..1000 (default 100); also the most events held in memory. */
  pageSize?: number;
  /** Wait between reads when the store has no `watch` (default 250 ms, at most 60 000). */
  pollIntervalMs?: number;
  /** `false`: replay the snapshot that existed at `open`, emit `caught_up`, then end (default `true`). */
  follow?: boolean;
  /** Aborting it ends the subscription: the pending and every later `next()` reject with an `AbortError`. */
  signal?: AbortSignal;
  /** Deadline of each store call, in ms (default 15 000, at most `MAX_DURABLE_STORE_TIMEOUT_MS`). */
  storeTimeoutMs?: number;
  /**
   * Clocks and timers of the poll interval and of every store-call deadline (default: the host's,
   * `systemTime`). Tests pass a `ManualTimeSource` to drive them deterministically.
   */
  time?: TimeSource;
}

/** One delivered event, with the cursor to save once it has been processed. */
export interface DurableSubscriptionEventMessage {
  type: 'event';
  event: DurableEventEnvelope;
  /** Names this event; resuming `after` it continues with the next one. */
  cursor: DurableEventCursor;
  /** False during the replay (events up to the head captured at `open`), true afterwards. */
  live: boolean;
}

/** The replay barrier: every event up to `headSequence` (the head at `open`) has been delivered. */
export interface DurableSubscriptionCaughtUpMessage {
  type: 'caught_up';
  headSequence: EventSequence | null;
}

/** What a subscription yields. */
export type DurableSubscriptionMessage = DurableSubscriptionEventMessage | DurableSubscriptionCaughtUpMessage;

/** Validated subscription settings. */
export interface SubscriptionSettings {
  pageSize: number;
  pollIntervalMs: number;
  follow: boolean;
  storeTimeoutMs: number;
  signal: AbortSignal | undefined;
  time: TimeSource;
}

function invalid(message: string): DurableEventSubscriptionError {
  return new DurableEventSubscriptionError(message);
}

function checkInteger(name: string, value: unknown, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min || value > max) {
    throw invalid(`${name} must be an integer in ${min}..${max}, got ${String(value)}`);
  }
  return value;
}

/** Validates subscription options. */
export function resolveSubscriptionOptions(options: DurableEventSubscriptionOptions | undefined): SubscriptionSettings {
  const o = options ?? {};
  if (o.follow !== undefined && typeof o.follow !== 'boolean') throw invalid('follow must be a boolean');
  if (o.signal !== undefined && typeof o.signal?.aborted !== 'boolean') throw invalid('signal must be an AbortSignal');
  if (o.time !== undefined && !isTimeSource(o.time)) throw invalid('time must be a TimeSource');
  return {
    pageSize: o.pageSize === undefined ? DEFAULT_READ_LIMIT : checkInteger('pageSize', o.pageSize, 1, MAX_READ_LIMIT),
    pollIntervalMs:
      o.pollIntervalMs === undefined
        ? DEFAULT_POLL_INTERVAL_MS
        : checkInteger('pollIntervalMs', o.pollIntervalMs, 1, MAX_POLL_INTERVAL_MS),
    follow: o.follow ?? true,
    storeTimeoutMs:
      o.storeTimeoutMs === undefined
        ? DEFAULT_STORE_TIMEOUT_MS
        : checkTimeoutMs(o.storeTimeoutMs, MAX_DURABLE_STORE_TIMEOUT_MS, (message) => invalid(`storeTimeoutMs: ${message}`)),
    signal: o.signal,
    time: o.time ?? systemTime,
  };
}
