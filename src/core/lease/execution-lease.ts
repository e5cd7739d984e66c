/**
 * DurableExecutionLease: a process-local handle on a session's execution lease.
 *
 * How it works:
 * 1. `acquire` asks the lease store for the lease (bounded by `storeTimeoutMs`). The store issues
 *    a fencing token; the handle exposes it as `fence`, which journal commits carry.
 * 2. A heartbeat timer renews the lease every `heartbeatIntervalMs`. Each lease call's deadline is
 *    capped to what is left of the local expiry window, so a slow store cannot keep a call alive
 *    past the moment the lease may already belong to someone else.
 * 3. A monotonic watchdog (`performance.now()`, immune to wall-clock jumps) fires at the local
 *    expiry — measured from when the last successful renewal was *sent* — and fails closed even
 *    if heartbeat timers were delayed (a paused event loop, a SIGSTOP).
 * 4. Any renewal or validation failure aborts `signal` with the error and stops the heartbeat;
 *    the handle never recovers. Work that must stop when ownership ends listens to `signal`.
 * 5. An acquisition that times out may have succeeded. The generated `leaseId` is exposed on the
 *    timeout error and remembered per (store, session, owner): an in-process retry reuses it, so
 *    the store reconciles the same acquisition instead of conflicting with itself.
 */
import { DurableExecutionLeaseError, DurableExecutionLeaseTimeoutError, isDurableExecutionLeaseError } from '../../protocol/errors.js';
import { type SessionId, type WorkerId } from '../../protocol/ids.js';
import { DEFAULT_STORE_TIMEOUT_MS, MAX_DURABLE_STORE_TIMEOUT_MS } from '../../protocol/limits.js';
import { DeadlineExceeded, throwIfAborted, withDeadline } from '../abort.js';
import { checkLeaseTtl } from '../log-engine.js';
import type {
  DurableExecutionFence,
  DurableExecutionLeaseRecord,
  DurableExecutionLeaseStore,
  DurableStoreCallOptions,
} from '../store.js';

/** Options of {@link DurableExecutionLease.acquire}. */
export interface DurableExecutionLeaseOptions {
  ownerId: WorkerId;
  /** Lease lifetime granted by each acquisition or renewal. */
  ttlMs: number;
  /** Renewal period; must be shorter than `ttlMs` (default `ttlMs / 3`). */
  heartbeatIntervalMs?: number;
  /** Deadline of each lease store call (default 15 s); capped to the remaining expiry window. */
  storeTimeoutMs?: number;
  /** Reuse a known acquisition identity (e.g. from a `DurableExecutionLeaseTimeoutError` in another process). */
  leaseId?: string;
  /** Stops the acquisition attempt. */
  signal?: AbortSignal;
}

interface PendingAcquisition {
  leaseId: string;
  /** Monotonic time after which the uncertain acquisition has certainly expired. */
  uncertainUntil: number;
}

const pendingAcquisitions = new WeakMap<object, Map<string, PendingAcquisition>>();

function pendingKey(sessionId: SessionId, ownerId: WorkerId): string {
  return `${sessionId}\u0000${ownerId}`;
}

function monotonicNow(): number {
  return performance.now();
}

function leaseError(code: 'DURABLE_EXECUTION_LEASE_LOST' | 'DURABLE_EXECUTION_LEASE_INVALID', message: string, cause?: unknown): DurableExecutionLeaseError {
  return new DurableExecutionLeaseError(code, message, cause === undefined ? undefined : { cause });
}

/**
 * A held execution lease with automatic heartbeats.
 *
 * @example
 * const lease = await DurableExecutionLease.acquire(store, sessionId, {
 *   ownerId: WorkerId('worker-a'), ttlMs: 30_000, heartbeatIntervalMs: 10_000, storeTimeoutMs: 15_000,
 * });
 * const journal = await DurableSessionJournal.open(store, sessionId, { executionLease: lease, executionLeaseStore: store });
 * // ... work, checking lease.signal before side effects ...
 * await lease.release();
 */
export class DurableExecutionLease {
  readonly sessionId: SessionId;
  readonly #store: DurableExecutionLeaseStore;
  readonly #ttlMs: number;
  readonly #storeTimeoutMs: number;
  readonly #controller = new AbortController();
  #record: DurableExecutionLeaseRecord;
  #localExpiry: number;
  #heartbeat: ReturnType<typeof setInterval> | undefined;
  #watchdog: ReturnType<typeof setTimeout> | undefined;
  #released = false;
  /** Serializes heartbeats, release and `withExecutionLease` bodies. */
  #chain: Promise<unknown> = Promise.resolve();

