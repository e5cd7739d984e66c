/**
 * Where each command of a session's log lives.
 *
 * The journal folds every loaded event into this index: `commandId -> { firstSequence,
 * lastSequence, eventCount, contiguous }`. It keeps positions only, never event bodies, so its
 * memory grows with the number of commands, not with the size of the log; the journal reads a
 * command's events back from the store on the rare occasions it needs them (an idempotent
 * replay, a reconciliation). A command is contiguous when all its events sit next to each
 * other; an ID that appears again after another event breaks that and makes the ID conflicting.
 */
import type { DurableEventEnvelope } from '../protocol/events.js';
import type { CommandId, EventSequence } from '../protocol/ids.js';

/** Where one command's events are. */
export interface CommandRange {
  readonly commandId: CommandId;
  readonly firstSequence: EventSequence;
  readonly lastSequence: EventSequence;
  /** Events carrying the command ID. */
  readonly eventCount: number;
  /** False once the ID appeared again after another event. */
  readonly contiguous: boolean;
}

/** What a projection checkpoint keeps of the index: the latest commands and the fold position. */
export interface CommandIndexCheckpoint {
  readonly ranges: readonly CommandRange[];
  readonly lastCommandId: CommandId | undefined;
  readonly lastSequence: EventSequence | null;
}

/**
 * Positions of every command seen in a log, in log order.
 *
 * An index restored from a checkpoint knows only the latest commands before it exactly (see
 * `toCheckpoint`); an older command ID is found through the projector's key filter and the
 * journal then folds the log from the start to locate it (`journal-log.ts`).
 */
export class CommandIndex {
  readonly #ranges = new Map<string, CommandRange>();
  /** The keys of `#ranges` in insertion order, so that `toCheckpoint` takes the latest without walking all. */
  readonly #order: string[] = [];
  #lastCommandId: string | undefined;
  #lastSequence: EventSequence | null = null;

  /** The last `keep` commands (in log order) and the fold position. */
  toCheckpoint(keep: number): CommandIndexCheckpoint {
    const order = this.#order;
    const ranges: CommandRange[] = [];
    // SAFETY: every ID in #order is a key of #ranges.
    for (let index = Math.max(0, order.length - keep); index < order.length; index++) ranges.push(this.#ranges.get(order[index] as string) as CommandRange);
    return {
      ranges,
      // SAFETY: only command IDs are ever stored here.
      lastCommandId: this.#lastCommandId as CommandId | undefined,
      lastSequence: this.#lastSequence,
    };
  }

  /** An index positioned where a checkpoint stands. */
  static fromCheckpoint(saved: CommandIndexCheckpoint): CommandIndex {
    const index = new CommandIndex();
    for (const range of saved.ranges) {
      if (!index.#ranges.has(range.commandId)) index.#order.push(range.commandId);
      index.#ranges.set(range.commandId, range);
    }
    index.#lastCommandId = saved.lastCommandId;
    index.#lastSequence = saved.lastSequence;
    return index;
  }

  /** The range of `commandId`, if the log holds it. */
  get(commandId: CommandId): CommandRange | undefined {
    return this.#ranges.get(commandId);
  }

  /** Number of distinct commands. */
  get size(): number {
    return this.#ranges.size;
  }

  /** Folds the next events of the log (in sequence order, continuing the previous call). */
  observe(events: readonly DurableEventEnvelope[]): void {
    for (const event of events) {
      const commandId = event.commandId;
      const adjacent = this.#lastSequence !== null && event.sequence === this.#lastSequence + 1;
      this.#lastSequence = event.sequence;
      if (commandId === undefined) {
        this.#lastCommandId = undefined;
        continue;
      }
      const known = this.#ranges.get(commandId);
      if (known === undefined) {
        this.#order.push(commandId);
        this.#ranges.set(commandId, {
          commandId,
          firstSequence: event.sequence,
          lastSequence: event.sequence,
          eventCount: 1,
          contiguous: true,
        });
      } else {
        this.#ranges.set(commandId, {
          ...known,
          lastSequence: event.sequence,
          eventCount: known.eventCount + 1,
          contiguous: known.contiguous && adjacent && this.#lastCommandId === commandId,
        });
      }
      this.#lastCommandId = commandId;
    }
  }
}
