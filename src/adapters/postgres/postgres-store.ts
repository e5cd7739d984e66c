/**
 * PostgresDurableEventStore: the full store contract (events, execution leases with fencing, the
 * durability ledger, projection checkpoints) on PostgreSQL, for fleets of Node processes on several machines.
 *
 * How a write works (append, lease change, durability record):
 * 1. read the session's row (head, lease state, ledger head) — or take it from this store's
 *    memory of the last state it read or wrote;
 * 2. let the core engine decide on that state (`planAppend`, `decideAcquire`, ...);
 * 3. send ONE statement that updates the row only if it still holds exactly that state and, in
 *    the same statement, inserts the rows (see `statements.ts`). A statement is atomic and its
 *    condition is checked under the row lock, so there is no gap between the check the engine
 *    made and the write. If the state moved (another writer), nothing was written: read again
 *    and decide again. A refusal (conflict, lost lease, ...) is final only when decided on a
 *    state read in this call, never on remembered state.
 * 4. After {@link MAX_OPTIMISTIC_ATTEMPTS} moved states in a row, the write takes the row lock
 *    first (`SELECT ... FOR UPDATE` in a transaction) so that a busy session still makes progress.
 * There is no session-scoped lock and no state tied to a connection, so any pool (and a
 * transaction-mode pooler such as PgBouncer) can sit between the store and the server. The
 * isolation level is the server default, READ COMMITTED; see docs/postgres.md for why it suffices.
 *
 * Outcomes: a resolved write is committed (durable per the server's `synchronous_commit`, on by
 * default). A refusal wrote nothing. `DURABLE_EVENT_WRITE_FAILED` after a connection loss means
 * the outcome is unknown: the journal resolves it by reading. An aborted signal rejects at once
 * with its reason and cancels the statement on the server (also unknown if it was in flight).
 */
import { throwIfAborted } from '../../core/abort.js';
import { checkCheckpointRecord, joinCheckpointChunks, storedTailMatches, type DurableCheckpointRecord, type DurableCheckpointStore } from '../../core/checkpoint/contract.js';
import { eventDigest, type DurableEventDigestReadOptions, type DurableEventDigestRow, type DurableEventDigestStore } from '../../core/checkpoint/event-digest.js';
import type {
  DurabilityLedgerStore,
  DurabilityListener,
  DurabilityReadOptions,
  DurabilityReadResult,
  DurabilityRecord,
  DurabilityRecordDraft,
  DurabilityRecordResult,
} from '../../core/durability/ledger-contract.js';
import {
  buildDurabilityPage,
  checkDurabilityCursor,
  checkDurabilitySessionId,
  decodeDurabilityRecord,
  durabilityIdentity,
  planDurabilityRead,
  planDurabilityRecord,
  validateDurabilityDraft,
} from '../../core/durability/ledger-engine.js';
import {
  buildReadPage,
  markParsedEnvelopes,
  checkFence,
  checkReadCursor,
  checkSessionId,
  decideAcquire,
  decideRelease,
  decideRenew,
  leaseRecord,
  parseLeaseState,
  planAppend,
  planRead,
  validateDraftBatch,
  type LeaseState,
} from '../../core/log-engine.js';
import type {
  DurableAppendListener,
  DurableAppendOptions,
  DurableAppendResult,
  DurableEventStore,
  DurableExecutionFence,
  DurableExecutionLeaseRecord,
  DurableExecutionLeaseStore,
  DurableLeaseAcquireOptions,
  DurableLeaseRenewOptions,
  DurableReadOptions,
  DurableReadResult,
  DurableStoreCallOptions,
  StoreTestHooks,
} from '../../core/store.js';
import { DurabilityError, DurableError, DurableEventStoreError, isAbortError } from '../../protocol/errors.js';
import { parseDurableEventEnvelope, type DurableEventDraft, type DurableEventEnvelope } from '../../protocol/events.js';
import { EventSequence, type CommandId, type EventId, type SessionId } from '../../protocol/ids.js';
import { MAX_READ_LIMIT } from '../../protocol/limits.js';
import {
  isConnectionLoss,
  isRetryableRollback,
  loadPg,
  runQuery,
  sqlState,
  type PgClientConfig,
  type PgModule,
  type PgPool,
  type PgPoolClient,
} from './driver.js';
import {
  DEFAULT_POSTGRES_SCHEMA,
  POSTGRES_MIGRATIONS,
  POSTGRES_SCHEMA_VERSION,
  bootstrapStatements,
  checkSchemaName,
  migrationLockKey,
  migrationStatements,
} from './schema.js';
import { notifyStatement, postgresStatements, preparedStatementName, type PostgresStatements } from './statements.js';
import { WatchHub, noticePayload, type NoticeKind, type WatchMode } from './watch-hub.js';

/** Pooled connections that already carry the store's no-op 'error' listener. */
const guarded = new WeakSet<object>();

/** Conditional writes tried before a write takes the session's row lock first. */
export const MAX_OPTIMISTIC_ATTEMPTS = 4;
/** Default `pollIntervalMs`: how often watched heads are read when notifications do not arrive. */
export const DEFAULT_POSTGRES_POLL_INTERVAL_MS = 500;
/** Default `notifyProbeTimeoutMs`: how long the LISTEN self-test waits for its probe. */
export const DEFAULT_POSTGRES_NOTIFY_PROBE_TIMEOUT_MS = 2000;
/** Default `statementTimeoutMs` of pools the store creates. */
export const DEFAULT_POSTGRES_STATEMENT_TIMEOUT_MS = 30_000;
/** Sessions whose last state a store remembers before it starts over. */
const MAX_REMEMBERED_SESSIONS = 4096;

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

/** A session's row as the store last saw it. */
interface SessionState {
  exists: boolean;
  head: number;
  leaseVersion: number;
  lease: LeaseState | null;
  ledgerHead: number;
}

const EMPTY_STATE: SessionState = { exists: false, head: 0, leaseVersion: 0, lease: null, ledgerHead: 0 };

/** A row of `readCheckpoint`: the head, joined with one of its chunks (or none). */
interface CheckpointRow {
  sequence: string;
  event_id: string;
  data: Uint8Array;
  chunks: number | null;
  bytes: string | null;
  chunk: number | null;
  chunk_data: Uint8Array | null;
}

