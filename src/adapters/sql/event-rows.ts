/**
 * How events are laid out in SQLite, and the statements that read and write them.
 *
 * 1. The first append to a session gives it a small integer key in `session_keys`.
 * 2. An event's row id (`position`) is `session_key * 2^32 + sequence`. A session's log is then
 *    one contiguous range of the `events` rowid b-tree: an append writes that one b-tree (there
 *    is no secondary index), the head is the largest row id of the range, and a page is a range
 *    scan. `session_key` and `sequence` are also virtual columns of the table, for people
 *    reading the database. `digest` (schema version 5) is the event's content digest
 *    (`eventDigest`), written with the row, NULL on rows written before version 5; reads of
 *    events never select it, only {@link readEventDigestRows} does.
 * 3. Positions can exceed 2^53, so the packing is computed by SQLite (64-bit integers); the
 *    statements take the key and sequences as separate parameters.
 * 4. An INSERT carries up to {@link MAX_ROWS_PER_INSERT} events: a Durable Object binds at most
 *    100 parameters per statement, and each statement binds the key, the first sequence and a
 *    body and a digest per row. Smaller statements are powers of two, so at most seven distinct statements
 *    exist and the drivers' statement caches keep them prepared. Parameters are anonymous `?`
 *    (better-sqlite3 would take numbered `?NNN` ones for named parameters).
 * Limits: sequences up to {@link MAX_SEQUENCE} per session, and {@link MAX_SESSION_KEY}
 * sessions per database.
 */
import { DurableEventStoreError } from '../../protocol/errors.js';
import type { SessionId } from '../../protocol/ids.js';
import { countWithinByteBudget } from '../../core/log-engine.js';
import type { SqlDriver, SqlValue } from './driver.js';

/** Highest sequence a session can reach (2^32 - 1). */
export const MAX_SEQUENCE = 0xffff_ffff;
/** Highest session key, so that every position stays below 2^63. */
const MAX_SESSION_KEY = 0x7fff_ffff;
/** Most events one INSERT statement carries (2 + 2 * 32 parameters; the limit is 100). */
export const MAX_ROWS_PER_INSERT = 32;

/** A stored event as the page query returns it. */
export interface EventRow {
  sequence: number;
  body: string;
}

const SELECT_KEY = 'SELECT session_key FROM session_keys WHERE session_id = ?';
const INSERT_KEY = 'INSERT INTO session_keys (session_id) VALUES (?) RETURNING session_key';
/** Parameters: key, key. */
const SELECT_HEAD =
  'SELECT MAX(position) & 4294967295 AS head FROM events WHERE position BETWEEN (? << 32) + 1 AND (? << 32) + 4294967295';
/** Parameters: key, after, key, through, limit. */
const SELECT_PAGE =
  'SELECT position & 4294967295 AS sequence, body FROM events ' +
  'WHERE position > (? << 32) + ? AND position <= (? << 32) + ? ORDER BY position LIMIT ?';

/**
 * Parameters as {@link SELECT_PAGE}. `octet_length` reads only the record header (SQLite >= 3.43
 * skips loading the value), so sizing a page costs no body I/O.
 */
const SELECT_PAGE_SIZES =
  'SELECT octet_length(body) AS bytes FROM events ' +
  'WHERE position > (? << 32) + ? AND position <= (? << 32) + ? ORDER BY position LIMIT ?';

/** Parameters: key, after, key, limit: every row after `after`, whatever the head. */
const SELECT_DIGESTS =
  'SELECT position & 4294967295 AS sequence, digest FROM events ' +
  'WHERE position > (? << 32) + ? AND position <= (? << 32) + 4294967295 ORDER BY position LIMIT ?';

const insertStatements = new Map<number, string>();

/** The statement inserting `rows` events; parameters: key, first sequence, then body and digest per row. */
function insertStatement(rows: number): string {
  let statement = insertStatements.get(rows);
  if (statement === undefined) {
    const values = Array.from({ length: rows }, (_, offset) => `(${offset}, ?, ?)`);
    statement =
      'INSERT INTO events (position, body, digest) SELECT (? << 32) + ? + column1, column2, column3 ' +
      `FROM (VALUES ${values.join(', ')})`;
    insertStatements.set(rows, statement);
  }
  return statement;
}

