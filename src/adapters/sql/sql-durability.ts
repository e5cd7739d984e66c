/**
 * SqlDurability: the durability records (`DurabilityRecordStore`) as synchronous calls over a
 * {@link SqlDriver}, next to the event log in the same database.
 *
 * Recording a draft is ONE synchronous `driver.transaction`:
 * 1. the draft was validated before (`validateDurabilityDraft`), outside the transaction;
 * 2. inside it: look up the row stored under `durabilityIdentity(draft)` and the durability head,
 *    let the core engine decide (`planDurabilityRecord`: existing record, conflict, or the next
 *    record), and when it is new INSERT one row `(session_id, sequence, identity, kind, body)`
 *    (`body` is the record's JSON in its own key order, so replays return identical values);
 * 3. an optional `within` callback runs last, still inside the transaction, so a caller can make
 *    other rows change atomically with the record (the Durable Object inserts or deletes timers).
 * Nothing is awaited in between, so no other call on the connection (nor, with the write lock
 * taken up front, another process) can interleave; the `UNIQUE (session_id, identity)`
 * constraint backs first-writer-wins in the schema as well. Listeners hear of created records
 * only after the transaction returned.
 *
 * Reads need no transaction (the records are append-only): read the head, then rows `<= head`.
 * Every row is decoded strictly and checked against its columns and position; anything else is
 * `DURABILITY_CORRUPT_RECORD`. Driver failures become `DURABLE_EVENT_WRITE_FAILED` /
 * `DURABLE_EVENT_READ_FAILED`, as for events.
 */
import {
  buildDurabilityPage,
  checkDurabilityCursor,
  checkDurabilitySessionId,
  decodeDurabilityRecord,
  durabilityIdentity,
  planDurabilityRead,
  planDurabilityRecord,
  validateDurabilityDraft,
} from '../../core/durability/record-engine.js';
import type {
  DurabilityReadOptions,
  DurabilityReadResult,
  DurabilityRecord,
  DurabilityRecordDraft,
  DurabilityRecordResult,
} from '../../core/durability/record-contract.js';
import { DurabilityError, DurableError, DurableEventStoreError } from '../../protocol/errors.js';
import type { SessionId } from '../../protocol/ids.js';
import type { SqlDriver } from './driver.js';

/** Runs inside the transaction of a `record` call, after the decision (and the INSERT, when created). */
export type SqlDurabilityWithin = (result: DurabilityRecordResult) => void;

/** Options of {@link SqlDurability}. */
export interface SqlDurabilityOptions {
  /** Clock in epoch milliseconds for `recordedAt` (default `Date.now`). */
  clock?: () => number;
  /**
   * Runs inside every transaction that CREATES a record, after its row is written. Throwing
   * rolls the record back (and the call fails with the error). Hosts use it to keep derived
   * rows (such as a Durable Object's timers) atomic with the durability records.
   */
  onCreateWithin?: (record: DurabilityRecord) => void;
}

interface RecordRow {
  sequence: number;
  identity: string;
  kind: string;
  body: string;
}

const INSERT_RECORD =
  'INSERT INTO durability_records (session_id, sequence, identity, kind, body) VALUES (?, ?, ?, ?, ?)';
const SELECT_BY_IDENTITY =
  'SELECT sequence, identity, kind, body FROM durability_records WHERE session_id = ? AND identity = ?';
const SELECT_HEAD = 'SELECT MAX(sequence) AS head FROM durability_records WHERE session_id = ?';
const SELECT_PAGE =
  'SELECT sequence, identity, kind, body FROM durability_records WHERE session_id = ? AND sequence > ? AND sequence <= ? ORDER BY sequence LIMIT ?';

function corrupt(sessionId: SessionId, message: string, sequence?: number): DurabilityError {
  return new DurabilityError('DURABILITY_CORRUPT_RECORD', `session ${sessionId}: ${message}`, {
    details: sequence === undefined ? { sessionId } : { sessionId, sequence },
  });
}

/** Runs `fn`; a non-domain failure (a driver error) becomes `code`. */
function guard<T>(code: 'DURABLE_EVENT_WRITE_FAILED' | 'DURABLE_EVENT_READ_FAILED', fn: () => T): T {
  try {
    return fn();
  } catch (error) {
    if (error instanceof DurableError) throw error;
    const message = error instanceof Error ? error.message : String(error);
    const verb = code === 'DURABLE_EVENT_WRITE_FAILED' ? 'write' : 'read';
    throw new DurableEventStoreError(code, `SQLite durability ${verb} failed: ${message}`, { cause: error });
  }
}

/**
 * The synchronous durability records over a migrated {@link SqlDriver} (construct the event
 * `SqlEventLog` first, or call `migrateSqlSchema`). Used by `SqlDurableEventStore`, and directly by
 * code that runs next to the database (the Durable Object).
 *
 * @example
 * const durability = new SqlDurability(driver);
 * const { record, created } = durability.record(sessionId, { kind: 'step', scope: 'run-1', key: 'k', result: 1 });
 */
