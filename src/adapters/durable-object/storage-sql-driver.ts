/**
 * {@link SqlDriver} over a Durable Object's SQLite storage.
 *
 * `ctx.storage.sql.exec` runs one statement synchronously and returns a cursor (drained here with
 * `toArray()`); `ctx.storage.transactionSync(fn)` runs `fn` atomically, rolling back if it throws.
 * The object's single thread plus the synchronous calls mean nothing else runs between a read and
 * the write that depends on it. The storage types are structural so this file needs no
 * `@cloudflare/workers-types` at compile time.
 */
import type { SqlDriver, SqlValue } from '../sql/driver.js';

/** The part of `DurableObjectStorage` the driver uses. */
export interface DurableObjectSqlStorageLike {
  sql: {
    exec(query: string, ...bindings: (string | number | null | ArrayBuffer)[]): { toArray(): unknown[] };
  };
  transactionSync<T>(closure: () => T): T;
}

/** Blobs are bound as `ArrayBuffer` (what the storage API takes). */
function binding(value: SqlValue): string | number | null | ArrayBuffer {
  if (!(value instanceof Uint8Array)) return value;
  // SAFETY: a fresh copy's buffer is a plain ArrayBuffer of exactly these bytes.
  return value.slice().buffer as ArrayBuffer;
}

/** A synchronous SQL driver on `ctx.storage` of a SQLite-backed Durable Object. */
export class DurableObjectSqlDriver implements SqlDriver {
  readonly #storage: DurableObjectSqlStorageLike;

  constructor(storage: DurableObjectSqlStorageLike) {
    this.#storage = storage;
  }

  exec(sql: string, ...params: SqlValue[]): void {
    this.#storage.sql.exec(sql, ...params.map(binding)).toArray();
  }

  query<T>(sql: string, ...params: SqlValue[]): T[] {
    // SAFETY: callers name the columns they select; rows are plain objects keyed by column.
    return this.#storage.sql.exec(sql, ...params.map(binding)).toArray() as T[];
  }

  transaction<T>(fn: () => T): T {
    return this.#storage.transactionSync(fn);
  }
}
