/**
 * The tables only the session object uses, next to the object (the shared store schema in
 * `src/adapters/sql/schema.ts` holds what every SQL backend stores).
 *
 * They have their own version row (`object_schema_version`) and are migrated by the same
 * `migrateSqlSchema`, in the object's constructor, after the store's schema: a new object table
 * is one more entry at the end of {@link OBJECT_MIGRATIONS}, and Node databases never get it.
 * (Version 2 of the shared schema created `timers` and `tool_runs` in objects created by earlier
 * releases; the statements below are `IF NOT EXISTS`, so those objects migrate without change.)
 */
import type { SqlSchema } from '../adapters/sql/schema.js';

/** Migrations of the object's own tables, in order. */
export const OBJECT_MIGRATIONS: ReadonlyArray<readonly string[]> = [
  [
    // Deadlines that share the object's one alarm (sleeps, waitFor timeouts, run retries and the
    // user's own schedules). `kind` namespaces `key`; `payload` is JSON. See `timers.ts`.
    `CREATE TABLE IF NOT EXISTS timers (
      kind TEXT NOT NULL,
      key TEXT NOT NULL,
      due_ms INTEGER NOT NULL,
      payload TEXT NOT NULL,
      PRIMARY KEY (kind, key)
    )`,
    'CREATE INDEX IF NOT EXISTS timers_by_due ON timers (due_ms)',
    // Tool calls the object runs for its mounted agents: what a replay needs to re-run one
    // (agent, tool, stable call id, input) and where it stands. See `runs.ts`.
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
];

/** The object's own schema, for `migrateSqlSchema`. */
export const OBJECT_SCHEMA: SqlSchema = { versionTable: 'object_schema_version', migrations: OBJECT_MIGRATIONS };
