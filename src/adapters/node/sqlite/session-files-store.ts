/**
 * SqliteSessionFilesStore: the SQLite store with one database file per session.
 *
 * SQLite has one write lock per database file. With every session in one file, a process that
 * stops inside a write transaction (paused by the OS, a debugger, a long GC, `SIGSTOP`) holds the
 * lock for every session in that file: every other writer, of any session, waits out its busy
 * timeout and fails with `DURABLE_EVENT_LOCK_TIMEOUT`. And better-sqlite3 waits synchronously, so
 * the waiting process's event loop is blocked meanwhile too. No busy-timeout policy can let a
 * writer of an unrelated session past a lock that is held on the whole file; separate files can.
 * Here each session lives in `{directory}/{name}.db` (`name` as in the JSONL store: the base64url
 * of the session ID, or `~` + a hash for long IDs), opened lazily through a
 * {@link SqliteDurableEventStore} each, so a writer stuck in one session blocks that session only.
 *
 * Costs: one connection (and its WAL and shared-memory files) per open session. At most
 * `maxOpenSessions` connections stay open; the least recently used ones without watchers are
 * closed. Every file records its session ID in each row (as the single-file layout does), so a
 * file reached under another session's name (a case-insensitive filesystem folding two names)
 * fails closed on the first read of a foreign row.
 */
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { checkDurabilitySessionId } from '../../../core/durability/record-validation.js';
import type {
  DurabilityRecordStore,
  DurabilityListener,
  DurabilityReadOptions,
  DurabilityReadResult,
  DurabilityRecordDraft,
  DurabilityRecordResult,
} from '../../../core/durability/record-contract.js';
import { checkSessionId } from '../../../core/log-engine.js';
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
} from '../../../core/store.js';
import { DurableEventStoreError } from '../../../protocol/errors.js';
import type { DurableEventDraft } from '../../../protocol/events.js';
import type { EventSequence, SessionId } from '../../../protocol/ids.js';
import { sessionFileStem } from '../jsonl/session-paths.js';
import { SqliteDurableEventStore, type SqliteDurableEventStoreOptions } from './sqlite-store.js';

/** Default bound on open per-session connections. */
const DEFAULT_MAX_OPEN_SESSION_FILES = 64;

/** Options of {@link SqliteSessionFilesStore}. */
export interface SqliteSessionFilesStoreOptions extends SqliteDurableEventStoreOptions {
  /** Most session databases kept open at once (default 64); idle ones beyond it are closed. */
  maxOpenSessions?: number;
}

interface OpenSession {
  store: SqliteDurableEventStore;
  watchers: number;
}

/**
 * The store contract, leases and the durability records on one SQLite file per session (Node,
 * better-sqlite3). Exported from `agent-ledger/advanced`.
 *
 * @example
 * const store = new SqliteSessionFilesStore('/var/lib/my-agent/sessions');
 * await store.append(SessionId('s-1'), [{ type: 'session_created', data: {} }], { expectedLastSequence: null });
 * store.close();
 */
export class SqliteSessionFilesStore implements DurableEventStore, DurableExecutionLeaseStore, DurabilityRecordStore {
  readonly directory: string;
  readonly #options: SqliteDurableEventStoreOptions;
  readonly #maxOpen: number;
  /** Open sessions, least recently used first (Map keeps insertion order). */
  readonly #open = new Map<string, OpenSession>();
  #closed = false;

  constructor(directory: string, options: SqliteSessionFilesStoreOptions = {}) {
    if (typeof directory !== 'string' || directory.length === 0) {
      throw new DurableEventStoreError('DURABLE_EVENT_INVALID_OPTIONS', 'directory must be a non-empty path');
    }
    const { maxOpenSessions, ...storeOptions } = options;
    const maxOpen = maxOpenSessions ?? DEFAULT_MAX_OPEN_SESSION_FILES;
    if (!Number.isSafeInteger(maxOpen) || maxOpen < 1) {
      throw new DurableEventStoreError('DURABLE_EVENT_INVALID_OPTIONS', 'maxOpenSessions must be an integer >= 1');
    }
    this.directory = path.resolve(directory);
    this.#options = storeOptions;
    this.#maxOpen = maxOpen;
  }

  /** The database file of `sessionId`. */
  fileOf(sessionId: SessionId): string {
    return path.join(this.directory, `${sessionFileStem(checkSessionId(sessionId))}.db`);
  }