interface StateRow {
  head: string;
  lease_version: string;
  lease_id: string | null;
  owner_id: string | null;
  fencing_token: string | null;
  acquired_at_ms: string | null;
  expires_at_ms: string | null;
  released: boolean | null;
  ledger_head: string;
}

interface RecordRow {
  ledger_head: string | null;
  sequence: string | null;
  identity: string | null;
  kind: string | null;
  body: string | null;
}

/** Where one command's events are, from the `command_id` index. */
export interface PostgresCommandRange {
  firstSequence: EventSequence;
  lastSequence: EventSequence;
  eventCount: number;
}

/** One event of the global order. */
export interface PostgresGlobalEvent {
  /** Position in the global order (gaps are possible; order is commit-safe, see `readGlobal`). */
  position: number;
  event: DurableEventEnvelope;
}

/** A page of the global order. */
export interface PostgresGlobalPage {
  events: PostgresGlobalEvent[];
  /** Pass as `after` to continue (the last position returned, else the `after` given). */
  nextPosition: number;
}

function integer(value: string | null | undefined, what: string): number {
  const n = Number(value);
  if (value === null || value === undefined || !Number.isSafeInteger(n)) {
    throw new DurableEventStoreError('DURABLE_EVENT_CORRUPT_LOG', `${what} holds ${String(value)}`);
  }
  return n;
}

function parseStateRow(row: StateRow | undefined): SessionState {
  if (row === undefined) return EMPTY_STATE;
  const leaseVersion = integer(row.lease_version, 'lease_version');
  const lease =
    leaseVersion === 0
      ? null
      : parseLeaseState({
          leaseId: row.lease_id,
          ownerId: row.owner_id,
          fencingToken: row.fencing_token === null ? null : Number(row.fencing_token),
          acquiredAtMs: row.acquired_at_ms === null ? null : Number(row.acquired_at_ms),
          expiresAtMs: row.expires_at_ms === null ? null : Number(row.expires_at_ms),
          released: row.released,
        });
  return {
    exists: true,
    head: integer(row.head, 'head'),
    leaseVersion,
    lease,
    ledgerHead: integer(row.ledger_head, 'ledger_head'),
  };
}

function checkMs(name: string, value: number | undefined, fallback: number, min: number, max: number): number {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    throw new DurableEventStoreError('DURABLE_EVENT_INVALID_OPTIONS', `${name} must be an integer in ${min}..${max}`);
  }
  return value;
}

/**
 * True for errors a call rejects with unchanged: the signal's reason once the caller aborted
 * (whatever it is: a `TimeoutError` from `AbortSignal.timeout`, an `Error`, any value), an
 * `AbortError`, and the package's typed errors.
 */
function passesThrough(error: unknown, signal: AbortSignal | undefined): boolean {
  return error instanceof DurableError || (signal?.aborted === true && error === signal.reason) || isAbortError(error);
}

/**
 * A failure of a write, as the contract reports it. `stage: 'read'` is a failure of the state read
 * a write starts with: nothing was written, but it is still the write that failed
 * (`DURABLE_EVENT_WRITE_FAILED`, the read's error as `cause`), never a `READ_FAILED` from `append`.
 */
function writeFailure(error: unknown, what: string, signal: AbortSignal | undefined, stage: 'read' | 'write' = 'write'): unknown {
  if (passesThrough(error, signal)) return error;
  const message = error instanceof Error ? error.message : String(error);
  if (sqlState(error) === '57014') {
    return new DurableEventStoreError('DURABLE_EVENT_IO_TIMEOUT', `PostgreSQL ${what} was cancelled: ${message}`, { cause: error });
  }
  const unknown =
    stage === 'read'
      ? " while reading the session's state (nothing was written)"
      : isConnectionLoss(error)
        ? ' (connection lost: the outcome is unknown, read before retrying)'
        : '';
  return new DurableEventStoreError('DURABLE_EVENT_WRITE_FAILED', `PostgreSQL ${what} failed${unknown}: ${message}`, {
    cause: error,
  });
}

function readFailure(error: unknown, what: string, signal: AbortSignal | undefined): unknown {
  if (passesThrough(error, signal)) return error;
  const message = error instanceof Error ? error.message : String(error);
  return new DurableEventStoreError('DURABLE_EVENT_READ_FAILED', `PostgreSQL ${what} failed: ${message}`, { cause: error });
}

/**
 * The store contract on PostgreSQL. Open it with {@link PostgresDurableEventStore.open}; close it
 * with {@link PostgresDurableEventStore.close}. Exported from `agent-ledger/postgres`.
 *
 * @example
 * const store = await PostgresDurableEventStore.open({ connectionString: process.env.DATABASE_URL });
 * await store.append(SessionId('s-1'), [{ type: 'session_created', data: {} }], { expectedLastSequence: null });
 * await store.close();
 */
