/**
 * When a SessionObject writes projection checkpoints on its own.
 *
 * Journal commits inside the object already fold every event, and their journal's policy writes
 * checkpoints. Plain RPC/HTTP appends fold nothing, so the object counts appended events and,
 * once appends pause for {@link IDLE_CHECKPOINT_MS} with at least
 * {@link IDLE_CHECKPOINT_MIN_EVENTS} new events, catches its unfenced journal up and writes a
 * checkpoint at the head. Nothing runs during a burst of appends, so the object's append
 * throughput is untouched; objects are evicted only after being idle, so the idle checkpoint
 * comes before the eviction and the next cold start folds (almost) nothing after it.
 */
import type { SessionId } from '../protocol/ids.js';

/** Quiet time after the last append before an idle checkpoint is written. */
const IDLE_CHECKPOINT_MS = 1000;
/** Fewest new events that justify an idle checkpoint. */
const IDLE_CHECKPOINT_MIN_EVENTS = 256;

/** Counts appended events and triggers checkpoint maintenance when appends pause. */
export class ObjectCheckpoints {
  #pending = 0;
  #running = false;
  #idleTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(private readonly maintain: (sessionId: SessionId, force: boolean) => Promise<void>) {}

  /** Called after every commit of `count` events. */
  afterCommit(sessionId: SessionId, count: number): void {
    this.#pending += count;
    if (this.#idleTimer !== undefined) clearTimeout(this.#idleTimer);
    this.#idleTimer = setTimeout(() => {
      this.#idleTimer = undefined;
      if (this.#pending >= IDLE_CHECKPOINT_MIN_EVENTS) this.#run(sessionId);
    }, IDLE_CHECKPOINT_MS);
  }

  #run(sessionId: SessionId): void {
    if (this.#running) return;
    this.#running = true;
    this.#pending = 0;
    void this.maintain(sessionId, true).finally(() => {
      this.#running = false;
    });
  }
}
