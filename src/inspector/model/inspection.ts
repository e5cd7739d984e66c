/**
 * One read of everything the inspector shows about a session.
 *
 * Reads the whole log page by page and keeps what the page shows, not the log (the latest
 * timeline bars, the bars still open, and the events of the list; the fold's own state, every ID
 * the session used, still grows with it), folds it through the projector, classifies the recovery plan, reads the lease and
 * the durability records when the store has them, and derives the next deadline. When the store
 * keeps projection checkpoints, the stored one is audited on the way (the checks of
 * `agent-ledger verify`, `CheckpointAudit`), since the inspection folds the whole log anyway.
 *
 * A whole-log fold costs time and memory in proportion to the session (every ID it ever used), too
 * much for a Worker at a million events. With `fullFoldLimit`, a session longer than that which
 * has a usable checkpoint is opened from it instead, as a journal opens: the projection and plan
 * come from the checkpoint plus the events after it, the timeline and the list from the latest
 * `tailEvents`; the checkpoint is then `used`, not audited. The page hosts set the limit
 * ({@link DEFAULT_PAGE_FULL_FOLD_LIMIT}); the CLI's `inspect` folds the whole log.
 *
 * The result is plain JSON-like data: `agent-ledger inspect --json` prints it, the page renders it.
 */
import { CheckpointAudit } from '../../core/checkpoint/audit.js';
import { isCheckpointStore } from '../../core/checkpoint/contract.js';
import { isCheckpointInconclusive } from '../../core/projector/key-filter.js';
import { loadCheckpoint } from '../../core/checkpoint/load.js';
import type { DurabilityRecord } from '../../core/durability/record-contract.js';
import { isDurabilityRecordStore } from '../../core/durability/record-contract.js';
import { DurableSessionProjector } from '../../core/projector/projector.js';
import type { DurableRecoveryPlan, DurableSessionProjection } from '../../core/projector/projection-types.js';
import { isExecutionLeaseStore, type DurableEventStore, type DurableExecutionLeaseRecord } from '../../core/store.js';
import { durableEventCursor, encodeDurableEventCursor } from '../../protocol/cursor.js';
import { isDurableError } from '../../protocol/errors.js';
import type { DurableEventEnvelope } from '../../protocol/events.js';
import type { EventSequence, SessionId } from '../../protocol/ids.js';
import { classifyRecoveryPlan, type ClassifiedPlan } from './safety.js';
import { MAX_TIMELINE_BARS, nextDeadline, pendingWaits, TimelineBuilder, type PendingDeadline, type Timeline } from './timeline.js';

/** Options of {@link loadInspection}. */
interface LoadInspectionOptions {
  /** Clock for open bars and the next deadline (default `Date.now`). */
  nowMs?: number;
  /** How many of the latest events to keep for the event list (default 100). */
  recentEvents?: number;
  signal?: AbortSignal;
  /** Show the page of the event list starting at this sequence instead of the latest events. */
  listFrom?: number;
  /** How many of the latest timeline bars to keep (default {@link MAX_TIMELINE_BARS}, what the page draws). */
  timelineBars?: number;
  /** Called after each page with the number of events read. */
  onProgress?: (read: number, head: number) => void;
  /**
   * Fold the whole log only while the session holds at most this many events (default: always).
   * A longer session with a usable projection checkpoint is opened from it instead (see the module
   * comment); without one, or when the checkpoint cannot answer, the whole log is folded anyway.
   */
  fullFoldLimit?: number;
  /** Opened from a checkpoint: how many of the latest events the timeline and list read (default {@link DEFAULT_TAIL_EVENTS}). */
  tailEvents?: number;
}

/** Sessions longer than this open from their checkpoint on the inspector page (`?full=1` folds the whole log). */
export const DEFAULT_PAGE_FULL_FOLD_LIMIT = 50_000;
/** Latest events an inspection opened from a checkpoint reads for its timeline and list. */
const DEFAULT_TAIL_EVENTS = 4000;

/** The projector's verdict when the log breaks an invariant. */
interface ProjectionFailure {
  code: string;
  message: string;
  rule?: string;
  sequence?: number | null;
}

