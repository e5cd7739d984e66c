/**
 * When a SessionObject writes projection checkpoints on its own.
 *
 * Journal commits inside the object already fold every event, and their journal's policy writes
 * checkpoints. Plain RPC appends fold nothing, so the object counts appended events and, once
 * {@link DEFAULT_CHECKPOINT_EVERY_EVENTS} accumulated, schedules (after the append has answered,
 * with a timer) one catch-up of its unfenced journal, whose policy writes the checkpoint. A cold
 * start then reads that checkpoint and folds only the events after it.
 */
import { DEFAULT_CHECKPOINT_EVERY_EVENTS } from '../../../core/checkpoint/policy.js';
import type { SessionId } from '../../../protocol/ids.js';

/** Counts appended events and triggers checkpoint maintenance. */
export class ObjectCheckpoints {
  #pending = 0;
  #scheduled = false;

  constructor(
    private readonly maintain: (sessionId: SessionId) => Promise<void>,
    private readonly everyEvents = DEFAULT_CHECKPOINT_EVERY_EVENTS,
  ) {}

  /** Called after every commit of `count` events. */
  afterCommit(sessionId: SessionId, count: number): void {
    this.#pending += count;
    if (this.#scheduled || this.#pending < this.everyEvents) return;
    this.#scheduled = true;
    this.#pending = 0;
    setTimeout(() => {
      void this.maintain(sessionId).finally(() => {
        this.#scheduled = false;
      });
    }, 0);
  }
}
