/**
 * PostgresDurableEventStore: the full store contract (events, execution leases with fencing, the
 * durability records, projection checkpoints) on PostgreSQL, for fleets of Node processes on several machines.
 *
 * How a write works (append, lease change, durability record):
 * 1. read the session's row (head, lease state, durability head) — or take it from this store's
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
 *
 * One home per concern: `connection.ts` (statements and transactions on the pool),
 * `session-writes.ts` (the session row and the optimistic write loop), `append.ts`, `reads.ts`,
 * `digests.ts`, `durability.ts`, `checkpoints.ts`, `leases.ts`, `watchers.ts` (with
 * `watch-hub.ts`), `migrate.ts`, `options.ts` and `failures.ts`; this class wires them together.
 */
import type { DurableCheckpointRecord, DurableCheckpointStore } from '../../core/checkpoint/contract.js';
import type { DurableEventDigestReadOptions, DurableEventDigestRow, DurableEventDigestStore } from '../../core/checkpoint/event-digest.js';
import type {
  DurabilityRecordStore,
  DurabilityListener,
  DurabilityReadOptions,
  DurabilityReadResult,
  DurabilityRecordDraft,
  DurabilityRecordResult,
} from '../../core/durability/record-contract.js';
import { checkDurabilitySessionId } from '../../core/durability/record-engine.js';
import { checkSessionId } from '../../core/log-engine.js';
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
} from '../../core/store.js';
import { DurableEventStoreError } from '../../protocol/errors.js';
import type { DurableEventDraft } from '../../protocol/events.js';
import type { CommandId, EventSequence, SessionId } from '../../protocol/ids.js';
import { PostgresAppends } from './append.js';
import { PostgresCheckpoints } from './checkpoints.js';
import { PostgresConnection } from './connection.js';
import { readEventDigests } from './digests.js';
import { loadPg, type PgClientConfig, type PgModule, type PgPool } from './driver.js';
import { PostgresDurability } from './durability.js';
import { PostgresLeases } from './leases.js';
import { checkSchemaVersion, migrateSchema } from './migrate.js';
import {
  DEFAULT_POSTGRES_NOTIFY_PROBE_TIMEOUT_MS,
  DEFAULT_POSTGRES_POLL_INTERVAL_MS,
  DEFAULT_POSTGRES_STATEMENT_TIMEOUT_MS,
  checkMs,
  type PostgresDurableEventStoreOptions,
} from './options.js';
import { PostgresEventReads, type PostgresCommandRange, type PostgresGlobalPage } from './reads.js';
import { DEFAULT_POSTGRES_SCHEMA, checkSchemaName } from './schema.js';
import { SessionWrites } from './session-writes.js';
import { postgresStatements, type PostgresStatements } from './statements.js';
import type { WatchMode } from './watch-hub.js';
import { PostgresWatchers } from './watchers.js';

