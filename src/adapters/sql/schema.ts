/**
 * The versioned SQL schema shared by the Durable Object and better-sqlite3.
 *
 * 1. One row in `schema_version` records how far the database has been migrated.
 * 2. Opening a store reads that row; when it equals {@link SQL_SCHEMA_VERSION} no DDL runs at all.
 * 3. When the database is behind, every missing migration runs, and the version row is updated,
 *    inside ONE transaction: a crash mid-migration leaves the previous version intact.
 * 4. A database written by a newer release (version ahead of this code) is refused rather than
 *    guessed at.
 *
 * Tables are snake_case at rest; `sql-store.ts` maps rows to the camelCase API shapes. Later
 * features add a migration to the end of {@link SQL_MIGRATIONS}; a released migration is never
 * edited. Tables only one host uses live with that host, in a schema of their own with its own
 * version table (the Durable Object's timers and tool runs: `src/edge/schema.ts`),
 * migrated by the same {@link migrateSqlSchema}. (Before the first release the `events` layout of
 * version 1 was still changed in place; a database created by an earlier build of this
 * repository must be recreated.)
 */
import { DurableEventStoreError } from '../../protocol/errors.js';
import type { SqlDriver } from './driver.js';

/**
 * Migrations in order: entry `i` moves the schema from version `i` to `i + 1`.
 * Each entry is a list of single statements.
 */
export const SQL_MIGRATIONS: ReadonlyArray<readonly string[]> = [
  [
    `CREATE TABLE IF NOT EXISTS schema_version (
      id INTEGER PRIMARY KEY CHECK (id = 1),
      version INTEGER NOT NULL
    )`,
    // Sessions that have events, each with a small integer key (see `event-rows.ts`).
    `CREATE TABLE IF NOT EXISTS session_keys (
      session_key INTEGER PRIMARY KEY,
      session_id TEXT NOT NULL UNIQUE
    )`,
    // One row per event, `body` the whole envelope as JSON. The row id packs the session's key
    // and the sequence (`session_key * 2^32 + sequence`), so a session's log is one rowid range
    // and an append writes one b-tree; the two parts are also readable as virtual columns, and
    // reads check them against the body. No other column or index: nothing looks events up by
    // event ID, whose uniqueness comes from its 122 random bits (a random UUID per event) and is
    // checked where it matters, by the projector (`duplicate_event_id`).
    `CREATE TABLE IF NOT EXISTS events (
      position INTEGER PRIMARY KEY,
      body TEXT NOT NULL,
      session_key INTEGER GENERATED ALWAYS AS (position >> 32) VIRTUAL,
      sequence INTEGER GENERATED ALWAYS AS (position & 4294967295) VIRTUAL
    )`,
    // Execution lease state per session, as JSON (see `LeaseState` in the log engine).
    `CREATE TABLE IF NOT EXISTS leases (
      session_id TEXT PRIMARY KEY,
      state TEXT NOT NULL
    )`,
    // Small key/value facts about the database itself (e.g. the session a Durable Object serves);
    // `ledger_meta` is a storage name (the product's), kept for existing databases.
    `CREATE TABLE IF NOT EXISTS ledger_meta (
      key TEXT PRIMARY KEY,
      value TEXT NOT NULL
    )`,
  ],
  [
    // The durability records (see sql-durability.ts): one row per record, `body` the canonical
    // record JSON; `identity` is `durabilityIdentity(record)`, unique per session, which is what
    // makes the first writer win.
    `CREATE TABLE IF NOT EXISTS durability_records (
      session_id TEXT NOT NULL,
      sequence INTEGER NOT NULL CHECK (sequence >= 1),
      identity TEXT NOT NULL,
      kind TEXT NOT NULL,
      body TEXT NOT NULL,
      PRIMARY KEY (session_id, sequence),
      UNIQUE (session_id, identity)
    )`,
  ],
  [
    // Projection checkpoints (derived data): the latest one per session, in chunks.
    `CREATE TABLE IF NOT EXISTS checkpoints (
      session_id TEXT NOT NULL,
      chunk INTEGER NOT NULL CHECK (chunk >= 0),
      chunks INTEGER NOT NULL CHECK (chunks >= 1),
      sequence INTEGER NOT NULL CHECK (sequence >= 1),
      event_id TEXT NOT NULL,
      data BLOB NOT NULL,
      PRIMARY KEY (session_id, chunk)
    )`,
  ],
  [
    // Where each session's checkpoint ends (see sql-checkpoints.ts): its position, its number of
    // chunks and of bytes. An extension appends chunk rows and moves this row in one transaction,
    // so the rows written before it are never rewritten. A session without a row here has a
    // checkpoint written by an earlier version (each chunk row carries the position) or none.
    `CREATE TABLE IF NOT EXISTS checkpoint_heads (
      session_id TEXT PRIMARY KEY,
      sequence INTEGER NOT NULL CHECK (sequence >= 1),
      event_id TEXT NOT NULL,
      chunks INTEGER NOT NULL CHECK (chunks >= 1),
      bytes INTEGER NOT NULL CHECK (bytes >= 1)
    )`,
  ],
  [
    // Each event's content digest (`eventDigest` of core/checkpoint/event-digest.ts), written with
    // its row; `verify` recomputes it. Rows written before this migration keep NULL (not backfilled:
    // a digest computed now would vouch for whatever the row holds now).
    `ALTER TABLE events ADD COLUMN digest INTEGER`,
  ],
];

