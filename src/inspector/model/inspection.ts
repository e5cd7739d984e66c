/**
 * One read of everything the inspector shows about a session.
 *
 * Reads the whole log page by page and keeps what the page shows, not the log (the latest
 * timeline bars, the bars still open, and the events of the list; the fold's own state, every ID
 * the session used, still grows with it), folds it through the projector, classifies the recovery plan, reads the lease and
 * the durability ledger when the store has them, and derives the next deadline. When the store
 * keeps projection checkpoints, the stored one is audited on the way (the checks of
 * `agent-ledger verify`, `CheckpointAudit`), since the inspection folds the whole log anyway. The
 * result is plain JSON-like data: `agent-ledger inspect --json` prints it, the page renders it.
 */
import { CheckpointAudit } from '../../core/checkpoint/audit.js';
import { isCheckpointStore } from '../../core/checkpoint/contract.js';
import type { DurabilityRecord } from '../../core/durability/ledger-contract.js';
import { isDurabilityLedgerStore } from '../../core/durability/ledger-contract.js';
import { DurableSessionProjector } from '../../core/projector/projector.js';
import type { DurableRecoveryPlan, DurableSessionProjection } from '../../core/projector/projection-types.js';
import { isExecutionLeaseStore, type DurableEventStore, type DurableExecutionLeaseRecord } from '../../core/store.js';
import { durableEventCursor, encodeDurableEventCursor } from '../../protocol/cursor.js';
import { isDurableError } from '../../protocol/errors.js';
import type { DurableEventEnvelope } from '../../protocol/events.js';
import type { SessionId } from '../../protocol/ids.js';
import { classifyRecoveryPlan, type ClassifiedPlan } from './safety.js';
import { MAX_TIMELINE_BARS, nextDeadline, pendingWaits, TimelineBuilder, type PendingDeadline, type Timeline } from './timeline.js';

/** Options of {@link loadInspection}. */
export interface LoadInspectionOptions {
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
}

/** The projector's verdict when the log breaks an invariant. */
export interface ProjectionFailure {
  code: string;
  message: string;
  rule?: string;
  sequence?: number | null;
}

