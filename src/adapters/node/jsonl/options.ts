/**
 * Construction options of the JSONL store, validated once.
 *
 * `lockTimeoutMs` bounds the wait for the process queue plus the OS lock (0 = one immediate
 * attempt); `operationTimeoutMs` bounds a whole call and defaults to the lock budget plus
 * {@link OPERATION_TIMEOUT_MARGIN_MS}, capped at `MAX_DURABLE_STORE_TIMEOUT_MS`;
 * `watchPollIntervalMs` (off by default) adds a timed look for other processes' writes to
 * `watch` / `watchDurability`. An operation budget below the lock budget, a non-integer, a
 * negative value, an unknown key or a missing storage root is `DURABLE_EVENT_INVALID_OPTIONS`.
 */
import { DurableEventStoreError } from '../../../protocol/errors.js';
import { MAX_DURABLE_STORE_TIMEOUT_MS } from '../../../protocol/limits.js';
import type { StoreTestHooks } from '../../../core/store.js';

/** Default `lockTimeoutMs`. */
export const DEFAULT_LOCK_TIMEOUT_MS = 10_000;
/** Default gap between `lockTimeoutMs` and `operationTimeoutMs`. */
export const OPERATION_TIMEOUT_MARGIN_MS = 15_000;
/** Shortest `watchPollIntervalMs`. */
const MIN_WATCH_POLL_INTERVAL_MS = 10;
/** Longest `watchPollIntervalMs`. */
const MAX_WATCH_POLL_INTERVAL_MS = 3_600_000;

/** Options of {@link JsonlDurableEventStore}. */
export interface JsonlDurableEventStoreOptions {
  /**
   * Longest wait for the session lock (process queue plus OS lock), in milliseconds, per call.
   * Default 10 000. `0` makes exactly one immediate attempt and fails with
   * `DURABLE_EVENT_LOCK_TIMEOUT` if the session is busy.
   */
  lockTimeoutMs?: number | undefined;
  /**
   * Longest duration of a whole store call, in milliseconds; past it the call fails with
   * `DURABLE_EVENT_IO_TIMEOUT`. Default `Math.min(MAX_DURABLE_STORE_TIMEOUT_MS, lockTimeoutMs + 15000)`.
   * Must be at least `lockTimeoutMs`.
   */
  operationTimeoutMs?: number | undefined;
  /**
   * While a `watch` / `watchDurability` listener is registered, also check the session's file for
   * other processes' writes every this many milliseconds (10..3 600 000). Default: off — changes
   * are heard through `fs.watch`; set it on filesystems where `fs.watch` reports nothing (network
   * or some container filesystems). A check is one `stat` unless the file changed.
   */
  watchPollIntervalMs?: number | undefined;
  /**
   * Open every file read-only (default false), as `agent-ledger verify` does: reads never create,
   * write, truncate or repair a file (a torn tail is left as it is, no lock sidecar, directory or
   * validated-state sidecar is made), and take the session lock only when its sidecar exists.
   * Every write (`append`, `recordDurability`, `writeCheckpoint`, lease changes) rejects with
   * `DURABLE_EVENT_UNAVAILABLE` and writes nothing.
   */
  readOnly?: boolean | undefined;
  /** Clock in epoch milliseconds for `recordedAt` and lease expiry (default `Date.now`). */
  clock?: (() => number) | undefined;
  /** Test-only fault injection: `beforeCommit` throwing fails that append with nothing written. */
  testHooks?: StoreTestHooks | undefined;
}

/** Options with every default applied. */
interface ResolvedJsonlOptions {
  lockTimeoutMs: number;
  operationTimeoutMs: number;
  watchPollIntervalMs: number | undefined;
  clock: () => number;
  testHooks: StoreTestHooks;
  readOnly: boolean;
}

const KNOWN_KEYS: ReadonlySet<string> = new Set([
  'lockTimeoutMs',
  'operationTimeoutMs',
  'watchPollIntervalMs',
  'clock',
  'testHooks',
  'readOnly',
]);

function invalid(message: string): DurableEventStoreError {
  return new DurableEventStoreError('DURABLE_EVENT_INVALID_OPTIONS', message);
}

function integerIn(name: string, value: unknown, min: number, max = MAX_DURABLE_STORE_TIMEOUT_MS): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min || value > max) {
    throw invalid(`${name} must be an integer in ${min}..${max} ms, got ${String(value)}`);
  }
  return value;
}

/** Validates the constructor arguments and applies defaults. */
export function resolveJsonlOptions(storageRoot: unknown, options: unknown): ResolvedJsonlOptions {
  if (typeof storageRoot !== 'string' || storageRoot.length === 0 || storageRoot.includes('\0')) {
    throw invalid('storageRoot must be a non-empty path');
  }
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw invalid('options must be an object');
  }
  for (const key of Object.keys(options)) {
    if (!KNOWN_KEYS.has(key)) throw invalid(`unknown option ${JSON.stringify(key)}`);
  }
  const o = options as JsonlDurableEventStoreOptions;
  const lockTimeoutMs = o.lockTimeoutMs === undefined ? DEFAULT_LOCK_TIMEOUT_MS : integerIn('lockTimeoutMs', o.lockTimeoutMs, 0);
  const operationTimeoutMs =
    o.operationTimeoutMs === undefined
      ? Math.max(1, Math.min(MAX_DURABLE_STORE_TIMEOUT_MS, lockTimeoutMs + OPERATION_TIMEOUT_MARGIN_MS))
      : integerIn('operationTimeoutMs', o.operationTimeoutMs, 1);
  if (operationTimeoutMs < lockTimeoutMs) {
    throw invalid(`operationTimeoutMs (${operationTimeoutMs}) must be at least lockTimeoutMs (${lockTimeoutMs})`);
  }
  const watchPollIntervalMs =
    o.watchPollIntervalMs === undefined
      ? undefined
      : integerIn('watchPollIntervalMs', o.watchPollIntervalMs, MIN_WATCH_POLL_INTERVAL_MS, MAX_WATCH_POLL_INTERVAL_MS);
  if (o.clock !== undefined && typeof o.clock !== 'function') throw invalid('clock must be a function');
  if (o.readOnly !== undefined && typeof o.readOnly !== 'boolean') throw invalid('readOnly must be a boolean');
  if (o.testHooks !== undefined && (typeof o.testHooks !== 'object' || o.testHooks === null)) {
    throw invalid('testHooks must be an object');
  }
  return {
    lockTimeoutMs,
    operationTimeoutMs,
    watchPollIntervalMs,
    clock: o.clock ?? Date.now,
    testHooks: o.testHooks ?? {},
    readOnly: o.readOnly ?? false,
  };
}