  private constructor(
    store: DurableExecutionLeaseStore,
    sessionId: SessionId,
    record: DurableExecutionLeaseRecord,
    sentAt: number,
    ttlMs: number,
    heartbeatIntervalMs: number,
    storeTimeoutMs: number,
  ) {
    this.#store = store;
    this.sessionId = sessionId;
    this.#record = record;
    this.#ttlMs = ttlMs;
    this.#storeTimeoutMs = storeTimeoutMs;
    this.#localExpiry = sentAt + ttlMs;
    this.#armWatchdog();
    this.#heartbeat = setInterval(() => {
      void this.#serialize(() => this.#renew()).catch(() => undefined);
    }, heartbeatIntervalMs);
    unref(this.#heartbeat);
  }

  /** Acquires the session's execution lease (takeover increments the fencing token). */
  static async acquire(
    store: DurableExecutionLeaseStore,
    sessionId: SessionId,
    options: DurableExecutionLeaseOptions,
  ): Promise<DurableExecutionLease> {
    const ttlMs = checkLeaseTtl(options.ttlMs);
    const heartbeatIntervalMs = options.heartbeatIntervalMs ?? Math.max(1, Math.floor(ttlMs / 3));
    if (!Number.isSafeInteger(heartbeatIntervalMs) || heartbeatIntervalMs < 1 || heartbeatIntervalMs >= ttlMs) {
      throw leaseError('DURABLE_EXECUTION_LEASE_INVALID', 'heartbeatIntervalMs must be an integer in 1..ttlMs-1');
    }
    const storeTimeoutMs = options.storeTimeoutMs ?? DEFAULT_STORE_TIMEOUT_MS;
    if (!Number.isSafeInteger(storeTimeoutMs) || storeTimeoutMs < 1 || storeTimeoutMs > MAX_DURABLE_STORE_TIMEOUT_MS) {
      throw leaseError('DURABLE_EXECUTION_LEASE_INVALID', `storeTimeoutMs must be an integer in 1..${MAX_DURABLE_STORE_TIMEOUT_MS}`);
    }
    let pending = pendingAcquisitions.get(store);
    if (pending === undefined) {
      pending = new Map();
      pendingAcquisitions.set(store, pending);
    }
    const key = pendingKey(sessionId, options.ownerId);
    const remembered = pending.get(key);
    const now = monotonicNow();
    const leaseId =
      options.leaseId ??
      (remembered !== undefined && remembered.uncertainUntil > now ? remembered.leaseId : crypto.randomUUID());
    const sentAt = monotonicNow();
    let record: DurableExecutionLeaseRecord;
    try {
      record = await withDeadline(
        storeTimeoutMs,
        options.signal,
        (signal) => store.acquireExecutionLease(sessionId, { ownerId: options.ownerId, leaseId, ttlMs, signal }),
        () =>
          new DurableExecutionLeaseTimeoutError(`lease acquisition did not finish within ${storeTimeoutMs} ms`, {
            leaseId,
          }),
      );
    } catch (error) {
      if (error instanceof DurableExecutionLeaseTimeoutError) {
        pending.set(key, { leaseId, uncertainUntil: sentAt + storeTimeoutMs + ttlMs });
      } else if (isDurableExecutionLeaseError(error)) {
        pending.delete(key);
      }
      throw error;
    }
    pending.delete(key);
    if (record.leaseId !== leaseId || record.ownerId !== options.ownerId) {
      throw leaseError('DURABLE_EXECUTION_LEASE_INVALID', 'the store returned a lease record for another acquisition');
    }
    return new DurableExecutionLease(store, sessionId, record, sentAt, ttlMs, heartbeatIntervalMs, storeTimeoutMs);
  }

  /** The fence journal commits and fenced appends carry. */
  get fence(): DurableExecutionFence {
    return { leaseId: this.#record.leaseId, ownerId: this.#record.ownerId, fencingToken: this.#record.fencingToken };
  }

  /** Aborted (with the failure as reason) once ownership is lost, released, or cannot be confirmed. */
  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  /** The last record the store returned. */
  get record(): DurableExecutionLeaseRecord {
    return { ...this.#record };
  }

  /** Milliseconds left before the local (conservative) expiry; <= 0 once expired. */
  remainingMs(): number {
    return this.#localExpiry - monotonicNow();
  }

  /** Throws when the handle is no longer valid locally (lost, released or locally expired). */
  throwIfLost(): void {
    if (this.#controller.signal.aborted) throw this.#controller.signal.reason;
    if (this.remainingMs() <= 0) {
      this.#fail(leaseError('DURABLE_EXECUTION_LEASE_LOST', 'the lease expired locally before it could be renewed'));
      throw this.#controller.signal.reason;
    }
  }

  /** Confirms with the store that this lease is still current. Failure aborts `signal`. */
  async assert(options: DurableStoreCallOptions = {}): Promise<void> {
    this.throwIfLost();
    await this.#call('assert', (signal) => this.#store.assertExecutionLease(this.sessionId, this.fence, { signal }), options.signal, true);
  }

  /** Renews now (the heartbeat does this automatically). */
  async renew(): Promise<DurableExecutionLeaseRecord> {
    return this.#serialize(() => this.#renew());
  }

  /**
   * Runs a short persistence step under this lease's ownership boundary: serialized with the
   * heartbeat and release, after confirming ownership with the store. Do not hold it around long
   * model or tool I/O.
   */
  async withExecutionLease<T>(body: (fence: DurableExecutionFence, signal: AbortSignal) => Promise<T>): Promise<T> {
    return this.#serialize(async () => {
      await this.#call('assert', (signal) => this.#store.assertExecutionLease(this.sessionId, this.fence, { signal }), undefined, true);
      this.throwIfLost();
      return body(this.fence, this.signal);
    });
  }

  /** Releases the lease so a successor can take over with the next token. Idempotent. */
  async release(options: DurableStoreCallOptions = {}): Promise<void> {
    if (this.#released) return;
    await this.#serialize(async () => {
      if (this.#released) return;
      this.#stopTimers();
      try {
        await this.#call('release', (signal) => this.#store.releaseExecutionLease(this.sessionId, this.fence, { signal }), options.signal, false);
      } finally {
        this.#released = true;
        if (!this.#controller.signal.aborted) {
          this.#controller.abort(leaseError('DURABLE_EXECUTION_LEASE_LOST', 'the lease was released'));
        }
      }
    });
  }

  async #renew(): Promise<DurableExecutionLeaseRecord> {
    this.throwIfLost();
    const sentAt = monotonicNow();
    const record = await this.#call(
      'renew',
      (signal) => this.#store.renewExecutionLease(this.sessionId, this.fence, { ttlMs: this.#ttlMs, signal }),
      undefined,
      true,
    );
    if (record.fencingToken !== this.#record.fencingToken || record.leaseId !== this.#record.leaseId) {
      const error = leaseError('DURABLE_EXECUTION_LEASE_LOST', 'renewal returned another lease');
      this.#fail(error);
      throw error;
    }
    this.#record = record;
    this.#localExpiry = sentAt + this.#ttlMs;
    this.#armWatchdog();
    return record;
  }

  /** One bounded lease store call; failures abort the handle when `fatal`. */
  async #call<T>(what: string, call: (signal: AbortSignal) => Promise<T>, signal: AbortSignal | undefined, fatal: boolean): Promise<T> {
    throwIfAborted(signal);
    const windowMs = Math.floor(this.remainingMs());
    const timeoutMs = Math.min(this.#storeTimeoutMs, fatal ? windowMs : this.#storeTimeoutMs);
    if (timeoutMs < 1) {
      const error = leaseError('DURABLE_EXECUTION_LEASE_LOST', `no time left in the lease window to ${what}`);
      if (fatal) this.#fail(error);
      throw error;
    }
    try {
      return await withDeadline(timeoutMs, signal, call, () =>
        new DurableExecutionLeaseTimeoutError(`lease ${what} did not finish within ${timeoutMs} ms`, {
          leaseId: this.#record.leaseId,
        }),
      );
    } catch (error) {
      const callerAborted = signal?.aborted === true && !(error instanceof DeadlineExceeded);
      if (fatal && !callerAborted) this.#fail(error);
      throw error;
    }
  }

  #serialize<T>(body: () => Promise<T>): Promise<T> {
    const next = this.#chain.then(body, body);
    this.#chain = next.catch(() => undefined);
    return next;
  }

  #armWatchdog(): void {
    if (this.#watchdog !== undefined) clearTimeout(this.#watchdog);
    const delay = Math.max(0, Math.ceil(this.remainingMs()));
    this.#watchdog = setTimeout(() => {
      if (this.remainingMs() <= 0) {
        this.#fail(leaseError('DURABLE_EXECUTION_LEASE_LOST', 'the lease expired locally: no renewal confirmed in time'));
      } else {
        this.#armWatchdog();
      }
    }, delay);
    unref(this.#watchdog);
  }

  #stopTimers(): void {
    if (this.#heartbeat !== undefined) clearInterval(this.#heartbeat);
    if (this.#watchdog !== undefined) clearTimeout(this.#watchdog);
    this.#heartbeat = undefined;
    this.#watchdog = undefined;
  }

  #fail(error: unknown): void {
    this.#stopTimers();
    if (!this.#controller.signal.aborted) this.#controller.abort(error);
  }
}

/** Runs `body` under `lease`'s ownership boundary; see {@link DurableExecutionLease.withExecutionLease}. */
export function withExecutionLease<T>(
  lease: DurableExecutionLease,
  body: (fence: DurableExecutionFence, signal: AbortSignal) => Promise<T>,
): Promise<T> {
  return lease.withExecutionLease(body);
}

function unref(timer: unknown): void {
  const t = timer as { unref?: () => void };
  if (typeof t.unref === 'function') t.unref();
}
