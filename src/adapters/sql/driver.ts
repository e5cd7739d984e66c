/**
 * The minimal synchronous SQLite driver the SQL store runs on.
 *
 * Two runtimes provide it: a Durable Object's `ctx.storage.sql` (with `transactionSync`) and
 * better-sqlite3 under Node. Both are synchronous, which is the point: the store reads the head
 * and lease, decides, and writes inside one `transaction` callback with nothing awaited in
 * between, so no other call on the same connection can interleave.
 *
 * Rules for implementations:
 * 1. `exec` and `query` run exactly one statement with positional `?` parameters.
 * 2. `query` returns plain row objects keyed by column name (snake_case, as stored).
 * 3. `transaction(fn)` runs `fn` atomically: if `fn` throws, nothing it wrote persists and the
 *    error propagates unchanged. Implementations should take the write lock up front (SQLite
 *    `BEGIN IMMEDIATE`) so a read-then-write transaction cannot fail half-way on a lock upgrade.
 * 4. A lock that stays busy past the driver's timeout surfaces as
 *    `DurableEventStoreError('DURABLE_EVENT_LOCK_TIMEOUT')`.
 */

/**
 * A value SQLite can bind or return. Blobs (`Uint8Array`) are used only by the checkpoint table;
 * a driver may return them as `ArrayBuffer` (the Durable Object does), and readers accept both.
 */
export type SqlValue = string | number | null | Uint8Array;

/** Synchronous access to one SQLite database. */
export interface SqlDriver {
  /** Runs one statement that returns no rows (DDL, INSERT, UPDATE, DELETE). */
  exec(sql: string, ...params: SqlValue[]): void;
  /** Runs one statement and returns its rows. */
  query<T>(sql: string, ...params: SqlValue[]): T[];
  /** Runs `fn` as one atomic transaction and returns its result. */
  transaction<T>(fn: () => T): T;
}