export class SqlDurability {
  readonly driver: SqlDriver;
  readonly #clock: () => number;
  readonly #onCreateWithin: ((record: DurabilityRecord) => void) | undefined;
  readonly #listeners = new Set<(record: DurabilityRecord) => void>();

  constructor(driver: SqlDriver, options: SqlDurabilityOptions = {}) {
    this.driver = driver;
    this.#clock = options.clock ?? Date.now;
    this.#onCreateWithin = options.onCreateWithin;
  }

  /**
   * Runs `listener` after every committed record this object created (never inside the
   * transaction; a throwing listener is ignored). Returns an unsubscribe function.
   */
  onCreated(listener: (record: DurabilityRecord) => void): () => void {
    this.#listeners.add(listener);
    return () => {
      this.#listeners.delete(listener);
    };
  }

  /**
   * Records `draft` unless its identity exists; see `DurabilityRecordStore.recordDurability`.
   * `within` runs inside the same transaction (created or not); throwing rolls everything back.
   */
  record(sessionId: SessionId, draft: DurabilityRecordDraft, within?: SqlDurabilityWithin): DurabilityRecordResult {
    const id = checkDurabilitySessionId(sessionId);
    const valid = validateDurabilityDraft(draft);
    const identity = durabilityIdentity(valid);
    const result = guard('DURABLE_EVENT_WRITE_FAILED', () =>
      this.driver.transaction(() => {
        const planned = planDurabilityRecord({
          sessionId: id,
          draft: valid,
          existing: this.#byIdentity(id, identity),
          head: this.#head(id),
          nowMs: this.#clock(),
        });
        if (planned.created) {
          const { record } = planned;
          // Plain JSON, not the canonical (sorted-key) form: a replay then returns the result with
          // the key order the step produced. The value was validated lossless, so this is exact.
          this.driver.exec(INSERT_RECORD, id, record.sequence, identity, record.kind, JSON.stringify(record));
          this.#onCreateWithin?.(record);
        }
        within?.(planned);
        return planned;
      }),
    );
    if (result.created) this.#notify(result.record);
    return result;
  }

  #notify(record: DurabilityRecord): void {
    for (const listener of [...this.#listeners]) {
      try {
        listener(record);
      } catch {
        // The record is committed; a failing observer must not turn that into an error.
      }
    }
  }

  /** Reads one page; see `DurabilityRecordStore.readDurability`. */
  read(sessionId: SessionId, options?: Pick<DurabilityReadOptions, 'after' | 'limit'>): DurabilityReadResult {
    const id = checkDurabilitySessionId(sessionId);
    const plan = planDurabilityRead(options);
    return guard('DURABLE_EVENT_READ_FAILED', () => {
      const head = this.#head(id);
      checkDurabilityCursor(plan.after, head);
      const after = plan.after ?? 0;
      const rows = this.driver.query<RecordRow>(SELECT_PAGE, id, after, head ?? 0, plan.limit);
      const expectedCount = Math.min(plan.limit, (head ?? 0) - after);
      if (rows.length !== expectedCount) {
        throw corrupt(id, `expected ${expectedCount} durability records after ${after}, found ${rows.length} (sequence gap)`);
      }
      const records = rows.map((row, index) => this.#decode(id, row, after + index + 1));
      return buildDurabilityPage(records, plan, head);
    });
  }

  /** The durability head of `sessionId` (`null` when empty). */
  head(sessionId: SessionId): number | null {
    const id = checkDurabilitySessionId(sessionId);
    return guard('DURABLE_EVENT_READ_FAILED', () => this.#head(id));
  }

  /** The record stored under `identity` (a `durabilityIdentity` string), parsed, or `undefined`. */
  find(sessionId: SessionId, identity: string): DurabilityRecord | undefined {
    const id = checkDurabilitySessionId(sessionId);
    return guard('DURABLE_EVENT_READ_FAILED', () => this.#byIdentity(id, identity));
  }

  #head(sessionId: SessionId): number | null {
    const rows = this.driver.query<{ head: number | null }>(SELECT_HEAD, sessionId);
    const head = rows[0]?.head ?? null;
    if (head === null) return null;
    if (!Number.isSafeInteger(head) || head < 1) throw corrupt(sessionId, `durability head ${String(head)} is invalid`);
    return head;
  }

  #byIdentity(sessionId: SessionId, identity: string): DurabilityRecord | undefined {
    const row = this.driver.query<RecordRow>(SELECT_BY_IDENTITY, sessionId, identity)[0];
    return row === undefined ? undefined : this.#decode(sessionId, row, row.sequence);
  }

  #decode(sessionId: SessionId, row: RecordRow, expectedSequence: number): DurabilityRecord {
    if (row.sequence !== expectedSequence) {
      throw corrupt(sessionId, `expected durability record ${expectedSequence}, found ${row.sequence} (sequence gap)`, expectedSequence);
    }
    const record = decodeDurabilityRecord(row.body, { sessionId, sequence: expectedSequence });
    if (record.kind !== row.kind || durabilityIdentity(record) !== row.identity) {
      throw corrupt(sessionId, `durability record ${expectedSequence} does not match its row`, expectedSequence);
    }
    return record;
  }
}