/** The schema version this code reads and writes. */
export const SQL_SCHEMA_VERSION = SQL_MIGRATIONS.length;

/** A versioned set of tables: its migrations and the one-row table recording its version. */
export interface SqlSchema {
  /** Table holding `(id = 1, version)`; created by the schema's first migration or here. */
  readonly versionTable: string;
  /** Entry `i` moves the schema from version `i` to `i + 1`. */
  readonly migrations: ReadonlyArray<readonly string[]>;
}

/** The shared store schema (events, leases, durability records, checkpoints). */
export const SQL_STORE_SCHEMA: SqlSchema = { versionTable: 'schema_version', migrations: SQL_MIGRATIONS };

/** Version recorded in the database, or 0 for a database without the version table. */
export function readSchemaVersion(driver: SqlDriver, versionTable: string = SQL_STORE_SCHEMA.versionTable): number {
  const table = driver.query<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' AND name = ?", versionTable);
  if (table.length === 0) return 0;
  const rows = driver.query<{ version: number }>(`SELECT version FROM ${versionTable} WHERE id = 1`);
  const version = rows[0]?.version ?? 0;
  if (!Number.isSafeInteger(version) || version < 0) {
    throw new DurableEventStoreError('DURABLE_EVENT_CORRUPT_LOG', `${versionTable} holds ${String(version)}`);
  }
  return version;
}

/**
 * Brings `schema` (default: the shared store schema, to {@link SQL_SCHEMA_VERSION}) up to date.
 * Returns the number of migrations applied (0 when it was already current: no DDL ran).
 */
export function migrateSqlSchema(driver: SqlDriver, schema: SqlSchema = SQL_STORE_SCHEMA): number {
  const target = schema.migrations.length;
  const table = schema.versionTable;
  if (!/^[a-z_]+$/.test(table)) throw new TypeError(`bad version table name ${table}`);
  if (readSchemaVersion(driver, table) === target) return 0;
  return driver.transaction(() => {
    // Re-read under the write lock: another connection may have migrated meanwhile.
    const from = readSchemaVersion(driver, table);
    if (from > target) {
      throw new DurableEventStoreError(
        'DURABLE_EVENT_UNAVAILABLE',
        `the database has ${table} ${from}; this release understands up to ${target}`,
        { details: { found: from, supported: target } },
      );
    }
    driver.exec(`CREATE TABLE IF NOT EXISTS ${table} (id INTEGER PRIMARY KEY CHECK (id = 1), version INTEGER NOT NULL)`);
    for (const migration of schema.migrations.slice(from)) {
      for (const statement of migration) driver.exec(statement);
    }
    driver.exec(
      `INSERT INTO ${table} (id, version) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET version = excluded.version`,
      target,
    );
    return target - from;
  });
}
