/**
 * DurableEventSubscription: a pull-based, reconnectable reader of one session's log.
 *
 * 1. `open` checks the resume cursor against the log and captures the head as the replay
 *    barrier (see `replay-start.ts`).
 * 2. Replay: each `next()` hands out one buffered event; the buffer is refilled by one read of at
 *    most `pageSize` events, and only when the consumer asks for more, never past the barrier.
 *    Replayed events carry `live: false`.
 * 3. Once the barrier is reached, exactly one `caught_up` message reports it.
 * 4. Live (when `follow`): events appended after the barrier, `live: true`, read a page at a time;
 *    between empty reads the subscription waits for the store's `watch` notification (registered
 *    before the read, so nothing slips through) or, without `watch`, polls every `pollIntervalMs`.
 * 5. Every page must continue exactly where the previous one stopped (same session, next
 *    sequence); a gap fails closed with `DurableEventSubscriptionError`.
 * 6. The iterator ends after delivering `session_closed` (after the `caught_up` barrier when the
 *    closure was replayed), after `caught_up` with `follow: false`, on `close()` / `return()`
 *    (a pending `next()` resolves `done`), or on an error (thrown once, then `done`). An aborted
 *    `signal` makes the pending and every later `next()` reject with an `AbortError`.
 */
import { abortReason, anySignal, newAbortError, throwIfAborted } from '../abort.js';
import type { DurableEventStore, DurableReadResult } from '../store.js';
import { DurableEventSubscriptionError, isDurableEventStoreError } from '../../protocol/errors.js';
import { durableEventCursor } from '../../protocol/cursor.js';
import type { DurableEventEnvelope } from '../../protocol/events.js';
import { describeInvalidId, type EventSequence, type SessionId } from '../../protocol/ids.js';
import { AppendWaiter } from './append-waiter.js';
import { resolveReplayStart, subscriptionCall } from './replay-start.js';
import {
  resolveSubscriptionOptions,
  type DurableEventSubscriptionOptions,
  type DurableSubscriptionMessage,
  type SubscriptionSettings,
} from './subscription-options.js';

type Phase = 'replay' | 'live' | 'ending';

function isAborted(signal: AbortSignal | undefined): signal is AbortSignal {
  return signal?.aborted === true;
}

const DONE: IteratorReturnResult<undefined> = Object.freeze({ done: true, value: undefined });

/**
 * Replays a session's events from a cursor, reports the replay barrier, then follows live
 * appends.
 *
 * Delivery is at-least-once across reconnections when the consumer saves each message's
 * `cursor` only *after* it has fully processed the event: after a crash it resumes with
 * `after: savedCursor`, so the event being processed when it stopped is delivered again and no
 * event is skipped. Saving the cursor before processing would turn that into at-most-once.
 *
 * @example
 * const subscription = await DurableEventSubscription.open(store, sessionId, {
 *   after: savedCursor, // null on the first connection
 *   pageSize: 100,
 *   pollIntervalMs: 250,
 * });
 * for await (const message of subscription) {
 *   if (message.type === 'caught_up') {
 *     markClientReady(message.headSequence);
 *     continue;
 *   }
 *   await deliver(message.event);
 *   await saveCursor(message.cursor); // only after processing: at-least-once
 * }
 */
export class DurableEventSubscription implements AsyncIterableIterator<DurableSubscriptionMessage, undefined> {
  /** The session being read. */
  readonly sessionId: SessionId;
  /** Head captured at `open`: replay ends here and `caught_up` reports it. */
  readonly replayHeadSequence: EventSequence | null;
  readonly #store: DurableEventStore;
  readonly #settings: SubscriptionSettings;
  readonly #waiter: AppendWaiter;
  /** Aborted by `close()`. */
  readonly #lifecycle = new AbortController();
  /** Aborts on `close()` or the caller's signal: every store call and wait listens to it. */
  readonly #stop: AbortSignal;
  #position: EventSequence | null;
  #buffer: DurableEventEnvelope[] = [];
  #phase: Phase = 'replay';
  #sessionClosed: boolean;
  #closed = false;
  #finished = false;
  #chain: Promise<unknown> = Promise.resolve();
  readonly #onCallerAbort = (): void => this.#release();

  private constructor(
    store: DurableEventStore,
    sessionId: SessionId,
    settings: SubscriptionSettings,
    start: { position: EventSequence | null; barrier: EventSequence | null; closed: boolean },
  ) {
    this.#store = store;
    this.sessionId = sessionId;
    this.#settings = settings;
    this.#position = start.position;
    this.replayHeadSequence = start.barrier;
    this.#sessionClosed = start.closed;
    this.#waiter = new AppendWaiter(store, sessionId, settings.pollIntervalMs, settings.time);
    this.#stop = anySignal([this.#lifecycle.signal, settings.signal]);
    settings.signal?.addEventListener('abort', this.#onCallerAbort, { once: true });
  }

  /**
   * Checks the resume cursor, captures the replay barrier and returns the subscription.
   *
   * @throws DurableEventSubscriptionError for bad options, or a foreign, ahead-of-head or replaced cursor
   */
  static async open(
    store: DurableEventStore,
    sessionId: SessionId,
    options?: DurableEventSubscriptionOptions,
  ): Promise<DurableEventSubscription> {
    const settings = resolveSubscriptionOptions(options);
    const problem = describeInvalidId(sessionId);
    if (problem !== undefined) throw new DurableEventSubscriptionError(`sessionId ${problem}`);
    throwIfAborted(settings.signal);
    const start = await resolveReplayStart(store, sessionId, options?.after, settings.storeTimeoutMs, settings.signal, settings.time);
    return new DurableEventSubscription(store, sessionId, settings, start);
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  /** The next message; calls are served one after another, in call order. */
  next(): Promise<IteratorResult<DurableSubscriptionMessage, undefined>> {
    const result = this.#chain.then(
      () => this.#next(),
      () => this.#next(),
    );
    this.#chain = result.catch(() => undefined);
    return result;
  }

  /** Same as {@link DurableEventSubscription.close} (called by `for await` on `break`). */
  async return(): Promise<IteratorResult<DurableSubscriptionMessage, undefined>> {
    this.close();
    return DONE;
  }

  /**
   * Ends the subscription: a pending `next()` resolves `{ done: true }`, later calls too, and the
   * store's watch listener is released. Idempotent.
   */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#lifecycle.abort(newAbortError('the subscription was closed'));
    this.#release();
  }

