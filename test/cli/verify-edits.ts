/**
 * The edits `agent-ledger verify` must see, shared by the JSONL/SQLite test
 * (`test/cli/verify-edits.test.ts`) and the PostgreSQL one (`test/postgres/verify-edits.test.ts`).
 *
 * A session of 33 events with a projection checkpoint at its head, then one edit of its stored
 * events: every edit keeps each stored event a valid envelope with sequences contiguous from 1
 * (the renumbering a careful hand would do), so only the checkpoint audit can see most of them.
 */
import { DurableSessionJournal } from '../../src/core/journal/index.js';
import type { DurableEventStore } from '../../src/core/store.js';
import type { DurableEventEnvelope } from '../../src/protocol/events.js';
import { CommandId, type SessionId } from '../../src/protocol/ids.js';
import { cycleDrafts } from '../checkpoint/lifecycle-log.js';
import { draftOf, JournalBuilder } from '../projector/journal-builder.js';

/** Events of the session {@link seedEditable} writes. */
export const EDITABLE_EVENTS = 33;

/** The 28 events of three Requests, one per append, then a journal opened on them (no automatic checkpoints). */
async function appendRequests(store: DurableEventStore, sessionId: SessionId): Promise<DurableSessionJournal> {
  const b = new JournalBuilder({ sessionId });
  b.createSession().simpleRequest().simpleRequest();
  b.acceptRequest().startRequest().applyInput().startTurn().modelStarted();
  b.modelCompleted({ toolCalls: [{ id: 'call-build', name: 'build', arguments: { target: 'all' } }] });
  b.scheduleTool({ toolAttemptId: 'tool-build', toolCallId: 'call-build', sideEffect: 'idempotent' });
  b.startTool({ sideEffect: 'idempotent', input: { target: 'all' } }).completeTool({ result: { status: 'done' } });
  b.completeTurn().completeRequest();
  for (const event of b.events) await store.append(sessionId, [draftOf(event)]);
  const journal = await DurableSessionJournal.open(store, sessionId, { checkpoints: { everyEvents: 1_000_000 } });
  return journal;
}

/** The 5-event command through the journal. */
async function commitCycle(journal: DurableSessionJournal): Promise<void> {
  const outcome = await journal.commit({ commandId: CommandId('cycle-0'), events: cycleDrafts(0).map(({ commandId: _assigned, ...draft }) => draft) });
  if (outcome.status !== 'committed') throw new Error(`commit: ${outcome.status}`);
}

/**
 * Appends the session: 28 events one per append (a JSONL line each) straight to the store, then a
 * 5-event command through a journal (one line; so the digest the journal keeps is also the one of
 * envelopes it appended itself, not only of envelopes it read), which then writes a checkpoint at
 * the head. The tool of the third Request completes with `{ status: 'done' }`.
 */
export async function seedEditable(store: DurableEventStore, sessionId: SessionId): Promise<void> {
  const journal = await appendRequests(store, sessionId);
  await commitCycle(journal);
  if (!(await journal.writeCheckpoint())) throw new Error('no checkpoint written');
}

/** Events renumbered 1..n (the sequence is the only field that says where an event stands). */
function renumbered(events: DurableEventEnvelope[]): DurableEventEnvelope[] {
  return events.map((event, index) => ({ ...event, sequence: (index + 1) as DurableEventEnvelope['sequence'] }));
}

function indexOfType(events: readonly DurableEventEnvelope[], type: string): number {
  const index = events.findIndex((event) => event.type === type);
  if (index === -1) throw new Error(`no ${type} event`);
  return index;
}

/**
 * The check of `verify` that sees an edit: the checkpoint's digest of events 1-33, the checkpoint
 * standing past the end of the log, or the projector refusing an event.
 */
export type EditCheck = 'checkpoint digest' | 'checkpoint past the end' | 'projection';

/** One edit: a name, what it does to the stored events, and the place `verify` must name. */
export interface LogEdit {
  name: string;
  apply(events: DurableEventEnvelope[]): DurableEventEnvelope[];
  /** What the output of `verify` must match. */
  place: RegExp;
  check: EditCheck;
}

