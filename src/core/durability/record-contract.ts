/**
 * The durability records contract.
 *
 * Next to its v4 event log, every session owns a second append-only log: the durability records.
 * It holds the facts the durability port (`step` / `sleep` / `waitFor`) replays from:
 * 1. a record is appended at most once per identity — `step`, `sleep`, `wait`, `wait_timeout`
 *    and `run_event` records are identified by `(kind, scope, key)`, a `delivery` by its
 *    `deliveryId` — so the first writer wins and every later writer gets the first record back;
 * 2. records carry contiguous sequences `1, 2, 3, ...` of their own (not event sequences), so a
 *    reader advances through the records with a cursor and never re-reads what it has seen;
 * 3. the decisions (validation, identity, first-writer-wins, conflicts, paging, parsing records
 *    read back) live in `record-engine.ts`; a backend only stores and loads records.
 *
 * The durability records are deliberately not part of the event log: the 23 event types are fixed, and the
 * projector must never see durability records.
 */
import type { DurableStoreCallOptions } from '../call-options.js';
import type { JsonValue } from '../../protocol/json.js';
import { MAX_EVENT_BYTES } from '../../protocol/limits.js';
import type { SessionId } from '../../protocol/ids.js';

/** Longest scope, in UTF-16 code units (a mounted tool's scope is a JSON tuple of three IDs). */
export const MAX_DURABILITY_SCOPE_LENGTH = 2048;
/** Most UTF-8 bytes of one encoded record (the same bound as one event, below a 2 MB SQL row). */
export const MAX_DURABILITY_RECORD_BYTES = MAX_EVENT_BYTES;
/** Largest page `readDurability` serves. */
export const MAX_DURABILITY_READ_LIMIT = 1000;
/** Page size when `limit` is omitted. */
export const DEFAULT_DURABILITY_READ_LIMIT = 100;

/** The kinds of durability records. */
export type DurabilityRecordKind = DurabilityRecordDraft['kind'];

/** A completed `step`: its JSON result, replayed instead of running the body again. */
export interface DurabilityStepDraft {
  kind: 'step';
  scope: string;
  key: string;
  result: JsonValue;
}

/** A `sleep` deadline, recorded once: a replay keeps it. */
export interface DurabilitySleepDraft {
  kind: 'sleep';
  scope: string;
  key: string;
  /** Epoch milliseconds (integer) at which the sleep ends. */
  untilMs: number;
}

/** A `waitFor` that began, with its timeout deadline, recorded once. */
export interface DurabilityWaitDraft {
  kind: 'wait';
  scope: string;
  key: string;
  /** Epoch milliseconds (integer) at which the wait times out; `null`: it never does. */
  deadlineMs: number | null;
}

/** The decision that a wait timed out, recorded once. */
export interface DurabilityWaitTimeoutDraft {
  kind: 'wait_timeout';
  scope: string;
  key: string;
}

/**
 * An external delivery addressed to `(session, runId, key)`; idempotent by `deliveryId`
 * (unique within the session's durability records).
 */
export interface DurabilityDeliveryDraft {
  kind: 'delivery';
  runId: string;
  key: string;
  deliveryId: string;
  payload: JsonValue;
}

/** Optional progress of a run (for hosts such as the edge that report or retry runs). */
export interface DurabilityRunEventDraft {
  kind: 'run_event';
  scope: string;
  key: string;
  status: 'completed' | 'failed';
  detail: JsonValue;
}

/** What a caller asks a backend to record. */
export type DurabilityRecordDraft =
  | DurabilityStepDraft
  | DurabilitySleepDraft
  | DurabilityWaitDraft
  | DurabilityWaitTimeoutDraft
  | DurabilityDeliveryDraft
  | DurabilityRunEventDraft;

/** Fields the backend assigns to every record. */
export interface DurabilityRecordMeta {
  /** Position in the session's durability records: contiguous integers from 1. */
  sequence: number;
  sessionId: SessionId;
  /** When the record was appended (store clock), in `toISOString()` form. */
  recordedAt: string;
}