/** The key of `sessionId`, or `null` when the session has no events yet. */
export function findSessionKey(driver: SqlDriver, sessionId: SessionId): number | null {
  return driver.query<{ session_key: number }>(SELECT_KEY, sessionId)[0]?.session_key ?? null;
}

/** Gives `sessionId` a key (it has none yet). Run it inside the append's transaction. */
export function createSessionKey(driver: SqlDriver, sessionId: SessionId): number {
  const key = driver.query<{ session_key: number }>(INSERT_KEY, sessionId)[0]?.session_key;
  if (key === undefined || !Number.isSafeInteger(key) || key < 1 || key > MAX_SESSION_KEY) {
    throw new DurableEventStoreError('DURABLE_EVENT_LIMIT_EXCEEDED', `this database holds the most sessions it can (${MAX_SESSION_KEY})`);
  }
  return key;
}

/** The highest stored sequence of the session with key `key` (`null` when it has none). */
export function readHeadRow(driver: SqlDriver, key: number): number | null {
  return driver.query<{ head: number | null }>(SELECT_HEAD, key, key)[0]?.head ?? null;
}

/** The rows of sequences `after + 1 .. through` of the session with key `key`, at most `limit`. */
function readEventRows(driver: SqlDriver, key: number, after: number, through: number, limit: number): EventRow[] {
  return driver.query<EventRow>(SELECT_PAGE, key, after, key, through, limit);
}

/**
 * The rows of sequences `after + 1 ..` as {@link readEventRows}, but only as many as fit in
 * `maxBytes` of stored bodies (at least one): the sizes are read first, so a page of large events
 * never loads more than its budget (plus the one event that may pass it alone). Returns the rows
 * and their byte sizes, and how many rows the size query found (to detect gaps).
 */
export function readEventRowsWithinBytes(
  driver: SqlDriver,
  key: number,
  after: number,
  through: number,
  limit: number,
  maxBytes: number,
): { rows: EventRow[]; sizes: number[]; found: number } {
  const sizes = driver.query<{ bytes: number }>(SELECT_PAGE_SIZES, key, after, key, through, limit).map((row) => row.bytes);
  const fits = countWithinByteBudget(sizes.length, (index) => sizes[index] ?? 0, maxBytes);
  const rows = fits === 0 ? [] : readEventRows(driver, key, after, through, fits);
  return { rows, sizes: sizes.slice(0, fits), found: sizes.length };
}

/** The stored digests of the rows after sequence `after` of the session with key `key`, at most `limit`. */
export function readEventDigestRows(driver: SqlDriver, key: number, after: number, limit: number): { sequence: number; digest: number | null }[] {
  return driver.query<{ sequence: number; digest: number | null }>(SELECT_DIGESTS, key, after, key, limit);
}

/** How many statements {@link insertEventRows} runs for `rows` events (one per set bit below 32, plus one per 32). */
export function insertStatementCount(rows: number): number {
  let count = Math.floor(rows / MAX_ROWS_PER_INSERT);
  for (let rest = rows % MAX_ROWS_PER_INSERT; rest > 0; rest &= rest - 1) count++;
  return count;
}

/**
 * Inserts `bodies` as sequences `first`, `first + 1`, ... of the session with key `key`, each with
 * its digest (`digests[i]` of `bodies[i]`), in as few statements as the parameter limit allows.
 * The caller checked that the last sequence is at most {@link MAX_SEQUENCE}; run it inside the
 * append's transaction (or as its only statement).
 */
export function insertEventRows(driver: SqlDriver, key: number, first: number, bodies: readonly string[], digests: readonly number[]): void {
  let at = 0;
  while (at < bodies.length) {
    let rows = MAX_ROWS_PER_INSERT;
    while (rows > bodies.length - at) rows >>= 1;
    const params: SqlValue[] = [key, first + at];
    for (let index = at; index < at + rows; index++) params.push(bodies[index] as string, digests[index] as number);
    driver.exec(insertStatement(rows), ...params);
    at += rows;
  }
}