export class PostgresDurableEventStore
  implements DurableEventStore, DurableExecutionLeaseStore, DurabilityLedgerStore, DurableCheckpointStore, DurableEventDigestStore
{
  /** The PostgreSQL schema holding the tables. */
  readonly schema: string;
  readonly #pool: PgPool;
  readonly #ownsPool: boolean;
  readonly #sql: PostgresStatements;
  readonly #channel: string;
  readonly #clock: () => number;
  readonly #hooks: StoreTestHooks;
  readonly #notify: boolean;
  readonly #states = new Map<string, SessionState>();
  readonly #prepare: boolean;
  /** Prepared-statement names by statement text (a handful: the statements are fixed per schema), see `preparedStatementName`. */
  readonly #names = new Map<string, string>();
  /** Per-session chains, so one store's writes to a session do not race each other. */
  readonly #queues = new Map<string, Promise<unknown>>();
  readonly #watchers = { e: new Map<string, Set<DurableAppendListener>>(), d: new Map<string, Set<DurabilityListener>>() };
  readonly #hub: WatchHub;
  #pendingNotices: string[] = [];
  #closed = false;

  private constructor(pg: PgModule, pool: PgPool, ownsPool: boolean, config: PgClientConfig, options: PostgresDurableEventStoreOptions) {
    this.schema = options.schema ?? DEFAULT_POSTGRES_SCHEMA;
    const quoted = checkSchemaName(this.schema);
    this.#pool = pool;
    this.#ownsPool = ownsPool;
    this.#sql = postgresStatements(quoted);
    this.#channel = this.schema;
    this.#clock = options.clock ?? Date.now;
    this.#hooks = options.testHooks ?? {};
    this.#notify = options.notify ?? true;
    this.#prepare = options.preparedStatements ?? true;
    const listenConfig: PgClientConfig =
      options.listenConnectionString === undefined ? config : { connectionString: options.listenConnectionString };
    this.#hub = new WatchHub(
      {
        readHeads: async (sessionIds) => {
          const rows = await this.#query<{ session_id: string; head: string; ledger_head: string }>(this.#sql.readHeads, [sessionIds]);
          return new Map(rows.map((row) => [row.session_id, { e: Number(row.head), d: Number(row.ledger_head) }]));
        },
        sendProbe: async (payload) => {
          await this.#query(notifyStatement(this.#channel, [payload]), []);
        },
        deliver: (kind, sessionId, lastSequence) => this.#deliver(kind, sessionId, lastSequence),
        watched: (kind) => [...this.#watchers[kind].keys()],
      },
      {
        pg,
        listenConfig,
        channel: this.#channel,
        pollIntervalMs: checkMs('pollIntervalMs', options.pollIntervalMs, DEFAULT_POSTGRES_POLL_INTERVAL_MS, 1, 300_000),
        probeTimeoutMs: checkMs(
          'notifyProbeTimeoutMs',
          options.notifyProbeTimeoutMs,
          DEFAULT_POSTGRES_NOTIFY_PROBE_TIMEOUT_MS,
          1,
          300_000,
        ),
        retryMs: 5000,
        safetyPollMs: 10 * checkMs('pollIntervalMs', options.pollIntervalMs, DEFAULT_POSTGRES_POLL_INTERVAL_MS, 1, 300_000),
      },
    );
  }

  /**
   * Connects, applies missing migrations (unless `migrate: false`) and returns the store.
   * Loads the `pg` package on first use.
   */
  static async open(options: PostgresDurableEventStoreOptions = {}): Promise<PostgresDurableEventStore> {
    checkSchemaName(options.schema ?? DEFAULT_POSTGRES_SCHEMA);
    const poolSize = checkMs('poolSize', options.poolSize, 10, 1, 1000);
    const statementTimeoutMs = checkMs('statementTimeoutMs', options.statementTimeoutMs, DEFAULT_POSTGRES_STATEMENT_TIMEOUT_MS, 0, 86_400_000);
    // Checked here, before a pool exists that a throwing constructor would leak.
    checkMs('pollIntervalMs', options.pollIntervalMs, DEFAULT_POSTGRES_POLL_INTERVAL_MS, 1, 300_000);
    checkMs('notifyProbeTimeoutMs', options.notifyProbeTimeoutMs, DEFAULT_POSTGRES_NOTIFY_PROBE_TIMEOUT_MS, 1, 300_000);
    const pg = await loadPg();
    let pool: PgPool;
    let config: PgClientConfig;
    const ownsPool = options.pool === undefined;
    if (options.pool !== undefined) {
      // SAFETY: documented as a `pg.Pool`; `PostgresPoolLike` only keeps @types/pg out of the public types.
      pool = options.pool as unknown as PgPool;
      config = pool.options;
    } else {
      if (options.connectionString === undefined && options.connection === undefined) {
        throw new DurableEventStoreError('DURABLE_EVENT_INVALID_OPTIONS', 'give connectionString, connection or pool');
      }
      config = {
        // SAFETY: passed through to pg, whose ClientConfig this mirrors.
        ...(options.connection as PgClientConfig | undefined),
        ...(options.connectionString === undefined ? {} : { connectionString: options.connectionString }),
        ...(statementTimeoutMs === 0 ? {} : { statement_timeout: statementTimeoutMs }),
        application_name: options.connection?.application_name ?? 'agent-ledger',
      };
      pool = new pg.Pool({ ...config, max: poolSize });
    }
    // Idle connections that break (server restart) are dropped by the pool; without a listener
    // the error event would crash the process.
    if (ownsPool) pool.on('error', () => undefined);
    const store = new PostgresDurableEventStore(pg, pool, ownsPool, config, options);
    try {
      if (options.migrate === false) await store.#checkVersion();
      else await store.migrate();
    } catch (error) {
      await store.close();
      throw error;
    }
    return store;
  }

  /** How this store currently learns about other processes' writes (`idle` while nobody watches). */
  get watchMode(): WatchMode {
    return this.#hub.mode;
  }

  /** Stops watching and, when the store created its pool, ends it. Idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#hub.close();
    if (this.#ownsPool) await this.#pool.end().catch(() => undefined);
  }

  /** Applies every missing migration in one transaction; returns how many ran. */
  async migrate(): Promise<number> {
    const client = await this.#connect();
    let broken = false;
    try {
      await client.query('BEGIN');
      try {
        await client.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [migrationLockKey(this.schema)]);
        for (const statement of bootstrapStatements(this.schema)) await client.query(statement);
        const quoted = checkSchemaName(this.schema);
        const found = await client.query<{ version: number | null }>(`SELECT max(version) AS version FROM ${quoted}.schema_migrations`);
        const from = found.rows[0]?.version ?? 0;
        if (from > POSTGRES_SCHEMA_VERSION) throw this.#tooNew(from);
        for (let index = from; index < POSTGRES_SCHEMA_VERSION; index++) {
          for (const statement of migrationStatements(index, this.schema)) await client.query(statement);
          await client.query(`INSERT INTO ${quoted}.schema_migrations (version, description) VALUES ($1, $2)`, [
            index + 1,
            (POSTGRES_MIGRATIONS[index] as { description: string }).description,
          ]);
        }
        await client.query('COMMIT');
        return POSTGRES_SCHEMA_VERSION - from;
      } catch (error) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw error;
      }
    } catch (error) {
      broken = isConnectionLoss(error);
      if (error instanceof DurableError) throw error;
      throw new DurableEventStoreError('DURABLE_EVENT_UNAVAILABLE', `PostgreSQL migration failed: ${String(error)}`, { cause: error });
    } finally {
      client.release(broken);
    }
  }

  #tooNew(found: number): DurableEventStoreError {
    return new DurableEventStoreError(
      'DURABLE_EVENT_UNAVAILABLE',
      `schema ${this.schema} has version ${found}; this release understands up to ${POSTGRES_SCHEMA_VERSION}`,
      { details: { found, supported: POSTGRES_SCHEMA_VERSION } },
    );
  }

  async #checkVersion(): Promise<void> {
    const quoted = checkSchemaName(this.schema);
    let version: number;
    try {
      const rows = await this.#query<{ version: number | null }>(`SELECT max(version) AS version FROM ${quoted}.schema_migrations`, []);
      version = rows[0]?.version ?? 0;
    } catch (error) {
      throw new DurableEventStoreError('DURABLE_EVENT_UNAVAILABLE', `cannot read ${this.schema}.schema_migrations: ${String(error)}`, {
        cause: error,
      });
    }
    if (version > POSTGRES_SCHEMA_VERSION) throw this.#tooNew(version);
    if (version < POSTGRES_SCHEMA_VERSION) {
      throw new DurableEventStoreError(
        'DURABLE_EVENT_UNAVAILABLE',
        `schema ${this.schema} has version ${version}; apply postgresMigrationSql({ from: ${version} }) or open with migrate: true`,
        { details: { found: version, supported: POSTGRES_SCHEMA_VERSION } },
      );
    }
  }

  // ---- connections --------------------------------------------------------------------------

  async #connect(): Promise<PgPoolClient> {
    if (this.#closed) throw new DurableEventStoreError('DURABLE_EVENT_UNAVAILABLE', 'the store is closed');
    try {
      const client = await this.#pool.connect();
      // A checked-out connection that breaks emits 'error' (the pool only listens while it is
      // idle); the failing query reports it, so the event itself must not crash the process.
      if (!guarded.has(client)) {
        guarded.add(client);
        client.on('error', () => undefined);
      }
      return client;
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      throw new DurableEventStoreError('DURABLE_EVENT_UNAVAILABLE', `cannot connect to PostgreSQL: ${message}`, { cause: error });
    }
  }

  /** Runs one statement on a pooled connection, honouring `signal`. */
  async #query<R extends object>(text: string, values: unknown[], signal?: AbortSignal): Promise<R[]> {
    return (await this.#statement<R>(text, values, signal)).rows;
  }

  async #statement<R extends object>(
    text: string,
    values: unknown[],
    signal?: AbortSignal,
  ): Promise<{ rows: R[]; rowCount: number }> {
    throwIfAborted(signal);
    const client = await this.#connect();
    let run: ReturnType<typeof runQuery<R & Record<string, unknown>>>;
    try {
      run = runQuery<R & Record<string, unknown>>(client, text, values, signal, this.#statementName(text, values));
    } catch (error) {
      client.release();
      throw error;
    }
    let broken = false;
    run.result.catch((error: unknown) => {
      broken = isConnectionLoss(error);
    });
    void run.settled.then(() => {
      // Give the catch above a chance to run first, then hand the connection back.
      queueMicrotask(() => client.release(broken || run.aborted()));
    });
    const result = await run.result;
    return { rows: result.rows, rowCount: result.rowCount ?? 0 };
  }

  /** Runs `fn` in a transaction on one connection (the locked fallback path). */
  async #transaction<T>(signal: AbortSignal | undefined, fn: (client: PgPoolClient) => Promise<T>): Promise<T> {
    throwIfAborted(signal);
    const client = await this.#connect();
    let broken = false;
    try {
      await client.query('BEGIN');
      try {
        const result = await fn(client);
        await client.query('COMMIT');
        return result;
      } catch (error) {
        broken = isConnectionLoss(error);
        if (!broken) await client.query('ROLLBACK').catch(() => undefined);
        throw error;
      }
    } catch (error) {
      broken ||= isConnectionLoss(error);
      throw error;
    } finally {
      client.release(broken);
    }
  }

  /** The prepared-statement name of `text` (the store's own parameterized statements only), or none. */
  #statementName(text: string, values: unknown[]): string | undefined {
    if (!this.#prepare || values.length === 0) return undefined;
    let name = this.#names.get(text);
    if (name === undefined) {
      name = preparedStatementName(text);
      this.#names.set(text, name);
    }
    return name;
  }

  /** Chains `work` after this store's previous write to the same session. */
  #serialize<T>(sessionId: string, work: () => Promise<T>): Promise<T> {
    const previous = this.#queues.get(sessionId) ?? Promise.resolve();
    const next = previous.then(work, work);
    const tail = next.then(
      () => undefined,
      () => undefined,
    );
    this.#queues.set(sessionId, tail);
    void tail.then(() => {
      if (this.#queues.get(sessionId) === tail) this.#queues.delete(sessionId);
    });
    return next;
  }

  // ---- session state -----------------------------------------------------------------------

  /** Reads the session's row; a failure is what `failure` makes of it (a read failure by default). */
  async #readState(
    sessionId: string,
    signal: AbortSignal | undefined,
    failure: (error: unknown) => unknown = (error) => readFailure(error, 'state read', signal),
  ): Promise<SessionState> {
    let rows: StateRow[];
    try {
      rows = await this.#query<StateRow>(this.#sql.readState, [sessionId], signal);
    } catch (error) {
      throw failure(error);
    }
    const state = parseStateRow(rows[0]);
    this.#remember(sessionId, state);
    return state;
  }

  #remember(sessionId: string, state: SessionState): void {
    if (!this.#states.has(sessionId) && this.#states.size >= MAX_REMEMBERED_SESSIONS) this.#states.clear();
    this.#states.set(sessionId, state);
  }

  #beforeCommit(sessionId: SessionId): void {
    try {
      this.#hooks.beforeCommit?.(sessionId);
    } catch (error) {
      throw new DurableEventStoreError('DURABLE_EVENT_WRITE_FAILED', 'commit failed before anything was written', { cause: error });
    }
  }

  /**
   * The optimistic loop shared by every write: decide on the state (remembered, else read), write
   * conditionally, and on a moved state read and decide again; after
   * {@link MAX_OPTIMISTIC_ATTEMPTS} moves, decide and write under the row lock.
   */
  async #write<P>(
    sessionId: SessionId,
    signal: AbortSignal | undefined,
    what: string,
    decide: (state: SessionState) => P,
    write: (run: (text: string, values: unknown[]) => Promise<{ rows: Array<Record<string, unknown>>; rowCount: number }>, state: SessionState, plan: P) => Promise<SessionState | null>,
    useRemembered = true,
  ): Promise<P> {
    let state = useRemembered ? this.#states.get(sessionId) : undefined;
    let fresh = false;
    for (let attempt = 0; attempt < MAX_OPTIMISTIC_ATTEMPTS; attempt++) {
      throwIfAborted(signal);
      if (state === undefined) {
        state = await this.#readState(sessionId, signal, (error) => writeFailure(error, what, signal, 'read'));
        fresh = true;
      }
      let plan: P;
      try {
        plan = decide(state);
      } catch (error) {
        if (fresh) throw error;
        // Decided on remembered state: only a fresh read may refuse.
        state = undefined;
        attempt--;
        continue;
      }
      let next: SessionState | null;
      try {
        next = await write((text, values) => this.#statement(text, values, signal), state, plan);
      } catch (error) {
        if (isRetryableRollback(error)) next = null;
        else {
          this.#states.delete(sessionId);
          throw writeFailure(error, what, signal);
        }
      }
      if (next !== null) {
        this.#remember(sessionId, next);
        return plan;
      }
      this.#states.delete(sessionId);
      state = undefined;
      fresh = false;
    }
    // A busy session: take the row lock, then decide and write with nothing in between.
    try {
      return await this.#transaction(signal, async (client) => {
        await client.query(this.#sql.ensureSession, [sessionId]);
        const locked = await client.query<StateRow>(this.#sql.readStateForUpdate, [sessionId]);
        const current = parseStateRow(locked.rows[0]);
        const plan = decide(current);
        const next = await write(
          async (text, values) => {
            const result = await client.query(text, values);
            return { rows: result.rows, rowCount: result.rowCount ?? 0 };
          },
          current,
          plan,
        );
        if (next === null) throw new Error('the conditional write did not apply under the row lock');
        this.#remember(sessionId, next);
        return plan;
      });
    } catch (error) {
      this.#states.delete(sessionId);
      throw writeFailure(error, what, signal);
    }
  }

  // ---- events ------------------------------------------------------------------------------

  async append(sessionId: SessionId, drafts: readonly DurableEventDraft[], options?: DurableAppendOptions): Promise<DurableAppendResult> {
    const id = checkSessionId(sessionId);
    const valid = validateDraftBatch(drafts);
    throwIfAborted(options?.signal);
    const result = await this.#serialize(id, () => this.#append(id, valid, options));
    this.#committed('e', id, result.lastSequence);
    return result;
  }

  async #append(id: SessionId, valid: DurableEventDraft[], options: DurableAppendOptions | undefined): Promise<DurableAppendResult> {
    const signal = options?.signal;
    let encodings: string[] = [];
    return this.#write<DurableAppendResult>(
      id,
      signal,
      'append',
      (state) => {
        encodings = [];
        const planned = planAppend({
          sessionId: id,
          drafts: valid,
          options,
          head: state.head === 0 ? null : EventSequence(state.head),
          lease: state.lease,
          nowMs: this.#clock(),
          encodings,
        });
        return planned;
      },
      async (run, state, planned) => {
        this.#beforeCommit(id);
        const commandIds = planned.events.map((event) => event.commandId ?? null);
        const { rowCount } = await run(state.exists ? this.#sql.appendExisting : this.#sql.appendNew, [
          id,
          state.head,
          planned.lastSequence,
          state.leaseVersion,
          encodings,
          commandIds,
          planned.events.map(eventDigest),
        ]);
        if (rowCount === 0) return null;
        if (rowCount !== planned.events.length) throw new Error(`inserted ${rowCount} of ${planned.events.length} events`);
        return { ...state, exists: true, head: planned.lastSequence };
      },
    );
  }

  async read(sessionId: SessionId, options?: DurableReadOptions): Promise<DurableReadResult> {
    const id = checkSessionId(sessionId);
    const plan = planRead(options);
    throwIfAborted(options?.signal);
    let rows: Array<{ head: string | null; sequence: string | null; body: string | null }>;
    try {
      rows = await this.#query(this.#sql.readPage, [id, plan.after ?? 0, plan.limit], options?.signal);
    } catch (error) {
      throw readFailure(error, 'read', options?.signal);
    }
    const headRow = rows.find((row) => row.head !== null);
    const headValue = headRow === undefined ? 0 : integer(headRow.head, 'head');
    const head = headValue === 0 ? null : EventSequence(headValue);
    checkReadCursor(plan.after, head);
    const after = plan.after ?? 0;
    const present = rows.filter((row) => row.sequence !== null).sort((a, b) => Number(a.sequence) - Number(b.sequence));
    const expected = Math.min(plan.limit, headValue - after);
    if (present.length !== expected) {
      throw this.#corrupt(id, `expected ${expected} events after ${after}, found ${present.length} (sequence gap)`);
    }
    // Every row went through the full envelope parser just now: the journal need not parse them again.
    const events = markParsedEnvelopes(present.map((row, index) => this.#decode(id, row.sequence, row.body, after + index + 1)));
    return buildReadPage(events, plan, head);
  }

  #corrupt(sessionId: string, message: string, cause?: unknown): DurableEventStoreError {
    return new DurableEventStoreError('DURABLE_EVENT_CORRUPT_LOG', `session ${sessionId}: ${message}`, {
      ...(cause === undefined ? {} : { cause }),
      details: { sessionId },
    });
  }

  #decode(sessionId: SessionId, sequenceText: string | null, body: string | null, expected: number): DurableEventEnvelope {
    const sequence = Number(sequenceText);
    if (sequence !== expected) throw this.#corrupt(sessionId, `expected sequence ${expected}, found ${String(sequenceText)} (sequence gap)`);
    let envelope: DurableEventEnvelope;
    try {
      envelope = parseDurableEventEnvelope(JSON.parse(body ?? ''));
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      throw this.#corrupt(sessionId, `event ${expected} is unreadable: ${message}`, error);
    }
    if (envelope.sequence !== sequence || envelope.sessionId !== sessionId) {
      throw this.#corrupt(sessionId, `event ${expected} does not match its row`);
    }
    return envelope;
  }

  /** The stored per-event digests (see `DurableEventDigestStore`); `null` for rows written before migration 5. */
  async readEventDigests(sessionId: SessionId, options: DurableEventDigestReadOptions): Promise<DurableEventDigestRow[]> {
    const id = checkSessionId(sessionId);
    const after = options.after ?? 0;
    if (!Number.isSafeInteger(after) || after < 0 || !Number.isSafeInteger(options.limit) || options.limit < 1) {
      throw new DurableEventStoreError('DURABLE_EVENT_INVALID_OPTIONS', 'after must be an integer >= 0 and limit an integer >= 1');
    }
    throwIfAborted(options.signal);
    let rows: Array<{ sequence: string; digest: string | null }>;
    try {
      rows = await this.#query(this.#sql.readDigests, [id, after, Math.min(options.limit, 2 ** 31 - 1)], options.signal);
    } catch (error) {
      throw readFailure(error, 'digest read', options.signal);
    }
    return rows.map((row) => ({ sequence: integer(row.sequence, 'sequence'), digest: row.digest === null ? null : Number(row.digest) }));
  }

  async getHeadSequence(sessionId: SessionId, options?: DurableStoreCallOptions): Promise<EventSequence | null> {
    const id = checkSessionId(sessionId);
    throwIfAborted(options?.signal);
    let rows: Array<{ head: string }>;
    try {
      rows = await this.#query(this.#sql.readHead, [id], options?.signal);
    } catch (error) {
      throw readFailure(error, 'head read', options?.signal);
    }
    const head = rows.length === 0 ? 0 : integer(rows[0]?.head, 'head');
    return head === 0 ? null : EventSequence(head);
  }

  /**
   * Where the events carrying `commandId` are (from the `command_id` index), or `null`. Lets a
   * process that did not follow the whole log check whether a command reached it.
   */
  async findCommand(sessionId: SessionId, commandId: CommandId, options?: DurableStoreCallOptions): Promise<PostgresCommandRange | null> {
    const id = checkSessionId(sessionId);
    throwIfAborted(options?.signal);
    let rows: Array<{ first: string | null; last: string | null; count: string }>;
    try {
      rows = await this.#query(this.#sql.findCommand, [id, commandId], options?.signal);
    } catch (error) {
      throw readFailure(error, 'command lookup', options?.signal);
    }
    const row = rows[0];
    if (row === undefined || row.first === null || row.last === null) return null;
    return {
      firstSequence: EventSequence(integer(row.first, 'sequence')),
      lastSequence: EventSequence(integer(row.last, 'sequence')),
      eventCount: integer(row.count, 'count'),
    };
  }

  /**
   * Reads events of every session in one global order, after `after` (a position from an earlier
   * page, 0 to start). Only transactions older than every transaction still in progress are
   * returned (`pg_snapshot_xmin`), so a transaction that commits after a later one is never
   * skipped: its events appear once it committed, still after `after`. Positions have gaps.
   */
  async readGlobal(options: { after?: number; limit?: number; signal?: AbortSignal } = {}): Promise<PostgresGlobalPage> {
    const after = options.after ?? 0;
    const limit = options.limit ?? 100;
    if (!Number.isSafeInteger(after) || after < 0) throw new DurableEventStoreError('DURABLE_EVENT_INVALID_CURSOR', 'after must be an integer >= 0');
    if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_READ_LIMIT) {
      throw new DurableEventStoreError('DURABLE_EVENT_INVALID_INPUT', `limit must be an integer in 1..${MAX_READ_LIMIT}`);
    }
    let rows: Array<{ position: string; session_id: string; sequence: string; body: string }>;
    try {
      rows = await this.#query(this.#sql.readGlobal, [after, limit], options.signal);
    } catch (error) {
      throw readFailure(error, 'global read', options.signal);
    }
    const events = rows.map((row) => {
      const sequence = integer(row.sequence, 'sequence');
      // SAFETY: session IDs in the table were validated by `append`.
      return { position: integer(row.position, 'position'), event: this.#decode(row.session_id as SessionId, row.sequence, row.body, sequence) };
    });
    return { events, nextPosition: events[events.length - 1]?.position ?? after };
  }

  // ---- watch ---------------------------------------------------------------------------------

  watch(sessionId: SessionId, listener: DurableAppendListener): () => void {
    // SAFETY: event notices carry event sequences, which is what `#deliver` builds for kind 'e'.
    return this.#addWatcher('e', checkSessionId(sessionId), listener as DurableAppendListener & DurabilityListener);
  }

  watchDurability(sessionId: SessionId, listener: DurabilityListener): () => void {
    return this.#addWatcher('d', checkDurabilitySessionId(sessionId), listener);
  }

  #addWatcher(kind: NoticeKind, sessionId: string, listener: DurableAppendListener & DurabilityListener): () => void {
    const map = this.#watchers[kind] as Map<string, Set<typeof listener>>;
    let set = map.get(sessionId);
    if (set === undefined) {
      set = new Set();
      map.set(sessionId, set);
    }
    set.add(listener);
    this.#hub.changed();
    return () => {
      const current = map.get(sessionId);
      if (current === undefined || !current.delete(listener)) return;
      if (current.size === 0) map.delete(sessionId);
      this.#hub.changed();
    };
  }

  #deliver(kind: NoticeKind, sessionId: string, lastSequence: number): void {
    const listeners = this.#watchers[kind].get(sessionId);
    if (listeners === undefined) return;
    // SAFETY: keys were validated by `watch` / `watchDurability`.
    const notice = { sessionId: sessionId as SessionId, lastSequence: lastSequence as EventSequence };
    for (const listener of [...listeners]) {
      queueMicrotask(() => {
        try {
          listener(notice);
        } catch {
          // A notice is a hint; a throwing listener must not reach anyone else.
        }
      });
    }
  }

  /** After a commit: tell local watchers at once, and other processes through NOTIFY. */
  #committed(kind: NoticeKind, sessionId: string, sequence: number): void {
    if (this.#watchers[kind].has(sessionId) && this.#hub.report(kind, sessionId, sequence)) this.#deliver(kind, sessionId, sequence);
    if (!this.#notify) return;
    this.#pendingNotices.push(noticePayload(kind, sessionId, sequence));
    if (this.#pendingNotices.length === 1) {
      queueMicrotask(() => {
        const payloads = this.#pendingNotices;
        this.#pendingNotices = [];
        if (this.#closed) return;
        // A lost notice only delays watchers that poll or reconnect; never fail the write for it.
        this.#query(notifyStatement(this.#channel, payloads), []).catch(() => undefined);
      });
    }
  }

  // ---- the durability ledger ----------------------------------------------------------------

  async recordDurability(sessionId: SessionId, draft: DurabilityRecordDraft, options?: DurableStoreCallOptions): Promise<DurabilityRecordResult> {
    const id = checkDurabilitySessionId(sessionId);
    const valid = validateDurabilityDraft(draft);
    const identity = durabilityIdentity(valid);
    throwIfAborted(options?.signal);
    const result = await this.#serialize(id, () => this.#record(id, valid, identity, options?.signal));
    if (result.created) this.#committed('d', id, result.record.sequence);
    return result;
  }

  async #record(id: SessionId, draft: DurabilityRecordDraft, identity: string, signal: AbortSignal | undefined): Promise<DurabilityRecordResult> {
    for (;;) {
      throwIfAborted(signal);
      let rows: RecordRow[];
      try {
        rows = await this.#query<RecordRow>(this.#sql.readRecordState, [id, identity], signal);
      } catch (error) {
        throw writeFailure(error, 'durability record', signal, 'read');
      }
      const row = rows[0];
      const exists = row?.ledger_head !== null && row?.ledger_head !== undefined;
      const head = exists ? integer(row?.ledger_head, 'ledger_head') : 0;
      const existing = row?.sequence === null || row?.sequence === undefined ? undefined : this.#decodeRecord(id, row, integer(row.sequence, 'sequence'));
      const planned = planDurabilityRecord({ sessionId: id, draft, existing, head: head === 0 ? null : head, nowMs: this.#clock() });
      if (!planned.created) return planned;
      const { record } = planned;
      let count: number;
      try {
        ({ rowCount: count } = await this.#statement(exists ? this.#sql.recordExisting : this.#sql.recordNew, [
          id,
          head,
          record.sequence,
          identity,
          record.kind,
          JSON.stringify(record),
        ], signal));
      } catch (error) {
        if (isRetryableRollback(error) || sqlState(error) === '23505') continue;
        throw writeFailure(error, 'durability record', signal);
      }
      if (count === 1) {
        const known = this.#states.get(id);
        if (known !== undefined) this.#remember(id, { ...known, exists: true, ledgerHead: record.sequence });
        return planned;
      }
    }
  }

  #decodeRecord(sessionId: SessionId, row: RecordRow, expected: number): DurabilityRecord {
    const sequence = Number(row.sequence);
    if (sequence !== expected) {
      throw new DurabilityError('DURABILITY_CORRUPT_RECORD', `session ${sessionId}: expected durability record ${expected}, found ${String(row.sequence)}`, {
        details: { sessionId, sequence: expected },
      });
    }
    const record = decodeDurabilityRecord(row.body ?? '', { sessionId, sequence: expected });
    if (record.kind !== row.kind || durabilityIdentity(record) !== row.identity) {
      throw new DurabilityError('DURABILITY_CORRUPT_RECORD', `session ${sessionId}: durability record ${expected} does not match its row`, {
        details: { sessionId, sequence: expected },
      });
    }
    return record;
  }

  async readDurability(sessionId: SessionId, options?: DurabilityReadOptions): Promise<DurabilityReadResult> {
    const id = checkDurabilitySessionId(sessionId);
    const plan = planDurabilityRead(options);
    throwIfAborted(options?.signal);
    let rows: RecordRow[];
    try {
      rows = await this.#query<RecordRow>(this.#sql.readRecordPage, [id, plan.after ?? 0, plan.limit], options?.signal);
    } catch (error) {
      throw readFailure(error, 'durability read', options?.signal);
    }
    const headValue = rows.length === 0 ? 0 : integer(rows[0]?.ledger_head, 'ledger_head');
    const head = headValue === 0 ? null : headValue;
    checkDurabilityCursor(plan.after, head);
    const after = plan.after ?? 0;
    const present = rows.filter((row) => row.sequence !== null);
    const expected = Math.min(plan.limit, headValue - after);
    if (present.length !== expected) {
      throw new DurabilityError('DURABILITY_CORRUPT_RECORD', `session ${id}: expected ${expected} durability records after ${after}, found ${present.length}`, {
        details: { sessionId: id },
      });
    }
    const records = present.map((row, index) => this.#decodeRecord(id, row, after + index + 1));
    return buildDurabilityPage(records, plan, head);
  }

  // ---- projection checkpoints ---------------------------------------------------------------

  /** The session's latest projection checkpoint (bytes as written), or `null`. */
  async readCheckpoint(sessionId: SessionId, options?: DurableStoreCallOptions): Promise<DurableCheckpointRecord | null> {
    const id = checkSessionId(sessionId);
    throwIfAborted(options?.signal);
    let rows: CheckpointRow[];
    try {
      rows = await this.#query(this.#sql.readCheckpoint, [id], options?.signal);
    } catch (error) {
      throw readFailure(error, 'checkpoint read', options?.signal);
    }
    const head = rows[0];
    if (head === undefined) return null;
    const sequence = EventSequence(integer(head.sequence, 'checkpoint sequence'));
    // SAFETY: written by `writeCheckpoint` after `checkCheckpointRecord`; core re-checks every record.
    const eventId = head.event_id as EventId;
    // A record written before migration 4 is whole in `data`. A plain Uint8Array (pg hands back a
    // Buffer), with its own copy of the bytes.
    if (head.chunks === null) return { sequence, eventId, data: new Uint8Array(head.data) };
    const bytes = integer(head.bytes ?? '', 'checkpoint bytes');
    const data = joinCheckpointChunks(
      rows.map((row) => ({ index: row.chunk, data: row.chunk_data })),
      head.chunks,
      bytes,
    );
    return data === null ? null : { sequence, eventId, data };
  }

  /** Extended records append one chunk (see `writeCheckpoint`). */
  readonly checkpointExtension = true;

  /**
   * Replaces the session's projection checkpoint in one transaction: readers see the previous
   * record or the new one. A record that extends the stored one (`extendsBytes` equal to its
   * length, the same 8 bytes before it) inserts only its new bytes as the next chunk and moves the
   * head; anything else replaces every chunk. Needs no fence; never touches the log.
   */
  async writeCheckpoint(sessionId: SessionId, record: DurableCheckpointRecord, options?: DurableStoreCallOptions): Promise<void> {
    const id = checkSessionId(sessionId);
    // The bytes are sent before this call settles and not kept: no private copy.
    const checked = checkCheckpointRecord(record, false);
    throwIfAborted(options?.signal);
    const data = Buffer.from(checked.data.buffer, checked.data.byteOffset, checked.data.byteLength);
    const prefix = checked.extendsBytes;
    try {
      await this.#transaction(options?.signal, async (client) => {
        if (prefix !== undefined) {
          const head = (await client.query<{ chunks: number | null; bytes: string | null }>(this.#sql.lockCheckpointHead, [id])).rows[0];
          if (head !== undefined && head.chunks !== null && head.bytes === String(prefix)) {
            const tail = (await client.query<{ tail: Uint8Array }>(this.#sql.checkpointChunkTail, [id, head.chunks - 1])).rows[0]?.tail;
            if (storedTailMatches(tail, checked)) {
              // Chunks past the head are not part of any record (none, unless a write was cut off
              // by something other than a rollback): clear the index this chunk takes.
              await client.query(this.#sql.deleteCheckpointChunksFrom, [id, head.chunks]);
              await client.query(this.#sql.insertCheckpointChunk, [id, head.chunks, data.subarray(prefix)]);
              await client.query(this.#sql.writeCheckpointHead, [id, checked.sequence, checked.eventId, head.chunks + 1, data.length]);
              return;
            }
          }
        }
        // The head first: its row lock orders this write after any other writer of the session's
        // checkpoint (an extension locks it too), so the delete sees every chunk already committed.
        await client.query(this.#sql.writeCheckpointHead, [id, checked.sequence, checked.eventId, 1, data.length]);
        await client.query(this.#sql.deleteCheckpointChunks, [id]);
        await client.query(this.#sql.insertCheckpointChunk, [id, 0, data]);
      });
    } catch (error) {
      throw writeFailure(error, 'checkpoint write', options?.signal);
    }
  }

  // ---- execution leases ---------------------------------------------------------------------

  async #updateLease(
    sessionId: SessionId,
    signal: AbortSignal | undefined,
    decide: (state: LeaseState | null, nowMs: number) => LeaseState,
  ): Promise<DurableExecutionLeaseRecord> {
    throwIfAborted(signal);
    const decided = await this.#serialize(sessionId, () =>
      this.#write<{ previous: LeaseState | null; next: LeaseState }>(
        sessionId,
        signal,
        'lease update',
        (state) => ({ previous: state.lease, next: decide(state.lease, this.#clock()) }),
        async (run, state, plan) => {
          if (plan.next === plan.previous) return state;
          const lease = plan.next;
          const { rows } = await run(state.exists ? this.#sql.leaseExisting : this.#sql.leaseNew, [
            sessionId,
            state.leaseVersion,
            lease.leaseId,
            lease.ownerId,
            lease.fencingToken,
            lease.acquiredAtMs,
            lease.expiresAtMs,
            lease.released,
          ]);
          const version = rows[0]?.['lease_version'];
          if (typeof version !== 'string') return null;
          return { ...state, exists: true, leaseVersion: integer(version, 'lease_version'), lease };
        },
        // Lease calls read the row every time: a no-op decision (releasing a released lease) writes
        // nothing that would reveal remembered state as stale. They are rare; appends are not.
        false,
      ),
    );
    return leaseRecord(sessionId, decided.next);
  }

  async acquireExecutionLease(sessionId: SessionId, options: DurableLeaseAcquireOptions): Promise<DurableExecutionLeaseRecord> {
    const id = checkSessionId(sessionId);
    const request = { ownerId: options.ownerId, leaseId: options.leaseId, ttlMs: options.ttlMs };
    return this.#updateLease(id, options.signal, (state, nowMs) => decideAcquire(state, request, nowMs));
  }

  async renewExecutionLease(sessionId: SessionId, fence: DurableExecutionFence, options: DurableLeaseRenewOptions): Promise<DurableExecutionLeaseRecord> {
    const id = checkSessionId(sessionId);
    return this.#updateLease(id, options.signal, (state, nowMs) => decideRenew(state, fence, options.ttlMs, nowMs));
  }

  async releaseExecutionLease(sessionId: SessionId, fence: DurableExecutionFence, options?: DurableStoreCallOptions): Promise<void> {
    const id = checkSessionId(sessionId);
    await this.#updateLease(id, options?.signal, (state, nowMs) => decideRelease(state, fence, nowMs));
  }

  async assertExecutionLease(sessionId: SessionId, fence: DurableExecutionFence, options?: DurableStoreCallOptions): Promise<void> {
    const id = checkSessionId(sessionId);
    throwIfAborted(options?.signal);
    const state = await this.#readState(id, options?.signal);
    checkFence(state.lease, fence, this.#clock());
  }

  async inspectExecutionLease(sessionId: SessionId, options?: DurableStoreCallOptions): Promise<DurableExecutionLeaseRecord | null> {
    const id = checkSessionId(sessionId);
    throwIfAborted(options?.signal);
    const state = await this.#readState(id, options?.signal);
    return state.lease === null ? null : leaseRecord(id, state.lease);
  }

  async requiresExecutionLease(sessionId: SessionId, options?: DurableStoreCallOptions): Promise<boolean> {
    return (await this.inspectExecutionLease(sessionId, options)) !== null;
  }
}
