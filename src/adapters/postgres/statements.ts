/**
 * The SQL the store runs, for one schema. Every write is ONE statement that changes the
 * session's row only if it still holds the state the core engine decided on (a compare-and-set on
 * `head` / `lease_version` / `ledger_head`), and writes the event or record rows in the same
 * statement; `RETURNING` (or the row count) says whether it happened. Two forms of each write:
 * - `...Existing`: the session's row is known to exist: a plain conditional UPDATE;
 * - `...New`: the row did not exist when the state was read: INSERT, or, when another writer
 *   created it meanwhile, `ON CONFLICT DO UPDATE ... WHERE` the row is still in its initial state.
 * A conditional UPDATE on a row another transaction is changing waits for that transaction and
 * then re-evaluates its condition on the committed row (READ COMMITTED), so no write is lost and
 * none is applied twice; the primary keys refuse a duplicate sequence at any isolation level.
 */

import { createHash } from 'node:crypto';

/**
 * The prepared-statement name of `text`: `al_` and 32 hex digits of its SHA-256. `pg` keeps
 * prepared statements per connection by name, and a pooled connection serves every store that
 * shares the pool: a name that depends only on the text (which names the schema) is the same for
 * the same statement in every store, schema and release, and differs for different statements.
 * 35 characters, within PostgreSQL's 63.
 */
export function preparedStatementName(text: string): string {
  return `al_${createHash('sha256').update(text).digest('hex').slice(0, 32)}`;
}

/** Columns of a session's state, in the order {@link PostgresStatements.readState} returns them. */
const STATE_COLUMNS =
  'head::text AS head, lease_version::text AS lease_version, lease_id, owner_id, fencing_token::text AS fencing_token, ' +
  'acquired_at_ms::text AS acquired_at_ms, expires_at_ms::text AS expires_at_ms, released, ledger_head::text AS ledger_head';

