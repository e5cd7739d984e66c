/**
 * One read of everything the inspector shows about a session.
 *
 * Reads the whole log page by page (memory: the timeline's bars plus the last page of events the
 * list shows), folds it through the projector, classifies the recovery plan, reads the lease and
 * the durability ledger when the store has them, and derives the next deadline. The result is
 * plain JSON-like data: `agent-ledger inspect --json` prints it, the page renders it.
 */
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
import { buildTimeline, nextDeadline, pendingWaits, type PendingDeadline, type Timeline } from './timeline.js';

/** Options of {@link loadInspection}. */
export interface LoadInspectionOptions {
  /** Clock for open bars and the next deadline (default `Date.now`). */
  nowMs?: number;
  /** How many of the latest events to keep for the event list (default 100). */
  recentEvents?: number;
  signal?: AbortSignal;
  /** Show the page of the event list starting at this sequence instead of the latest events. */
  listFrom?: number;
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
  const all: DurableEventEnvelope[] = [];
  let recent: DurableEventEnvelope[] = [];
  let head: number | null = null;
  let last: DurableEventEnvelope | undefined;
  for (;;) {
    const page = await store.read(sessionId, {
      ...(last === undefined ? {} : { after: last.sequence }),
      limit: 1000,
      ...(signal === undefined ? {} : { signal }),
    });
    head = page.headSequence;
    if (failure === null) {
      try {
        projector.apply(page.events);
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
    all.push(...page.events);
    last = page.events[page.events.length - 1] ?? last;
    options.onProgress?.(all.length, head ?? 0);
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
  const from = options.listFrom;
  recent = from === undefined ? all.slice(Math.max(0, all.length - keep)) : all.slice(Math.max(0, from - 1), Math.max(0, from - 1) + keep);
  const first = recent[0];
  const before = first === undefined || first.sequence === 1 ? undefined : all[first.sequence - 2];
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
    nextDeadline: records === null ? null : nextDeadline(records, nowMs),
    pendingWaits: records === null ? [] : pendingWaits(records),
    timeline: buildTimeline(all, records ?? []),
    recent,
    olderCursor: before === undefined ? null : encodeDurableEventCursor(durableEventCursor(before)),
    nowMs,
  };
}
