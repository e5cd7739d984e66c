/**
 * Options of {@link DurableExecutionLease.acquire} and their validation.
 *
 * Everything is checked once, before the first store call, so a bad option fails fast with
 * `DURABLE_EXECUTION_LEASE_INVALID` and never leaves an uncertain acquisition behind.
 */
import { describeInvalidId, type WorkerId } from '../../protocol/ids.js';
import { DEFAULT_STORE_TIMEOUT_MS, MAX_DURABLE_STORE_TIMEOUT_MS } from '../../protocol/limits.js';
import { checkLeaseTtl } from '../log-engine.js';
import { isTimeSource, systemTime, type TimeSource } from '../time.js';
import { invalid } from './lease-errors.js';

/** Options of {@link DurableExecutionLease.acquire}. */
export interface DurableExecutionLeaseOptions {
  /** Identity of this worker; a retry of an uncertain acquisition must use the same one. */
  ownerId: WorkerId;
  /** Lease lifetime granted by each acquisition or renewal, in ms. */
  ttlMs: number;
  /** Renewal period in ms; shorter than `ttlMs` (default `ttlMs / 3`). */
  heartbeatIntervalMs?: number | undefined;
  /**
   * Deadline of each lease store call in ms (default 15 000). Calls made while the lease is held
   * are further capped to what is left of the local expiry window.
   */
  storeTimeoutMs?: number | undefined;
  /**
   * Identity of the acquisition. Pass the `leaseId` of a `DurableExecutionLeaseTimeoutError` to
   * reconcile an uncertain acquisition made by another process; in-process retries reuse it
   * automatically.
   */
  leaseId?: string | undefined;
  /** Cancels the acquisition attempt (its outcome is then uncertain, like a timeout). */
  signal?: AbortSignal | undefined;
  /**
   * Clocks and timers of the heartbeat, the watchdog, the local expiry window and every call
   * deadline (default: the host's). Tests pass a `ManualTimeSource` to drive them deterministically.
   */
  time?: TimeSource | undefined;
}

/** Options with defaults applied. */
export interface ResolvedLeaseOptions {
  ownerId: WorkerId;
  ttlMs: number;
  heartbeatIntervalMs: number;
  storeTimeoutMs: number;
  leaseId: string | undefined;
  signal: AbortSignal | undefined;
  time: TimeSource;
}

/** Validates acquisition options; throws `DURABLE_EXECUTION_LEASE_INVALID`. */
export function resolveLeaseOptions(options: DurableExecutionLeaseOptions): ResolvedLeaseOptions {
  if (typeof options !== 'object' || options === null) throw invalid('lease options must be an object');
  const ownerProblem = describeInvalidId(options.ownerId);
  if (ownerProblem !== undefined) throw invalid(`ownerId ${ownerProblem}`);
  if (options.leaseId !== undefined) {
    const leaseProblem = describeInvalidId(options.leaseId);
    if (leaseProblem !== undefined) throw invalid(`leaseId ${leaseProblem}`);
  }
  const ttlMs = checkLeaseTtl(options.ttlMs);
  const heartbeatIntervalMs = options.heartbeatIntervalMs ?? Math.max(1, Math.floor(ttlMs / 3));
  if (!Number.isSafeInteger(heartbeatIntervalMs) || heartbeatIntervalMs < 1 || heartbeatIntervalMs >= ttlMs) {
    throw invalid(`heartbeatIntervalMs must be an integer in 1..${ttlMs - 1} (below ttlMs)`);
  }
  const storeTimeoutMs = options.storeTimeoutMs ?? DEFAULT_STORE_TIMEOUT_MS;
  if (!Number.isSafeInteger(storeTimeoutMs) || storeTimeoutMs < 1 || storeTimeoutMs > MAX_DURABLE_STORE_TIMEOUT_MS) {
    throw invalid(`storeTimeoutMs must be an integer in 1..${MAX_DURABLE_STORE_TIMEOUT_MS}`);
  }
  if (options.signal !== undefined && !(options.signal instanceof AbortSignal)) {
    throw invalid('signal must be an AbortSignal');
  }
  if (options.time !== undefined && !isTimeSource(options.time)) throw invalid('time must be a TimeSource');
  return {
    ownerId: options.ownerId,
    ttlMs,
    heartbeatIntervalMs,
    storeTimeoutMs,
    leaseId: options.leaseId,
    signal: options.signal,
    time: options.time ?? systemTime,
  };
}
