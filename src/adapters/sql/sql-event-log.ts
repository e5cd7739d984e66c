/**
 * SqlEventLog: the store contract as synchronous calls over a {@link SqlDriver}.
 *
 * Every mutation is one synchronous `driver.transaction`:
 * 1. read the session's head (the largest position of its range, see `event-rows.ts`) and its
 *    lease row;
 * 2. let the core log engine decide (`planAppend`, `decideAcquire`, ...), which throws the public
 *    error on refusal, so nothing is written;
 * 3. write the rows (multi-row INSERTs, each row's body the encoding `planAppend` measured, plus
 *    the session's key on its first append; or one lease UPSERT).
 * Nothing is awaited between 1 and 3, so no other call on the connection (nor, with a write lock
 * taken up front, another process) can slip in. Commit listeners run only after the write
 * returned.
 *
 * With `singleWriter` (a Durable Object, whose storage only its own thread writes), step 1 reads
 * the key, head and lease from memory once they are known (`event-log-memory.ts`), and an append
 * that is then a single INSERT statement runs as that statement alone: one SQLite statement is
 * atomic by itself, and nothing else writes. Memory is forgotten whenever a write fails. A stale
 * head could not even corrupt the log silently: a position already taken is refused by the
 * primary key.
 *
 * Reads need no transaction: the log is append-only, so reading the head first and then only rows
 * `<= head` always yields a consistent page. Every row read back is parsed strictly and checked
 * against its position; anything else is `DURABLE_EVENT_CORRUPT_LOG`.
 *
 * Driver failures surface as `DURABLE_EVENT_WRITE_FAILED` / `DURABLE_EVENT_READ_FAILED` (domain
 * errors thrown by the driver, such as a lock timeout, pass through unchanged).
 */
import {
  buildReadPage,
  markParsedEnvelopes,
  checkFence,
  checkReadCursor,
  checkSessionId,
  decideAcquire,
  decideRelease,
  decideRenew,
  leaseRecord,
  parseLeaseState,
  planAppend,
  parseDraftBatchJson,
  planRead,
  validateDraftBatch,
  type LeaseState,
} from '../../core/log-engine.js';
import type {
  StoreTestHooks,
  DurableAppendOptions,
  DurableAppendResult,
  DurableExecutionFence,
  DurableExecutionLeaseRecord,
  DurableLeaseAcquireOptions,
  DurableReadOptions,
  DurableReadResult,
} from '../../core/store.js';
import { DurableError, DurableEventStoreError } from '../../protocol/errors.js';
import { parseDurableEventEnvelope, type DurableEventDraft, type DurableEventEnvelope } from '../../protocol/events.js';
import { EventSequence, type SessionId } from '../../protocol/ids.js';
import { eventDigest, type DurableEventDigestRow } from '../../core/checkpoint/event-digest.js';
import type { SqlDriver } from './driver.js';
import {
  MAX_SEQUENCE,
  createSessionKey,
  findSessionKey,
  insertEventRows,
  insertStatementCount,
  readEventDigestRows,
  readEventRowsWithinBytes,
  readHeadRow,
  type EventRow,
} from './event-rows.js';
import { ForgetOnRollbackDriver, EventLogMemory } from './event-log-memory.js';
import { migrateSqlSchema } from './schema.js';

/** Test-only fault injection: `beforeCommit` runs inside the transaction, before any row is written; throwing aborts it. */
export type SqlStoreTestHooks = StoreTestHooks;

/** What commit listeners hear: the session and the whole committed batch. */
export interface SqlCommit {
  sessionId: SessionId;
  result: DurableAppendResult;
}

/** Options of {@link SqlEventLog}. */
export interface SqlEventLogOptions {
  /** Clock in epoch milliseconds for `recordedAt` and lease expiry (default `Date.now`). */
  clock?: () => number;
  /** Test-only fault injection. */
  testHooks?: SqlStoreTestHooks;
  /**
   * True when this event log's connection is the only writer of the database, as in a Durable
   * Object: each session's key, head and lease state are then kept in memory between calls
   * instead of being read in every transaction (forgotten after any failed write). Leave it off
   * (the default) whenever another connection or process may write the same database, as with a
   * better-sqlite3 file: memory would miss their writes. In single-writer mode, every transaction
   * that wraps a event log call must go through `eventLog.driver`, so that its failure is seen.
   */
  singleWriter?: boolean;
}

const UPSERT_LEASE =
  'INSERT INTO leases (session_id, state) VALUES (?, ?) ON CONFLICT (session_id) DO UPDATE SET state = excluded.state';