/** The stored projection checkpoint, audited against the inspection's fold of the whole log. */
interface InspectionCheckpoint {
  /** Sequence it stands at (0 when the store failed to read it: `discarded`, the reason in `notes`). */
  sequence: number;
  /** Size of the stored record (0 for a live checkpoint the view opened from: the memory store keeps it as objects). */
  bytes: number;
  /** Events after it that an open folds (`head - sequence`; negative for one beyond the head). */
  behind: number;
  /**
   * `matches`: every check of the audit passed; `discarded`: an open does not use it (it rebuilds,
   * nothing is wrong); `wrong`: an open uses it and gets a projection that differs from the log's
   * (`agent-ledger checkpoint <store> <session> --rebuild` replaces it); `unchecked`: the log
   * breaks the projector before the checkpoint's sequence (an open fails the same way); `used`: the
   * inspection opened from it (`fullFoldLimit`) and folded only the events after it, so it was
   * not audited (`agent-ledger verify` audits it, or the page's whole-log view).
   */
  status: 'matches' | 'discarded' | 'wrong' | 'unchecked' | 'used';
  /** Why `wrong`, one line each. */
  defects: string[];
  /** Why `discarded` or `unchecked`, and harmless findings. */
  notes: string[];
}

/** Everything the inspector knows about one session. */
export interface Inspection {
  sessionId: SessionId;
  headSequence: number | null;
  /** Cursor of the head (the page's live tail starts there); `null` for an empty log. */
  headCursor: string | null;
  projection: DurableSessionProjection | null;
  plan: DurableRecoveryPlan | null;
  classified: ClassifiedPlan | null;
  projectionFailure: ProjectionFailure | null;
  lease: (DurableExecutionLeaseRecord & { active: boolean }) | null;
  /** `false` when the store has no lease API. */
  leaseSupported: boolean;
  durabilitySupported: boolean;
  durabilityRecords: number;
  /** `false` when the store keeps no projection checkpoints. */
  checkpointSupported: boolean;
  /** The stored checkpoint, `null` when none is stored (or the store keeps none). */
  checkpoint: InspectionCheckpoint | null;
  /** `log`: the whole log was folded; `checkpoint`: opened from the stored checkpoint (`fullFoldLimit`). */
  openedFrom: 'log' | 'checkpoint';
  /** First sequence the timeline read (1 after a whole-log fold; bars begun before it are not shown). */
  timelineFrom: number;
  nextDeadline: PendingDeadline | null;
  pendingWaits: ReturnType<typeof pendingWaits>;
  timeline: Timeline;
  /** The latest events (oldest first). */
  recent: DurableEventEnvelope[];
  /** Cursor just before `recent[0]` (to page backwards), `null` when `recent` starts at 1. */
  olderCursor: string | null;
  nowMs: number;
}

/** Reads every durability record of a session. */
export async function readDurabilityRecords(store: unknown, sessionId: SessionId, signal?: AbortSignal): Promise<DurabilityRecord[] | null> {
  if (!isDurabilityRecordStore(store)) return null;
  const records: DurabilityRecord[] = [];
  let after: number | undefined;
  for (;;) {
    const page = await store.readDurability(sessionId, {
      ...(after === undefined ? {} : { after }),
      limit: 1000,
      ...(signal === undefined ? {} : { signal }),
    });
    records.push(...page.records);
    if (!page.hasMore || page.nextCursor === null) break;
    after = page.nextCursor;
  }
  return records;
}

/** The audit's verdict after the fold (`unchecked` when the projector stopped before the checkpoint). */
function auditedCheckpoint(audit: CheckpointAudit, head: number): InspectionCheckpoint {
  const unchecked = audit.result === null && audit.sequence <= head;
  const result = unchecked ? null : audit.finish(head);
  return {
    sequence: audit.sequence,
    bytes: audit.bytes,
    behind: head - audit.sequence,
    status: result?.status ?? 'unchecked',
    defects: [...(result?.defects ?? [])],
    notes:
      result === null
        ? [`the log breaks the projector before sequence ${audit.sequence}, where the checkpoint stands: it was not checked`]
        : [...result.notes],
  };
}

