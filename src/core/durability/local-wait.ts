/**
 * Local waits: how `sleep` and `waitFor` hold a process without polling.
 *
 * 1. A deadline is waited for with one timer at a time, each at most `maxIntervalMs` long; when
 *    it fires the remaining time is recomputed from the clock, so a long sleep never relies on one
 *    huge timer (runtimes clamp those) and follows clock corrections. Timers are unreferenced
 *    where the runtime supports it (Node), so a sleeping step never keeps a process alive by
 *    itself: this is a local wait, not process suspension.
 * 2. A {@link Waker} turns "something may have changed" hints (a host `subscribe` callback, a
 *    store notice, a local delivery) into one resolution. A hint that arrives while nobody waits
 *    is kept as a flag, so a hint racing a read is never lost.
 * 3. An abort signal ends the wait at once with the signal's reason; the timer is cleared.
 * 4. Timers run on a {@link TimeSource} (default: the host's, `systemTime`), so tests drive them
 *    with a `ManualTimeSource` instead of waiting on real time.
 */
import { abortReason } from '../abort.js';
import { systemTime, type TimeSource } from '../time.js';

/** Longest single timer a local wait arms, in milliseconds; longer waits re-arm. */
export const MAX_TIMER_INTERVAL_MS = 60_000;

/** Why a local wait ended (an abort rejects instead). */
type LocalWaitOutcome = 'deadline' | 'woken';

/** Collects wake-up hints; see the module header. */
export class Waker {
  #pending = false;
  #resolve: (() => void) | undefined;

  /** Signals that something may have changed. Safe to call at any time, any number of times. */
  readonly wake = (): void => {
    this.#pending = true;
    const resolve = this.#resolve;
    this.#resolve = undefined;
    resolve?.();
  };

  /** Forgets earlier hints: call right before re-reading what the hints are about. */
  reset(): void {
    this.#pending = false;
  }

  /** True when a hint arrived since the last {@link reset}. */
  get pending(): boolean {
    return this.#pending;
  }

  /** Resolves at the next hint (at once when one is pending). */
  next(): Promise<void> {
    if (this.#pending) return Promise.resolve();
    return new Promise((resolve) => {
      this.#resolve = resolve;
    });
  }
}

/** Options of {@link waitLocally}. */
interface LocalWaitOptions {
  /** Epoch milliseconds to wait for; `null` waits for a hint (or the abort) only. */
  deadlineMs: number | null;
  /** Epoch-millisecond clock the deadline is measured on. */
  clock: () => number;
  /** Timers of the wait (background: they never keep a process alive). Default: `systemTime`. */
  time?: TimeSource | undefined;
  signal: AbortSignal;
  maxIntervalMs: number;
  /** Ends the wait early on a hint. */
  waker?: Waker | undefined;
}

/**
 * Waits until the deadline passes (by `clock`), a hint arrives, or `signal` aborts (rejects with
 * its reason). Resolves at once when the deadline has already passed or a hint is pending.
 */
export function waitLocally(options: LocalWaitOptions): Promise<LocalWaitOutcome> {
  const { deadlineMs, clock, signal, maxIntervalMs, waker } = options;
  const time = options.time ?? systemTime;
  if (signal.aborted) return Promise.reject(abortReason(signal));
  if (deadlineMs !== null && clock() >= deadlineMs) return Promise.resolve('deadline');
  if (waker?.pending === true) return Promise.resolve('woken');
  return new Promise<LocalWaitOutcome>((resolve, reject) => {
    let timer: unknown;
    let done = false;
    const finish = (outcome: LocalWaitOutcome | { error: unknown }): void => {
      if (done) return;
      done = true;
      if (timer !== undefined) time.clearTimer(timer);
      signal.removeEventListener('abort', onAbort);
      if (typeof outcome === 'string') resolve(outcome);
      else reject(outcome.error);
    };
    const onAbort = (): void => finish({ error: abortReason(signal) });
    const arm = (): void => {
      if (deadlineMs === null) return;
      const remaining = deadlineMs - clock();
      if (remaining <= 0) {
        finish('deadline');
        return;
      }
      timer = time.setTimer(arm, Math.min(remaining, maxIntervalMs), true);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    waker?.next().then(() => finish('woken'));
    arm();
  });
}