function corrupt(sessionId: SessionId, message: string, cause?: unknown): DurableEventStoreError {
  return new DurableEventStoreError('DURABLE_EVENT_CORRUPT_LOG', `session ${sessionId}: ${message}`, {
    ...(cause === undefined ? {} : { cause }),
    details: { sessionId },
  });
}

/** Runs `fn`; a non-domain failure (a driver error) becomes `code`. */
function guard<T>(code: 'DURABLE_EVENT_WRITE_FAILED' | 'DURABLE_EVENT_READ_FAILED', fn: () => T): T {
  try {
    return fn();
  } catch (error) {
    if (error instanceof DurableError) throw error;
    const message = error instanceof Error ? error.message : String(error);
    throw new DurableEventStoreError(code, `SQLite ${code === 'DURABLE_EVENT_WRITE_FAILED' ? 'write' : 'read'} failed: ${message}`, {
      cause: error,
    });
  }
}

/**
 * Synchronous store core over any {@link SqlDriver}. Migrates the schema when constructed.
 * Used directly by code that runs next to the database (the Durable Object); everything else
 * uses the async {@link SqlDurableEventStore} wrapper.
 */
export class SqlEventLog {
  /**
   * The connection. In single-writer mode it is a wrapper that makes the event log forget what it
   * remembered whenever one of its transactions fails; run every transaction through it.
   */
  readonly driver: SqlDriver;
  readonly #clock: () => number;
  readonly #hooks: SqlStoreTestHooks;
  readonly #commitListeners = new Set<(commit: SqlCommit) => void>();
  /** What a single-writer event log remembers (`undefined`: it reads everything every time). */
  readonly #memory: EventLogMemory | undefined;

  constructor(driver: SqlDriver, options: SqlEventLogOptions = {}) {
    this.#clock = options.clock ?? Date.now;
    this.#hooks = options.testHooks ?? {};
    if (options.singleWriter === true) {
      this.#memory = new EventLogMemory();
      this.driver = new ForgetOnRollbackDriver(driver, this.#memory);
    } else {
      this.#memory = undefined;
      this.driver = driver;
    }
    guard('DURABLE_EVENT_WRITE_FAILED', () => migrateSqlSchema(this.driver));
  }

  /** True when this event log remembers keys, heads and lease states between calls. */
  get singleWriter(): boolean {
    return this.#memory !== undefined;
  }

  /** The event log's clock, in epoch milliseconds. */
  now(): number {
    return this.#clock();
  }

  /**
   * Registers `listener` to run after every committed append (never inside the transaction).
   * A throwing listener is ignored: the append already committed. Returns an unsubscribe function.
   */
  onCommit(listener: (commit: SqlCommit) => void): () => void {
    this.#commitListeners.add(listener);
    return () => {
      this.#commitListeners.delete(listener);
    };
  }

  /** The session's key in `session_keys`, or `null` before its first append. */
  #key(sessionId: SessionId): number | null {
    const remembered = this.#memory?.keys.get(sessionId);
    if (remembered !== undefined) return remembered;
    const key = findSessionKey(this.driver, sessionId);
    if (key !== null) this.#memory?.remember(this.#memory.keys, sessionId, key);
    return key;
  }

