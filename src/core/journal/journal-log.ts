/**
 * The journal's in-memory view of one session's log.
 *
 * It owns the projector, the command index and the loaded head, and is the only place that
 * reads the store on the journal's behalf:
 * 1. `refresh` folds every event after the loaded head, page by page. Its first read starts one
 *    event early, at the loaded head itself, and requires the same event ID there: a log that was
 *    replaced or truncated under the journal fails closed instead of being appended to.
 * 2. Every page must continue the sequence of this session exactly, or the read fails with
 *    `DurableSessionJournalError`; the projector then rechecks every lifecycle invariant.
 * 3. `readRange` reads one command's events back (the index keeps positions, not bodies).
 * Every store call is bounded by `storeTimeoutMs` and the caller's signal.
 */
import { throwIfAborted, withDeadline } from '../abort.js';
import { DurableSessionProjector } from '../projector/index.js';
import type { DurableEventStore } from '../store.js';
import { DurableEventProjectionError, DurableEventStoreError, DurableSessionJournalError } from '../../protocol/errors.js';
import type { DurableEventEnvelope } from '../../protocol/events.js';
import { EventSequence, type EventId, type SessionId } from '../../protocol/ids.js';
import { MAX_READ_LIMIT } from '../../protocol/limits.js';
import { CommandIndex, type CommandRange } from './command-index.js';

/** Builds a `DurableSessionJournalError` with optional details. */
export function journalError(message: string, details?: Record<string, unknown>): DurableSessionJournalError {
  return new DurableSessionJournalError(message, details === undefined ? undefined : { details });
}

/** Loaded state of one session's log: projection, command positions, head. */
export class JournalLog {
  readonly projector: DurableSessionProjector;
  readonly index = new CommandIndex();
  #head: EventSequence | null = null;
  #lastEventId: EventId | null = null;

  constructor(
    private readonly store: DurableEventStore,
    readonly sessionId: SessionId,
    private readonly pageSize: number,
    readonly storeTimeoutMs: number,
  ) {
    this.projector = new DurableSessionProjector({ sessionId });
  }

  /** The loaded head (`null` for an empty log). */
  get head(): EventSequence | null {
    return this.#head;
  }

  /** Runs one store call under the journal deadline; a timeout is `DURABLE_EVENT_IO_TIMEOUT`. */
  call<T>(signal: AbortSignal | undefined, call: (signal: AbortSignal) => Promise<T>, what: string): Promise<T> {
    const timeoutMs = this.storeTimeoutMs;
    return withDeadline(
      timeoutMs,
      signal,
      call,
      () =>
        new DurableEventStoreError('DURABLE_EVENT_IO_TIMEOUT', `journal ${what} exceeded its deadline of ${timeoutMs} ms`, {
          details: { timeoutMs, sessionId: this.sessionId },
        }),
    );
  }

  /** Throws once the projector has failed: the log is invalid and this view is unusable. */
  assertHealthy(): void {
    if (this.projector.failed) {
      throw new DurableEventProjectionError(
        `the journal of session ${this.sessionId} met an invalid log; repair it and open a new journal`,
        { cause: this.projector.error },
      );
    }
  }

  /** Folds every event after the loaded head, after proving the loaded head is still in the log. */
  async refresh(signal: AbortSignal | undefined): Promise<void> {
    throwIfAborted(signal);
    this.assertHealthy();
    let anchored = this.#head !== null;
    for (;;) {
      const head = this.#head;
      const after = anchored && head !== null ? (head > 1 ? EventSequence(head - 1) : undefined) : (head ?? undefined);
      const limit = anchored ? Math.min(this.pageSize + 1, MAX_READ_LIMIT) : this.pageSize;
      const page = await this.call(
        signal,
        (callSignal) => this.store.read(this.sessionId, { after, limit, signal: callSignal }),
        'read',
      );
      let events = page.events;
      if (anchored) {
        const first = events[0];
        if (first === undefined || first.sequence !== head || first.eventId !== this.#lastEventId) {
          throw journalError(
            `the log of session ${this.sessionId} no longer holds event ${String(this.#lastEventId)} at sequence ${String(head)}; it was replaced or truncated`,
            { sequence: head, eventId: this.#lastEventId },
          );
        }
        events = events.slice(1);
        anchored = false;
        // A page cut to its byte budget may hold the anchor alone: read on after it.
        if (events.length === 0 && page.hasMore) continue;
      }
      if (events.length === 0) {
        if (page.hasMore) throw journalError('the store returned an empty page with hasMore = true');
        return;
      }
      this.#checkPage(events);
      this.fold(events);
      if (!page.hasMore) return;
    }
  }

  #checkPage(events: readonly DurableEventEnvelope[]): void {
    let expected = (this.#head ?? 0) + 1;
    for (const event of events) {
      if (event.sessionId !== this.sessionId || event.sequence !== expected) {
        throw journalError(
          `the store returned event ${String(event.eventId)} (session ${String(event.sessionId)}, sequence ${String(event.sequence)}) where sequence ${expected} of session ${this.sessionId} belongs`,
          { expectedSequence: expected },
        );
      }
      expected += 1;
    }
  }

  /** Folds events that continue the loaded head (checked by the caller) into the view. */
  fold(events: readonly DurableEventEnvelope[]): void {
    this.projector.apply(events);
    this.index.observe(events);
    const last = events[events.length - 1];
    if (last !== undefined) {
      this.#head = last.sequence;
      this.#lastEventId = last.eventId;
    }
  }

  /** Reads a contiguous command range back from the store, checking every event belongs to it. */
  async readRange(range: CommandRange, signal: AbortSignal | undefined): Promise<DurableEventEnvelope[]> {
    const events: DurableEventEnvelope[] = [];
    let next: number = range.firstSequence;
    while (next <= range.lastSequence) {
      const after = next > 1 ? EventSequence(next - 1) : undefined;
      const limit = Math.min(MAX_READ_LIMIT, range.lastSequence - next + 1);
      const page = await this.call(
        signal,
        (callSignal) => this.store.read(this.sessionId, { after, limit, signal: callSignal }),
        'read',
      );
      if (page.events.length === 0) {
        throw journalError(`the store no longer returns command ${range.commandId} at sequence ${next}`);
      }
      for (const event of page.events) {
        if (event.sequence !== next || event.commandId !== range.commandId || event.sessionId !== this.sessionId) {
          throw journalError(`the log changed under command ${range.commandId}: sequence ${next} is not one of its events`, {
            commandId: range.commandId,
            sequence: next,
          });
        }
        events.push(event);
        next += 1;
        if (next > range.lastSequence) break;
      }
    }
    return events;
  }
}
