/**
 * ProfileObject: prices each stage of a SessionObject append, inside workerd, for the edge
 * benchmark's breakdown (`bench/edge.bench.ts`).
 *
 * Workers clocks stand still while code runs and move only on I/O, so a stage cannot be timed
 * from inside the object. Instead every method below is one RPC that runs the append pipeline
 * up to a given stage and stops; the Worker times K calls of each, and the difference between
 * a stage and its base is that stage's cost. The store's path (`appendJson`, drafts as JSON text):
 *   noop          the RPC itself, the JSON text cloned in;
 *   parse         + `parseDraftBatchJson` (JSON.parse, then the fast path for parsed values);
 *   plan          + `planAppend` (envelopes, event ids, the encodings whose size it checks);
 *   insert        + the encodings and their digests inserted into the real `events` table with the ledger's own
 *                 multi-row statements (`insertEventRows`), one `transactionSync`;
 *   ledger        the real single-writer `SqlEventLog.appendJson` on this object's SQLite (head and
 *                 lease remembered, then parse/plan/insert as above), count returned;
 *   ledgerReceipt the same, returning the compact receipt (what `appendJson` answers).
 * The what-ifs of an append RPC taking the drafts as objects and answering the whole result:
 *   noopDrafts          the RPC itself, the drafts cloned in as objects;
 *   validateDrafts      + `validateDraftBatch` on objects (descriptor walk);
 *   validateDraftsZod   + `validateDraftBatchStrict` (zod) instead;
 *   ledgerDraftsResult  `SqlEventLog.append`, the whole `DurableAppendResult` returned.
 * The ledger stages append to session `profile`, the insert stage to session `profile-insert`
 * of the same table, so both logs grow like a real one.
 */
import { DurableObject } from 'cloudflare:workers';
import { appendReceiptOf } from '../../../src/adapters/durable-object/append-receipt.js';
import type { RpcAppendReceipt } from '../../../src/adapters/durable-object/rpc.js';
import { DurableObjectSqlDriver } from '../../../src/adapters/durable-object/storage-sql-driver.js';
import { parseDraftBatchJson, planAppend, validateDraftBatch, validateDraftBatchStrict } from '../../../src/core/log-engine.js';
import { createSessionKey, findSessionKey, insertEventRows } from '../../../src/adapters/sql/event-rows.js';
import { eventDigest } from '../../../src/core/checkpoint/event-digest.js';
import { SqlEventLog } from '../../../src/adapters/sql/sql-event-log.js';
import type { DurableAppendResult } from '../../../src/core/store.js';
import type { DurableEventDraft } from '../../../src/protocol/events.js';
import { EventSequence, SessionId } from '../../../src/protocol/ids.js';
import type { ProfileStage } from '../profile-stages.js';

const SESSION = SessionId('profile');
const INSERT_SESSION = SessionId('profile-insert');

/** A stage's input: JSON text or draft objects, per `PROFILE_STAGE_INFO`. */
type StageInput = string & readonly DurableEventDraft[];

/**
 * Runs the append pipeline of SessionObject up to a stage (see the module header); one public
 * method per `ProfileStage` of `profile-stages.ts`.
 */
export class ProfileObject extends DurableObject<unknown> implements Record<ProfileStage, (input: StageInput) => unknown> {
  readonly #eventLog: SqlEventLog;
  /** Key and head of the insert stage's session (the ledger stages use the ledger's own). */
  readonly #insertKey: number;
  #insertHead: number;

  constructor(ctx: DurableObjectState, env: unknown) {
    super(ctx, env);
    this.#eventLog = new SqlEventLog(new DurableObjectSqlDriver(ctx.storage), { singleWriter: true });
    this.#insertHead = this.#eventLog.getHeadSequence(INSERT_SESSION) ?? 0;
    const driver = this.#eventLog.driver;
    this.#insertKey = findSessionKey(driver, INSERT_SESSION) ?? createSessionKey(driver, INSERT_SESSION);
  }

  /** Answers the text's length (the loop checks it: the text really arrived). */
  noop(text: string): number {
    return text.length;
  }

  parse(text: string): number {
    return parseDraftBatchJson(text).length;
  }

  plan(text: string): number {
    return this.#plan(text, 0).encodings.length;
  }

  insert(text: string): number {
    const { result, encodings } = this.#plan(text, this.#insertHead);
    const digests = result.events.map(eventDigest);
    this.ctx.storage.transactionSync(() => insertEventRows(this.#eventLog.driver, this.#insertKey, this.#insertHead + 1, encodings, digests));
    this.#insertHead = result.lastSequence;
    return result.events.length;
  }

  ledger(text: string): number {
    return this.#eventLog.appendJson(SESSION, text).events.length;
  }

  ledgerReceipt(text: string): RpcAppendReceipt {
    return appendReceiptOf(this.#eventLog.appendJson(SESSION, text));
  }

  noopDrafts(drafts: readonly DurableEventDraft[]): number {
    return drafts.length;
  }

  validateDrafts(drafts: readonly DurableEventDraft[]): number {
    return validateDraftBatch(drafts).length;
  }

  validateDraftsZod(drafts: readonly DurableEventDraft[]): number {
    return validateDraftBatchStrict(drafts).length;
  }

  ledgerDraftsResult(drafts: readonly DurableEventDraft[]): DurableAppendResult {
    return this.#eventLog.append(SESSION, drafts);
  }

  #plan(text: string, head: number): { result: DurableAppendResult; encodings: string[] } {
    const encodings: string[] = [];
    const result = planAppend({
      sessionId: INSERT_SESSION,
      drafts: parseDraftBatchJson(text),
      options: undefined,
      head: head === 0 ? null : EventSequence(head),
      lease: null,
      nowMs: Date.now(),
      encodings,
    });
    return { result, encodings };
  }
}

