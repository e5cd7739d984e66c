/**
 * Waiting for the next append, by push when the store can, by polling when it cannot.
 *
 * The subscription calls `arm()` before every live read and `wait()` only after that read came
 * back empty. `arm()` registers the store's `watch` listener (once) and clears the "something was
 * appended" flag; the listener sets the flag. Because the flag is cleared *before* the read, an
 * append that lands between the read and the wait is never lost: `wait()` then returns at once.
 * Stores without `watch` are polled: `wait()` sleeps `pollIntervalMs`. Either wait ends early,
 * with the stop signal's reason, when the subscription is closed or aborted. The poll timer runs
 * on the subscription's `time` (default: the host's timers).
 */
import type { DurableEventStore } from '../store.js';
import type { EventSequence, SessionId } from '../../protocol/ids.js';
import { systemTime, type TimeSource } from '../time.js';

/** Push-or-poll wait for the next append to one session. */
export class AppendWaiter {
  readonly #store: DurableEventStore;
  readonly #sessionId: SessionId;
  readonly #pollIntervalMs: number;
  readonly #time: TimeSource;
  #unwatch: (() => void) | undefined;
  #watchFailed = false;
  #notified = false;
  #after = 0;
  #wake: (() => void) | null = null;

  constructor(store: DurableEventStore, sessionId: SessionId, pollIntervalMs: number, time: TimeSource = systemTime) {
    this.#store = store;
    this.#sessionId = sessionId;
    this.#pollIntervalMs = pollIntervalMs;
    this.#time = time;
  }

  /** True while waits are driven by the store's `watch` notifications. */
  get pushing(): boolean {
    return this.#unwatch !== undefined;
  }

  /** Call before each read: appends after `position` from now on end the next wait. */
  arm(position: EventSequence | null): void {
    this.#after = position ?? 0;
    this.#notified = false;
    if (this.#unwatch !== undefined || this.#watchFailed || typeof this.#store.watch !== 'function') return;
    try {
      this.#unwatch = this.#store.watch(this.#sessionId, (notice) => {
        if (notice.lastSequence <= this.#after) return;
        this.#notified = true;
        this.#wake?.();
      });
    } catch {
      // A store whose watch refuses to register is polled instead.
      this.#watchFailed = true;
    }
  }

  /** Resolves on the next append (or poll tick); rejects with `stop.reason` once `stop` aborts. */
  wait(stop: AbortSignal): Promise<void> {
    if (stop.aborted) return Promise.reject(stop.reason);
    if (this.#notified) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      let timer: unknown;
      const cleanup = (): void => {
        if (timer !== undefined) this.#time.clearTimer(timer);
        this.#wake = null;
        stop.removeEventListener('abort', onStop);
      };
      const finish = (): void => {
        cleanup();
        resolve();
      };
      const onStop = (): void => {
        cleanup();
        reject(stop.reason);
      };
      stop.addEventListener('abort', onStop, { once: true });
      this.#wake = finish;
      if (this.#unwatch === undefined) timer = this.#time.setTimer(finish, this.#pollIntervalMs);
    });
  }

  /** Unregisters the watch listener. Idempotent. */
  release(): void {
    const unwatch = this.#unwatch;
    this.#unwatch = undefined;
    this.#watchFailed = true;
    this.#wake = null;
    unwatch?.();
  }
}
