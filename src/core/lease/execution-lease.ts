/**
 * DurableExecutionLease: a process-local handle on a session's execution lease.
 *
 * How it works:
 * 1. `acquire` asks the lease store for the lease, bounded by `storeTimeoutMs`. The store issues a
 *    fencing token (a takeover gets the previous token + 1); the handle exposes it as `fence`,
 *    which journal commits and fenced appends carry. The store stays the authority: it rejects a
 *    stale fence whatever this handle believes.
 * 2. The local expiry window (see `local-expiry.ts`) starts when the acquisition or the last
 *    successful renewal was *sent*, so it ends no later than the store's expiry.
 * 3. A heartbeat renews the lease `heartbeatIntervalMs` after the last renewal was sent. Every
 *    call made while the lease is held (renewal, assertion, the body of `withExecutionLease`) has
 *    its deadline capped to what is left of the window: it cannot outlive the ownership it relies on.
 * 4. A watchdog timer fails the handle when the window ends, and `signal`, `throwIfLost()` and
 *    every call re-check the window on the clock first, so a delayed timer (blocked event loop,
 *    SIGSTOP, host suspend) never lets a stale handle look valid.
 * 5. Any renewal or validation failure aborts `signal` with the error and stops the timers; the
 *    handle never recovers. Work that must stop when ownership ends listens to `signal`.
 * 6. An acquisition that times out, is cancelled or fails with an I/O error may have succeeded.
 *    Its `leaseId` is on the timeout error and remembered per (store, session, owner) (see
 *    `pending-acquisitions.ts`): a retry reuses it and the store reconciles that acquisition.
 * 7. Renewals, `withExecutionLease` bodies and `release` run one at a time, in call order.
 */
import {
  DurableExecutionLeaseTimeoutError,
  isDurableExecutionLeaseError,
  isDurableExecutionLeaseTimeoutError,
} from '../../protocol/errors.js';
import type { SessionId } from '../../protocol/ids.js';
import { throwIfAborted, withDeadline } from '../abort.js';
import {
  isExecutionLeaseStore,
  type DurableExecutionFence,
  type DurableExecutionLeaseRecord,
  type DurableExecutionLeaseStore,
  type DurableStoreCallOptions,
} from '../store.js';
import { asLeaseTimeout, invalid, lost, timeoutError } from './lease-errors.js';
import type { TimeSource } from '../time.js';
import { leaseInstant, LocalExpiry } from './local-expiry.js';
import { resolveLeaseOptions, type DurableExecutionLeaseOptions, type ResolvedLeaseOptions } from './lease-options.js';
import { forgetPendingLease, pendingLeaseId, rememberPendingLease } from './pending-acquisitions.js';

/** A short persistence step run under the lease: it gets the fence and a signal bounded by the lease window. */
export type DurableExecutionLeaseBody<T> = (fence: DurableExecutionFence, signal: AbortSignal) => Promise<T>;

/**
 * A held execution lease with automatic heartbeats and a fail-closed local watchdog.
 *
 * @example
 * const lease = await DurableExecutionLease.acquire(store, sessionId, {
 *   ownerId: WorkerId('worker-a'), ttlMs: 30_000, heartbeatIntervalMs: 10_000, storeTimeoutMs: 15_000,
 * });
 * const journal = await DurableSessionJournal.open(store, sessionId, {
 *   executionLease: lease, executionLeaseStore: store, storeTimeoutMs: 15_000,
 * });
 * lease.throwIfLost(); // right before a side effect
 * await lease.release();
 */
export class DurableExecutionLease {
  /** The leased session. */
  readonly sessionId: SessionId;
  readonly #store: DurableExecutionLeaseStore;
  readonly #heartbeatIntervalMs: number;
  readonly #storeTimeoutMs: number;
  readonly #expiry: LocalExpiry;
  readonly #controller = new AbortController();
  #record: DurableExecutionLeaseRecord;
  readonly #time: TimeSource;
  #heartbeat: unknown;
  #watchdog: unknown;
  #released = false;
  /** Tail of the queue that runs renewals, `withExecutionLease` bodies and release one at a time. */
  #chain: Promise<unknown> = Promise.resolve();

