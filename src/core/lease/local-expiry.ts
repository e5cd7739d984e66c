/**
 * The lease's local expiry window.
 *
 * The store measures expiry from when *it* granted or renewed the lease, which is never earlier
 * than when we sent the request. So "send time + TTL" on our side ends no later than the store's
 * expiry: while it has not passed, no other worker can have taken over (clock rates being equal).
 *
 * The window is tracked on two clocks and the earlier end wins:
 * - the monotonic clock (`performance.now()`) is immune to wall-clock steps backwards;
 * - the wall clock (`Date.now()`) keeps moving while the host is suspended, when the monotonic
 *   clock may not, and the store's own expiry is wall-clock time.
 * A jump of either clock can only shorten the window, so the error is always towards failing closed.
 */

import { systemTime, type TimeSource } from '../time.js';

/** Monotonic milliseconds of the host. */
export function monotonicNow(): number {
  return systemTime.monotonicNow();
}

/** A point in time on both clocks. */
interface LeaseInstant {
  monotonicMs: number;
  wallMs: number;
}

/** Now, on both clocks of `time`. */
export function leaseInstant(time: TimeSource = systemTime): LeaseInstant {
  return { monotonicMs: time.monotonicNow(), wallMs: time.wallNow() };
}

/** The end of the local window: `start + ttlMs` on both clocks. */
export class LocalExpiry {
  #monotonicEnd: number;
  #wallEnd: number;

  constructor(
    readonly ttlMs: number,
    start: LeaseInstant,
    private readonly time: TimeSource = systemTime,
  ) {
    this.#monotonicEnd = start.monotonicMs + ttlMs;
    this.#wallEnd = start.wallMs + ttlMs;
  }

  /** Restarts the window from `start` (when a successful renewal was sent). */
  restart(start: LeaseInstant): void {
    this.#monotonicEnd = start.monotonicMs + this.ttlMs;
    this.#wallEnd = start.wallMs + this.ttlMs;
  }

  /** Milliseconds left; `<= 0` once either clock says the window has ended. */
  remainingMs(): number {
    return Math.min(this.#monotonicEnd - this.time.monotonicNow(), this.#wallEnd - this.time.wallNow());
  }
}
