/**
 * Cancellation and deadline helpers shared by every core component.
 *
 * `withDeadline` races a store call against a timer and an optional caller signal. It hands the
 * call a derived signal that aborts when either fires, so a well-behaved store stops waiting; a
 * store that ignores its signal is still bounded because the race settles at the deadline.
 */
import { systemTime, type TimeSource } from './time.js';

/** Throws the signal's reason (an `AbortError` unless the caller chose another) when aborted. */
export function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw abortReason(signal);
}

/** The error an aborted signal stands for: its reason, or a DOM `AbortError`. */
export function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? newAbortError();
}

/** A DOM-style `AbortError`. */
export function newAbortError(message = 'The operation was aborted'): Error {
  if (typeof DOMException === 'function') return new DOMException(message, 'AbortError');
  const error = new Error(message);
  error.name = 'AbortError';
  return error;
}

/** Marker thrown inside `withDeadline` when the deadline (not the caller) ended the call. */
export class DeadlineExceeded extends Error {
  constructor(readonly timeoutMs: number) {
    super(`deadline of ${timeoutMs} ms exceeded`);
    this.name = 'DeadlineExceeded';
  }
}

/** Combines signals: the result aborts as soon as any input aborts. */
export function anySignal(signals: ReadonlyArray<AbortSignal | undefined>): AbortSignal {
  const present = signals.filter((s): s is AbortSignal => s !== undefined);
  if (present.length === 1 && present[0] !== undefined) return present[0];
  const controller = new AbortController();
  for (const signal of present) {
    if (signal.aborted) {
      controller.abort(signal.reason);
      return controller.signal;
    }
  }
  const onAbort = (event: Event): void => {
    const source = event.target as AbortSignal;
    controller.abort(source.reason);
    for (const signal of present) signal.removeEventListener('abort', onAbort);
  };
  for (const signal of present) signal.addEventListener('abort', onAbort, { once: true });
  return controller.signal;
}

/**
 * Lends one `AbortController` to calls that never overlap, so a component that makes many short
 * store calls one after another (a journal) does not build a controller per call: creating one
 * costs about as much as a memory-store append.
 * - A controller is lent to one call at a time; a call that starts while it is out gets a fresh one.
 * - A controller that was aborted is never lent again.
 * - After {@link MAX_SIGNAL_LOANS} loans a fresh one replaces it, which bounds what a store that
 *   forgets to remove its abort listeners can leave behind.
 * The contract this relies on (`DurableStoreCallOptions.signal`): a store removes the abort
 * listeners it added to a call's signal when that call settles.
 */
export class AbortControllerLender {
  #idle: AbortController | undefined;
  #loans = 0;

  /** A controller that is not aborted and not lent to anyone else. */
  borrow(): AbortController {
    const idle = this.#idle;
    if (idle !== undefined) {
      this.#idle = undefined;
      return idle;
    }
    this.#loans = 0;
    return new AbortController();
  }

  /** Takes back a controller whose call has settled. */
  giveBack(controller: AbortController): void {
    if (controller.signal.aborted || this.#idle !== undefined) return;
    if (++this.#loans >= MAX_SIGNAL_LOANS) return;
    this.#idle = controller;
  }
}

/** Loans of one controller before {@link AbortControllerLender} replaces it. */
export const MAX_SIGNAL_LOANS = 8;

/**
 * Runs `call(signal)` bounded by `timeoutMs` and the caller's `signal`.
 * - caller abort -> rejects with the caller's abort reason;
 * - deadline -> rejects with `onTimeout()` (the call's signal is aborted with a {@link DeadlineExceeded});
 * - otherwise settles like `call`.
 * The deadline runs on `time` (default: the host's timers; tests pass a `ManualTimeSource`).
 * With `lender`, the call's controller is borrowed from it and given back once the call settled.
 */
export function withDeadline<T>(
  timeoutMs: number,
  signal: AbortSignal | undefined,
  call: (signal: AbortSignal) => Promise<T>,
  onTimeout: () => unknown,
  time: TimeSource = systemTime,
  lender?: AbortControllerLender,
): Promise<T> {
  // One promise settled by whichever comes first (cheaper than racing a second promise). A stop
  // (deadline or caller abort) settles one microtask after it fired, exactly as a rejected racer
  // would: a call the abort settled synchronously still wins, as it would in Promise.race.
  return new Promise<T>((resolve, reject) => {
    if (signal?.aborted === true) {
      reject(abortReason(signal));
      return;
    }
    const controller = lender === undefined ? new AbortController() : lender.borrow();
    let settled = false;
    let onAbort: (() => void) | undefined;
    const finish = (): boolean => {
      if (settled) return false;
      settled = true;
      time.clearTimer(timer);
      if (onAbort !== undefined) signal?.removeEventListener('abort', onAbort);
      lender?.giveBack(controller);
      return true;
    };
    const stop = (error: unknown): void => {
      queueMicrotask(() => {
        if (finish()) reject(error);
      });
    };
    const timer = time.setTimer(() => {
      if (settled) return;
      controller.abort(new DeadlineExceeded(timeoutMs));
      stop(onTimeout());
    }, timeoutMs);
    if (signal !== undefined) {
      onAbort = (): void => {
        if (settled) return;
        controller.abort(abortReason(signal));
        stop(abortReason(signal));
      };
      signal.addEventListener('abort', onAbort, { once: true });
    }
    let pending: Promise<T>;
    try {
      pending = call(controller.signal);
    } catch (error) {
      if (finish()) reject(error);
      return;
    }
    Promise.resolve(pending).then(
      (value) => {
        if (finish()) resolve(value);
      },
      (error: unknown) => {
        if (finish()) reject(error);
      },
    );
  });
}

/** Validates a deadline option: an integer in 1..max, else throws what `invalid` builds. */
export function checkTimeoutMs(value: number, max: number, invalid: (message: string) => unknown): number {
  if (!Number.isSafeInteger(value) || value < 1 || value > max) {
    throw invalid(`timeout must be an integer in 1..${max} ms, got ${String(value)}`);
  }
  return value;
}