  private constructor(
    store: DurableExecutionLeaseStore,
    sessionId: SessionId,
    record: DurableExecutionLeaseRecord,
    expiry: LocalExpiry,
    sentAtMonotonicMs: number,
    options: ResolvedLeaseOptions,
  ) {
    this.#store = store;
    this.sessionId = sessionId;
    this.#record = record;
    this.#expiry = expiry;
    this.#heartbeatIntervalMs = options.heartbeatIntervalMs;
    this.#storeTimeoutMs = options.storeTimeoutMs;
    this.#time = options.time;
    this.#armWatchdog();
    this.#scheduleHeartbeat(sentAtMonotonicMs);
  }

  /**
   * Acquires the session's execution lease. A takeover of an expired or released lease increments
   * the fencing token.
   *
   * @throws DurableExecutionLeaseError `DURABLE_EXECUTION_LEASE_CONFLICT` while another worker's
   *   lease is active; `DURABLE_EXECUTION_LEASE_INVALID` for bad options.
   * @throws DurableExecutionLeaseTimeoutError when the store did not answer in time (or answered
   *   after the TTL had passed); its `leaseId` lets a retry reconcile the acquisition.
   */
  static async acquire(
    store: DurableExecutionLeaseStore,
    sessionId: SessionId,
    options: DurableExecutionLeaseOptions,
  ): Promise<DurableExecutionLease> {
    if (!isExecutionLeaseStore(store)) throw invalid('the store does not implement DurableExecutionLeaseStore');
    const o = resolveLeaseOptions(options);
    const leaseId = o.leaseId ?? pendingLeaseId(store, sessionId, o.ownerId, o.time.monotonicNow()) ?? crypto.randomUUID();
    throwIfAborted(o.signal);
    const sent = leaseInstant(o.time);
    const uncertain = (): void =>
      rememberPendingLease(store, sessionId, o.ownerId, leaseId, sent.monotonicMs + o.storeTimeoutMs + o.ttlMs);
    let record: DurableExecutionLeaseRecord;
    try {
      record = await withDeadline(
        o.storeTimeoutMs,
        o.signal,
        (signal) => store.acquireExecutionLease(sessionId, { ownerId: o.ownerId, leaseId, ttlMs: o.ttlMs, signal }),
        () => timeoutError('acquisition', o.storeTimeoutMs, leaseId),
        o.time,
      );
    } catch (error) {
      // A lease decision (conflict, invalid) proves this attempt changed nothing; anything else may have.
      if (!isDurableExecutionLeaseError(error)) uncertain();
      throw asLeaseTimeout(error, 'acquisition', leaseId);
    }
    if (
      record.sessionId !== sessionId ||
      record.leaseId !== leaseId ||
      record.ownerId !== o.ownerId ||
      record.released
    ) {
      throw invalid('the store answered the acquisition with a record of another lease');
    }
    const expiry = new LocalExpiry(o.ttlMs, sent, o.time);
    if (expiry.remainingMs() < 1) {
      uncertain();
      throw new DurableExecutionLeaseTimeoutError(
        `lease acquisition took longer than its ${o.ttlMs} ms TTL; retry with the same leaseId to reconcile`,
        { leaseId },
      );
    }
    forgetPendingLease(store, sessionId, o.ownerId);
    return new DurableExecutionLease(store, sessionId, record, expiry, sent.monotonicMs, o);
  }