export {
  DEFAULT_POSTGRES_NOTIFY_PROBE_TIMEOUT_MS,
  DEFAULT_POSTGRES_POLL_INTERVAL_MS,
  DEFAULT_POSTGRES_STATEMENT_TIMEOUT_MS,
  type PostgresConnectionConfig,
  type PostgresDurableEventStoreOptions,
  type PostgresPoolLike,
} from './options.js';
export type { PostgresCommandRange, PostgresGlobalEvent, PostgresGlobalPage } from './reads.js';
export { MAX_OPTIMISTIC_ATTEMPTS } from './session-writes.js';

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
  implements DurableEventStore, DurableExecutionLeaseStore, DurabilityRecordStore, DurableCheckpointStore, DurableEventDigestStore
{
  /** The PostgreSQL schema holding the tables. */
  readonly schema: string;
  readonly #ownsPool: boolean;
  readonly #connection: PostgresConnection;
  readonly #sql: PostgresStatements;
  readonly #watchers: PostgresWatchers;
  readonly #appends: PostgresAppends;
  readonly #reads: PostgresEventReads;
  readonly #durability: PostgresDurability;
  readonly #checkpoints: PostgresCheckpoints;
  readonly #leases: PostgresLeases;
  #closed = false;

  private constructor(pg: PgModule, pool: PgPool, ownsPool: boolean, config: PgClientConfig, options: PostgresDurableEventStoreOptions) {
    this.schema = options.schema ?? DEFAULT_POSTGRES_SCHEMA;
    const quoted = checkSchemaName(this.schema);
    this.#ownsPool = ownsPool;
    this.#connection = new PostgresConnection(pool, options.preparedStatements ?? true);
    this.#sql = postgresStatements(quoted);
    const clock = options.clock ?? Date.now;
    const listenConfig: PgClientConfig =
      options.listenConnectionString === undefined ? config : { connectionString: options.listenConnectionString };
    const pollIntervalMs = checkMs('pollIntervalMs', options.pollIntervalMs, DEFAULT_POSTGRES_POLL_INTERVAL_MS, 1, 300_000);
    this.#watchers = new PostgresWatchers(this.#connection, this.#sql, this.schema, options.notify ?? true, {
      pg,
      listenConfig,
      pollIntervalMs,
      probeTimeoutMs: checkMs('notifyProbeTimeoutMs', options.notifyProbeTimeoutMs, DEFAULT_POSTGRES_NOTIFY_PROBE_TIMEOUT_MS, 1, 300_000),
      retryMs: 5000,
      safetyPollMs: 10 * pollIntervalMs,
    });
    const writes = new SessionWrites(this.#connection, this.#sql);
    this.#appends = new PostgresAppends(writes, this.#sql, this.#watchers, clock, options.testHooks ?? {});
    this.#reads = new PostgresEventReads(this.#connection, this.#sql);
    this.#durability = new PostgresDurability(this.#connection, this.#sql, writes, this.#watchers, clock);
    this.#checkpoints = new PostgresCheckpoints(this.#connection, this.#sql);
    this.#leases = new PostgresLeases(writes, this.#sql, clock);
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
      if (options.migrate === false) await checkSchemaVersion(store.#connection, store.schema);
      else await store.migrate();
    } catch (error) {
      await store.close();
      throw error;
    }
    return store;
  }

  /** How this store currently learns about other processes' writes (`idle` while nobody watches). */
  get watchMode(): WatchMode {
    return this.#watchers.mode;
  }

  /** Stops watching and, when the store created its pool, ends it. Idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#connection.closed = true;
    await this.#watchers.close();
    if (this.#ownsPool) await this.#connection.pool.end().catch(() => undefined);
  }

  /** Applies every missing migration in one transaction; returns how many ran. */
  async migrate(): Promise<number> {
    return migrateSchema(this.#connection, this.schema);
  }

  // ---- events ------------------------------------------------------------------------------

  append(sessionId: SessionId, drafts: readonly DurableEventDraft[], options?: DurableAppendOptions): Promise<DurableAppendResult> {
    return this.#appends.append(sessionId, drafts, options);
  }

  read(sessionId: SessionId, options?: DurableReadOptions): Promise<DurableReadResult> {
    return this.#reads.read(sessionId, options);
  }

  /** The stored per-event digests (see `DurableEventDigestStore`); `null` for rows written before migration 5. */
  readEventDigests(sessionId: SessionId, options: DurableEventDigestReadOptions): Promise<DurableEventDigestRow[]> {
    return readEventDigests(this.#connection, this.#sql, sessionId, options);
  }

  getHeadSequence(sessionId: SessionId, options?: DurableStoreCallOptions): Promise<EventSequence | null> {
    return this.#reads.getHeadSequence(sessionId, options);
  }

  /**
   * Where the events carrying `commandId` are (from the `command_id` index), or `null`. Lets a
   * process that did not follow the whole log check whether a command reached it.
   */
  findCommand(sessionId: SessionId, commandId: CommandId, options?: DurableStoreCallOptions): Promise<PostgresCommandRange | null> {
    return this.#reads.findCommand(sessionId, commandId, options);
  }

  /**
   * Reads events of every session in one global order, after `after` (a position from an earlier
   * page, 0 to start). Only transactions older than every transaction still in progress are
   * returned (`pg_snapshot_xmin`), so a transaction that commits after a later one is never
   * skipped: its events appear once it committed, still after `after`. Positions have gaps.
   * "In progress" is server-wide: a transaction left open anywhere on the server (any database, any
   * application) holds pages back, possibly empty, until it ends (docs/postgres.md).
   */
  readGlobal(options: { after?: number; limit?: number; signal?: AbortSignal } = {}): Promise<PostgresGlobalPage> {
    return this.#reads.readGlobal(options);
  }

  // ---- watch ---------------------------------------------------------------------------------

  watch(sessionId: SessionId, listener: DurableAppendListener): () => void {
    // SAFETY: event notices carry event sequences, which is what the watchers deliver for kind 'e'.
    return this.#watchers.add('e', checkSessionId(sessionId), listener as DurableAppendListener & DurabilityListener);
  }

  watchDurability(sessionId: SessionId, listener: DurabilityListener): () => void {
    return this.#watchers.add('d', checkDurabilitySessionId(sessionId), listener);
  }

  // ---- the durability records ----------------------------------------------------------------

  recordDurability(sessionId: SessionId, draft: DurabilityRecordDraft, options?: DurableStoreCallOptions): Promise<DurabilityRecordResult> {
    return this.#durability.recordDurability(sessionId, draft, options);
  }

  readDurability(sessionId: SessionId, options?: DurabilityReadOptions): Promise<DurabilityReadResult> {
    return this.#durability.readDurability(sessionId, options);
  }

  // ---- projection checkpoints ---------------------------------------------------------------

  /** The session's latest projection checkpoint (bytes as written), or `null`. */
  readCheckpoint(sessionId: SessionId, options?: DurableStoreCallOptions): Promise<DurableCheckpointRecord | null> {
    return this.#checkpoints.readCheckpoint(sessionId, options);
  }

  /** Extended records append one chunk (see `writeCheckpoint`). */
  readonly checkpointExtension = true;

  /**
   * Replaces the session's projection checkpoint in one transaction: readers see the previous
   * record or the new one. A record that extends the stored one (`extendsBytes` equal to its
   * length, the same 8 bytes before it) inserts only its new bytes as the next chunk and moves the
   * head; anything else replaces every chunk. Needs no fence; never touches the log.
   */
  writeCheckpoint(sessionId: SessionId, record: DurableCheckpointRecord, options?: DurableStoreCallOptions): Promise<void> {
    return this.#checkpoints.writeCheckpoint(sessionId, record, options);
  }

  // ---- execution leases ---------------------------------------------------------------------

  acquireExecutionLease(sessionId: SessionId, options: DurableLeaseAcquireOptions): Promise<DurableExecutionLeaseRecord> {
    return this.#leases.acquireExecutionLease(sessionId, options);
  }

  renewExecutionLease(sessionId: SessionId, fence: DurableExecutionFence, options: DurableLeaseRenewOptions): Promise<DurableExecutionLeaseRecord> {
    return this.#leases.renewExecutionLease(sessionId, fence, options);
  }

  releaseExecutionLease(sessionId: SessionId, fence: DurableExecutionFence, options?: DurableStoreCallOptions): Promise<void> {
    return this.#leases.releaseExecutionLease(sessionId, fence, options);
  }

  assertExecutionLease(sessionId: SessionId, fence: DurableExecutionFence, options?: DurableStoreCallOptions): Promise<void> {
    return this.#leases.assertExecutionLease(sessionId, fence, options);
  }

  inspectExecutionLease(sessionId: SessionId, options?: DurableStoreCallOptions): Promise<DurableExecutionLeaseRecord | null> {
    return this.#leases.inspectExecutionLease(sessionId, options);
  }

  requiresExecutionLease(sessionId: SessionId, options?: DurableStoreCallOptions): Promise<boolean> {
    return this.#leases.requiresExecutionLease(sessionId, options);
  }
}
