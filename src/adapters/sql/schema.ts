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
 * features (timers, durability records) add a migration to the end of {@link SQL_MIGRATIONS};
 * a released migration is never edited. (Before the first release the `events` layout of
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
    // Small key/value facts about the database itself (e.g. the session a Durable Object serves).
    `CREATE TABLE IF NOT EXISTS ledger_meta (
      key TEXT PRIMARY KEY,
      value TEXT NOT NULL
    )`,
  ],
  [
    // The durability ledger (see sql-durability.ts): one row per record, `body` the canonical
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
    // Deadlines that share a Durable Object's one alarm (sleeps, waitFor timeouts, run retries and
    // the user's own schedules). `kind` namespaces `key`; `payload` is JSON. Unused on Node.
    `CREATE TABLE IF NOT EXISTS timers (
      kind TEXT NOT NULL,
      key TEXT NOT NULL,
      due_ms INTEGER NOT NULL,
      payload TEXT NOT NULL,
      PRIMARY KEY (kind, key)
    )`,
    'CREATE INDEX IF NOT EXISTS timers_by_due ON timers (due_ms)',
    // Tool calls a Durable Object runs for its mounted agents: what a replay needs to re-run one
    // (agent, tool, stable call id, input) and where it stands. Unused on Node.
    `CREATE TABLE IF NOT EXISTS tool_runs (
      session_id TEXT NOT NULL,
      scope TEXT NOT NULL,
      run_id TEXT NOT NULL,
      tool_call_id TEXT NOT NULL,
      agent TEXT NOT NULL,
      tool_name TEXT NOT NULL,
      input TEXT NOT NULL,
      status TEXT NOT NULL CHECK (status IN ('running', 'completed', 'failed')),
      attempts INTEGER NOT NULL DEFAULT 0,
      started_ms INTEGER NOT NULL,
      PRIMARY KEY (session_id, scope)
    )`,
    'CREATE INDEX IF NOT EXISTS tool_runs_by_run ON tool_runs (session_id, run_id)',
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
];

/** The schema version this code reads and writes. */
export const SQL_SCHEMA_VERSION = SQL_MIGRATIONS.length;

/** Version recorded in the database, or 0 for a database without the version table. */
export function readSchemaVersion(driver: SqlDriver): number {
  const table = driver.query<{ name: string }>(
    "SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'",
  );
  if (table.length === 0) return 0;
  const rows = driver.query<{ version: number }>('SELECT version FROM schema_version WHERE id = 1');
  const version = rows[0]?.version ?? 0;
  if (!Number.isSafeInteger(version) || version < 0) {
    throw new DurableEventStoreError('DURABLE_EVENT_CORRUPT_LOG', `schema_version holds ${String(version)}`);
  }
  return version;
}

/**
 * Brings the database to {@link SQL_SCHEMA_VERSION}. Returns the number of migrations applied
 * (0 when it was already current, in which case no DDL ran).
 */
export function migrateSqlSchema(driver: SqlDriver): number {
  if (readSchemaVersion(driver) === SQL_SCHEMA_VERSION) return 0;
  return driver.transaction(() => {
    // Re-read under the write lock: another connection may have migrated meanwhile.
    const from = readSchemaVersion(driver);
    if (from > SQL_SCHEMA_VERSION) {
      throw new DurableEventStoreError(
        'DURABLE_EVENT_UNAVAILABLE',
        `the database has schema version ${from}; this release understands up to ${SQL_SCHEMA_VERSION}`,
        { details: { found: from, supported: SQL_SCHEMA_VERSION } },
      );
    }
    for (const migration of SQL_MIGRATIONS.slice(from)) {
      for (const statement of migration) driver.exec(statement);
    }
    driver.exec(
      'INSERT INTO schema_version (id, version) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET version = excluded.version',
      SQL_SCHEMA_VERSION,
    );
    return SQL_SCHEMA_VERSION - from;
  });
}
