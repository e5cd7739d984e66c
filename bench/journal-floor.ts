/**
 * The journal floor of the session and edge-agent benchmarks: a recorded Request's committed
 * batches committed again through a bare `DurableSessionJournal` (validation, preview, fold; no
 * Session, model or tool). Imported by `bench/session.bench.ts` (Node) and by the edge-agent
 * Worker (workerd), so it uses no Node or Workers API.
 */
import type { DurableSessionJournal } from '../src/core/journal/journal.js';
import type { DurableEventDraft } from '../src/protocol/events.js';
import { CommandId, type EventId } from '../src/protocol/ids.js';

/** A recorded Request: its committed batches (as drafts) and the event IDs each batch got. */
export interface RecordedBatches {
  batches: readonly DurableEventDraft[][];
  eventIds: readonly (readonly string[])[];
}

/**
 * Commits `recorded` through `journal`, one command per batch (the batch's own command ID, or
 * `command-<index>`), with causation links pointed at the event IDs this journal's session gave the
 * earlier batches. `mapped` (old ID -> new ID) carries over between calls on the same journal.
 * Returns the number of events committed.
 */
export async function commitThroughJournal(
  journal: DurableSessionJournal,
  recorded: RecordedBatches,
  mapped: Map<string, EventId> = new Map(),
): Promise<number> {
  let written = 0;
  for (const [index, batch] of recorded.batches.entries()) {
    const events = batch.map(({ commandId: _commandId, ...draft }) => {
      const causation = draft.causationEventId === undefined ? undefined : mapped.get(draft.causationEventId);
      // SAFETY: the same draft with its causation link pointed at this session's event.
      return (causation === undefined ? draft : { ...draft, causationEventId: causation }) as DurableEventDraft;
    });
    const result = await journal.commit({ commandId: CommandId(batch[0]?.commandId ?? `command-${index}`), events });
    result.events.forEach((event, at) => {
      const old = recorded.eventIds[index]?.[at];
      if (old !== undefined) mapped.set(old, event.eventId);
    });
    written += result.events.length;
  }
  return written;
}
