/**
 * Options of {@link PostgresDurableEventStore.open}, their defaults and the range check of the
 * numeric ones (`DURABLE_EVENT_INVALID_OPTIONS`).
 */
import type { StoreTestHooks } from '../../core/store.js';
import { DurableEventStoreError } from '../../protocol/errors.js';

/** Default `pollIntervalMs`: how often watched heads are read when notifications do not arrive. */
export const DEFAULT_POSTGRES_POLL_INTERVAL_MS = 500;
/** Default `notifyProbeTimeoutMs`: how long the LISTEN self-test waits for its probe. */
export const DEFAULT_POSTGRES_NOTIFY_PROBE_TIMEOUT_MS = 2000;
/** Default `statementTimeoutMs` of pools the store creates. */
export const DEFAULT_POSTGRES_STATEMENT_TIMEOUT_MS = 30_000;

/**
 * Connection settings, passed to `pg` unchanged (its `ClientConfig`: `host`, `port`, `user`,
 * `password`, `database`, `ssl`, ...). Declared here so that the package's types do not need
 * `@types/pg`.
 */
export interface PostgresConnectionConfig {
  connectionString?: string;
  host?: string;
  port?: number;
  user?: string;
  password?: string | (() => string | Promise<string>);
  database?: string;
  ssl?: boolean | object;
  application_name?: string;
  [setting: string]: unknown;
}

/** What the store needs of a `pg.Pool` passed as `pool` (any `pg.Pool` fits). */
export interface PostgresPoolLike {
  connect(): Promise<unknown>;
  end(): Promise<void>;
  on(event: 'error', listener: (error: Error) => void): unknown;
  /** The pool's connection settings (used for the LISTEN connection). */
  readonly options: object;
}

/** Options of {@link PostgresDurableEventStore.open}. */
export interface PostgresDurableEventStoreOptions {
  /** `postgres://user:password@host:port/database`; the store creates (and on `close` ends) its pool. */
  connectionString?: string;
  /** Connection settings as `pg` takes them, instead of (or on top of) `connectionString`. */
  connection?: PostgresConnectionConfig;
  /** An existing `pg` Pool to use instead; the store never ends it. Its `options` are used for cancel requests. */
  pool?: PostgresPoolLike;
  /** Size of the pool the store creates (default 10). */
  poolSize?: number;
  /** Server-side `statement_timeout` of the pool the store creates (default 30 000 ms; 0 disables). */
  statementTimeoutMs?: number;
  /** PostgreSQL schema of the tables (default `agent_ledger`). */
  schema?: string;
  /** Apply missing migrations on open (default true). With false, open fails unless the schema is current. */
  migrate?: boolean;
  /** Where the LISTEN connection goes (default: the pool's settings). Point it past a transaction-mode pooler. */
  listenConnectionString?: string;
  /** Polling interval when notifications do not arrive (default 500 ms). */
  pollIntervalMs?: number;
  /** How long the LISTEN self-test waits for its probe notification (default 2000 ms). */
  notifyProbeTimeoutMs?: number;
  /** Send NOTIFY after each write (default true). With false, other processes' watchers rely on polling. */
  notify?: boolean;
  /**
   * Prepare the store's statements once per connection (named prepared statements; default
   * true). Set false behind a transaction-mode pooler that cannot carry them (PgBouncer before
   * 1.21, or without `max_prepared_statements`): every statement is then parsed on each call.
   */
  preparedStatements?: boolean;
  /** Clock in epoch milliseconds for `recordedAt` and lease expiry (default `Date.now`). */
  clock?: () => number;
  /** Test-only fault injection. */
  testHooks?: StoreTestHooks;
}

export function checkMs(name: string, value: number | undefined, fallback: number, min: number, max: number): number {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    throw new DurableEventStoreError('DURABLE_EVENT_INVALID_OPTIONS', `${name} must be an integer in ${min}..${max}`);
  }
  return value;
}
