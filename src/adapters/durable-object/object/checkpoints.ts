/**
 * When a SessionObject writes projection checkpoints on its own.
 *
 * Journal commits inside the object already fold every event, and their journal's policy writes
 * checkpoints. Plain RPC appends fold nothing, so the object counts appended events and, after
 * the append has answered (a timer), catches its unfenced journal up:
 * 1. once {@link DEFAULT_CHECKPOINT_EVERY_EVENTS} events accumulated, the journal's policy
 *    decides whether a checkpoint is due (bursts of appends);
 * 2. once appends pause for {@link IDLE_CHECKPOINT_MS} with at least
 *    {@link IDLE_CHECKPOINT_MIN_EVENTS} events since the last catch-up, it writes one at the head
 *    regardless: objects are evicted after being idle, so the next cold start then folds
 *    (almost) nothing after the checkpoint.
 */
import { DEFAULT_CHECKPOINT_EVERY_EVENTS } from '../../../core/checkpoint/policy.js';
import type { SessionId } from '../../../protocol/ids.js';

/** Quiet time after the last append before an idle checkpoint is written. */
export const IDLE_CHECKPOINT_MS = 1000;
/** Fewest new events that justify an idle checkpoint. */
export const IDLE_CHECKPOINT_MIN_EVENTS = 256;

/** Counts appended events and triggers checkpoint maintenance. */
export class ObjectCheckpoints {
  #pending = 0;
  #sinceIdle = 0;
  #running = false;
  #idleTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly maintain: (sessionId: SessionId, force: boolean) => Promise<void>,
    private readonly everyEvents = DEFAULT_CHECKPOINT_EVERY_EVENTS,
  ) {}

  /** Called after every commit of `count` events. */
  afterCommit(sessionId: SessionId, count: number): void {
    this.#pending += count;
    this.#sinceIdle += count;
    if (this.#idleTimer !== undefined) clearTimeout(this.#idleTimer);
    this.#idleTimer = setTimeout(() => {
      this.#idleTimer = undefined;
      if (this.#sinceIdle >= IDLE_CHECKPOINT_MIN_EVENTS) this.#run(sessionId, true);
    }, IDLE_CHECKPOINT_MS);
    if (this.#pending >= this.everyEvents) setTimeout(() => this.#run(sessionId, false), 0);
  }

  #run(sessionId: SessionId, force: boolean): void {
    if (this.#running) return;
    this.#running = true;
    this.#pending = 0;
    if (force) this.#sinceIdle = 0;
    void this.maintain(sessionId, force).finally(() => {
      this.#running = false;
    });
  }
}
