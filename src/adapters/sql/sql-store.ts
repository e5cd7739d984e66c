/**
 * SqlDurableEventStore: the async store contract over the synchronous {@link SqlEventLog}.
 *
 * Each method checks the caller's signal, then runs one synchronous event-log call (one SQL
 * transaction for a mutation), so an aborted signal never starts a mutation and a started one is
 * never torn by an abort. `watch` listeners hear of an append only after its transaction
 * committed, on a later microtask, so a slow listener cannot hold the write.
 *
 * The durability records (`recordDurability` / `readDurability` / `watchDurability`) lives in the
 * same database and goes through the same connection ({@link SqlDurability}): a record is one
 * transaction in the events' transaction domain, and `watchDurability` listeners hear of a
 * CREATED record only after its transaction committed, on a later microtask.
 *
 * Durability is the driver's: on better-sqlite3 (see `SqliteDurableEventStore`) a commit returns
 * after SQLite's WAL fsync; in a Durable Object, the runtime's output gate holds every reply until
 * the write is durable.
 */
import type { DurableCheckpointExtension, DurableCheckpointRecord, DurableCheckpointStore } from '../../core/checkpoint/contract.js';
import type { DurableEventDigestReadOptions, DurableEventDigestRow, DurableEventDigestStore } from '../../core/checkpoint/event-digest.js';
import { SqlCheckpoints } from './sql-checkpoints.js';
import { throwIfAborted } from '../../core/abort.js';
import type {
  DurabilityRecordStore,
  DurabilityListener,
  DurabilityReadOptions,
  DurabilityReadResult,
  DurabilityRecord,
  DurabilityRecordDraft,
  DurabilityRecordResult,
} from '../../core/durability/record-contract.js';
import { checkDurabilitySessionId } from '../../core/durability/record-engine.js';
import { checkSessionId } from '../../core/log-engine.js';
import type {
  DurableAppendListener,
  DurableAppendOptions,
  DurableAppendResult,
  DurableEventStore,
  DurableExecutionFence,
  DurableExecutionLeaseRecord,
  DurableExecutionLeaseStore,
  DurableLeaseAcquireOptions,
  DurableLeaseRenewOptions,
  DurableReadOptions,
  DurableReadResult,
  DurableStoreCallOptions,
} from '../../core/store.js';
import type { DurableEventDraft } from '../../protocol/events.js';
import type { EventSequence, SessionId } from '../../protocol/ids.js';
import type { SqlDriver } from './driver.js';
import { SqlDurability } from './sql-durability.js';
import { SqlEventLog, type SqlCommit, type SqlEventLogOptions } from './sql-event-log.js';

/** Options of {@link SqlDurableEventStore}. */
export interface SqlDurableEventStoreOptions extends SqlEventLogOptions {
  /**
   * Runs inside every transaction that creates a durability record, after its row is written;
   * throwing rolls the record back. For hosts that keep derived rows atomic with the durability records.
   */
  onDurabilityCreateWithin?: (record: DurabilityRecord) => void;
}

/**
 * A {@link DurableEventStore} and {@link DurableExecutionLeaseStore} over any synchronous SQLite
 * driver. One store object per connection: the connection is its single writer.
 *
 * @example
 * const store = new SqlDurableEventStore(driver);
 * await store.append(SessionId('s-1'), [{ type: 'session_created', data: {} }], { expectedLastSequence: null });
 */
