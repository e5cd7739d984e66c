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
 *    the server too. The connection goes back to the pool only once the query has settled.
 * 2. {@link isConnectionLoss} tells a lost connection (its outcome unknown) from a refusal by
 *    the server (nothing committed).
 */
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
      throw new DurableEventStoreError(
        'DURABLE_EVENT_UNAVAILABLE',
        "agent-ledger/postgres needs the 'pg' package (an optional peer dependency): run `npm install pg`",
        { cause: error },
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

/** Sends a cancel request for whatever `client` is running; failures are ignored (the statement then just finishes). */
export function cancelActiveQuery(pg: PgModule, config: PgClientConfig, client: PgPoolClient): void {
  // SAFETY: `activeQuery` and `Client#cancel(client, query)` are pg's (untyped) cancel API:
  // a fresh connection sends the CancelRequest message carrying the target's process ID and key.
  const target = client as unknown as { activeQuery?: unknown; processID?: unknown };
  if (target.activeQuery === undefined || target.activeQuery === null) return;
  try {
    const canceller = new pg.Client(config) as unknown as {
      cancel(client: unknown, query: unknown): void;
      on(event: string, listener: (...args: unknown[]) => void): void;
      connection?: { on(event: string, listener: (...args: unknown[]) => void): void };
    };
    canceller.on('error', () => {});
    canceller.connection?.on('error', () => {});
    canceller.cancel(client, target.activeQuery);
  } catch {
    // Best effort: statement_timeout still bounds the statement.
  }
}

/** Everything {@link runQuery} needs to cancel a statement. */
export interface CancelContext {
  pg: PgModule;
  config: PgClientConfig;
}

/**
 * Runs one statement on `client`. An aborted `signal` rejects at once with its reason and
 * cancels the statement on the server; the returned `settled` promise resolves once the driver
 * is done with the query (release the connection only then).
 */
export function runQuery<R extends PgTypes.QueryResultRow>(
  client: PgPoolClient,
  cancel: CancelContext,
  text: string,
  values: unknown[],
  signal: AbortSignal | undefined,
): { result: Promise<PgTypes.QueryResult<R>>; settled: Promise<void> } {
  throwIfAborted(signal);
  const query = client.query<R>({ text, values });
  const settled = query.then(
    () => undefined,
    () => undefined,
  );
  if (signal === undefined) return { result: query, settled };
  const result = new Promise<PgTypes.QueryResult<R>>((resolve, reject) => {
    const onAbort = (): void => {
      cancelActiveQuery(cancel.pg, cancel.config, client);
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
  return { result, settled };
}
