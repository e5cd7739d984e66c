/**
 * The `pg` driver, loaded lazily, and the few things the store does with it.
 *
 * `pg` is an optional peer dependency of `agent-ledger`: importing `agent-ledger/postgres` does
 * not load it; opening a store does (`loadPg`), and a missing package is a clear
 * `DURABLE_EVENT_UNAVAILABLE` error that names it. Everything else here is about one query on
 * one pooled connection:
 * 1. {@link runQuery} races the query against the caller's signal; on abort it rejects with the
 *    signal's reason at once and sends the server a protocol-level cancel request (the same one
 *    `psql` sends on Ctrl-C, which poolers such as PgBouncer forward), so the statement stops on
 *    the server too. Such a connection is then discarded, never returned to the pool.
 *    With a `name`, the statement is prepared once per connection and reused (no parse or plan
 *    per call); `pg` keeps the names per connection.
 * 2. {@link isConnectionLoss} tells a lost connection (its outcome unknown) from a refusal by
 *    the server (nothing committed).
 */
import net from 'node:net';
import type * as PgTypes from 'pg';
import { abortReason, throwIfAborted } from '../../core/abort.js';
import { DurableEventStoreError } from '../../protocol/errors.js';

/** The `pg` module as this adapter uses it. */
export type PgModule = typeof PgTypes;
/** A pooled connection. */
export type PgPoolClient = PgTypes.PoolClient;
/** A `pg` pool. */
export type PgPool = PgTypes.Pool;
/** A `pg` client (the LISTEN connection). */
export type PgClient = PgTypes.Client;
/** Connection settings of a pool or client. */
export type PgClientConfig = PgTypes.ClientConfig;

let loading: Promise<PgModule> | undefined;

/** Imports `pg` once; rejects with `DURABLE_EVENT_UNAVAILABLE` naming the package when it is missing. */
export function loadPg(): Promise<PgModule> {
  loading ??= import('pg').then(
    (module) => {
      // `pg` is CommonJS: its exports arrive as the default export.
      const candidate = (module as unknown as { default?: PgModule }).default ?? (module as unknown as PgModule);
      return candidate;
    },
    (error: unknown) => {
      loading = undefined;
      const code = typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined;
      const missing = code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND';
      const reason = error instanceof Error ? error.message : String(error);
      throw new DurableEventStoreError(
        'DURABLE_EVENT_UNAVAILABLE',
        missing
          ? "agent-ledger/postgres needs the 'pg' package (an optional peer dependency), which is not installed: run `npm install pg`"
          : `agent-ledger/postgres could not load the 'pg' package: ${reason}`,
        { cause: error, details: { package: 'pg' } },
      );
    },
  );
  return loading;
}

/** SQLSTATE classes and codes that mean the connection (not the statement) failed. */
const CONNECTION_SQLSTATES = new Set(['57P01', '57P02', '57P03', '08000', '08003', '08006', '08001', '08004', '08007']);
const CONNECTION_ERRNOS = new Set(['ECONNRESET', 'ECONNREFUSED', 'EPIPE', 'ETIMEDOUT', 'ENOTCONN', 'EHOSTUNREACH', 'ECONNABORTED']);

/** The SQLSTATE of a server error, if `error` is one. */
export function sqlState(error: unknown): string | undefined {
  const code = typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
}

/**
 * True when `error` says the connection broke (socket error, server shutdown, terminated
 * backend): a statement in flight may or may not have committed, and the connection must not be
 * reused.
 */
export function isConnectionLoss(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && (CONNECTION_SQLSTATES.has(code) || CONNECTION_ERRNOS.has(code))) return true;
  const message = error instanceof Error ? error.message : '';
  return /Connection terminated|connection is closed|Client has encountered a connection error|not queryable|timeout exceeded when trying to connect/i.test(
    message,
  );
}

/** True for errors after which a retry of a single-statement write is safe: the statement was rolled back. */
export function isRetryableRollback(error: unknown): boolean {
  const state = sqlState(error);
  // serialization_failure, deadlock_detected (under a stricter default isolation level).
  return state === '40001' || state === '40P01';
}

/**
 * Sends PostgreSQL's CancelRequest for `client`'s backend on a fresh TCP connection (what `psql`
 * sends on Ctrl-C; PgBouncer forwards it to the right server connection). Best effort: failures
 * are ignored, and `statement_timeout` still bounds the statement. The caller then discards the
 * connection instead of returning it to the pool, so a late cancel can never hit a later query.
 */
export function cancelActiveQuery(client: PgPoolClient): void {
  // SAFETY: `processID`, `secretKey`, `host` and `port` are public fields of a connected pg Client
  // (only `processID` is in @types/pg); absent values make the cancel a no-op.
  const target = client as unknown as { processID?: unknown; secretKey?: unknown; host?: unknown; port?: unknown };
  const { processID, secretKey, host, port } = target;
  if (typeof processID !== 'number' || typeof secretKey !== 'number' || typeof port !== 'number' || typeof host !== 'string') return;
  const message = Buffer.alloc(16);
  message.writeInt32BE(16, 0);
  message.writeInt32BE(80877102, 4);
  message.writeInt32BE(processID, 8);
  message.writeInt32BE(secretKey, 12);
  const socket = host.startsWith('/') ? net.connect(`${host}/.s.PGSQL.${port}`) : net.connect(port, host);
  socket.on('error', () => socket.destroy());
  socket.setTimeout(10_000, () => socket.destroy());
  socket.on('connect', () => socket.end(message));
}

/**
 * Runs one statement on `client`. An aborted `signal` rejects at once with its reason and
 * cancels the statement on the server; the returned `settled` promise resolves once the driver
 * is done with the query (release the connection only then).
 */
export function runQuery<R extends PgTypes.QueryResultRow>(
  client: PgPoolClient,
  text: string,
  values: unknown[],
  signal: AbortSignal | undefined,
  name?: string,
): { result: Promise<PgTypes.QueryResult<R>>; settled: Promise<void>; aborted: () => boolean } {
  throwIfAborted(signal);
  const query = client.query<R>(name === undefined ? { text, values } : { name, text, values });
  const settled = query.then(
    () => undefined,
    () => undefined,
  );
  let aborted = false;
  if (signal === undefined) return { result: query, settled, aborted: () => aborted };
  const result = new Promise<PgTypes.QueryResult<R>>((resolve, reject) => {
    const onAbort = (): void => {
      aborted = true;
      cancelActiveQuery(client);
      reject(abortReason(signal));
    };
    signal.addEventListener('abort', onAbort, { once: true });
    query.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
  return { result, settled, aborted: () => aborted };
}