/** Every kind of edit, on a log whose checkpoint stands at its head. */
export const LOG_EDITS: readonly LogEdit[] = [
  {
    name: 'one byte of a payload ("done" to "dune")',
    apply: (events) =>
      events.map((event) => (event.type === 'tool_completed' ? ({ ...event, data: { ...event.data, result: { status: 'dune' } } } as DurableEventEnvelope) : event)),
    place: /checkpoint at sequence 33: events 1-33 are not the ones .*digest mismatch/,
    check: 'checkpoint digest',
  },
  {
    name: 'an envelope field (occurredAt of event 3)',
    apply: (events) => events.map((event) => (event.sequence === 3 ? { ...event, occurredAt: '2020-01-01T00:00:00.000Z' } : event)),
    place: /checkpoint at sequence 33: events 1-33 are not the ones .*digest mismatch/,
    check: 'checkpoint digest',
  },
  {
    name: 'an added event (a copy of event 2, with its own ID, as event 3)',
    apply: (events) => {
      const copy = { ...events[1], eventId: 'evt-added' } as DurableEventEnvelope;
      return renumbered([...events.slice(0, 2), copy, ...events.slice(2)]);
    },
    place: /sequence 3: /,
    check: 'projection',
  },
  {
    name: 'a removed event (event 20)',
    apply: (events) => renumbered(events.filter((event) => event.sequence !== 20)),
    place: /checkpoint at sequence 33: the log ends at sequence 32, .*event 33 was removed/,
    check: 'checkpoint past the end',
  },
  {
    name: 'the last event removed (the one the checkpoint stands at)',
    apply: (events) => events.slice(0, -1),
    place: /checkpoint at sequence 33: the log ends at sequence 32, .*event 33 was removed/,
    check: 'checkpoint past the end',
  },
  {
    name: 'two events reordered (the end of the first Request and the acceptance of the second)',
    apply: (events) => {
      const completed = indexOfType(events, 'request_completed');
      const swapped = [...events];
      [swapped[completed], swapped[completed + 1]] = [swapped[completed + 1] as DurableEventEnvelope, swapped[completed] as DurableEventEnvelope];
      return renumbered(swapped);
    },
    place: /sequence 9: request_accepted breaks the projection/,
    check: 'projection',
  },
  {
    name: 'two Requests reordered (events 2-9 and 10-17 swapped)',
    apply: (events) => renumbered([events[0] as DurableEventEnvelope, ...events.slice(9, 17), ...events.slice(1, 9), ...events.slice(17)]),
    place: /checkpoint at sequence 33: events 1-33 are not the ones .*digest mismatch/,
    check: 'checkpoint digest',
  },
];

/**
 * Whether a backend whose `verify` reads the log through the store (`verifyThroughStore`: SQLite,
 * PostgreSQL) runs `edit` in `npm test`: the first edit of each {@link EditCheck} does. The
 * others reach the same check through the same reads of the same store, so they run there only
 * in `npm run test:deep` (`deep`); every edit still runs in `npm test` on JSONL lines, whose
 * verify checks the raw lines of each one too (one run of the CLI over the whole store).
 */
export function editRunsOnEveryBackend(edit: LogEdit, deep: boolean): boolean {
  return deep || LOG_EDITS.find((other) => other.check === edit.check) === edit;
}

/** The sequence of the checkpoint {@link seedPastCheckpoint} writes (when it writes one). */
export const EARLY_CHECKPOINT = 28;

/**
 * The session of {@link seedEditable} (33 events, the same ones), but with the checkpoint written
 * after event {@link EARLY_CHECKPOINT}, before the 5-event command (`checkpoint: true`), or with no
 * checkpoint at all: events 29-33 (or all) are then beyond any checkpoint's digest.
 */
export async function seedPastCheckpoint(store: DurableEventStore, sessionId: SessionId, checkpoint: boolean): Promise<void> {
  const journal = await appendRequests(store, sessionId);
  if (checkpoint && !(await journal.writeCheckpoint())) throw new Error('no checkpoint written');
  await commitCycle(journal);
}

/** An edit of one stored event in place (its row's other columns kept), and the place `verify` must name. */
export interface RowEdit {
  name: string;
  sequence: number;
  apply(event: DurableEventEnvelope): DurableEventEnvelope;
  place: RegExp;
}

/** Edits of events after {@link EARLY_CHECKPOINT}: only a per-event digest can see them. */
export const ROW_EDITS: readonly RowEdit[] = [
  {
    name: 'one byte of a payload (the input of event 29)',
    sequence: 29,
    apply: (event) => {
      const data = event.data as { input: string };
      return { ...event, data: { ...data, input: `${data.input.slice(0, -1)}X` } } as DurableEventEnvelope;
    },
    place: /sequence 29: .*digest/,
  },
  {
    name: 'an envelope field (occurredAt of event 31)',
    sequence: 31,
    apply: (event) => ({ ...event, occurredAt: '2020-01-01T00:00:00.000Z' }),
    place: /sequence 31: .*digest/,
  },
];

/**
 * Which of the two sessions (`true`: a checkpoint at {@link EARLY_CHECKPOINT}; `false`: none) row
 * edit `index` runs on: in `npm test` the first edit after the checkpoint and the second without
 * one (the per-event digest check is the same for both edits; each edit and each session is still
 * covered); every edit on both in `npm run test:deep` (`deep`).
 */
export function rowEditSessions(index: number, deep: boolean): boolean[] {
  return deep ? [true, false] : [index % 2 === 0];
}
