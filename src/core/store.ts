/**
 * The store contract.
 *
 * A {@link DurableEventStore} keeps one append-only log per session. Every backend (memory,
 * JSONL, SQLite, the Durable Object, the HTTP client) implements this interface and the
 * lease interface {@link DurableExecutionLeaseStore}; the decision logic they share lives in
 * `log-engine.ts`, so an adapter only moves bytes. `agent-ledger/conformance` proves a backend
 * keeps every rule written here.
 */
import type { DurableEventDraft, DurableEventEnvelope } from '../protocol/events.js';
import type { EventSequence, FencingToken, SessionId, WorkerId } from '../protocol/ids.js';

/**
 * Test-only fault injection every backend of this package accepts (`testHooks` option):
 * `beforeCommit` runs right before a batch is stored; throwing fails the append with
 * `DURABLE_EVENT_WRITE_FAILED` and nothing written. It backs the conformance `failNextCommit` control.
 */
export interface StoreTestHooks {
  beforeCommit?: (sessionId: SessionId) => void;
}

export type { DurableStoreCallOptions };

/** The fence a lease holder passes with each append. */
export interface DurableExecutionFence {
  leaseId: string;
  ownerId: WorkerId;
  fencingToken: FencingToken;
}

/** Options of {@link DurableEventStore.append}. */
export interface DurableAppendOptions extends DurableStoreCallOptions {
  /**
   * Compare-and-append precondition.
   * - `undefined`: append after whatever the head is;
   * - `null`: the stream must be empty;
   * - `n`: the head must be exactly `n`.
   */
  expectedLastSequence?: EventSequence | null | undefined;
  /** Required once lease state exists for the session; must name the current unexpired lease. */
  executionFence?: DurableExecutionFence | undefined;
}

/** Result of a successful append: the whole batch, with store-assigned fields. */
export interface DurableAppendResult {
  /** Head before the batch (`null` for an empty stream). */
  previousSequence: EventSequence | null;
  /** Sequence of the batch's last event. */
  lastSequence: EventSequence;
  events: DurableEventEnvelope[];
}

/** Options of {@link DurableEventStore.read}. */
export interface DurableReadOptions extends DurableStoreCallOptions {
  /** Exclusive lower bound; `undefined` reads from the first event. Must not be ahead of the head. */
  after?: EventSequence | undefined;
  /** Page size, 1..1000 (default 100). */
  limit?: number | undefined;
  /**
   * Byte budget of the page, 1..`MAX_READ_PAGE_BYTES` (the default): the page stops before the
   * event whose encoded envelope would pass it (with `hasMore: true`); its first event always comes.
   */
  maxBytes?: number | undefined;
}

/** One page of events. */
export interface DurableReadResult {
  events: DurableEventEnvelope[];
  /** Pass as `after` to continue: the last returned sequence, else the `after` given (or `null`). */
  nextCursor: EventSequence | null;
  /** Head at the time of the read (`null` for an empty stream). */
  headSequence: EventSequence | null;
  /** True when events exist after this page. */
  hasMore: boolean;
}

/** What a store's `watch` listener hears, only after the append is durable. */
export interface DurableAppendNotice {
  sessionId: SessionId;
  lastSequence: EventSequence;
}

/** Listener for {@link DurableEventStore.watch}. */
export type DurableAppendListener = (notice: DurableAppendNotice) => void;

/** An append-only, per-session event log with compare-and-append and cursor reads. */
export interface DurableEventStore {
  /** Validates every draft, then appends them as one atomic batch with contiguous sequences. */
  append(
    sessionId: SessionId,
    drafts: readonly DurableEventDraft[],
    options?: DurableAppendOptions,
  ): Promise<DurableAppendResult>;
  /** Reads one page of events after a cursor. */
  read(sessionId: SessionId, options?: DurableReadOptions): Promise<DurableReadResult>;
  /** The current head sequence, or `null` for an empty stream. */
  getHeadSequence(sessionId: SessionId, options?: DurableStoreCallOptions): Promise<EventSequence | null>;
  /**
   * Optional push notification: `listener` runs after each durable append to the session
   * (in this process, or wherever the backend can see). Returns an unsubscribe function.
   * Stores without it are polled by subscriptions.
   */
  watch?(sessionId: SessionId, listener: DurableAppendListener): () => void;
}

