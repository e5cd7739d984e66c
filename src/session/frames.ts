/**
 * Fan-out of stream frames to `stream()` iterators.
 *
 * Each iterator owns an unbounded queue filled synchronously by `publish` (frames are emitted
 * after their commit, never inside it) and drained by `next()`. `end()` finishes every iterator
 * once its queue is drained; an iterator's own signal or `return()` detaches it.
 */
import type { SessionStreamFrame } from './types.js';

interface Subscriber {
  queue: SessionStreamFrame[];
  wake: (() => void) | null;
  done: boolean;
}

/** The Session's frame hub. */
export class FrameHub {
  readonly #subscribers = new Set<Subscriber>();
  #ended = false;

  /** True when someone is listening (deltas are not built otherwise). */
  get listening(): boolean {
    return this.#subscribers.size > 0;
  }

  publish(frame: SessionStreamFrame): void {
    for (const subscriber of this.#subscribers) {
      subscriber.queue.push(frame);
      const wake = subscriber.wake;
      subscriber.wake = null;
      wake?.();
    }
  }

  /** Ends every iterator (after it drains what it already has); later iterators end at once. */
  end(): void {
    this.#ended = true;
    for (const subscriber of this.#subscribers) {
      subscriber.done = true;
      const wake = subscriber.wake;
      subscriber.wake = null;
      wake?.();
    }
  }

  subscribe(signal: AbortSignal | undefined): AsyncIterableIterator<SessionStreamFrame> {
    const subscriber: Subscriber = { queue: [], wake: null, done: this.#ended };
    const detach = (): void => {
      subscriber.done = true;
      subscriber.queue.length = 0;
      this.#subscribers.delete(subscriber);
      const wake = subscriber.wake;
      subscriber.wake = null;
      wake?.();
    };
    if (!subscriber.done) this.#subscribers.add(subscriber);
    if (signal?.aborted === true) detach();
    else signal?.addEventListener('abort', detach, { once: true });
    const iterator: AsyncIterableIterator<SessionStreamFrame> = {
      next: async () => {
        for (;;) {
          const frame = subscriber.queue.shift();
          if (frame !== undefined) return { value: frame, done: false };
          if (subscriber.done) {
            this.#subscribers.delete(subscriber);
            return { value: undefined, done: true };
          }
          await new Promise<void>((resolve) => {
            subscriber.wake = resolve;
          });
        }
      },
      return: async () => {
        detach();
        return { value: undefined, done: true };
      },
      [Symbol.asyncIterator]() {
        return iterator;
      },
    };
    return iterator;
  }
}
