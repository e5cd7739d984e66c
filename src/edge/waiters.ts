/**
 * Long-poll waiters of a SessionObject.
 *
 * `waitForEvents(after, waitMs)` parks a waiter when the head is not yet past `after`. After
 * every committed append the object calls {@link HeadWaiters.notify} with the new head, which
 * settles every waiter it satisfies; a waiter's timer settles it with the unchanged head.
 * Waiters live in memory only: a long poll is one RPC call, and an object that is evicted has no
 * calls in flight.
 */
import type { EventSequence } from '../protocol/ids.js';

interface Waiter {
  after: number | null;
  resolve: (head: EventSequence | null) => void;
  timer: ReturnType<typeof setTimeout>;
}

/** True when `head` is past `after` (`after === null`: when any event exists). */
export function isPast(head: EventSequence | null, after: number | null): boolean {
  return head !== null && (after === null || head > after);
}

/** The set of pending long polls of one object. */
export class HeadWaiters {
  readonly #waiters = new Set<Waiter>();

  /** Number of pending waits (for tests and diagnostics). */
  get size(): number {
    return this.#waiters.size;
  }

  /**
   * Resolves with the head once it is past `after`, or with `currentHead()` after `waitMs`.
   * The caller has already checked that the head is not past `after` right now.
   */
  wait(after: number | null, waitMs: number, currentHead: () => EventSequence | null): Promise<EventSequence | null> {
    return new Promise((resolve) => {
      const waiter: Waiter = {
        after,
        resolve,
        timer: setTimeout(() => {
          this.#waiters.delete(waiter);
          let head: EventSequence | null = null;
          try {
            head = currentHead();
          } catch {
            // Reporting "nothing new" is always safe for a long poll.
          }
          resolve(head);
        }, waitMs),
      };
      this.#waiters.add(waiter);
    });
  }

  /** Settles every waiter the new head satisfies. */
  notify(head: EventSequence): void {
    for (const waiter of [...this.#waiters]) {
      if (!isPast(head, waiter.after)) continue;
      clearTimeout(waiter.timer);
      this.#waiters.delete(waiter);
      waiter.resolve(head);
    }
  }
}
