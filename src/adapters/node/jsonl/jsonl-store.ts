/**
 * JsonlDurableEventStore: the store contract and the durability records on local JSONL files,
 * safe across processes.
 *
 * Each session has a log (`.jsonl`, one line per append batch), a lock sidecar (`.jsonl.lock`),
 * lease state (`.lease.json`) and a stream of durability records (`.ledger.jsonl`, one line per record)
 * under `{root}/durable-events/`. Every call:
 * 1. validates its input before waiting for anything;
 * 2. runs under `operationTimeoutMs` (`DURABLE_EVENT_IO_TIMEOUT`) and the caller's signal;
 * 3. takes the process-wide queue of the session, then the OS advisory lock on the sidecar,
 *    both within `lockTimeoutMs` (`DURABLE_EVENT_LOCK_TIMEOUT`); appends do this once per group
 *    (see `group-commit.ts`);
 * 4. under the lock, catches the cached head up with bytes other processes appended, reads the
 *    lease state, lets the core log engine decide, writes and fsyncs;
 * 5. releases the lock, then resolves and notifies listeners (`watch-registry.ts`: in-process
 *    commits at once, other processes' writes through `fs.watch`).
 *
 * The store keeps at most {@link MAX_CACHED_SESSIONS} idle sessions' descriptors and indexes;
 * `close()` releases them all. See `README.md` next to this file for the file format and the
 * consistency boundary.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import {
  checkCheckpointRecord,
  reuseCheckpointBuffer,
  type DurableCheckpointRecord,
  type DurableCheckpointStore,
} from '../../../core/checkpoint/contract.js';
import {
  commitCheckpointFile,
  discardCheckpointFile,
  prepareCheckpointFile,
  readCheckpointFile,
  extendCheckpointFile,
} from './checkpoint-file.js';
import { throwIfAborted } from '../../../core/abort.js';
import {
  buildReadPage,
  checkExpectedLastSequence,
  checkFence,
  checkReadCursor,
  checkSessionId,
  decideAcquire,
  decideRelease,
  decideRenew,
  leaseRecord,
  planRead,
  validateDraftBatch,
  type LeaseState,
} from '../../../core/log-engine.js';
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
  StoreTestHooks,
} from '../../../core/store.js';
import type {
  DurabilityRecordStore,
  DurabilityListener,
  DurabilityReadOptions,
  DurabilityReadResult,
  DurabilityRecordDraft,
  DurabilityRecordResult,
} from '../../../core/durability/record-contract.js';
import {
  buildDurabilityPage,
  checkDurabilityCursor,
  checkDurabilitySessionId,
  durabilityIdentity,
  planDurabilityRead,
  validateDurabilityDraft,
} from '../../../core/durability/record-engine.js';
import { DurableEventStoreError } from '../../../protocol/errors.js';
import type { DurableEventDraft } from '../../../protocol/events.js';
import { EventSequence, type SessionId } from '../../../protocol/ids.js';
import { runBounded, type CallState } from './bounded-call.js';
import { durabilityHeadUnderLock, readUnderLock, readWithoutLock, recordUnderLock } from './durability-calls.js';
import { resolveJsonlOptions, type JsonlDurableEventStoreOptions } from './options.js';
import {
  closeSessionHandle,
  createSessionHandle,
  ioTimeoutError,
  underSessionLock,
  type SessionHandle,
} from './session-handle.js';
import { sessionPaths, type SessionPaths } from './session-paths.js';
import { addFileListener, notifyCommitted } from './watch-registry.js';

/** Idle sessions whose descriptors and index a store keeps open (least recently used are closed first). */
export const MAX_CACHED_SESSIONS = 128;

/**
 * Durable event store on local JSONL files with OS advisory locks, usable from several Node.js
 * processes on one host at once. Implements {@link DurableEventStore},
 * {@link DurableExecutionLeaseStore} and {@link DurabilityRecordStore}.
 *
 * @example
 * const store = new JsonlDurableEventStore('/var/lib/my-agent', { lockTimeoutMs: 15_000 });
 * const result = await store.append(SessionId('session-123'), [
 *   { type: DurableEventType.SESSION_CREATED, data: { source: 'create' } },
 * ], { expectedLastSequence: null });
 * const page = await store.read(SessionId('session-123'), { after: result.previousSequence ?? undefined });
 */
