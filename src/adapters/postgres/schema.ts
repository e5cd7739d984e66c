/**
 * The PostgreSQL schema: versioned migrations, applied by the store or printed for a DBA.
 *
 * Everything lives in one PostgreSQL schema (default `agent_ledger`, see {@link checkSchemaName}),
 * so one database can host several independent stores and nothing touches `public`:
 * - `schema_migrations(version, description, applied_at)`: one row per applied migration.
 * - `sessions`: one row per session that has events, lease state or durability records. It is
 *   the session's serialization point: `head` (last event sequence, 0 when none), the execution
 *   lease columns with `lease_version` (bumped by every lease change), and `ledger_head` (last
 *   durability record sequence; a storage name, kept for existing databases). Every write is a single statement that updates this row only if
 *   it still holds the values the core engine decided on (see `postgres-store.ts`).
 * - `events(session_id, sequence, command_id, body, tx_id, position, digest)`: one row per event. The
 *   primary key `(session_id, sequence)` makes a duplicate sequence impossible whatever the
 *   isolation level; `command_id` (copied from the envelope) is indexed for reconciliation;
 *   `body` is the exact JSON the engine measured. `tx_id` and `position` (migration 2) give a
 *   global order across sessions that never skips a transaction committing late. `digest`
 *   (migration 5) is the event's content digest, written with the row (NULL on older rows).
 * - `durability_records(session_id, sequence, identity, kind, body)`: the durability records,
 *   `UNIQUE (session_id, identity)` backing first-writer-wins.
 * - `checkpoints(session_id, sequence, event_id, data, written_at, chunks, bytes)` (migrations 3
 *   and 4): the head of the latest projection checkpoint per session, and
 *   `checkpoint_chunks(session_id, chunk, data)` (migration 4) its bytes; replaced atomically, or
 *   extended by one chunk (see `writeCheckpoint`).
 *
 * Rules: entry `i` of {@link POSTGRES_MIGRATIONS} moves the schema from version `i` to `i + 1`;
 * a released migration is never edited; the store applies the missing ones in ONE transaction
 * under a transaction-scoped advisory lock (`pg_advisory_xact_lock`), so concurrent openers
 * migrate once and a crash mid-migration leaves the previous version; a database ahead of this
 * code is refused.
 */
import { DurableEventStoreError } from '../../protocol/errors.js';

/** Default PostgreSQL schema of the ledger's tables. */
export const DEFAULT_POSTGRES_SCHEMA = 'agent_ledger';

/** One migration: what it does, and its statements with `{schema}` standing for the quoted schema name. */
export interface PostgresMigration {
  description: string;
  statements: readonly string[];
}

/** Every migration, in order. */
export const POSTGRES_MIGRATIONS: readonly PostgresMigration[] = [
  {
    description: 'sessions, events, durability records',
    statements: [
      `CREATE TABLE {schema}.sessions (
  session_id     text PRIMARY KEY,
  head           bigint NOT NULL DEFAULT 0 CHECK (head >= 0),
  lease_version  bigint NOT NULL DEFAULT 0 CHECK (lease_version >= 0),
  lease_id       text,
  owner_id       text,
  fencing_token  bigint CHECK (fencing_token >= 1),
  acquired_at_ms bigint,
  expires_at_ms  bigint,
  released       boolean,
  ledger_head    bigint NOT NULL DEFAULT 0 CHECK (ledger_head >= 0),
  CHECK ((lease_version = 0) = (lease_id IS NULL))
)`,
      `CREATE TABLE {schema}.events (
  session_id text   NOT NULL,
  sequence   bigint NOT NULL CHECK (sequence >= 1),
  command_id text,
  body       json   NOT NULL,
  PRIMARY KEY (session_id, sequence)
)`,
      `CREATE INDEX events_by_command ON {schema}.events (session_id, command_id) WHERE command_id IS NOT NULL`,
      `CREATE TABLE {schema}.durability_records (
  session_id text   NOT NULL,
  sequence   bigint NOT NULL CHECK (sequence >= 1),
  identity   text   NOT NULL,
  kind       text   NOT NULL,
  body       text   NOT NULL,
  PRIMARY KEY (session_id, sequence),
  UNIQUE (session_id, identity)
)`,
    ],
  },
  {
    description: 'global order of events (xid8 snapshot technique)',
    statements: [
      `ALTER TABLE {schema}.events ADD COLUMN tx_id xid8 NOT NULL DEFAULT pg_current_xact_id()`,
      `ALTER TABLE {schema}.events ADD COLUMN position bigint GENERATED ALWAYS AS IDENTITY`,
      `CREATE UNIQUE INDEX events_by_position ON {schema}.events (position)`,
    ],
  },
  {
    description: 'projection checkpoints',
    statements: [
      // The latest projection checkpoint per session (derived data, see docs/checkpoints.md):
      // one row, replaced by one INSERT ... ON CONFLICT DO UPDATE, so a reader sees the old
      // record or the new one. `bytea` has no practical size limit here (1 GB), so no chunks.
      `CREATE TABLE {schema}.checkpoints (
  session_id text   PRIMARY KEY,
  sequence   bigint NOT NULL CHECK (sequence >= 1),
  event_id   text   NOT NULL,
  data       bytea  NOT NULL,
  written_at timestamptz NOT NULL DEFAULT now()
)`,
    ],
  },
  {
    description: 'checkpoint chunks (extensions append a chunk)',
    statements: [
      // A checkpoint whose `chunks` is set is chunks 0 .. chunks - 1 of checkpoint_chunks,
      // concatenated, `bytes` long (its `data` is empty); one whose `chunks` is null is a record
      // written before this migration, whole in `data`. An extension inserts one chunk and moves
      // the head row in one transaction, so the bytes written before it are never rewritten (a
      // bytea update rewrites the whole value, and its WAL).
      `CREATE TABLE {schema}.checkpoint_chunks (
  session_id text    NOT NULL,
  chunk      integer NOT NULL CHECK (chunk >= 0),
  data       bytea   NOT NULL,
  PRIMARY KEY (session_id, chunk)
)`,
      // Key hashes do not compress: skip the attempt.
      `ALTER TABLE {schema}.checkpoint_chunks ALTER COLUMN data SET STORAGE EXTERNAL`,
      `ALTER TABLE {schema}.checkpoints ADD COLUMN chunks integer CHECK (chunks >= 1)`,
      `ALTER TABLE {schema}.checkpoints ADD COLUMN bytes bigint CHECK (bytes >= 1)`,
    ],
  },
  {
    description: 'per-event content digests',
    statements: [
      // Each event's content digest (`eventDigest` of core/checkpoint/event-digest.ts), written
      // with its row; `verify` recomputes it. Without a default, adding the column rewrites no
      // row; rows written before keep NULL (not backfilled: a digest computed now would vouch for
      // whatever the row holds now).
      `ALTER TABLE {schema}.events ADD COLUMN digest bigint`,
    ],
  },
];

