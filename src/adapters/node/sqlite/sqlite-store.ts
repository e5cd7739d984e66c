/**
 * SqliteDurableEventStore: the SQL store on a local SQLite file through better-sqlite3.
 *
 * One store object owns one connection, opened with:
 * - `journal_mode = WAL`: readers never block the writer, and a commit is one append to the WAL;
 * - `synchronous = FULL`: SQLite fsyncs the WAL on every commit before the commit returns;
 * - `busy_timeout`: a writer waits (bounded) for another connection's lock instead of failing.
 *
 * Durability boundary: when `append` (or a lease call) resolves, its transaction is in the WAL and
 * the WAL has been fsynced, so the batch survives a process crash or power loss (given storage
 * that honours fsync). A rejected call wrote nothing, except `DURABLE_EVENT_WRITE_FAILED`, whose
 * outcome may be unknown (the failure can happen during commit): read the head before retrying.
 *
 * Several processes may open the same file: every mutation takes the write lock up front
 * (`BEGIN IMMEDIATE`), so they serialize and sequences stay contiguous. The file must live on a
 * local filesystem (SQLite's locks are not reliable on network filesystems). `watch` (and
 * `watchDurability`, for the durability records) hears this object's writes at once and other
 * connections' writes by polling `PRAGMA data_version`, only while someone watches.
 */
import { closeSync, openSync } from 'node:fs';
import type Database from 'better-sqlite3';
import { DurableEventStoreError } from '../../../protocol/errors.js';
import type { EventSequence, SessionId } from '../../../protocol/ids.js';
import { migrateSqlSchema } from '../../sql/schema.js';
import { SqlDurableEventStore } from '../../sql/sql-store.js';
import type { SqlStoreTestHooks } from '../../sql/sql-event-log.js';
import { BetterSqlite3Driver } from './better-sqlite3-driver.js';
import { loadBetterSqlite3, type BetterSqlite3Constructor } from './load-better-sqlite3.js';

/** Default bound on waiting for another connection's write lock. */
const DEFAULT_SQLITE_BUSY_TIMEOUT_MS = 10_000;
/** Default interval of the cross-connection check behind `watch`. */
const DEFAULT_SQLITE_WATCH_POLL_MS = 250;

/** Options of {@link SqliteDurableEventStore}. */
export interface SqliteDurableEventStoreOptions {
  /** How long a call waits for another connection's write lock (default 10 000 ms). */
  busyTimeoutMs?: number;
  /** How often `watch` checks for appends by other connections (default 250 ms). */
  watchPollIntervalMs?: number;
  /** Clock in epoch milliseconds (default `Date.now`). */
  clock?: () => number;
  /** Test-only fault injection. */
  testHooks?: SqlStoreTestHooks;
}

function checkMs(name: string, value: number | undefined, fallback: number, min: number): number {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || value < min || value > 300_000) {
    throw new DurableEventStoreError('DURABLE_EVENT_INVALID_OPTIONS', `${name} must be an integer in ${min}..300000`);
  }
  return value;
}

function openDatabase(BetterSqlite3: BetterSqlite3Constructor, filename: string, busyTimeoutMs: number): Database.Database {
  if (filename !== ':memory:') {
    // Create the file owner-only before SQLite does: events hold sensitive inputs and outputs.
    // SQLite gives its -wal and -shm files the same permissions.
    closeSync(openSync(filename, 'a', 0o600));
  }
  const db = new BetterSqlite3(filename, { timeout: busyTimeoutMs });
  try {
    db.pragma(`busy_timeout = ${busyTimeoutMs}`);
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = FULL');
    return db;
  } catch (error) {
    db.close();
    throw error;
  }
}

/** Opens the connection and migrates the schema; closes the connection again on any failure. */
function openStore(filename: string, busyTimeoutMs: number): { db: Database.Database; driver: BetterSqlite3Driver } {
  // Missing or broken better-sqlite3 is its own error (it names the package to install).
  const BetterSqlite3 = loadBetterSqlite3();
  let db: Database.Database;
  try {
    db = openDatabase(BetterSqlite3, filename, busyTimeoutMs);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    throw new DurableEventStoreError('DURABLE_EVENT_UNAVAILABLE', `cannot open SQLite store: ${message}`, {
      cause: error,
    });
  }
  const driver = new BetterSqlite3Driver(db);
  try {
    migrateSqlSchema(driver);
  } catch (error) {
    db.close();
    throw error;
  }
  return { db, driver };
}

