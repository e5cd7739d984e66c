/**
 * SqlLedger: the store contract as synchronous calls over a {@link SqlDriver}.
 *
 * Every mutation is one synchronous `driver.transaction`:
 * 1. read the head (`MAX(sequence)`) and the lease row of the session;
 * 2. let the core log engine decide (`planAppend`, `decideAcquire`, ...), which throws the public
 *    error on refusal, so nothing is written;
 * 3. write the rows (one INSERT per event, or one lease UPSERT).
 * Nothing is awaited between 1 and 3, so no other call on the connection (nor, with a write lock
 * taken up front, another process) can slip in. Commit listeners run only after the transaction
 * returned.
 *
 * Reads need no transaction: the log is append-only, so reading the head first and then only rows
 * `<= head` always yields a consistent page. Every row read back is parsed strictly and checked
 * against its columns and position; anything else is `DURABLE_EVENT_CORRUPT_LOG`.
 *
 * Driver failures surface as `DURABLE_EVENT_WRITE_FAILED` / `DURABLE_EVENT_READ_FAILED` (domain
 * errors thrown by the driver, such as a lock timeout, pass through unchanged).
 */
import {
  buildReadPage,
  checkFence,
  checkReadCursor,
  checkSessionId,
  decideAcquire,
  decideRelease,
  decideRenew,
  leaseRecord,
  parseLeaseState,
  planAppend,
  planRead,
  validateDraftBatch,
  type LeaseState,
} from '../../core/log-engine.js';
import type {
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
import type { SqlDriver } from './driver.js';
import { migrateSqlSchema } from './schema.js';

/** Test-only fault injection: `beforeCommit` runs inside the transaction, before any row is written; throwing aborts it. */
export interface SqlStoreTestHooks {
  beforeCommit?: (sessionId: SessionId) => void;
}

/** What commit listeners hear: the session and the whole committed batch. */
export interface SqlCommit {
  sessionId: SessionId;
  result: DurableAppendResult;
}

/** Options of {@link SqlLedger}. */
export interface SqlLedgerOptions {
  /** Clock in epoch milliseconds for `recordedAt` and lease expiry (default `Date.now`). */
  clock?: () => number;
  /** Test-only fault injection. */
  testHooks?: SqlStoreTestHooks;
}

interface EventRow {
  sequence: number;
  event_id: string;
  body: string;
}

const INSERT_EVENT =
  'INSERT INTO events (session_id, sequence, event_id, type, command_id, body) VALUES (?, ?, ?, ?, ?, ?)';
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
export class SqlLedger {
  readonly driver: SqlDriver;
  readonly #clock: () => number;
  readonly #hooks: SqlStoreTestHooks;
  readonly #commitListeners = new Set<(commit: SqlCommit) => void>();

  constructor(driver: SqlDriver, options: SqlLedgerOptions = {}) {
    this.driver = driver;
    this.#clock = options.clock ?? Date.now;
    this.#hooks = options.testHooks ?? {};
    guard('DURABLE_EVENT_WRITE_FAILED', () => migrateSqlSchema(driver));
  }

  /** The ledger's clock, in epoch milliseconds. */
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

  #head(sessionId: SessionId): EventSequence | null {
    const rows = this.driver.query<{ head: number | null }>(
      'SELECT MAX(sequence) AS head FROM events WHERE session_id = ?',
      sessionId,
    );
    const head = rows[0]?.head ?? null;
    if (head === null) return null;
    if (!Number.isSafeInteger(head) || head < 1) throw corrupt(sessionId, `head sequence ${String(head)} is invalid`);
    return EventSequence(head);
  }

  #lease(sessionId: SessionId): LeaseState | null {
    const rows = this.driver.query<{ state: string }>('SELECT state FROM leases WHERE session_id = ?', sessionId);
    const row = rows[0];
    if (row === undefined) return null;
    let parsed: unknown;
    try {
      parsed = JSON.parse(row.state);
    } catch (error) {
      throw corrupt(sessionId, 'lease state is not JSON', error);
    }
    return parseLeaseState(parsed);
  }

  #writeLease(sessionId: SessionId, state: LeaseState): void {
    this.driver.exec(UPSERT_LEASE, sessionId, JSON.stringify(state));
  }

  /** Validates and appends one batch atomically; see {@link DurableEventStore.append}. */
  append(sessionId: SessionId, drafts: readonly DurableEventDraft[], options?: DurableAppendOptions): DurableAppendResult {
    const id = checkSessionId(sessionId);
    const valid = validateDraftBatch(drafts);
    const result = guard('DURABLE_EVENT_WRITE_FAILED', () =>
      this.driver.transaction(() => {
        const planned = planAppend({
          sessionId: id,
          drafts: valid,
          options,
          head: this.#head(id),
          lease: this.#lease(id),
          nowMs: this.#clock(),
        });
        this.#beforeCommit(id);
        for (const event of planned.events) {
          this.driver.exec(
            INSERT_EVENT,
            id,
            event.sequence,
            event.eventId,
            event.type,
            event.commandId ?? null,
            JSON.stringify(event),
          );
        }
        return planned;
      }),
    );
    this.#notify({ sessionId: id, result });
    return result;
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
  read(sessionId: SessionId, options?: Pick<DurableReadOptions, 'after' | 'limit'>): DurableReadResult {
    const id = checkSessionId(sessionId);
    const plan = planRead(options);
    return guard('DURABLE_EVENT_READ_FAILED', () => {
      const head = this.#head(id);
      checkReadCursor(plan.after, head);
      const after = plan.after ?? 0;
      const rows = this.driver.query<EventRow>(
        'SELECT sequence, event_id, body FROM events WHERE session_id = ? AND sequence > ? AND sequence <= ? ORDER BY sequence LIMIT ?',
        id,
        after,
        head ?? 0,
        plan.limit,
      );
      const expectedCount = Math.min(plan.limit, (head ?? 0) - after);
      if (rows.length !== expectedCount) {
        throw corrupt(id, `expected ${expectedCount} events after ${after}, found ${rows.length} (sequence gap)`);
      }
      const events = rows.map((row, index) => this.#decode(id, row, after + index + 1));
      return buildReadPage(events, plan, head);
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
    if (envelope.sequence !== row.sequence || envelope.eventId !== row.event_id || envelope.sessionId !== sessionId) {
      throw corrupt(sessionId, `event ${expectedSequence} does not match its row`);
    }
    return envelope;
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
    return guard('DURABLE_EVENT_WRITE_FAILED', () =>
      this.driver.transaction(() => {
        const state = this.#lease(sessionId);
        const next = decide(state, this.#clock());
        if (next !== state) this.#writeLease(sessionId, next);
        return leaseRecord(sessionId, next);
      }),
    );
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