  #head(sessionId: SessionId): EventSequence | null {
    const remembered = this.#memory?.heads.get(sessionId);
    if (remembered !== undefined) return remembered;
    const key = this.#key(sessionId);
    const value = key === null ? null : readHeadRow(this.driver, key);
    if (value !== null && (!Number.isSafeInteger(value) || value < 1)) {
      throw corrupt(sessionId, `head sequence ${String(value)} is invalid`);
    }
    const head = value === null ? null : EventSequence(value);
    this.#memory?.remember(this.#memory.heads, sessionId, head);
    return head;
  }

  #lease(sessionId: SessionId): LeaseState | null {
    const remembered = this.#memory?.leases.get(sessionId);
    if (remembered !== undefined) return remembered;
    const rows = this.driver.query<{ state: string }>('SELECT state FROM leases WHERE session_id = ?', sessionId);
    const row = rows[0];
    let state: LeaseState | null = null;
    if (row !== undefined) {
      let parsed: unknown;
      try {
        parsed = JSON.parse(row.state);
      } catch (error) {
        throw corrupt(sessionId, 'lease state is not JSON', error);
      }
      state = parseLeaseState(parsed);
    }
    this.#memory?.remember(this.#memory.leases, sessionId, state);
    return state;
  }

  #writeLease(sessionId: SessionId, state: LeaseState): void {
    this.driver.exec(UPSERT_LEASE, sessionId, JSON.stringify(state));
  }

  /** Validates and appends one batch atomically; see {@link DurableEventStore.append}. */
  append(sessionId: SessionId, drafts: readonly DurableEventDraft[], options?: DurableAppendOptions): DurableAppendResult {
    const id = checkSessionId(sessionId);
    return this.#append(id, validateDraftBatch(drafts), options);
  }

  /**
   * {@link SqlEventLog.append} of a batch sent as JSON text (an array of drafts), as it arrives over
   * RPC: parsing it here lets validation skip what `JSON.parse` output cannot contain.
   */
  appendJson(sessionId: SessionId, draftsJson: string, options?: DurableAppendOptions): DurableAppendResult {
    const id = checkSessionId(sessionId);
    return this.#append(id, parseDraftBatchJson(draftsJson), options);
  }

  #append(id: SessionId, valid: DurableEventDraft[], options: DurableAppendOptions | undefined): DurableAppendResult {
    const write = (): { planned: DurableAppendResult; key: number } => {
      const head = this.#head(id);
      // The exact JSON whose size `planAppend` checked becomes the row body: encoded once.
      const encodings: string[] = [];
      const planned = planAppend({
        sessionId: id,
        drafts: valid,
        options,
        head,
        lease: this.#lease(id),
        nowMs: this.#clock(),
        encodings,
      });
      if (planned.lastSequence > MAX_SEQUENCE) {
        throw new DurableEventStoreError('DURABLE_EVENT_LIMIT_EXCEEDED', `a session holds at most ${MAX_SEQUENCE} events`, {
          details: { limit: MAX_SEQUENCE, actual: planned.lastSequence },
        });
      }
      this.#beforeCommit(id);
      const key = this.#key(id) ?? createSessionKey(this.driver, id);
      insertEventRows(this.driver, key, (head ?? 0) + 1, encodings, planned.events.map(eventDigest));
      return { planned, key };
    };
    // Single writer, key, head and lease known, one INSERT statement: that statement is the
    // whole write, and atomic by itself.
    const alone = this.#memory?.knows(id) === true && insertStatementCount(valid.length) === 1;
    const { planned, key } = guard('DURABLE_EVENT_WRITE_FAILED', () =>
      alone ? this.#alone(write) : this.driver.transaction(write),
    );
    this.#memory?.remember(this.#memory.keys, id, key);
    this.#memory?.remember(this.#memory.heads, id, planned.lastSequence);
    this.#notify({ sessionId: id, result: planned });
    return planned;
  }

  /** Runs a single-statement write without a transaction of its own; a failure forgets memory. */
  #alone<T>(write: () => T): T {
    try {
      return write();
    } catch (error) {
      this.#memory?.forget();
      throw error;
    }
  }

  #beforeCommit(sessionId: SessionId): void {
    try {
      this.#hooks.beforeCommit?.(sessionId);
    } catch (error) {
      throw new DurableEventStoreError('DURABLE_EVENT_WRITE_FAILED', 'commit failed before anything was written', {
        cause: error,
      });
    }
  }

  #notify(commit: SqlCommit): void {
    for (const listener of [...this.#commitListeners]) {
      try {
        listener(commit);
      } catch {
        // The batch is committed; a failing observer must not turn that into an error.
      }
    }
  }

  /** Reads one page; see {@link DurableEventStore.read}. */
  read(sessionId: SessionId, options?: Pick<DurableReadOptions, 'after' | 'limit' | 'maxBytes'>): DurableReadResult {
    const id = checkSessionId(sessionId);
    const plan = planRead(options);
    return guard('DURABLE_EVENT_READ_FAILED', () => {
      const head = this.#head(id);
      checkReadCursor(plan.after, head);
      const after = plan.after ?? 0;
      const key = head === null ? null : this.#key(id);
      const page =
        key === null || head === null
          ? { rows: [], sizes: [], found: 0 }
          : readEventRowsWithinBytes(this.driver, key, after, head, plan.limit, plan.maxBytes);
      const expectedCount = Math.min(plan.limit, (head ?? 0) - after);
      if (page.found !== expectedCount || page.rows.length !== page.sizes.length) {
        throw corrupt(id, `expected ${expectedCount} events after ${after}, found ${page.found} (sequence gap)`);
      }
      // Every row went through the full envelope parser just now: the journal need not parse them again.
      const events = markParsedEnvelopes(page.rows.map((row, index) => this.#decode(id, row, after + index + 1)));
      return buildReadPage(events, plan, head, page.sizes);
    });
  }

  #decode(sessionId: SessionId, row: EventRow, expectedSequence: number): DurableEventEnvelope {
    if (row.sequence !== expectedSequence) {
      throw corrupt(sessionId, `expected sequence ${expectedSequence}, found ${row.sequence} (sequence gap)`);
    }
    let envelope: DurableEventEnvelope;
    try {
      envelope = parseDurableEventEnvelope(JSON.parse(row.body));
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      throw corrupt(sessionId, `event ${expectedSequence} is unreadable: ${message}`, error);
    }
    if (envelope.sequence !== row.sequence || envelope.sessionId !== sessionId) {
      throw corrupt(sessionId, `event ${expectedSequence} does not match its row`);
    }
    return envelope;
  }

  /**
   * The stored digests of the session's rows after `after`, at most `limit`, in order (see
   * `DurableEventDigestStore`); `null` digests for rows written before schema version 5.
   */
  readEventDigests(sessionId: SessionId, after: number, limit: number): DurableEventDigestRow[] {
    const id = checkSessionId(sessionId);
    if (!Number.isSafeInteger(after) || after < 0 || !Number.isSafeInteger(limit) || limit < 1) {
      throw new DurableEventStoreError('DURABLE_EVENT_INVALID_OPTIONS', 'after must be an integer >= 0 and limit an integer >= 1');
    }
    return guard('DURABLE_EVENT_READ_FAILED', () => {
      const key = this.#key(id);
      return key === null ? [] : readEventDigestRows(this.driver, key, Math.min(after, MAX_SEQUENCE), limit);
    });
  }

  /** The head sequence, or `null` for an empty stream. */
  getHeadSequence(sessionId: SessionId): EventSequence | null {
    const id = checkSessionId(sessionId);
    return guard('DURABLE_EVENT_READ_FAILED', () => this.#head(id));
  }

  /** Acquires (or reconciles) the session's execution lease. */
  acquireExecutionLease(
    sessionId: SessionId,
    options: Pick<DurableLeaseAcquireOptions, 'ownerId' | 'leaseId' | 'ttlMs'>,
  ): DurableExecutionLeaseRecord {
    const id = checkSessionId(sessionId);
    const request = { ownerId: options.ownerId, leaseId: options.leaseId, ttlMs: options.ttlMs };
    return this.#updateLease(id, (state, nowMs) => decideAcquire(state, request, nowMs));
  }

  /** Extends the current lease named by `fence`. */
  renewExecutionLease(sessionId: SessionId, fence: DurableExecutionFence, ttlMs: number): DurableExecutionLeaseRecord {
    const id = checkSessionId(sessionId);
    return this.#updateLease(id, (state, nowMs) => decideRenew(state, fence, ttlMs, nowMs));
  }

  /** Releases the lease named by `fence` (idempotent for its holder). */
  releaseExecutionLease(sessionId: SessionId, fence: DurableExecutionFence): void {
    const id = checkSessionId(sessionId);
    this.#updateLease(id, (state, nowMs) => decideRelease(state, fence, nowMs));
  }

  #updateLease(
    sessionId: SessionId,
    decide: (state: LeaseState | null, nowMs: number) => LeaseState,
  ): DurableExecutionLeaseRecord {
    const next = guard('DURABLE_EVENT_WRITE_FAILED', () =>
      this.driver.transaction(() => {
        const state = this.#lease(sessionId);
        const decided = decide(state, this.#clock());
        if (decided !== state) this.#writeLease(sessionId, decided);
        return decided;
      }),
    );
    this.#memory?.remember(this.#memory.leases, sessionId, next);
    return leaseRecord(sessionId, next);
  }

  /** Throws unless `fence` names the current active lease. */
  assertExecutionLease(sessionId: SessionId, fence: DurableExecutionFence): void {
    const id = checkSessionId(sessionId);
    const state = guard('DURABLE_EVENT_READ_FAILED', () => this.#lease(id));
    checkFence(state, fence, this.#clock());
  }

  /** The persisted lease state, or `null` when the session never had a lease. */
  inspectExecutionLease(sessionId: SessionId): DurableExecutionLeaseRecord | null {
    const id = checkSessionId(sessionId);
    const state = guard('DURABLE_EVENT_READ_FAILED', () => this.#lease(id));
    return state === null ? null : leaseRecord(id, state);
  }

  /** True once lease state exists for the session. */
  requiresExecutionLease(sessionId: SessionId): boolean {
    return this.inspectExecutionLease(sessionId) !== null;
  }
}