/** The stored projection checkpoint, audited against the inspection's fold of the whole log. */
export interface InspectionCheckpoint {
  /** Sequence it stands at (0 when the store failed to read it: `discarded`, the reason in `notes`). */
  sequence: number;
  /** Size of the stored record. */
  bytes: number;
  /** Events after it that an open folds (`head - sequence`; negative for one beyond the head). */
  behind: number;
  /**
   * `matches`: every check of the audit passed; `discarded`: an open does not use it (it rebuilds,
   * nothing is wrong); `wrong`: an open uses it and gets a projection that differs from the log's
   * (`agent-ledger checkpoint <store> <session> --rebuild` replaces it); `unchecked`: the log
   * breaks the projector before the checkpoint's sequence (an open fails the same way).
   */
  status: 'matches' | 'discarded' | 'wrong' | 'unchecked';
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
  ledgerSupported: boolean;
  ledgerRecords: number;
  /** `false` when the store keeps no projection checkpoints. */
  checkpointSupported: boolean;
  /** The stored checkpoint, `null` when none is stored (or the store keeps none). */
  checkpoint: InspectionCheckpoint | null;
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
export async function readLedger(store: unknown, sessionId: SessionId, signal?: AbortSignal): Promise<DurabilityRecord[] | null> {
  if (!isDurabilityLedgerStore(store)) return null;
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
          : 'not checked (the log breaks the projector before it)';
  return `${where}, ${checkpoint.bytes} bytes: ${verdict}`;
}

/** Loads an {@link Inspection} of `sessionId` from `store`. */
export async function loadInspection(
  store: DurableEventStore,
  sessionId: SessionId,
  options: LoadInspectionOptions = {},
): Promise<Inspection> {
  const nowMs = options.nowMs ?? Date.now();
  const keep = Math.max(1, options.recentEvents ?? 100);
  const signal = options.signal;
  const projector = new DurableSessionProjector({ sessionId });
  let failure: ProjectionFailure | null = null;
  const from = options.listFrom === undefined ? undefined : Math.max(1, options.listFrom);
  // The event list: the latest `keep` events, or `keep` from `from`, each with the event before
  // them (the cursor to page backwards).
  let listed: DurableEventEnvelope[] = [];
  const timeline = new TimelineBuilder(options.timelineBars ?? MAX_TIMELINE_BARS);
  let read = 0;
  let head: number | null = null;
  let last: DurableEventEnvelope | undefined;
  // A store that fails to read its checkpoint still shows the session (an open folds the whole log).
  let audit: CheckpointAudit | null = null;
  let unreadable: string | undefined;
  try {
    audit = await CheckpointAudit.read(store, sessionId);
  } catch (error) {
    signal?.throwIfAborted();
    unreadable = error instanceof Error ? error.message : String(error);
  }
  for (;;) {
    const page = await store.read(sessionId, {
      ...(last === undefined ? {} : { after: last.sequence }),
      limit: 1000,
      ...(signal === undefined ? {} : { signal }),
    });
    head = page.headSequence;
    if (failure === null) {
      try {
        if (audit === null) projector.apply(page.events);
        else audit.fold(page.events, projector);
      } catch (error) {
        const details = isDurableError(error) ? (error.details as { rule?: string; sequence?: number | null } | undefined) : undefined;
        failure = {
          code: isDurableError(error) ? error.code : 'UNKNOWN',
          message: error instanceof Error ? error.message : String(error),
          ...(details?.rule === undefined ? {} : { rule: details.rule }),
          ...(details?.sequence === undefined ? {} : { sequence: details.sequence }),
        };
      }
    }
    timeline.addEvents(page.events);
    if (from === undefined) {
      listed.push(...page.events);
      if (listed.length > 2 * (keep + 1)) listed = listed.slice(listed.length - (keep + 1));
    } else {
      for (const event of page.events) if (event.sequence >= from - 1 && event.sequence < from + keep) listed.push(event);
    }
    read += page.events.length;
    last = page.events[page.events.length - 1] ?? last;
    options.onProgress?.(read, head ?? 0);
    if (!page.hasMore || page.events.length === 0) break;
  }
  const leaseSupported = isExecutionLeaseStore(store);
  let lease: Inspection['lease'] = null;
  if (leaseSupported) {
    const record = await store.inspectExecutionLease(sessionId, signal === undefined ? {} : { signal });
    if (record !== null) lease = { ...record, active: !record.released && record.expiresAtMs > nowMs };
  }
  const records = await readLedger(store, sessionId, signal);
  const projection = failure === null ? projector.snapshot() : null;
  const plan = failure === null ? projector.recoveryPlan() : null;
  const recent = from === undefined ? listed.slice(Math.max(0, listed.length - keep)) : listed.filter((event) => event.sequence >= from);
  const first = recent[0];
  const before = first === undefined ? undefined : listed.find((event) => event.sequence === first.sequence - 1);
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
    ledgerSupported: records !== null,
    ledgerRecords: records?.length ?? 0,
    checkpointSupported: isCheckpointStore(store),
    checkpoint:
      unreadable !== undefined
        ? { sequence: 0, bytes: 0, behind: head ?? 0, status: 'discarded', defects: [], notes: [`reading it failed (${unreadable}); an open folds the whole log`] }
        : audit === null
          ? null
          : auditedCheckpoint(audit, head ?? 0),
    nextDeadline: records === null ? null : nextDeadline(records, nowMs),
    pendingWaits: records === null ? [] : pendingWaits(records),
    timeline: timeline.finish(),
    recent,
    olderCursor: before === undefined ? null : encodeDurableEventCursor(durableEventCursor(before)),
    nowMs,
  };
}
