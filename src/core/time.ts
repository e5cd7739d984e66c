/**
 * Time as an injectable dependency: the clocks and timers of the lease handle (heartbeat,
 * watchdog, local expiry window) and of store-call deadlines (`withDeadline`).
 *
 * {@link systemTime} is the real thing (`Date.now`, `performance.now`, `setTimeout`).
 * {@link ManualTimeSource} is a deterministic stand-in for tests: time only moves when the test
 * calls `advance`, timers fire in due order, and the promise work each one starts runs before the
 * next fires. A test driven by it cannot flake on a loaded machine: nothing depends on how fast
 * the host runs.
 */

/** Clocks and timers. */
export interface TimeSource {
  /** Wall-clock epoch milliseconds (as `Date.now()`). */
  wallNow(): number;
  /** Monotonic milliseconds (as `performance.now()`): never steps backwards. */
  monotonicNow(): number;
  /**
   * Calls `callback` once after `delayMs`. A `background` timer (a heartbeat, a watchdog) must not
   * keep the process alive by itself; a deadline of a pending call does.
   */
  setTimer(callback: () => void, delayMs: number, background?: boolean): unknown;
  /** Cancels a timer of {@link setTimer} (a no-op for one that fired or was cleared). */
  clearTimer(handle: unknown): void;
}

/** True when `value` has the four functions of a {@link TimeSource} (the check every `time` option runs). */
export function isTimeSource(value: unknown): value is TimeSource {
  if (typeof value !== 'object' || value === null) return false;
  const candidate = value as Partial<Record<keyof TimeSource, unknown>>;
  return (
    typeof candidate.wallNow === 'function' &&
    typeof candidate.monotonicNow === 'function' &&
    typeof candidate.setTimer === 'function' &&
    typeof candidate.clearTimer === 'function'
  );
}

/** The host's clocks and unreferenced timers. */
export const systemTime: TimeSource = {
  wallNow: () => Date.now(),
  monotonicNow: () => performance.now(),
  setTimer(callback, delayMs, background = false) {
    const timer = setTimeout(callback, delayMs);
    // Node timers have `unref`; other runtimes do not keep a process alive for timers anyway.
    const unref = (timer as { unref?: () => void }).unref;
    if (background && typeof unref === 'function') unref.call(timer);
    return timer;
  },
  clearTimer(handle) {
    clearTimeout(handle as ReturnType<typeof setTimeout>);
  },
};

interface ManualTimer {
  id: number;
  dueMs: number;
  callback: () => void;
}

/** Lets queued promise reactions run (a zero-delay macrotask, not a timing assumption). */
function settle(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 0));
}

/**
 * A {@link TimeSource} that moves only when told to. Both clocks advance together from
 * `startWallMs` (wall) and 0 (monotonic); {@link stepWall} moves the wall clock alone, as a host
 * clock correction would.
 */
export class ManualTimeSource implements TimeSource {
  #monotonicMs = 0;
  #wallOffsetMs: number;
  #nextId = 1;
  readonly #timers = new Map<number, ManualTimer>();

  constructor(startWallMs = Date.UTC(2026, 0, 1)) {
    this.#wallOffsetMs = startWallMs;
  }

  wallNow(): number {
    return this.#wallOffsetMs + this.#monotonicMs;
  }

  monotonicNow(): number {
    return this.#monotonicMs;
  }

  setTimer(callback: () => void, delayMs: number): unknown {
    const id = this.#nextId++;
    this.#timers.set(id, { id, dueMs: this.#monotonicMs + Math.max(0, delayMs), callback });
    return id;
  }

  clearTimer(handle: unknown): void {
    if (typeof handle === 'number') this.#timers.delete(handle);
  }

  /** Timers not yet fired. */
  get pendingTimers(): number {
    return this.#timers.size;
  }

  /** Moves the wall clock alone by `ms` (may be negative), like a clock step of the host. */
  stepWall(ms: number): void {
    this.#wallOffsetMs += ms;
  }

  /**
   * Moves both clocks forward by `ms` WITHOUT firing any timer, as a blocked event loop (a GC
   * pause, a synchronous stall, a stopped process) would: code that reads the clocks next sees
   * the time passed, and timers that fell due meanwhile fire at the next {@link advance}.
   */
  block(ms: number): void {
    this.#monotonicMs += Math.max(0, ms);
  }

  /**
   * Moves both clocks forward by `ms`, firing every timer that falls due on the way, in due order
   * (then creation order), each at its due time, letting the promise work it starts settle
   * before the next one fires.
   */
  async advance(ms: number): Promise<void> {
    const target = this.#monotonicMs + ms;
    await settle();
    for (;;) {
      let next: ManualTimer | undefined;
      for (const timer of this.#timers.values()) {
        if (timer.dueMs <= target && (next === undefined || timer.dueMs < next.dueMs)) next = timer;
      }
      if (next === undefined) break;
      this.#timers.delete(next.id);
      this.#monotonicMs = Math.max(this.#monotonicMs, next.dueMs);
      next.callback();
      await settle();
    }
    this.#monotonicMs = target;
    await settle();
  }
}