/**
 * The store contract on a SQLite file (Node, better-sqlite3). Exported from `agent-ledger/advanced`.
 *
 * @example
 * const store = new SqliteDurableEventStore('/var/lib/my-agent/ledger.db');
 * await store.append(SessionId('s-1'), [{ type: 'session_created', data: {} }], { expectedLastSequence: null });
 * store.close();
 */
export class SqliteDurableEventStore extends SqlDurableEventStore {
  readonly filename: string;
  readonly #db: Database.Database;
  readonly #pollMs: number;
  #timer: ReturnType<typeof setInterval> | undefined;
  #dataVersion = 0;
  readonly #lastSeen = new Map<string, EventSequence | null>();
  /** Durability heads last seen per session watched with `watchDurability`. */
  readonly #lastSeenDurability = new Map<string, number | null>();

  constructor(filename: string, options: SqliteDurableEventStoreOptions = {}) {
    if (typeof filename !== 'string' || filename.length === 0) {
      throw new DurableEventStoreError('DURABLE_EVENT_INVALID_OPTIONS', 'filename must be a non-empty path');
    }
    const busyTimeoutMs = checkMs('busyTimeoutMs', options.busyTimeoutMs, DEFAULT_SQLITE_BUSY_TIMEOUT_MS, 0);
    const pollMs = checkMs('watchPollIntervalMs', options.watchPollIntervalMs, DEFAULT_SQLITE_WATCH_POLL_MS, 1);
    const { db, driver } = openStore(filename, busyTimeoutMs);
    super(driver, {
      ...(options.clock === undefined ? {} : { clock: options.clock }),
      ...(options.testHooks === undefined ? {} : { testHooks: options.testHooks }),
    });
    this.filename = filename;
    this.#db = db;
    this.#pollMs = pollMs;
  }

  /** True until {@link SqliteDurableEventStore.close} runs. */
  get open(): boolean {
    return this.#db.open;
  }

  /** Closes the connection; later calls reject with `DURABLE_EVENT_UNAVAILABLE`. Idempotent. */
  close(): void {
    this.#stopPolling();
    if (this.#db.open) this.#db.close();
  }

  protected override watchersChanged(): void {
    const sessions = this.watchedSessions();
    const durabilitySessions = this.durabilityWatchedSessions();
    for (const known of [...this.#lastSeen.keys()]) {
      if (!sessions.includes(known as SessionId)) this.#lastSeen.delete(known);
    }
    for (const known of [...this.#lastSeenDurability.keys()]) {
      if (!durabilitySessions.includes(known as SessionId)) this.#lastSeenDurability.delete(known);
    }
    if ((sessions.length === 0 && durabilitySessions.length === 0) || !this.#db.open) {
      this.#stopPolling();
      return;
    }
    for (const sessionId of sessions) {
      if (!this.#lastSeen.has(sessionId)) this.#lastSeen.set(sessionId, this.#headOrNull(sessionId));
    }
    for (const sessionId of durabilitySessions) {
      if (!this.#lastSeenDurability.has(sessionId)) this.#lastSeenDurability.set(sessionId, this.#durabilityHeadOrNull(sessionId));
    }
    if (this.#timer === undefined) {
      this.#dataVersion = this.#readDataVersion();
      this.#timer = setInterval(() => this.#poll(), this.#pollMs);
      this.#timer.unref();
    }
  }

  #stopPolling(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
  }

  #readDataVersion(): number {
    return Number(this.#db.pragma('data_version', { simple: true }));
  }

  #headOrNull(sessionId: SessionId): EventSequence | null {
    try {
      return this.eventLog.getHeadSequence(sessionId);
    } catch {
      return null;
    }
  }

  #durabilityHeadOrNull(sessionId: SessionId): number | null {
    try {
      return this.durability.head(sessionId);
    } catch {
      return null;
    }
  }

  /** `data_version` changes only when ANOTHER connection committed; then look at the watched heads. */
  #poll(): void {
    if (!this.#db.open) {
      this.#stopPolling();
      return;
    }
    let version: number;
    try {
      version = this.#readDataVersion();
    } catch {
      return;
    }
    if (version === this.#dataVersion) return;
    this.#dataVersion = version;
    for (const sessionId of this.watchedSessions()) {
      const head = this.#headOrNull(sessionId);
      if (head !== null && head !== this.#lastSeen.get(sessionId)) {
        this.#lastSeen.set(sessionId, head);
        this.notifyWatchers(sessionId, head);
      }
    }
    for (const sessionId of this.durabilityWatchedSessions()) {
      const head = this.#durabilityHeadOrNull(sessionId);
      if (head !== null && head !== this.#lastSeenDurability.get(sessionId)) {
        this.#lastSeenDurability.set(sessionId, head);
        this.notifyDurabilityWatchers(sessionId, head);
      }
    }
  }
}
