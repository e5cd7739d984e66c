/**
 * ProfileObject: prices each stage of a SessionObject append, inside workerd, for the edge
 * benchmark's breakdown (`bench/edge.bench.ts`).
 *
 * Workers clocks stand still while code runs and move only on I/O, so a stage cannot be timed
 * from inside the object. Instead every method below is one RPC that runs the append pipeline
 * up to a given stage and stops; the Worker times K calls of each, and the difference between
 * consecutive stages is that stage's cost:
 *   noop          the RPC itself, drafts cloned in;
 *   validate      + `validateDraftBatch` (zod draft schemas, lossless-JSON walk);
 *   plan          + `planAppend` (envelopes, event ids, per-event size check);
 *   stringify     + `JSON.stringify` of every envelope (the row bodies);
 *   reads         stringify, plus the two SELECTs every append runs first (head, lease);
 *   insert        + the rows inserted, one `transactionSync`, into a copy of the real `events`
 *                 table (DDL taken from `SQL_MIGRATIONS`: composite primary key, UNIQUE event_id);
 *   insertNoUnique  the same into a copy without the UNIQUE constraint on `event_id` (what-if);
 *   ledger        the real `SqlLedger.append` on this object's SQLite (reads head and lease,
 *                 then validate/plan/insert as above), count returned;
 *   ledgerResult  the same, returning the whole `DurableAppendResult` (cloned back to the caller).
 * The copy tables grow like the real log does (one row per appended event).
 */
import { DurableObject } from 'cloudflare:workers';
import { DurableObjectSqlDriver } from '../../../src/adapters/durable-object/storage-sql-driver.js';
import { SQL_MIGRATIONS } from '../../../src/adapters/sql/schema.js';
import { SqlLedger } from '../../../src/adapters/sql/sql-ledger.js';
import { planAppend, validateDraftBatch } from '../../../src/core/log-engine.js';
import type { DurableAppendResult } from '../../../src/core/store.js';
import type { DurableEventDraft } from '../../../src/protocol/events.js';
import { EventSequence, SessionId } from '../../../src/protocol/ids.js';
import type { ProfileStage } from '../profile-stages.js';

const SESSION = SessionId('profile');
const COPY_TABLE = 'profile_events';
const COPY_NO_UNIQUE_TABLE = 'profile_events_no_unique';

/** The real `events` DDL, renamed (and optionally without UNIQUE on event_id). */
function copyOfEventsTable(name: string, dropUnique: boolean): string {
  const ddl = SQL_MIGRATIONS.flat().find((statement) => /CREATE TABLE IF NOT EXISTS events \(/.test(statement));
  if (ddl === undefined) throw new Error('no events table in SQL_MIGRATIONS');
  const renamed = ddl.replace('CREATE TABLE IF NOT EXISTS events (', `CREATE TABLE IF NOT EXISTS ${name} (`);
  if (!dropUnique) return renamed;
  const withoutUnique = renamed.replace(/event_id TEXT NOT NULL UNIQUE/, 'event_id TEXT NOT NULL');
  if (withoutUnique === renamed) throw new Error('the events table no longer has UNIQUE event_id; update the profile');
  return withoutUnique;
}

/**
 * Runs the append pipeline of SessionObject up to a stage (see the module header); one public
 * method per `ProfileStage` of `profile-stages.ts`.
 */
export class ProfileObject extends DurableObject<unknown> implements Record<ProfileStage, (drafts: readonly DurableEventDraft[]) => unknown> {
  readonly #ledger: SqlLedger;
  /** Head of each copy table (the copies are append-only logs of session `profile`). */
  readonly #copyHeads = new Map<string, number>([
    [COPY_TABLE, 0],
    [COPY_NO_UNIQUE_TABLE, 0],
  ]);

  constructor(ctx: DurableObjectState, env: unknown) {
    super(ctx, env);
    this.#ledger = new SqlLedger(new DurableObjectSqlDriver(ctx.storage));
    ctx.storage.sql.exec(copyOfEventsTable(COPY_TABLE, false));
    ctx.storage.sql.exec(copyOfEventsTable(COPY_NO_UNIQUE_TABLE, true));
    for (const table of this.#copyHeads.keys()) {
      const row = ctx.storage.sql.exec<{ head: number | null }>(`SELECT MAX(sequence) AS head FROM ${table}`).one();
      this.#copyHeads.set(table, row.head ?? 0);
    }
  }

  noop(drafts: readonly DurableEventDraft[]): number {
    return drafts.length;
  }

  validate(drafts: readonly DurableEventDraft[]): number {
    return validateDraftBatch(drafts).length;
  }

  plan(drafts: readonly DurableEventDraft[]): number {
    return this.#plan(drafts, 0).events.length;
  }

  stringify(drafts: readonly DurableEventDraft[]): number {
    let bytes = 0;
    for (const event of this.#plan(drafts, 0).events) bytes += JSON.stringify(event).length;
    return bytes > 0 ? drafts.length : 0;
  }

  reads(drafts: readonly DurableEventDraft[]): number {
    const sql = this.ctx.storage.sql;
    const head = sql.exec('SELECT MAX(sequence) AS head FROM events WHERE session_id = ?', SESSION).toArray();
    const lease = sql.exec('SELECT state FROM leases WHERE session_id = ?', SESSION).toArray();
    return head.length === 1 && lease.length <= 1 ? this.stringify(drafts) : 0;
  }

  insert(drafts: readonly DurableEventDraft[]): number {
    return this.#insertCopy(COPY_TABLE, drafts);
  }

  insertNoUnique(drafts: readonly DurableEventDraft[]): number {
    return this.#insertCopy(COPY_NO_UNIQUE_TABLE, drafts);
  }

  ledger(drafts: readonly DurableEventDraft[]): number {
    return this.#ledger.append(SESSION, drafts).events.length;
  }

  ledgerResult(drafts: readonly DurableEventDraft[]): DurableAppendResult {
    return this.#ledger.append(SESSION, drafts);
  }

  #plan(drafts: readonly DurableEventDraft[], head: number): DurableAppendResult {
    const valid = validateDraftBatch(drafts);
    return planAppend({
      sessionId: SESSION,
      drafts: valid,
      options: undefined,
      head: head === 0 ? null : EventSequence(head),
      lease: null,
      nowMs: Date.now(),
    });
  }

  /** The ledger's INSERT loop, on a copy table (same statement shape and values). */
  #insertCopy(table: string, drafts: readonly DurableEventDraft[]): number {
    const head = this.#copyHeads.get(table) ?? 0;
    const planned = this.#plan(drafts, head);
    const sql = this.ctx.storage.sql;
    const statement = `INSERT INTO ${table} (session_id, sequence, event_id, type, command_id, body) VALUES (?, ?, ?, ?, ?, ?)`;
    this.ctx.storage.transactionSync(() => {
      for (const event of planned.events) {
        sql
          .exec(statement, SESSION, event.sequence, event.eventId, event.type, event.commandId ?? null, JSON.stringify(event))
          .toArray();
      }
    });
    this.#copyHeads.set(table, planned.lastSequence);
    return planned.events.length;
  }
}