/** A stored record: its draft plus the store-assigned fields. */
export type DurabilityRecord<K extends DurabilityRecordKind = DurabilityRecordKind> = Extract<
  DurabilityRecordDraft,
  { kind: K }
> &
  DurabilityRecordMeta;

/** Result of {@link DurabilityRecordStore.recordDurability}. */
export interface DurabilityRecordResult {
  /** The stored record: the new one, or the one that already had this identity. */
  record: DurabilityRecord;
  /** False when a record with the same identity already existed (nothing was written). */
  created: boolean;
}

/** Options of {@link DurabilityRecordStore.readDurability}. */
export interface DurabilityReadOptions extends DurableStoreCallOptions {
  /** Exclusive lower bound (a record sequence >= 1); `undefined` reads from the first record. Must not be ahead of the head. */
  after?: number | undefined;
  /** Page size, 1..1000 (default 100). */
  limit?: number | undefined;
}

/** One page of records. */
export interface DurabilityReadResult {
  /** Records in record order, each with sequence `previous + 1`, starting right after `after`. */
  records: DurabilityRecord[];
  /** Pass as `after` to continue: the last returned sequence, else the `after` given (or `null`). */
  nextCursor: number | null;
  /** Durability head at the time of the read (`null` when there are no records). */
  headSequence: number | null;
  /** True when records exist after this page. */
  hasMore: boolean;
}

/** What a `watchDurability` listener hears, only once the record is durable. */
export interface DurabilityNotice {
  sessionId: SessionId;
  lastSequence: number;
}

/** Listener of {@link DurabilityRecordStore.watchDurability}. */
export type DurabilityListener = (notice: DurabilityNotice) => void;

/**
 * A per-session stream of durability records. Backends implement it next to {@link DurableEventStore}; the
 * conformance suite `durabilityConformanceChecks` proves the rules below.
 *
 * Rules:
 * - `recordDurability` validates the draft (`DURABILITY_INVALID_INPUT` for shape,
 *   `DURABILITY_INVALID_VALUE` for a result/payload/detail that is not lossless JSON or a record
 *   too large), then, atomically per session and serialized with the session's other writes,
 *   appends it unless a record with the same identity exists. An existing record is returned with
 *   `created: false` — except a delivery whose `deliveryId` exists with a different run, key or
 *   payload: `DURABILITY_CONFLICT`.
 * - `readDurability` pages through the records in order; every record read back is parsed
 *   strictly, and a malformed one fails the read with `DURABILITY_CORRUPT_RECORD`.
 * - An aborted signal rejects with an `AbortError` and writes nothing.
 *
 * @example
 * const { record, created } = await store.recordDurability(sessionId, {
 *   kind: 'step', scope: 'run-1', key: 'charge', result: { chargeId: 'ch_1' },
 * });
 */
export interface DurabilityRecordStore {
  recordDurability(
    sessionId: SessionId,
    draft: DurabilityRecordDraft,
    options?: DurableStoreCallOptions,
  ): Promise<DurabilityRecordResult>;
  readDurability(sessionId: SessionId, options?: DurabilityReadOptions): Promise<DurabilityReadResult>;
  /**
   * Optional push notification: `listener` runs after each durable `recordDurability` that
   * created a record in the session (wherever the backend can see). Returns an unsubscribe
   * function. Ports use it to wake waiters; without it they rely on the host's `subscribe`.
   */
  watchDurability?(sessionId: SessionId, listener: DurabilityListener): () => void;
}

/** True when `store` implements {@link DurabilityRecordStore}. */
export function isDurabilityRecordStore(store: unknown): store is DurabilityRecordStore {
  return (
    typeof store === 'object' &&
    store !== null &&
    typeof (store as Partial<DurabilityRecordStore>).recordDurability === 'function' &&
    typeof (store as Partial<DurabilityRecordStore>).readDurability === 'function'
  );
}
