/**
 * Bounding one store call by `operationTimeoutMs` and the caller's signal, at a low fixed cost.
 *
 * The same contract as core `withDeadline` — a caller abort rejects with the signal's reason, the
 * deadline rejects with `onTimeout()`, otherwise the call settles like its body — but a call that
 * finds the session lock free costs one timer and one promise: no `AbortController`, no
 * `Promise.race`. The body gets a {@link CallState} instead of a signal:
 * 1. `throwIfCancelled()` before anything irreversible (a write), so a call that was abandoned
 *    (deadline or abort) writes nothing it had not already started;
 * 2. `signal` builds an `AbortSignal` on first use, for the waits that need one (the lock wait);
 *    it aborts when the call is cancelled.
 */
import { abortReason, throwIfAborted } from '../../../core/abort.js';

/** The cancellation state of one bounded call (see the module header). */
export class CallState {
  #cancelled = false;
  #reason: unknown;
  #controller: AbortController | undefined;

  /** True once the deadline passed or the caller aborted. */
  get cancelled(): boolean {
    return this.#cancelled;
  }

  /** Throws the cancellation reason once the call was cancelled. */
  throwIfCancelled(): void {
    if (this.#cancelled) throw this.#reason;
  }

  /** A signal that aborts with the call (created on first use). */
  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      this.#controller = new AbortController();
      if (this.#cancelled) this.#controller.abort(this.#reason);
    }
    return this.#controller.signal;
  }

  /** @internal Marks the call cancelled with `reason` (first reason wins). */
  cancel(reason: unknown): void {
    if (this.#cancelled) return;
    this.#cancelled = true;
    this.#reason = reason;
    this.#controller?.abort(reason);
  }
}

/**
 * Runs `body` bounded by `timeoutMs` and `signal`: rejects with the signal's reason when it
 * aborts, with `onTimeout()` at the deadline, and otherwise settles like `body`.
 */
export function runBounded<T>(
  timeoutMs: number,
  signal: AbortSignal | undefined,
  body: (call: CallState) => Promise<T>,
  onTimeout: () => unknown,
): Promise<T> {
  try {
    throwIfAborted(signal);
  } catch (error) {
    return Promise.reject(error);
  }
  return new Promise<T>((resolve, reject) => {
    const call = new CallState();
    const stop = (reason: unknown): void => {
      if (call.cancelled) return;
      call.cancel(reason);
      cleanup();
      reject(reason);
    };
    const timer = setTimeout(() => stop(onTimeout()), timeoutMs);
    const onAbort = signal === undefined ? undefined : () => stop(abortReason(signal));
    if (onAbort !== undefined) signal?.addEventListener('abort', onAbort, { once: true });
    function cleanup(): void {
      clearTimeout(timer);
      if (onAbort !== undefined) signal?.removeEventListener('abort', onAbort);
    }
    let running: Promise<T>;
    try {
      running = body(call);
    } catch (error) {
      running = Promise.reject(error);
    }
    running.then(
      (value) => {
        if (call.cancelled) return;
        cleanup();
        resolve(value);
      },
      (error: unknown) => {
        if (call.cancelled) return;
        cleanup();
        reject(error);
      },
    );
  });
}
