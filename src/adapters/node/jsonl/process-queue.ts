/**
 * Process-wide FIFO queue per session log.
 *
 * Every JSONL store object in this process that touches one session file passes through the
 * same queue before it asks the operating system for the file lock:
 * 1. `tryEnterProcessQueue(key)` takes the queue at once when nobody holds it (used for the
 *    single attempt of `lockTimeoutMs: 0`);
 * 2. `enterProcessQueue(key, signal)` waits in arrival order; aborting `signal` removes the
 *    waiter from the queue and rejects with the signal's reason;
 * 3. the returned `release` hands the queue straight to the next waiter, or forgets the key
 *    when nobody waits, so idle sessions cost no memory.
 *
 * The key is the absolute path of the session log, so two store objects on the same root share
 * one queue and never race each other for the OS lock.
 */
import { abortReason } from '../../../core/abort.js';

/** Gives the queue back. Calling it twice is a no-op. */
type ReleaseQueue = () => void;

interface Waiter {
  grant: (release: ReleaseQueue) => void;
}

interface QueueState {
  waiters: Waiter[];
}

/** Held queues; a key is present exactly while someone holds it. */
const held = new Map<string, QueueState>();

function releaser(key: string, state: QueueState): ReleaseQueue {
  let released = false;
  return () => {
    if (released) return;
    released = true;
    const next = state.waiters.shift();
    if (next === undefined) held.delete(key);
    else next.grant(releaser(key, state));
  };
}

/** Takes the queue of `key` when it is free; `undefined` when someone holds it. */
export function tryEnterProcessQueue(key: string): ReleaseQueue | undefined {
  if (held.has(key)) return undefined;
  const state: QueueState = { waiters: [] };
  held.set(key, state);
  return releaser(key, state);
}

/** Waits for the queue of `key` in arrival order; aborting `signal` leaves the queue. */
export function enterProcessQueue(key: string, signal: AbortSignal): Promise<ReleaseQueue> {
  if (signal.aborted) return Promise.reject(abortReason(signal));
  const immediate = tryEnterProcessQueue(key);
  if (immediate !== undefined) return Promise.resolve(immediate);
  // SAFETY: tryEnterProcessQueue failed, so the key is held and has a state.
  const state = held.get(key) as QueueState;
  return new Promise<ReleaseQueue>((resolve, reject) => {
    const onAbort = (): void => {
      const index = state.waiters.indexOf(waiter);
      if (index >= 0) state.waiters.splice(index, 1);
      reject(abortReason(signal));
    };
    const waiter: Waiter = {
      grant: (release) => {
        signal.removeEventListener('abort', onAbort);
        resolve(release);
      },
    };
    state.waiters.push(waiter);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** Whether `key` is held and how many wait behind its holder. For tests and diagnostics. */
export function processQueueState(key: string): { held: boolean; waiters: number } {
  const state = held.get(key);
  return { held: state !== undefined, waiters: state?.waiters.length ?? 0 };
}