export class JsonlDurableEventStore
  implements DurableEventStore, DurableExecutionLeaseStore, DurabilityRecordStore, DurableCheckpointStore
{
  /** Absolute storage root. */
  readonly storageRoot: string;
  /** Budget for the process queue plus the OS lock, per call; 0 = one immediate attempt. */
  readonly lockTimeoutMs: number;
  /** Budget of a whole store call. */
  readonly operationTimeoutMs: number;
  /** Interval of the optional timed look for other processes' writes while someone watches. */
  readonly watchPollIntervalMs: number | undefined;
  /** Files are opened read-only and every write is refused (see `JsonlDurableEventStoreOptions.readOnly`). */
  readonly readOnly: boolean;
  readonly #clock: () => number;
  readonly #hooks: StoreTestHooks;
  readonly #handles = new Map<string, SessionHandle>();
  /** The handle last moved to the end of {@link #handles} (the most recently used one). */
  #lastUsed: SessionHandle | undefined;
  /** A buffer for the next checkpoint write's private copy, free while no write holds it. */
  #checkpointSpare: ArrayBuffer | null = null;

  /** Throws `DurableEventStoreError('DURABLE_EVENT_INVALID_OPTIONS')` for invalid options. */
  constructor(storageRoot: string, options: JsonlDurableEventStoreOptions = {}) {
    const resolved = resolveJsonlOptions(storageRoot, options);
    this.storageRoot = path.resolve(storageRoot);
    this.lockTimeoutMs = resolved.lockTimeoutMs;
    this.operationTimeoutMs = resolved.operationTimeoutMs;
    this.watchPollIntervalMs = resolved.watchPollIntervalMs;
    this.#clock = resolved.clock;
    this.#hooks = resolved.testHooks;
    this.readOnly = resolved.readOnly;
  }

  /** Throws `DURABLE_EVENT_UNAVAILABLE` when this store was opened read-only. */
  #checkWritable(): void {
    if (this.readOnly) {
      throw new DurableEventStoreError('DURABLE_EVENT_UNAVAILABLE', `the store at ${this.storageRoot} was opened read-only`, {
        details: { readOnly: true },
      });
    }
  }

  /** Files of one session (for tooling and tests; never derived from a session ID by hand). */
  pathsOf(sessionId: SessionId): SessionPaths {
    return sessionPaths(this.storageRoot, checkSessionId(sessionId));
  }

  #handle(id: SessionId): SessionHandle {
    const handle = this.#handles.get(id);
    if (handle !== undefined) {
      // Least recently used order: move the handle to the end of the map, unless it is already there.
      if (handle !== this.#lastUsed) {
        this.#handles.delete(id);
        this.#handles.set(id, handle);
        this.#lastUsed = handle;
      }
      return handle;
    }
    const created = createSessionHandle(this.storageRoot, id, {
      lockTimeoutMs: this.lockTimeoutMs,
      operationTimeoutMs: this.operationTimeoutMs,
      clock: this.#clock,
      hooks: this.#hooks,
      readOnly: this.readOnly,
    });
    this.#handles.set(id, created);
    this.#lastUsed = created;
    this.#evictIdle(created);
    return created;
  }

  #isIdle(handle: SessionHandle): boolean {
    return handle.users === 0 && !handle.appends.busy;
  }

  /** Closes least recently used idle sessions beyond the cap (never `keep`). */
  #evictIdle(keep?: SessionHandle): void {
    if (this.#handles.size <= MAX_CACHED_SESSIONS) return;
    for (const [key, handle] of this.#handles) {
      if (this.#handles.size <= MAX_CACHED_SESSIONS) break;
      if (handle === keep || !this.#isIdle(handle)) continue;
      closeSessionHandle(handle);
      this.#handles.delete(key);
    }
  }

  /**
   * Closes the descriptors and drops the caches of every idle session. The store stays usable:
   * the next call reopens (and revalidates) what it needs.
   */
  async close(): Promise<void> {
    for (const [key, handle] of [...this.#handles]) {
      if (!this.#isIdle(handle)) continue;
      closeSessionHandle(handle);
      this.#handles.delete(key);
    }
  }

  /**
   * Runs `body` under the session lock, bounded by both deadlines. `mutates` turns a failed
   * unlock after a successful body into `DURABLE_EVENT_WRITE_FAILED` (outcome unknown).
   */
  #locked<T>(
    sessionId: SessionId,
    signal: AbortSignal | undefined,
    mutates: boolean,
    body: (handle: SessionHandle, call: CallState) => Promise<T>,
  ): Promise<T> {
    const id = checkSessionId(sessionId);
    return runBounded(
      this.operationTimeoutMs,
      signal,
      async (call) => {
        const handle = this.#handle(id);
        handle.users++;
        try {
          return await underSessionLock(handle, this.lockTimeoutMs, call, mutates, () => body(handle, call));
        } finally {
          handle.users--;
          this.#evictIdle();
        }
      },
      () => ioTimeoutError(this.operationTimeoutMs),
    );
  }

  /** {@inheritDoc DurableEventStore.append} */
  append(
    sessionId: SessionId,
    drafts: readonly DurableEventDraft[],
    options?: DurableAppendOptions,
  ): Promise<DurableAppendResult> {
    // Not `async`: the queue's promise is returned as is, which saves microtask hops per append.
    try {
      throwIfAborted(options?.signal);
      this.#checkWritable();
      const id = checkSessionId(sessionId);
      const valid = validateDraftBatch(drafts);
      checkExpectedLastSequence(options?.expectedLastSequence);
      // The queue enforces both deadlines and the signal itself (see group-commit.ts).
      return this.#handle(id).appends.submit(valid, options);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** This store writes only the new frames of an extended checkpoint record (see `checkpoint-file.ts`). */
  readonly checkpointExtension = true;

  /** The session's latest projection checkpoint (`{name}.checkpoint`), or `null`; see `checkpoint-file.ts`. */
  async readCheckpoint(sessionId: SessionId, options?: DurableStoreCallOptions): Promise<DurableCheckpointRecord | null> {
    throwIfAborted(options?.signal);
    return readCheckpointFile(this.pathsOf(sessionId).checkpoint);
  }

  /**
   * Replaces the session's projection checkpoint: the bytes are written and fsynced to a temp
   * file first, then renamed over the old checkpoint under the session lock.
   */
  async writeCheckpoint(sessionId: SessionId, record: DurableCheckpointRecord, options?: DurableStoreCallOptions): Promise<void> {
    throwIfAborted(options?.signal);
    this.#checkWritable();
    const id = checkSessionId(sessionId);
    const lent = checkCheckpointRecord(record, false);
    if (lent.extendsBytes !== undefined && (await this.#extendCheckpoint(id, lent, options?.signal))) return;
    // A private copy (the caller's bytes are lent for the call only), in a buffer this write holds
    // alone until it settled, then the next one reuses it: a fresh copy of a few megabytes cost
    // more in first-touch page faults (about 10 ms per 1.8 MB on a busy VM) than the file write.
    const buffer = reuseCheckpointBuffer(this.#checkpointSpare, lent.data.length);
    this.#checkpointSpare = null;
    const checked = { ...lent, data: new Uint8Array(buffer, 0, lent.data.length) };
    checked.data.set(lent.data);
    const file = this.pathsOf(id).checkpoint;
    let temp: string;
    try {
      temp = await prepareCheckpointFile(file, checked);
    } finally {
      // The temp file holds the bytes now (or the write failed): the buffer is free.
      this.#releaseCheckpointBuffer(buffer);
    }
    let committed = false;
    try {
      await this.#locked(id, options?.signal, true, async (handle) => {
        await commitCheckpointFile(temp, file);
        committed = true;
        await this.#saveValidatedState(handle);
      });
    } finally {
      if (!committed) await discardCheckpointFile(temp);
    }
  }

  /**
   * Appends the new frames of an extended record to the checkpoint file under the session lock;
   * `false` (nothing written) when the file does not hold the record's prefix.
   */
  async #extendCheckpoint(id: SessionId, record: DurableCheckpointRecord, signal: AbortSignal | undefined): Promise<boolean> {
    const file = this.pathsOf(id).checkpoint;
    return this.#locked(id, signal, true, async (handle) => {
      if (!(await extendCheckpointFile(file, record))) return false;
      await this.#saveValidatedState(handle);
      return true;
    });
  }

  /**
   * Saves the log's validated state next to a checkpoint just written (see `validated-state.ts`):
   * a later process's first open then validates only what was appended since.
   */
  async #saveValidatedState(handle: SessionHandle): Promise<void> {
    try {
      await handle.log.catchUp();
      handle.log.saveValidatedState();
    } catch {
      // A log that cannot be caught up fails its own calls; the checkpoint is written.
    }
  }

  /** Keeps the larger of `buffer` and the spare one (another write may have returned its own meanwhile). */
  #releaseCheckpointBuffer(buffer: ArrayBuffer): void {
    const spare = this.#checkpointSpare;
    if (spare === null || spare.byteLength < buffer.byteLength) this.#checkpointSpare = buffer;
  }

  /** {@inheritDoc DurableEventStore.read} */
  async read(sessionId: SessionId, options?: DurableReadOptions): Promise<DurableReadResult> {
    throwIfAborted(options?.signal);
    const id = checkSessionId(sessionId);
    const plan = planRead(options);
    if (this.#neverWritten(id)) {
      checkReadCursor(plan.after, null);
      return buildReadPage([], plan, null);
    }
    return this.#locked(id, options?.signal, false, async (handle) => {
      await handle.log.catchUp();
      const head = handle.log.head;
      checkReadCursor(plan.after, head);
      const events = await handle.log.readPage(plan.after ?? 0, plan.limit, plan.maxBytes);
      return buildReadPage(events, plan, head, 'already-cut');
    });
  }

  /** {@inheritDoc DurableEventStore.getHeadSequence} */
  async getHeadSequence(sessionId: SessionId, options?: DurableStoreCallOptions): Promise<EventSequence | null> {
    throwIfAborted(options?.signal);
    const id = checkSessionId(sessionId);
    if (this.#neverWritten(id)) return null;
    return this.#locked(id, options?.signal, false, async (handle) => {
      await handle.log.catchUp();
      return handle.log.head;
    });
  }

  /**
   * True when the session's log (or durability) file does not exist and this store has nothing
   * cached: it is empty, no lock needed.
   */
  #neverWritten(id: SessionId, file: 'log' | 'durability' = 'log'): boolean {
    const cached = this.#handles.get(id);
    if (cached !== undefined && (cached[file].isOpen || !this.#isIdle(cached))) return false;
    return !existsSync(sessionPaths(this.storageRoot, id)[file]);
  }

  /**
   * Registers a listener for durable appends to `sessionId`: appends by any JSONL store object
   * of this process are heard at once; appends by other processes through `fs.watch` on the log
   * (and every `watchPollIntervalMs` when set). Returns the unsubscribe function; while a
   * listener is registered the watcher keeps the process alive.
   */
  watch(sessionId: SessionId, listener: DurableAppendListener): () => void {
    const id = checkSessionId(sessionId);
    return addFileListener(
      sessionPaths(this.storageRoot, id).log,
      id,
      (notice) => listener({ sessionId: notice.sessionId, lastSequence: EventSequence(notice.lastSequence) }),
      { readHead: () => this.getHeadSequence(id), pollIntervalMs: this.watchPollIntervalMs },
    );
  }

  /** {@inheritDoc DurabilityRecordStore.recordDurability} */
  async recordDurability(
    sessionId: SessionId,
    draft: DurabilityRecordDraft,
    options?: DurableStoreCallOptions,
  ): Promise<DurabilityRecordResult> {
    throwIfAborted(options?.signal);
    this.#checkWritable();
    const id = checkDurabilitySessionId(sessionId);
    const valid = validateDurabilityDraft(draft);
    const identity = durabilityIdentity(valid);
    const outcome = await this.#locked(id, options?.signal, true, (handle, call) =>
      recordUnderLock(handle, valid, identity, this.#clock, call),
    );
    const { result } = outcome;
    if (result.created) {
      const notice = { sessionId: id, lastSequence: result.record.sequence };
      notifyCommitted(outcome.file, notice, outcome.identity);
    }
    return result;
  }

  /** {@inheritDoc DurabilityRecordStore.readDurability} */
  async readDurability(sessionId: SessionId, options?: DurabilityReadOptions): Promise<DurabilityReadResult> {
    throwIfAborted(options?.signal);
    const id = checkDurabilitySessionId(sessionId);
    const plan = planDurabilityRead(options);
    if (this.#neverWritten(id, 'durability')) {
      checkDurabilityCursor(plan.after, null);
      return buildDurabilityPage([], plan, null);
    }
    const cached = this.#handles.get(id);
    const current = cached === undefined ? undefined : readWithoutLock(cached, plan);
    if (current !== undefined) return current;
    return this.#locked(id, options?.signal, false, (handle) => readUnderLock(handle, plan));
  }

  /**
   * Hears every durability record created in `sessionId`, after it is durable: records written
   * through any JSONL store object of this process at once, records of other processes through
   * `fs.watch` on the durability file (as for {@link watch}). Returns the unsubscribe function.
   */
  watchDurability(sessionId: SessionId, listener: DurabilityListener): () => void {
    const id = checkDurabilitySessionId(sessionId);
    return addFileListener(sessionPaths(this.storageRoot, id).durability, id, listener, {
      readHead: () => this.#durabilityHead(id),
      pollIntervalMs: this.watchPollIntervalMs,
    });
  }

  #durabilityHead(id: SessionId): Promise<number | null> {
    if (this.#neverWritten(id, 'durability')) return Promise.resolve(null);
    return this.#locked(id, undefined, false, durabilityHeadUnderLock);
  }

  /** Runs a lease decision under the session lock and persists the new state when it changed. */
  #changeLease(
    sessionId: SessionId,
    signal: AbortSignal | undefined,
    decide: (state: LeaseState | null, nowMs: number) => LeaseState,
  ): Promise<DurableExecutionLeaseRecord> {
    try {
      this.#checkWritable();
    } catch (error) {
      return Promise.reject(error);
    }
    return this.#locked(sessionId, signal, true, async (handle, call) => {
      // The log names its session in every line: a file shared with another session ID (names that
      // coincide on a case-insensitive filesystem) fails closed here before any lease is written.
      await handle.log.catchUp();
      const state = handle.lease.read();
      const next = decide(state, this.#clock());
      if (next !== state) {
        call.throwIfCancelled();
        await handle.lease.write(next);
      }
      return leaseRecord(handle.id, next);
    });
  }

  /** {@inheritDoc DurableExecutionLeaseStore.acquireExecutionLease} */
  async acquireExecutionLease(sessionId: SessionId, options: DurableLeaseAcquireOptions): Promise<DurableExecutionLeaseRecord> {
    throwIfAborted(options.signal);
    return this.#changeLease(sessionId, options.signal, (state, nowMs) => decideAcquire(state, options, nowMs));
  }

  /** {@inheritDoc DurableExecutionLeaseStore.renewExecutionLease} */
  async renewExecutionLease(
    sessionId: SessionId,
    fence: DurableExecutionFence,
    options: DurableLeaseRenewOptions,
  ): Promise<DurableExecutionLeaseRecord> {
    throwIfAborted(options.signal);
    return this.#changeLease(sessionId, options.signal, (state, nowMs) => decideRenew(state, fence, options.ttlMs, nowMs));
  }

  /** {@inheritDoc DurableExecutionLeaseStore.releaseExecutionLease} */
  async releaseExecutionLease(
    sessionId: SessionId,
    fence: DurableExecutionFence,
    options?: DurableStoreCallOptions,
  ): Promise<void> {
    throwIfAborted(options?.signal);
    await this.#changeLease(sessionId, options?.signal, (state, nowMs) => decideRelease(state, fence, nowMs));
  }

  /** {@inheritDoc DurableExecutionLeaseStore.assertExecutionLease} */
  async assertExecutionLease(
    sessionId: SessionId,
    fence: DurableExecutionFence,
    options?: DurableStoreCallOptions,
  ): Promise<void> {
    throwIfAborted(options?.signal);
    await this.#locked(sessionId, options?.signal, false, async (handle) => {
      checkFence(handle.lease.read(), fence, this.#clock());
    });
  }

  /** {@inheritDoc DurableExecutionLeaseStore.inspectExecutionLease} */
  async inspectExecutionLease(
    sessionId: SessionId,
    options?: DurableStoreCallOptions,
  ): Promise<DurableExecutionLeaseRecord | null> {
    throwIfAborted(options?.signal);
    return this.#locked(sessionId, options?.signal, false, async (handle) => {
      const state = handle.lease.read();
      return state === null ? null : leaseRecord(handle.id, state);
    });
  }

  /** {@inheritDoc DurableExecutionLeaseStore.requiresExecutionLease} */
  async requiresExecutionLease(sessionId: SessionId, options?: DurableStoreCallOptions): Promise<boolean> {
    throwIfAborted(options?.signal);
    return this.#locked(sessionId, options?.signal, false, async (handle) => handle.lease.read() !== null);
  }
}