/**
 * One line on the stored checkpoint (`inspect` and the page): where it stands, how many events an
 * open folds after it, its size and the audit's verdict.
 */
export function describeCheckpoint(inspection: Pick<Inspection, 'checkpointSupported' | 'checkpoint'>): string {
  const checkpoint = inspection.checkpoint;
  if (!inspection.checkpointSupported) return 'n/a (this store keeps no projection checkpoints)';
  if (checkpoint === null) return 'none stored (an open folds the whole log)';
  if (checkpoint.sequence === 0) return `unreadable: ${checkpoint.notes[0] ?? 'the store failed to read it'}`;
  const where =
    checkpoint.behind >= 0
      ? `at sequence ${checkpoint.sequence}, ${checkpoint.behind} event(s) behind the head`
      : `at sequence ${checkpoint.sequence}, beyond the head`;
  const verdict =
    checkpoint.status === 'matches'
      ? 'matches a fold of the whole log'
      : checkpoint.status === 'discarded'
        ? `an open discards it and rebuilds (${checkpoint.notes[0] ?? 'not usable'})`
        : checkpoint.status === 'wrong'
          ? `WRONG: ${checkpoint.defects[0] ?? 'it differs from the log'}; \`agent-ledger checkpoint <store> <session> --rebuild\` replaces it`
          : checkpoint.status === 'used'
            ? `this view opened from it and folded the ${Math.max(0, checkpoint.behind)} event(s) after it; not audited (\`agent-ledger verify\` audits it)`
            : 'not checked (the log breaks the projector before it)';
  // No record is ever empty: 0 bytes is a live checkpoint, held as objects (the memory store).
  const size = checkpoint.bytes === 0 ? 'kept live in memory' : `${checkpoint.bytes} bytes`;
  return `${where}, ${size}: ${verdict}`;
}

/** The projector's verdict on `error`, as the inspection reports it. */
function failureOf(error: unknown): ProjectionFailure {
  const details = isDurableError(error) ? (error.details as { rule?: string; sequence?: number | null } | undefined) : undefined;
  return {
    code: isDurableError(error) ? error.code : 'UNKNOWN',
    message: error instanceof Error ? error.message : String(error),
    ...(details?.rule === undefined ? {} : { rule: details.rule }),
    ...(details?.sequence === undefined ? {} : { sequence: details.sequence }),
  };
}

/**
 * The event list of an inspection: the latest `keep` events, or `keep` from `from`, each with the
 * event before them (the cursor to page backwards). Fed page by page; holds at most about
 * `2 * (keep + 1)` events.
 */
class EventList {
  #listed: DurableEventEnvelope[] = [];

  constructor(
    readonly keep: number,
    readonly from: number | undefined,
  ) {}