/** Persisted lease state of one session, as the lease store reports it. */
export interface DurableExecutionLeaseRecord {
  sessionId: SessionId;
  leaseId: string;
  ownerId: WorkerId;
  fencingToken: FencingToken;
  /** Epoch milliseconds (store clock) of acquisition by this lease. */
  acquiredAtMs: number;
  /** Epoch milliseconds (store clock) after which the lease is expired. */
  expiresAtMs: number;
  /** True once the holder released it. */
  released: boolean;
}

/** Options of {@link DurableExecutionLeaseStore.acquireExecutionLease}. */
export interface DurableLeaseAcquireOptions extends DurableStoreCallOptions {
  ownerId: WorkerId;
  /** Caller-generated identity of this acquisition; a retry with the same id reconciles. */
  leaseId: string;
  ttlMs: number;
}

/** Options of {@link DurableExecutionLeaseStore.renewExecutionLease}. */
export interface DurableLeaseRenewOptions extends DurableStoreCallOptions {
  ttlMs: number;
}

/**
 * Execution leases with monotonic fencing tokens. Acquisition, renewal, release and fenced
 * appends serialize through the same transactional boundary as `append`.
 *
 * Rules: a takeover (acquire when no unexpired, unreleased lease exists) issues token
 * `previous + 1`; acquiring again with the current `leaseId` and `ownerId` while it is still
 * active returns the current record (reconciles an uncertain acquisition); another unexpired lease
 * -> `DURABLE_EXECUTION_LEASE_CONFLICT`. Renew, assert and release with a fence that is not the
 * current active lease -> `DURABLE_EXECUTION_LEASE_LOST`. Once lease state exists for a session,
 * fencing is sticky: an append without a fence -> `DURABLE_EXECUTION_LEASE_REQUIRED`; with a stale
 * or expired fence -> `DURABLE_EXECUTION_LEASE_LOST`.
 */
export interface DurableExecutionLeaseStore {
  acquireExecutionLease(sessionId: SessionId, options: DurableLeaseAcquireOptions): Promise<DurableExecutionLeaseRecord>;
  renewExecutionLease(
    sessionId: SessionId,
    fence: DurableExecutionFence,
    options: DurableLeaseRenewOptions,
  ): Promise<DurableExecutionLeaseRecord>;
  releaseExecutionLease(
    sessionId: SessionId,
    fence: DurableExecutionFence,
    options?: DurableStoreCallOptions,
  ): Promise<void>;
  /** Validates that `fence` names the current active lease (same rule as a fenced append). */
  assertExecutionLease(
    sessionId: SessionId,
    fence: DurableExecutionFence,
    options?: DurableStoreCallOptions,
  ): Promise<void>;
  /** The persisted lease state, or `null` when the session never had a lease. */
  inspectExecutionLease(
    sessionId: SessionId,
    options?: DurableStoreCallOptions,
  ): Promise<DurableExecutionLeaseRecord | null>;
  /** True once lease state exists for the session (fencing is then sticky). */
  requiresExecutionLease(sessionId: SessionId, options?: DurableStoreCallOptions): Promise<boolean>;
}

/** A store implementing both contracts: what every backend of this package provides. */
export type DurableSessionStore = DurableEventStore & DurableExecutionLeaseStore;

/** True when `store` implements the lease contract. */
export function isExecutionLeaseStore(store: unknown): store is DurableExecutionLeaseStore {
  return (
    typeof store === 'object' &&
    store !== null &&
    typeof (store as Partial<DurableExecutionLeaseStore>).acquireExecutionLease === 'function' &&
    typeof (store as Partial<DurableExecutionLeaseStore>).requiresExecutionLease === 'function'
  );
}

// The durability records contract (step / sleep / waitFor records), stored next to the event log
// by every backend. Defined in its own module; re-exported here so the store contract is one import.
export {
  isDurabilityRecordStore,
  DEFAULT_DURABILITY_READ_LIMIT,
  MAX_DURABILITY_READ_LIMIT,
  MAX_DURABILITY_RECORD_BYTES,
  MAX_DURABILITY_SCOPE_LENGTH,
} from './durability/record-contract.js';
export type {
  DurabilityDeliveryDraft,
  DurabilityRecordStore,
  DurabilityListener,
  DurabilityNotice,
  DurabilityReadOptions,
  DurabilityReadResult,
  DurabilityRecord,
  DurabilityRecordDraft,
  DurabilityRecordKind,
  DurabilityRecordMeta,
  DurabilityRecordResult,
  DurabilityRunEventDraft,
  DurabilitySleepDraft,
  DurabilityStepDraft,
  DurabilityWaitDraft,
  DurabilityWaitTimeoutDraft,
} from './durability/record-contract.js';
import type { DurableStoreCallOptions } from './call-options.js';