  /** The fence journal commits and fenced appends carry. */
  get fence(): DurableExecutionFence {
    return { leaseId: this.#record.leaseId, ownerId: this.#record.ownerId, fencingToken: this.#record.fencingToken };
  }

  /**
   * Aborted, with the failure as reason, once ownership is lost, released, or cannot be confirmed.
   * Reading it re-checks the local window first, so it is current even when timers run late.
   */
  get signal(): AbortSignal {
    this.#checkExpiry();
    return this.#controller.signal;
  }

  /** A copy of the last record the store returned. */
  get record(): DurableExecutionLeaseRecord {
    return { ...this.#record };
  }

  /** Milliseconds left in the local expiry window; `0` once the handle is lost or released. */
  remainingMs(): number {
    if (!this.#checkExpiry()) return 0;
    return Math.max(0, this.#expiry.remainingMs());
  }

  /** Throws the loss reason when the handle is no longer valid (lost, released or locally expired). No I/O. */
  throwIfLost(): void {
    if (!this.#checkExpiry()) throw this.#controller.signal.reason;
  }

  /**
   * Confirms with the store that this lease is still the current one, within the lease window.
   * Any failure except the caller's own cancellation aborts `signal`.
   */
  async assert(options: DurableStoreCallOptions = {}): Promise<void> {
    await this.#activeCall(
      'assertion',
      (signal) => this.#store.assertExecutionLease(this.sessionId, this.fence, { signal }),
      options.signal,
    );
  }

  /** Renews now (the heartbeat does this on its own). Failure aborts `signal`. */
  async renew(): Promise<DurableExecutionLeaseRecord> {
    return this.#serialize(() => this.#renew());
  }

  /**
   * Runs a short persistence step under this lease's ownership boundary: after the renewals and
   * steps queued before it, once the store confirms the lease, with a deadline capped to the lease
   * window. `body`'s signal aborts at that deadline or when the lease is lost. A step that overruns
   * fails with `DurableExecutionLeaseTimeoutError` and aborts the lease; a step that ends after the
   * local window fails with `DURABLE_EXECUTION_LEASE_LOST`. Do not hold it around model or tool I/O.
   */
  async withExecutionLease<T>(body: DurableExecutionLeaseBody<T>, options: DurableStoreCallOptions = {}): Promise<T> {
    this.throwIfLost();
    return this.#serialize(async () => {
      await this.#activeCall(
        'assertion',
        (signal) => this.#store.assertExecutionLease(this.sessionId, this.fence, { signal }),
        options.signal,
      );
      const timeoutMs = this.#activeTimeoutMs('fenced operation');
      const fence = this.fence;
      // The body's signal aborts at the deadline, on the caller's cancellation, or on loss; the
      // race itself ends only at the first two, so an overrun is reported as a timeout.
      const bodyController = new AbortController();
      const lease = this.#controller.signal;
      const onLoss = (): void => bodyController.abort(lease.reason);
      lease.addEventListener('abort', onLoss, { once: true });
      let result: T;
      try {
        result = await withDeadline(
          timeoutMs,
          options.signal,
          (signal) => {
            signal.addEventListener('abort', () => bodyController.abort(signal.reason), { once: true });
            return body(fence, bodyController.signal);
          },
          () => timeoutError('fenced operation', timeoutMs, fence.leaseId),
          this.#time,
        );
      } catch (error) {
        if (isDurableExecutionLeaseTimeoutError(error)) this.#fail(error);
        throw error;
      } finally {
        lease.removeEventListener('abort', onLoss);
      }
      // The body returned, but if the window ended meanwhile its effects may postdate a takeover.
      this.throwIfLost();
      return result;
    });
  }

  /**
   * Releases the lease so a successor can take over with the next token. Aborts `signal` first,
   * after the steps queued before it, so no new side effect starts. Idempotent; a lease the store
   * no longer considers ours counts as released. A timeout throws and may be retried.
   */
  async release(options: DurableStoreCallOptions = {}): Promise<void> {
    if (this.#released) return;
    await this.#serialize(async () => {
      if (this.#released) return;
      this.#fail(lost('the lease was released'));
      const fence = this.fence;
      try {
        await withDeadline(
          this.#storeTimeoutMs,
          options.signal,
          (signal) => this.#store.releaseExecutionLease(this.sessionId, fence, { signal }),
          () => timeoutError('release', this.#storeTimeoutMs, fence.leaseId),
          this.#time,
        );
      } catch (error) {
        if (!(isDurableExecutionLeaseError(error) && error.code === 'DURABLE_EXECUTION_LEASE_LOST')) {
          throw asLeaseTimeout(error, 'release', fence.leaseId);
        }
      }
      this.#released = true;
    });
  }

  async #renew(): Promise<DurableExecutionLeaseRecord> {
    this.throwIfLost();
    const sent = leaseInstant(this.#time);
    const record = await this.#activeCall(
      'renewal',
      (signal) => this.#store.renewExecutionLease(this.sessionId, this.fence, { ttlMs: this.#expiry.ttlMs, signal }),
      undefined,
    );
    if (record.leaseId !== this.#record.leaseId || record.fencingToken !== this.#record.fencingToken || record.released) {
      const error = lost('the store answered the renewal with a record of another lease');
      this.#fail(error);
      throw error;
    }
    // Lost while the call was in flight (watchdog, release): never revive the handle.
    this.throwIfLost();
    this.#record = record;
    this.#expiry.restart(sent);
    this.#armWatchdog();
    this.#scheduleHeartbeat(sent.monotonicMs);
    return { ...record };
  }

  /** The deadline of a call made under the lease: the store deadline capped to the window. */
  #activeTimeoutMs(what: string): number {
    this.throwIfLost();
    const timeoutMs = Math.min(this.#storeTimeoutMs, Math.floor(this.#expiry.remainingMs()));
    if (timeoutMs < 1) {
      const error = lost(`no time left in the lease window for the ${what}`);
      this.#fail(error);
      throw error;
    }
    return timeoutMs;
  }

  /** One store call made under the lease. Every failure but the caller's own cancellation aborts the handle. */
  async #activeCall<T>(what: string, call: (signal: AbortSignal) => Promise<T>, callerSignal: AbortSignal | undefined): Promise<T> {
    throwIfAborted(callerSignal);
    const timeoutMs = this.#activeTimeoutMs(what);
    const leaseId = this.#record.leaseId;
    try {
      return await withDeadline(timeoutMs, callerSignal, call, () => timeoutError(what, timeoutMs, leaseId), this.#time);
    } catch (error) {
      const mapped = asLeaseTimeout(error, what, leaseId);
      const cancelled =
        callerSignal?.aborted === true &&
        !isDurableExecutionLeaseTimeoutError(mapped) &&
        !isDurableExecutionLeaseError(mapped);
      if (!cancelled) this.#fail(mapped);
      throw mapped;
    }
  }

  #serialize<T>(body: () => Promise<T>): Promise<T> {
    const next = this.#chain.then(body, body);
    this.#chain = next.catch(() => undefined);
    return next;
  }

