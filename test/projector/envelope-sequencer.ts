/**
 * EnvelopeSequencer: turns drafts into stored-looking envelopes for tests.
 *
 * It assigns what a store would: `sequence` (contiguous from `firstSequence`), `eventId`
 * (`evt-<sequence>`), `recordedAt` = `occurredAt` (one second per sequence from a fixed instant)
 * and the session ID. `command(id, fn)` stamps one `commandId` on every event `fn` produces.
 * {@link JournalBuilder} adds the lifecycle steps on top.
 */
import type { DurableEventType } from '../../src/protocol/event-types.js';
import type { DurableEventDraft, DurableEventEnvelope } from '../../src/protocol/events.js';
import { CommandId, EventId, EventSequence, SessionId } from '../../src/protocol/ids.js';

const BASE_TIME_MS = Date.UTC(2025, 0, 1, 0, 0, 0);

/** Fields a test may override on any produced event. */
export interface EnvelopeOverrides {
  commandId?: CommandId;
  causationEventId?: EventId;
}

/** Assigns store fields to drafts; see the module header. */
export class EnvelopeSequencer {
  readonly events: DurableEventEnvelope[] = [];
  readonly sessionId: SessionId;
  private counter = 0;
  private nextSequence: number;
  /** The command stamped on events while inside {@link command}. */
  protected activeCommand: CommandId | undefined;

  constructor(options: { sessionId?: string; firstSequence?: number } = {}) {
    this.sessionId = SessionId(options.sessionId ?? 'session-1');
    this.nextSequence = options.firstSequence ?? 1;
  }

  /** A fresh ID with `prefix` (`prefix-1`, `prefix-2`, ... shared counter). */
  fresh(prefix: string): string {
    this.counter += 1;
    return `${prefix}-${this.counter}`;
  }

  /** The last produced event. */
  get last(): DurableEventEnvelope {
    const event = this.events[this.events.length - 1];
    if (event === undefined) throw new Error('no event yet');
    return event;
  }

  /** Appends one event built from `draft`, assigning the store fields. */
  push<T extends DurableEventType>(draft: DurableEventDraft<T>, overrides: EnvelopeOverrides = {}): DurableEventEnvelope<T> {
    const sequence = this.nextSequence++;
    const at = new Date(BASE_TIME_MS + sequence * 1000).toISOString();
    const commandId = overrides.commandId ?? this.activeCommand ?? (draft as { commandId?: CommandId }).commandId;
    const causation = overrides.causationEventId ?? (draft as { causationEventId?: EventId }).causationEventId;
    // SAFETY: a draft plus the store-assigned fields is exactly the envelope of the same type.
    const envelope = {
      ...draft,
      schemaVersion: 4,
      eventId: EventId(`evt-${sequence}`),
      sequence: EventSequence(sequence),
      sessionId: this.sessionId,
      recordedAt: at,
      occurredAt: at,
      ...(commandId === undefined ? {} : { commandId }),
      ...(causation === undefined ? {} : { causationEventId: causation }),
    } as unknown as DurableEventEnvelope<T>;
    this.events.push(envelope);
    return envelope;
  }

  /** Runs `fn` with every produced event stamped with `commandId`. */
  command(commandId: string | CommandId, fn: () => void): this {
    const previous = this.activeCommand;
    this.activeCommand = CommandId(commandId);
    try {
      fn();
    } finally {
      this.activeCommand = previous;
    }
    return this;
  }
}

/** The draft a writer would have appended for `event` (store-assigned fields removed). */
export function draftOf(event: DurableEventEnvelope): DurableEventDraft {
  const draft: Record<string, unknown> = { ...event };
  for (const key of ['schemaVersion', 'eventId', 'sequence', 'sessionId', 'recordedAt']) delete draft[key];
  // SAFETY: removing the store-assigned fields from an envelope leaves its draft (occurredAt is optional).
  return draft as unknown as DurableEventDraft;
}