/** The schema version this code reads and writes. */
export const POSTGRES_SCHEMA_VERSION = POSTGRES_MIGRATIONS.length;

/** Validates a schema name (lower-case letters, digits, `_`; at most 63 bytes) and returns it quoted. */
export function checkSchemaName(schema: unknown): string {
  if (typeof schema !== 'string' || !/^[a-z_][a-z0-9_]{0,62}$/.test(schema)) {
    throw new DurableEventStoreError(
      'DURABLE_EVENT_INVALID_OPTIONS',
      'schema must be a lower-case PostgreSQL identifier (letters, digits, _; at most 63 characters)',
    );
  }
  return `"${schema}"`;
}

/** The statements of migration `index` for `schema`. */
export function migrationStatements(index: number, schema: string): string[] {
  const quoted = checkSchemaName(schema);
  const migration = POSTGRES_MIGRATIONS[index];
  if (migration === undefined) throw new RangeError(`no migration ${index}`);
  return migration.statements.map((statement) => statement.replaceAll('{schema}', quoted));
}

/** The bookkeeping statements every migration run starts with. */
export function bootstrapStatements(schema: string): string[] {
  const quoted = checkSchemaName(schema);
  return [
    `CREATE SCHEMA IF NOT EXISTS ${quoted}`,
    `CREATE TABLE IF NOT EXISTS ${quoted}.schema_migrations (
  version     integer PRIMARY KEY CHECK (version >= 1),
  description text NOT NULL,
  applied_at  timestamptz NOT NULL DEFAULT now()
)`,
  ];
}

/**
 * The whole schema as one SQL script, for a DBA who applies migrations by hand (then open the
 * store with `migrate: false`). `from` skips migrations already applied (default 0: all).
 *
 * @example
 * // node --import tsx -e "import('agent-ledger/postgres').then((m) => console.log(m.postgresMigrationSql()))"
 * const script = postgresMigrationSql({ schema: 'agent_ledger' });
 */
export function postgresMigrationSql(options: { schema?: string; from?: number } = {}): string {
  const schema = options.schema ?? DEFAULT_POSTGRES_SCHEMA;
  const quoted = checkSchemaName(schema);
  const from = options.from ?? 0;
  const lines = ['BEGIN;', ...bootstrapStatements(schema).map((s) => `${s};`)];
  for (let index = from; index < POSTGRES_MIGRATIONS.length; index++) {
    const migration = POSTGRES_MIGRATIONS[index] as PostgresMigration;
    lines.push(`-- migration ${index + 1}: ${migration.description}`);
    lines.push(...migrationStatements(index, schema).map((s) => `${s};`));
    lines.push(
      `INSERT INTO ${quoted}.schema_migrations (version, description) VALUES (${index + 1}, '${migration.description.replaceAll("'", "''")}');`,
    );
  }
  lines.push('COMMIT;');
  return `${lines.join('\n')}\n`;
}

/** Key of the transaction-scoped advisory lock that serializes migrations of one schema. */
export function migrationLockKey(schema: string): string {
  return `agent-ledger migrate ${schema}`;
}
