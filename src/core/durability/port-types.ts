/**
 * Public types of the durability port: what `createDurabilityPort` takes and returns.
 */
import type { JsonValue } from '../../protocol/json.js';
import type { SessionId } from '../../protocol/ids.js';
import type { TimeSource } from '../time.js';
import type { DurabilityRecordStore } from './record-contract.js';

/**
 * A host hook that wakes waiters when another process may have appended a delivery. The port
 * calls it when a wait begins, BEFORE reading the records (so a delivery racing the registration
 * is still read), and calls the returned unsubscribe when that wait completes or is cancelled.
 */
export type DurabilitySubscribe = (wake: () => void) => () => void;

/** Options of `createDurabilityPort`. */
export interface DurabilityPortOptions {
  /** Where the durability records live. In-flight steps are shared only between ports of this same object. */
  store: DurabilityRecordStore;
  /** The session (conversation) whose durability records hold the facts. */
  sessionId: SessionId | string;
  /** The run deliveries are addressed to (and, for a standalone port, the scope). */
  runId: string;
  /**
   * Durable scope of `step`, `sleep` and `waitFor` keys. Default: `runId`. The agent runtime passes
   * `toolCallScope(runId, toolName, toolCallId)`. A replay must use the same scope to find its records.
   */
  scope?: string | undefined;
  /** Cross-process wake-ups for `waitFor` (see {@link DurabilitySubscribe}). */
  subscribe?: DurabilitySubscribe | undefined;
  /** Cancels every local wait of the port; durable facts stay. */
  signal?: AbortSignal | undefined;
  /**
   * Clock in epoch milliseconds, used for deadlines (default: `time.wallNow`, i.e. `Date.now` when
   * `time` is not given either).
   */
  clock?: (() => number) | undefined;
  /**
   * Timers of `sleep` and `waitFor` local waits, and their clock unless `clock` is given (default:
   * the host's, `systemTime`). Tests pass a `ManualTimeSource` to drive waits deterministically.
   */
  time?: TimeSource | undefined;
  /** Longest single timer of a local wait, 1..60 000 ms (default 60 000). */
  maxTimerIntervalMs?: number | undefined;
}

/** How long to sleep: a duration in milliseconds, or an absolute epoch-millisecond deadline. */
export type SleepDuration = number | { until: number };

/** Options of `waitFor`. */
export interface WaitForOptions {
  /** Give up after this many milliseconds (from the first time the wait began); omit to wait forever. */
  timeoutMs?: number | undefined;
}

/**
 * How a `waitFor` ended. `delivered` carries a detached copy of the first delivery's payload;
 * `timed_out` means the recorded timeout came first in record order. Replays return the same.
 */
export type WaitForResult<T extends JsonValue = JsonValue> =
  | { status: 'delivered'; payload: T; deliveryId: string; sequence: number }
  | { status: 'timed_out'; sequence: number };

/** A delivery to a waiting (or not yet waiting) `waitFor`. */
export interface DeliveryInput {
  /** Run the delivery is addressed to. On a port, defaults to the port's run. */
  runId?: string | undefined;
  /** The `waitFor` key. */
  key: string;
  /** Idempotency key: delivering the same ID again changes nothing; with other content it is `DURABILITY_CONFLICT`. */
  deliveryId: string;
  payload: JsonValue;
}

/** What a delivery did. */
export interface DeliveryReceipt {
  deliveryId: string;
  /** Record sequence of the delivery record. */
  sequence: number;
  /** False when this delivery ID was already recorded (nothing changed). */
  created: boolean;
}

/**
 * The durability port. Every method rejects with an `AbortError` once the port's signal aborted
 * or the port was closed.
 */
export interface DurabilityPort {
  readonly sessionId: SessionId;
  readonly runId: string;
  readonly scope: string;
  /**
   * Runs `body` once per `(scope, key)`: the first execution records the result; later calls
   * (and replays in a new process) return the recorded result without running `body`. Returns a
   * detached copy every time. The result must be lossless JSON (`null` for effect-only bodies);
   * it is checked after `body` ran, so a refused result cannot undo the body's effects.
   */
  step<T extends JsonValue>(key: string, body: () => T | Promise<T>): Promise<T>;
  /** Sleeps until a deadline recorded on first execution; a replay past it returns at once. */
  sleep(key: string, duration: SleepDuration): Promise<void>;
  /** Waits for the first delivery to `(runId, key)`, or the recorded timeout. */
  waitFor<T extends JsonValue = JsonValue>(key: string, options?: WaitForOptions): Promise<WaitForResult<T>>;
  /** Records a delivery (to this port's run unless `runId` is given) and wakes local waiters. */
  deliver(input: DeliveryInput): Promise<DeliveryReceipt>;
  /** Releases every local waiter (they reject with an `AbortError`); durable facts stay. Idempotent. */
  close(): void;
}

/** The part of a port a tool handler uses; what a host-owned port factory must return. */
export type DurabilityPortLike = Pick<DurabilityPort, 'step' | 'sleep' | 'waitFor'>;