/** The statements of one schema (`schema` is already quoted). */
export function postgresStatements(schema: string) {
  const sessions = `${schema}.sessions`;
  const events = `${schema}.events`;
  const records = `${schema}.durability_records`;
  /** Inserts the event rows when `s` returned its row. Params: $1 session, $2 old head, $5 bodies, $6 command IDs, $7 digests. */
  const insertEvents =
    `INSERT INTO ${events} (session_id, sequence, command_id, body, digest) ` +
    `SELECT $1, $2::bigint + b.ord, b.command_id, b.body::json, b.digest FROM s, ` +
    `unnest($5::text[], $6::text[], $7::bigint[]) WITH ORDINALITY AS b(body, command_id, digest, ord)`;
  const insertRecord =
    `INSERT INTO ${records} (session_id, sequence, identity, kind, body) SELECT $1, $3::bigint, $4, $5, $6 FROM s`;
  const leaseSet =
    'lease_id = $3, owner_id = $4, fencing_token = $5::bigint, acquired_at_ms = $6::bigint, expires_at_ms = $7::bigint, released = $8';
  return {
    /** $1 session. */
    readState: `SELECT ${STATE_COLUMNS} FROM ${sessions} WHERE session_id = $1`,
    /** $1 session; locks the row (the fallback path, inside a transaction). */
    readStateForUpdate: `SELECT ${STATE_COLUMNS} FROM ${sessions} WHERE session_id = $1 FOR UPDATE`,
    /** $1 session: creates the row if missing (fallback path). */
    ensureSession: `INSERT INTO ${sessions} (session_id) VALUES ($1) ON CONFLICT (session_id) DO NOTHING`,
    /** $1 session, $2 old head, $3 new head, $4 lease version, $5 bodies, $6 command IDs, $7 digests. */
    appendExisting:
      `WITH s AS (UPDATE ${sessions} SET head = $3::bigint WHERE session_id = $1 AND head = $2::bigint ` +
      `AND lease_version = $4::bigint RETURNING 1) ${insertEvents}`,
    /** Same parameters; $2 and $4 are 0. */
    appendNew:
      `WITH s AS (INSERT INTO ${sessions} AS cur (session_id, head) VALUES ($1, $3::bigint) ` +
      `ON CONFLICT (session_id) DO UPDATE SET head = $3::bigint ` +
      `WHERE cur.head = $2::bigint AND cur.lease_version = $4::bigint RETURNING 1) ${insertEvents}`,
    /** $1 session, $2 old lease version, $3..$8 lease columns. Returns the new version. */
    leaseExisting:
      `UPDATE ${sessions} SET lease_version = lease_version + 1, ${leaseSet} ` +
      `WHERE session_id = $1 AND lease_version = $2::bigint RETURNING lease_version::text AS lease_version`,
    leaseNew:
      `INSERT INTO ${sessions} AS cur (session_id, lease_version, lease_id, owner_id, fencing_token, acquired_at_ms, expires_at_ms, released) ` +
      `VALUES ($1, 1, $3, $4, $5::bigint, $6::bigint, $7::bigint, $8) ` +
      `ON CONFLICT (session_id) DO UPDATE SET lease_version = cur.lease_version + 1, ${leaseSet} ` +
      `WHERE cur.lease_version = $2::bigint RETURNING lease_version::text AS lease_version`,
    /** $1 session, $2 old durability head, $3 new sequence, $4 identity, $5 kind, $6 body. */
    recordExisting:
      `WITH s AS (UPDATE ${sessions} SET ledger_head = $3::bigint WHERE session_id = $1 AND ledger_head = $2::bigint ` +
      `RETURNING 1) ${insertRecord}`,
    recordNew:
      `WITH s AS (INSERT INTO ${sessions} AS cur (session_id, ledger_head) VALUES ($1, $3::bigint) ` +
      `ON CONFLICT (session_id) DO UPDATE SET ledger_head = $3::bigint WHERE cur.ledger_head = $2::bigint RETURNING 1) ` +
      insertRecord,
    /**
     * $1 session, $2 after, $3 limit: the head (the row with `head` set) and one page (rows with
     * `sequence` set), from one snapshot: a statement sees one snapshot, and the head and the
     * event rows change in one statement, so no row past the head is ever visible.
     */
    readPage:
      `SELECT head::text AS head, NULL::text AS sequence, NULL::text AS body FROM ${sessions} WHERE session_id = $1 ` +
      // `e.sequence`, qualified: a bare `sequence` would sort by the text output column.
      `UNION ALL (SELECT NULL, e.sequence::text, e.body::text FROM ${events} e WHERE e.session_id = $1 ` +
      `AND e.sequence > $2::bigint ORDER BY e.sequence LIMIT $3::int)`,
    /** $1 session, $2 after, $3 limit: the stored digests of the rows after `$2`, whatever the head. */
    readDigests:
      `SELECT sequence::text AS sequence, digest::text AS digest FROM ${events} WHERE session_id = $1 ` +
      `AND sequence > $2::bigint ORDER BY sequence LIMIT $3::int`,
    /** $1 session. */
    readHead: `SELECT head::text AS head FROM ${sessions} WHERE session_id = $1`,
    /** $1 session IDs. */
    readHeads: `SELECT session_id, head::text AS head, ledger_head::text AS ledger_head FROM ${sessions} WHERE session_id = ANY($1::text[])`,
    /** $1 session, $2 identity: the durability head and the record stored under the identity. */
    readRecordState:
      `SELECT s.ledger_head::text AS ledger_head, r.sequence::text AS sequence, r.identity, r.kind, r.body ` +
      `FROM (SELECT $1::text AS session_id) k LEFT JOIN ${sessions} s ON s.session_id = k.session_id ` +
      `LEFT JOIN ${records} r ON r.session_id = k.session_id AND r.identity = $2`,
    /** $1 session, $2 after, $3 limit. */
    readRecordPage:
      `SELECT s.ledger_head::text AS ledger_head, r.sequence::text AS sequence, r.identity, r.kind, r.body FROM ${sessions} s ` +
      `LEFT JOIN LATERAL (SELECT sequence, identity, kind, body FROM ${records} WHERE session_id = s.session_id ` +
      `AND sequence > $2::bigint AND sequence <= s.ledger_head ORDER BY sequence LIMIT $3::int) r ON true ` +
      `WHERE s.session_id = $1 ORDER BY r.sequence`,
    /** $1 session: the head row, joined with its chunks in order (one snapshot of both tables). */
    readCheckpoint:
      `SELECT h.sequence::text AS sequence, h.event_id, h.data, h.chunks, h.bytes::text AS bytes, c.chunk, c.data AS chunk_data ` +
      `FROM ${schema}.checkpoints h LEFT JOIN ${schema}.checkpoint_chunks c ON c.session_id = h.session_id AND c.chunk < h.chunks ` +
      'WHERE h.session_id = $1 ORDER BY c.chunk',
    /** $1 session, $2 sequence, $3 event ID, $4 chunks, $5 bytes: sets the head (the bytes are in chunks). */
    writeCheckpointHead:
      `INSERT INTO ${schema}.checkpoints (session_id, sequence, event_id, data, chunks, bytes) VALUES ($1, $2::bigint, $3, '\\x'::bytea, $4::int, $5::bigint) ` +
      'ON CONFLICT (session_id) DO UPDATE SET sequence = EXCLUDED.sequence, event_id = EXCLUDED.event_id, ' +
      'data = EXCLUDED.data, chunks = EXCLUDED.chunks, bytes = EXCLUDED.bytes, written_at = now()',
    /** $1 session: the head row, locked for the transaction. */
    lockCheckpointHead: `SELECT chunks, bytes::text AS bytes FROM ${schema}.checkpoints WHERE session_id = $1 FOR UPDATE`,
    /** $1 session, $2 chunk: the chunk's last 8 bytes. */
    checkpointChunkTail:
      `SELECT substring(data FROM greatest(octet_length(data) - 7, 1) FOR 8) AS tail FROM ${schema}.checkpoint_chunks ` +
      'WHERE session_id = $1 AND chunk = $2::int',
    /** $1 session. */
    deleteCheckpointChunks: `DELETE FROM ${schema}.checkpoint_chunks WHERE session_id = $1`,
    /** $1 session, $2 first chunk to delete. */
    deleteCheckpointChunksFrom: `DELETE FROM ${schema}.checkpoint_chunks WHERE session_id = $1 AND chunk >= $2::int`,
    /** $1 session, $2 chunk, $3 bytes. */
    insertCheckpointChunk: `INSERT INTO ${schema}.checkpoint_chunks (session_id, chunk, data) VALUES ($1, $2::int, $3)`,
    /** $1 session, $2 command ID. */
    findCommand:
      `SELECT min(sequence)::text AS first, max(sequence)::text AS last, count(*)::text AS count FROM ${events} ` +
      `WHERE session_id = $1 AND command_id = $2`,
    /**
     * $1 after position, $2 limit: events in global order, only from transactions older than every
     * transaction still running (`pg_snapshot_xmin`), so a slow transaction that commits later with
     * lower positions is never skipped: the reader waits for it instead.
     */
    readGlobal:
      `SELECT e.position::text AS position, e.session_id, e.sequence::text AS sequence, e.body::text AS body FROM ${events} e ` +
      `WHERE e.position > $1::bigint AND e.tx_id < pg_snapshot_xmin(pg_current_snapshot()) ORDER BY e.position LIMIT $2::int`,
  };
}

/** The statements of one schema. */
export type PostgresStatements = ReturnType<typeof postgresStatements>;

/** Quotes `text` as an SQL string literal (the way `pg`'s `escapeLiteral` does). */
export function quoteLiteral(text: string): string {
  const quoted = `'${text.replaceAll("'", "''").replaceAll('\\', '\\\\')}'`;
  return text.includes('\\') ? ` E${quoted}` : quoted;
}

/**
 * One simple-protocol query that sends every payload on `channel` (quoted identifier text). A
 * plain `NOTIFY` statement needs no parameters, parse or plan, and a transaction that only
 * notifies writes no commit record to flush, so it is heard sooner than `SELECT pg_notify($1, $2)`
 * (figures in docs/performance-history.md).
 */
export function notifyStatement(channel: string, payloads: readonly string[]): string {
  return payloads.map((payload) => `NOTIFY "${channel}", ${quoteLiteral(payload)}`).join('; ');
}