  add(events: readonly DurableEventEnvelope[]): void {
    const { keep, from } = this;
    if (from === undefined) {
      this.#listed.push(...events);
      if (this.#listed.length > 2 * (keep + 1)) this.#listed = this.#listed.slice(this.#listed.length - (keep + 1));
    } else {
      for (const event of events) if (event.sequence >= from - 1 && event.sequence < from + keep) this.#listed.push(event);
    }
  }

  /** The listed events and the one before the first of them. */
  finish(): { recent: DurableEventEnvelope[]; before: DurableEventEnvelope | undefined } {
    const { keep, from } = this;
    const listed = this.#listed;
    const recent = from === undefined ? listed.slice(Math.max(0, listed.length - keep)) : listed.filter((event) => event.sequence >= from);
    const first = recent[0];
    return { recent, before: first === undefined ? undefined : listed.find((event) => event.sequence === first.sequence - 1) };
  }
}

/** What a fold produced, before the lease, the durability records and the deadlines are read. */
interface Folded {
  head: number | null;
  last: DurableEventEnvelope | undefined;
  projector: DurableSessionProjector;
  failure: ProjectionFailure | null;
  list: EventList;
  timeline: TimelineBuilder;
  checkpoint: InspectionCheckpoint | null;
  openedFrom: Inspection['openedFrom'];
  timelineFrom: number;
}

/** Loads an {@link Inspection} of `sessionId` from `store`. */
export async function loadInspection(
  store: DurableEventStore,
  sessionId: SessionId,
  options: LoadInspectionOptions = {},
): Promise<Inspection> {
  const nowMs = options.nowMs ?? Date.now();
  const signal = options.signal;
  const folded = (await foldFromCheckpoint(store, sessionId, options)) ?? (await foldWholeLog(store, sessionId, options));
  const { head, last, projector, failure, list, timeline } = folded;
  const leaseSupported = isExecutionLeaseStore(store);
  let lease: Inspection['lease'] = null;
  if (leaseSupported) {
    const record = await store.inspectExecutionLease(sessionId, signal === undefined ? {} : { signal });
    if (record !== null) lease = { ...record, active: !record.released && record.expiresAtMs > nowMs };
  }
  const records = await readDurabilityRecords(store, sessionId, signal);
  const projection = failure === null ? projector.snapshot() : null;
  const plan = failure === null ? projector.recoveryPlan() : null;
  const { recent, before } = list.finish();
  timeline.addRecords(records ?? []);
  return {
    sessionId,
    headSequence: head,
    headCursor: last === undefined ? null : encodeDurableEventCursor(durableEventCursor(last)),
    projection,
    plan,
    classified: plan === null ? null : classifyRecoveryPlan(plan),
    projectionFailure: failure,
    lease,
    leaseSupported,
    durabilitySupported: records !== null,
    durabilityRecords: records?.length ?? 0,
    checkpointSupported: isCheckpointStore(store),
    checkpoint: folded.checkpoint,
    openedFrom: folded.openedFrom,
    timelineFrom: folded.timelineFrom,
    nextDeadline: records === null ? null : nextDeadline(records, nowMs),
    pendingWaits: records === null ? [] : pendingWaits(records),
    timeline: timeline.finish(),
    recent,
    olderCursor: before === undefined ? null : encodeDurableEventCursor(durableEventCursor(before)),
    nowMs,
  };
}

/**
 * Reads the log after `after` (from the first event when `undefined`) up to the head in pages of
 * 1,000, handing each page to `onPage`; returns the head and the last event read.
 */
async function readToHead(
  store: DurableEventStore,
  sessionId: SessionId,
  after: number | undefined,
  options: LoadInspectionOptions,
  onPage: (events: readonly DurableEventEnvelope[]) => void,
): Promise<{ head: number | null; last: DurableEventEnvelope | undefined }> {
  const signal = options.signal;
  let read = 0;
  let head: number | null = null;
  let last: DurableEventEnvelope | undefined;
  for (;;) {
    const from = last === undefined ? after : last.sequence;
    const page = await store.read(sessionId, {
      ...(from === undefined ? {} : { after: from as EventSequence }),
      limit: 1000,
      ...(signal === undefined ? {} : { signal }),
    });
    head = page.headSequence;
    onPage(page.events);
    read += page.events.length;
    last = page.events[page.events.length - 1] ?? last;
    options.onProgress?.(read, head ?? 0);
    if (!page.hasMore || page.events.length === 0) return { head, last };
  }
}

/** The event list an inspection keeps, as its options ask. */
const eventListOf = (options: LoadInspectionOptions): EventList =>
  new EventList(Math.max(1, options.recentEvents ?? 100), options.listFrom === undefined ? undefined : Math.max(1, options.listFrom));

/** Folds every event of the log from the first, auditing the stored checkpoint on the way. */
async function foldWholeLog(store: DurableEventStore, sessionId: SessionId, options: LoadInspectionOptions): Promise<Folded> {
  const signal = options.signal;
  const projector = new DurableSessionProjector({ sessionId });
  let failure: ProjectionFailure | null = null;
  const list = eventListOf(options);
  const timeline = new TimelineBuilder(options.timelineBars ?? MAX_TIMELINE_BARS);
  // A store that fails to read its checkpoint still shows the session (an open folds the whole log).
  let audit: CheckpointAudit | null = null;
  let unreadable: string | undefined;
  try {
    audit = await CheckpointAudit.read(store, sessionId);
  } catch (error) {
    signal?.throwIfAborted();
    unreadable = error instanceof Error ? error.message : String(error);
  }
  const { head, last } = await readToHead(store, sessionId, undefined, options, (events) => {
    if (failure === null) {
      try {
        if (audit === null) projector.apply(events);
        else audit.fold(events, projector);
      } catch (error) {
        failure = failureOf(error);
      }
    }
    timeline.addEvents(events);
    list.add(events);
  });
  return {
    head,
    last,
    projector,
    failure,
    list,
    timeline,
    checkpoint:
      unreadable !== undefined
        ? { sequence: 0, bytes: 0, behind: head ?? 0, status: 'discarded', defects: [], notes: [`reading it failed (${unreadable}); an open folds the whole log`] }
        : audit === null
          ? null
          : auditedCheckpoint(audit, head ?? 0),
    openedFrom: 'log',
    timelineFrom: 1,
  };
}

/**
 * Opens from the stored checkpoint when the session is longer than `fullFoldLimit`: the events
 * after the checkpoint are folded onto it, and the latest `tailEvents` (or the listed page) feed
 * the timeline and the list. `null` (fold the whole log) when the session is short enough, no
 * checkpoint is usable, or the checkpoint's ID filter cannot answer for an event after it.
 */
async function foldFromCheckpoint(store: DurableEventStore, sessionId: SessionId, options: LoadInspectionOptions): Promise<Folded | null> {
  const limit = options.fullFoldLimit ?? Number.POSITIVE_INFINITY;
  if (!(limit < Number.POSITIVE_INFINITY) || !isCheckpointStore(store)) return null;
  const signal = options.signal;
  const withSignal = signal === undefined ? {} : { signal };
  const probe = await store.read(sessionId, { limit: 1, ...withSignal });
  const startHead = probe.headSequence ?? 0;
  if (startHead <= limit) return null;
  const { loaded } = await loadCheckpoint(
    store,
    sessionId,
    (after, pageLimit) => store.read(sessionId, { ...(after === undefined ? {} : { after }), limit: pageLimit, ...withSignal }),
    signal,
  );
  if (loaded === null) return null;
  const at = loaded.sequence;
  const projector = loaded.projector;
  const list = eventListOf(options);
  const { keep, from } = list;
  const tail = Math.max(keep + 1, options.tailEvents ?? DEFAULT_TAIL_EVENTS);
  const readFrom = Math.min(Math.max(1, startHead - tail + 1), at + 1);
  // The list is fed by the pages read below, unless its page (with the event before it) starts
  // before them: then it is read on its own (nothing to read when it starts past the head).
  const ownList = from === undefined || from - 1 >= readFrom;
  if (!ownList && from - 2 < startHead) {
    const page = await store.read(sessionId, { ...(from >= 2 ? { after: (from - 2) as EventSequence } : {}), limit: keep + 1, ...withSignal });
    list.add(page.events);
  }
  const timeline = new TimelineBuilder(options.timelineBars ?? MAX_TIMELINE_BARS);
  let failure: ProjectionFailure | null = null;
  let inconclusive = false;
  const { head, last } = await readToHead(store, sessionId, readFrom > 1 ? readFrom - 1 : undefined, options, (events) => {
    const unfolded = events.length > 0 && (events[0] as DurableEventEnvelope).sequence <= at ? events.filter((event) => event.sequence > at) : events;
    if (failure === null && !inconclusive && unfolded.length > 0) {
      try {
        projector.apply(unfolded);
      } catch (error) {
        // The checkpoint's ID filter cannot tell: only a fold of the whole log can.
        if (isCheckpointInconclusive(error)) inconclusive = true;
        else failure = failureOf(error);
      }
    }
    timeline.addEvents(events);
    if (ownList) list.add(events);
  });
  if (inconclusive) return null;
  return {
    head,
    last,
    projector,
    failure,
    list,
    timeline,
    checkpoint: {
      sequence: at,
      // A live checkpoint (the memory store) has no bytes.
      bytes: loaded.record?.data.byteLength ?? 0,
      behind: (head ?? 0) - at,
      status: 'used',
      defects: [],
      notes: [`the session holds more than ${limit} event(s) (fullFoldLimit): this view opened from the checkpoint instead of folding the whole log, so it was not audited`],
    },
    openedFrom: 'checkpoint',
    timelineFrom: readFrom,
  };
}