  #session(sessionId: SessionId): OpenSession {
    if (this.#closed) throw new DurableEventStoreError('DURABLE_EVENT_UNAVAILABLE', 'the store is closed');
    const id = checkSessionId(sessionId);
    let entry = this.#open.get(id);
    if (entry !== undefined) {
      this.#open.delete(id);
      this.#open.set(id, entry);
      return entry;
    }
    mkdirSync(this.directory, { recursive: true, mode: 0o700 });
    entry = { store: new SqliteDurableEventStore(this.fileOf(id), this.#options), watchers: 0 };
    this.#open.set(id, entry);
    this.#evict();
    return entry;
  }

  /** Closes the least recently used sessions without watchers while more than the bound are open. */
  #evict(): void {
    for (const [id, entry] of this.#open) {
      if (this.#open.size <= this.#maxOpen) return;
      if (entry.watchers > 0) continue;
      this.#open.delete(id);
      entry.store.close();
    }
  }

  #store(sessionId: SessionId): SqliteDurableEventStore {
    return this.#session(sessionId).store;
  }

  /** Closes every connection; later calls reject with `DURABLE_EVENT_UNAVAILABLE`. Idempotent. */
  close(): void {
    this.#closed = true;
    for (const entry of this.#open.values()) entry.store.close();
    this.#open.clear();
  }

  /** {@inheritDoc DurableEventStore.append} */
  async append(sessionId: SessionId, drafts: readonly DurableEventDraft[], options?: DurableAppendOptions): Promise<DurableAppendResult> {
    return this.#store(sessionId).append(sessionId, drafts, options);
  }

  /** {@inheritDoc DurableEventStore.read} */
  async read(sessionId: SessionId, options?: DurableReadOptions): Promise<DurableReadResult> {
    return this.#store(sessionId).read(sessionId, options);
  }

  /** {@inheritDoc DurableEventStore.getHeadSequence} */
  async getHeadSequence(sessionId: SessionId, options?: DurableStoreCallOptions): Promise<EventSequence | null> {
    return this.#store(sessionId).getHeadSequence(sessionId, options);
  }

  #watched(sessionId: SessionId, subscribe: (store: SqliteDurableEventStore) => () => void): () => void {
    const entry = this.#session(sessionId);
    const unsubscribe = subscribe(entry.store);
    entry.watchers += 1;
    let done = false;
    return () => {
      if (done) return;
      done = true;
      unsubscribe();
      entry.watchers -= 1;
      if (!this.#closed) this.#evict();
    };
  }

  /** {@inheritDoc DurableEventStore.watch} */
  watch(sessionId: SessionId, listener: DurableAppendListener): () => void {
    return this.#watched(sessionId, (store) => store.watch(sessionId, listener));
  }

  /** {@inheritDoc DurabilityRecordStore.recordDurability} */
  async recordDurability(
    sessionId: SessionId,
    draft: DurabilityRecordDraft,
    options?: DurableStoreCallOptions,
  ): Promise<DurabilityRecordResult> {
    return this.#store(checkDurabilitySessionId(sessionId)).recordDurability(sessionId, draft, options);
  }

  /** {@inheritDoc DurabilityRecordStore.readDurability} */
  async readDurability(sessionId: SessionId, options?: DurabilityReadOptions): Promise<DurabilityReadResult> {
    return this.#store(checkDurabilitySessionId(sessionId)).readDurability(sessionId, options);
  }

  /** {@inheritDoc DurabilityRecordStore.watchDurability} */
  watchDurability(sessionId: SessionId, listener: DurabilityListener): () => void {
    return this.#watched(checkDurabilitySessionId(sessionId), (store) => store.watchDurability(sessionId, listener));
  }

  /** {@inheritDoc DurableExecutionLeaseStore.acquireExecutionLease} */
  async acquireExecutionLease(sessionId: SessionId, options: DurableLeaseAcquireOptions): Promise<DurableExecutionLeaseRecord> {
    return this.#store(sessionId).acquireExecutionLease(sessionId, options);
  }

  /** {@inheritDoc DurableExecutionLeaseStore.renewExecutionLease} */
  async renewExecutionLease(
    sessionId: SessionId,
    fence: DurableExecutionFence,
    options: DurableLeaseRenewOptions,
  ): Promise<DurableExecutionLeaseRecord> {
    return this.#store(sessionId).renewExecutionLease(sessionId, fence, options);
  }

  /** {@inheritDoc DurableExecutionLeaseStore.releaseExecutionLease} */
  async releaseExecutionLease(sessionId: SessionId, fence: DurableExecutionFence, options?: DurableStoreCallOptions): Promise<void> {
    return this.#store(sessionId).releaseExecutionLease(sessionId, fence, options);
  }

  /** {@inheritDoc DurableExecutionLeaseStore.assertExecutionLease} */
  async assertExecutionLease(sessionId: SessionId, fence: DurableExecutionFence, options?: DurableStoreCallOptions): Promise<void> {
    return this.#store(sessionId).assertExecutionLease(sessionId, fence, options);
  }

  /** {@inheritDoc DurableExecutionLeaseStore.inspectExecutionLease} */
  async inspectExecutionLease(sessionId: SessionId, options?: DurableStoreCallOptions): Promise<DurableExecutionLeaseRecord | null> {
    return this.#store(sessionId).inspectExecutionLease(sessionId, options);
  }

  /** {@inheritDoc DurableExecutionLeaseStore.requiresExecutionLease} */
  async requiresExecutionLease(sessionId: SessionId, options?: DurableStoreCallOptions): Promise<boolean> {
    return this.#store(sessionId).requiresExecutionLease(sessionId, options);
  }
}