export class SqlDurableEventStore
  implements DurableEventStore, DurableExecutionLeaseStore, DurabilityRecordStore, DurableCheckpointStore, DurableEventDigestStore
{
  /** The synchronous core, for code that runs next to the database. */
  readonly eventLog: SqlEventLog;
  /** Projection checkpoints (same database, own transactions). */
  readonly checkpoints: SqlCheckpoints;
  /** The synchronous durability records core (same driver, same transaction domain). */
  readonly durability: SqlDurability;
  readonly #watchers = new Map<string, Set<DurableAppendListener>>();
  readonly #durabilityWatchers = new Map<string, Set<DurabilityListener>>();

  constructor(driver: SqlDriver, options: SqlDurableEventStoreOptions = {}) {
    const { onDurabilityCreateWithin, ...eventLogOptions } = options;
    this.eventLog = new SqlEventLog(driver, eventLogOptions);
    this.eventLog.onCommit((commit) => this.#dispatch(commit));
    this.checkpoints = new SqlCheckpoints(this.eventLog.driver);
    // The log's driver: in single-writer mode it notices failed transactions (see SqlEventLog).
    this.durability = new SqlDurability(this.eventLog.driver, {
      ...(options.clock === undefined ? {} : { clock: options.clock }),
      ...(onDurabilityCreateWithin === undefined ? {} : { onCreateWithin: onDurabilityCreateWithin }),
    });
    this.durability.onCreated((record) => this.notifyDurabilityWatchers(record.sessionId, record.sequence));
  }

  /** Tells this store's watchers about appends another party committed on the same database. */
  protected notifyWatchers(sessionId: SessionId, lastSequence: EventSequence): void {
    const listeners = this.#watchers.get(sessionId);
    if (listeners === undefined) return;
    const notice = { sessionId, lastSequence };
    for (const listener of [...listeners]) queueMicrotask(() => listener(notice));
  }

  /** Sessions that currently have at least one watcher. */
  protected watchedSessions(): SessionId[] {
    // SAFETY: keys are only ever inserted by `watch`, after `checkSessionId`.
    return [...this.#watchers.keys()] as SessionId[];
  }

  #dispatch(commit: SqlCommit): void {
    this.notifyWatchers(commit.sessionId, commit.result.lastSequence);
  }

  async append(
    sessionId: SessionId,
    drafts: readonly DurableEventDraft[],
    options?: DurableAppendOptions,
  ): Promise<DurableAppendResult> {
    throwIfAborted(options?.signal);
    return this.eventLog.append(sessionId, drafts, options);
  }

  async read(sessionId: SessionId, options?: DurableReadOptions): Promise<DurableReadResult> {
    throwIfAborted(options?.signal);
    return this.eventLog.read(sessionId, options);
  }

  async getHeadSequence(sessionId: SessionId, options?: DurableStoreCallOptions): Promise<EventSequence | null> {
    throwIfAborted(options?.signal);
    return this.eventLog.getHeadSequence(sessionId);
  }

  /** The stored per-event digests (see `DurableEventDigestStore`). */
  async readEventDigests(sessionId: SessionId, options: DurableEventDigestReadOptions): Promise<DurableEventDigestRow[]> {
    throwIfAborted(options.signal);
    return this.eventLog.readEventDigests(sessionId, options.after ?? 0, options.limit);
  }

  /** The session's latest projection checkpoint, or `null`. */
  async readCheckpoint(sessionId: SessionId, options?: DurableStoreCallOptions): Promise<DurableCheckpointRecord | null> {
    throwIfAborted(options?.signal);
    return this.checkpoints.read(sessionId);
  }

  /** Extended records append their new bytes as chunk rows (see `sql-checkpoints.ts`). */
  readonly checkpointExtension = true;

  /** Replaces the session's projection checkpoint (one transaction). */
  async writeCheckpoint(sessionId: SessionId, record: DurableCheckpointRecord, options?: DurableStoreCallOptions): Promise<void> {
    throwIfAborted(options?.signal);
    this.checkpoints.write(sessionId, record);
  }

  /**
   * Appends a remote writer's extension to the stored checkpoint (one transaction) when that record
   * is exactly the prefix it builds on; `false` (nothing written) otherwise: the writer then sends
   * the whole record. See `DurableCheckpointExtension`.
   */
  async extendCheckpoint(sessionId: SessionId, extension: DurableCheckpointExtension, options?: DurableStoreCallOptions): Promise<boolean> {
    throwIfAborted(options?.signal);
    return this.checkpoints.extend(sessionId, extension);
  }

  watch(sessionId: SessionId, listener: DurableAppendListener): () => void {
    const id = checkSessionId(sessionId);
    let listeners = this.#watchers.get(id);
    if (listeners === undefined) {
      listeners = new Set();
      this.#watchers.set(id, listeners);
    }
    listeners.add(listener);
    this.watchersChanged();
    return () => {
      const current = this.#watchers.get(id);
      if (current === undefined || !current.delete(listener)) return;
      if (current.size === 0) this.#watchers.delete(id);
      this.watchersChanged();
    };
  }

  /** Hook for subclasses that poll for foreign writes only while someone watches (events or durability records). */
  protected watchersChanged(): void {}

  // ---- the durability records ----------------------------------------------------------------

  async recordDurability(
    sessionId: SessionId,
    draft: DurabilityRecordDraft,
    options?: DurableStoreCallOptions,
  ): Promise<DurabilityRecordResult> {
    throwIfAborted(options?.signal);
    return this.durability.record(sessionId, draft);
  }

  async readDurability(sessionId: SessionId, options?: DurabilityReadOptions): Promise<DurabilityReadResult> {
    throwIfAborted(options?.signal);
    return this.durability.read(sessionId, options);
  }

  /** Hears every record created in the session through this store (and, in subclasses that poll, by others). */
  watchDurability(sessionId: SessionId, listener: DurabilityListener): () => void {
    const id = checkDurabilitySessionId(sessionId);
    let listeners = this.#durabilityWatchers.get(id);
    if (listeners === undefined) {
      listeners = new Set();
      this.#durabilityWatchers.set(id, listeners);
    }
    listeners.add(listener);
    this.watchersChanged();
    return () => {
      const current = this.#durabilityWatchers.get(id);
      if (current === undefined || !current.delete(listener)) return;
      if (current.size === 0) this.#durabilityWatchers.delete(id);
      this.watchersChanged();
    };
  }

  /** Tells this store's durability watchers about a record (created here, or seen committed by another party). */
  protected notifyDurabilityWatchers(sessionId: SessionId, lastSequence: number): void {
    const listeners = this.#durabilityWatchers.get(sessionId);
    if (listeners === undefined) return;
    const notice = { sessionId, lastSequence };
    for (const listener of [...listeners]) {
      queueMicrotask(() => {
        try {
          listener(notice);
        } catch {
          // A notice is only a hint; a throwing listener must not reach anyone else.
        }
      });
    }
  }

  /** Sessions that currently have at least one durability watcher. */
  protected durabilityWatchedSessions(): SessionId[] {
    // SAFETY: keys are only ever inserted by `watchDurability`, after `checkDurabilitySessionId`.
    return [...this.#durabilityWatchers.keys()] as SessionId[];
  }

  async acquireExecutionLease(
    sessionId: SessionId,
    options: DurableLeaseAcquireOptions,
  ): Promise<DurableExecutionLeaseRecord> {
    throwIfAborted(options.signal);
    return this.eventLog.acquireExecutionLease(sessionId, options);
  }

  async renewExecutionLease(
    sessionId: SessionId,
    fence: DurableExecutionFence,
    options: DurableLeaseRenewOptions,
  ): Promise<DurableExecutionLeaseRecord> {
    throwIfAborted(options.signal);
    return this.eventLog.renewExecutionLease(sessionId, fence, options.ttlMs);
  }

  async releaseExecutionLease(
    sessionId: SessionId,
    fence: DurableExecutionFence,
    options?: DurableStoreCallOptions,
  ): Promise<void> {
    throwIfAborted(options?.signal);
    this.eventLog.releaseExecutionLease(sessionId, fence);
  }

  async assertExecutionLease(
    sessionId: SessionId,
    fence: DurableExecutionFence,
    options?: DurableStoreCallOptions,
  ): Promise<void> {
    throwIfAborted(options?.signal);
    this.eventLog.assertExecutionLease(sessionId, fence);
  }

  async inspectExecutionLease(
    sessionId: SessionId,
    options?: DurableStoreCallOptions,
  ): Promise<DurableExecutionLeaseRecord | null> {
    throwIfAborted(options?.signal);
    return this.eventLog.inspectExecutionLease(sessionId);
  }

  async requiresExecutionLease(sessionId: SessionId, options?: DurableStoreCallOptions): Promise<boolean> {
    throwIfAborted(options?.signal);
    return this.eventLog.requiresExecutionLease(sessionId);
  }
}