  /** True once the subscription delivers nothing more (closed, ended or failed). */
  get closed(): boolean {
    return this.#closed || this.#finished;
  }

  /** Frees everything the subscription holds: the watch listener, the buffer, signal listeners. */
  #release(): void {
    this.#waiter.release();
    this.#buffer = [];
    this.#settings.signal?.removeEventListener('abort', this.#onCallerAbort);
    // Aborting the lifecycle also detaches the combined stop signal from the caller's signal.
    if (!this.#lifecycle.signal.aborted) this.#lifecycle.abort(newAbortError('the subscription ended'));
  }

  #finish(): void {
    this.#finished = true;
    this.#release();
  }

  async #next(): Promise<IteratorResult<DurableSubscriptionMessage, undefined>> {
    if (this.#closed) return DONE;
    const signal = this.#settings.signal;
    if (signal?.aborted === true) {
      this.#finish();
      throw abortReason(signal);
    }
    if (this.#finished) return DONE;
    try {
      const message = await this.#produce();
      if (this.#closed) return DONE;
      if (message === undefined) {
        this.#finish();
        return DONE;
      }
      return { done: false, value: message };
    } catch (error) {
      if (this.#closed) return DONE;
      this.#finish();
      if (isAborted(signal)) throw abortReason(signal);
      throw error;
    }
  }

  async #produce(): Promise<DurableSubscriptionMessage | undefined> {
    for (;;) {
      if (this.#phase === 'ending') return undefined;
      if (this.#phase === 'live' && this.#sessionClosed) return undefined;
      const event = this.#buffer.shift();
      if (event !== undefined) return this.#deliver(event);
      if (this.#phase === 'replay') {
        const barrier = this.replayHeadSequence ?? 0;
        const position = this.#position ?? 0;
        if (position < barrier) {
          await this.#fill(Math.min(this.#settings.pageSize, barrier - position), true);
          continue;
        }
        this.#phase = this.#settings.follow && !this.#sessionClosed ? 'live' : 'ending';
        return { type: 'caught_up', headSequence: this.replayHeadSequence };
      }
      this.#waiter.arm(this.#position);
      const filled = await this.#fill(this.#settings.pageSize, false);
      if (!filled) await this.#waiter.wait(this.#stop);
    }
  }

  #deliver(event: DurableEventEnvelope): DurableSubscriptionMessage {
    this.#position = event.sequence;
    if (event.type === 'session_closed') this.#sessionClosed = true;
    return { type: 'event', event, cursor: durableEventCursor(event), live: this.#phase === 'live' };
  }

  /** Reads the page after the position into the buffer; returns false when it was empty. */
  async #fill(limit: number, replay: boolean): Promise<boolean> {
    const after = this.#position ?? undefined;
    let page: DurableReadResult;
    try {
      page = await subscriptionCall(this.#settings.storeTimeoutMs, this.#stop, this.sessionId, (callSignal) =>
        this.#store.read(this.sessionId, { after, limit, signal: callSignal }),
        this.#settings.time,
      );
    } catch (error) {
      if (isDurableEventStoreError(error) && error.code === 'DURABLE_EVENT_INVALID_CURSOR') {
        throw this.#gap(`the log no longer reaches sequence ${String(after)}: it was truncated or replaced`, error);
      }
      throw error;
    }
    const events = page.events;
    if (events.length > limit) throw this.#gap(`the store returned ${events.length} events for a page of ${limit}`);
    let expected = (this.#position ?? 0) + 1;
    for (const event of events) {
      if (event.sessionId !== this.sessionId || event.sequence !== expected) {
        throw this.#gap(
          `expected sequence ${expected} of session ${this.sessionId}, the store returned sequence ${String(event.sequence)} of session ${String(event.sessionId)}`,
        );
      }
      expected += 1;
    }
    if (replay && events.length === 0) {
      throw this.#gap(`the log ended before the replay barrier ${String(this.replayHeadSequence)}: it was truncated or replaced`);
    }
    this.#buffer = events;
    return events.length > 0;
  }

  #gap(message: string, cause?: unknown): DurableEventSubscriptionError {
    return new DurableEventSubscriptionError(message, {
      details: { sessionId: this.sessionId, position: this.#position },
      ...(cause === undefined ? {} : { cause }),
    });
  }
}
