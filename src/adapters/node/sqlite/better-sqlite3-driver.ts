/**
 * {@link SqlDriver} over one better-sqlite3 connection.
 *
 * 1. Statements are prepared once and cached by their SQL text.
 * 2. `transaction` starts with `BEGIN IMMEDIATE`, taking SQLite's write lock before the first read,
 *    so a read-decide-write transaction never fails half-way on a lock upgrade and two processes
 *    writing the same file serialize. A nested call becomes a savepoint (better-sqlite3 does this).
 * 3. Waiting for another process's lock is bounded by the connection's `busy_timeout`; when it
 *    expires SQLite reports `SQLITE_BUSY`, which this driver turns into
 *    `DURABLE_EVENT_LOCK_TIMEOUT`. A closed connection is `DURABLE_EVENT_UNAVAILABLE`.
 */
import type Database from 'better-sqlite3';
import { DurableEventStoreError } from '../../../protocol/errors.js';
import type { SqlDriver, SqlValue } from '../../sql/driver.js';

function isBusy(error: unknown): boolean {
  const code = typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined;
  return typeof code === 'string' && (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED'));
}

/** A synchronous SQL driver over a better-sqlite3 `Database`. */
export class BetterSqlite3Driver implements SqlDriver {
  readonly #db: Database.Database;
  readonly #statements = new Map<string, Database.Statement>();

  constructor(db: Database.Database) {
    this.#db = db;
  }

  #statement(sql: string): Database.Statement {
    if (!this.#db.open) throw new DurableEventStoreError('DURABLE_EVENT_UNAVAILABLE', 'the SQLite store is closed');
    let statement = this.#statements.get(sql);
    if (statement === undefined) {
      statement = this.#db.prepare(sql);
      this.#statements.set(sql, statement);
    }
    return statement;
  }

  #run<T>(fn: () => T): T {
    try {
      return fn();
    } catch (error) {
      if (isBusy(error)) {
        throw new DurableEventStoreError('DURABLE_EVENT_LOCK_TIMEOUT', 'the SQLite database stayed locked by another connection', {
          cause: error,
        });
      }
      throw error;
    }
  }

  exec(sql: string, ...params: SqlValue[]): void {
    this.#run(() => this.#statement(sql).run(...params));
  }

  query<T>(sql: string, ...params: SqlValue[]): T[] {
    // SAFETY: callers name the columns they select; rows are plain objects keyed by column.
    return this.#run(() => this.#statement(sql).all(...params) as T[]);
  }

  transaction<T>(fn: () => T): T {
    if (!this.#db.open) throw new DurableEventStoreError('DURABLE_EVENT_UNAVAILABLE', 'the SQLite store is closed');
    return this.#run(() => this.#db.transaction(fn).immediate());
  }
}