  /** False (after failing the handle if needed) once the handle is lost or its window has ended. */
  #checkExpiry(): boolean {
    if (this.#controller.signal.aborted) return false;
    if (this.#expiry.remainingMs() > 0) return true;
    this.#fail(lost('the lease expired locally: no renewal was confirmed within its TTL'));
    return false;
  }

  #armWatchdog(): void {
    if (this.#watchdog !== undefined) this.#time.clearTimer(this.#watchdog);
    const delayMs = Math.max(1, Math.ceil(this.#expiry.remainingMs()));
    this.#watchdog = this.#time.setTimer(() => {
      this.#watchdog = undefined;
      if (this.#checkExpiry()) this.#armWatchdog();
    }, delayMs, true);
  }

  /** Next heartbeat: one interval after the last acquisition or renewal was sent. */
  #scheduleHeartbeat(sentAtMonotonicMs: number): void {
    if (this.#heartbeat !== undefined) this.#time.clearTimer(this.#heartbeat);
    const delayMs = Math.max(0, sentAtMonotonicMs + this.#heartbeatIntervalMs - this.#time.monotonicNow());
    this.#heartbeat = this.#time.setTimer(() => {
      this.#heartbeat = undefined;
      // A failed renewal has already aborted `signal`; nobody awaits this promise.
      this.#serialize(() => this.#renew()).catch(() => undefined);
    }, delayMs, true);
  }

  #stopTimers(): void {
    if (this.#heartbeat !== undefined) this.#time.clearTimer(this.#heartbeat);
    if (this.#watchdog !== undefined) this.#time.clearTimer(this.#watchdog);
    this.#heartbeat = undefined;
    this.#watchdog = undefined;
  }

  #fail(error: unknown): void {
    this.#stopTimers();
    if (!this.#controller.signal.aborted) this.#controller.abort(error);
  }
}

/**
 * Runs `body` under `lease`'s ownership boundary; see {@link DurableExecutionLease.withExecutionLease}.
 *
 * @example
 * await withExecutionLease(lease, (fence, signal) =>
 *   store.append(sessionId, drafts, { executionFence: fence, signal }),
 * );
 */
export function withExecutionLease<T>(
  lease: DurableExecutionLease,
  body: DurableExecutionLeaseBody<T>,
  options?: DurableStoreCallOptions,
): Promise<T> {
  return lease.withExecutionLease(body, options);
}

