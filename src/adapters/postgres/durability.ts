/**
 * The durability records on PostgreSQL: `recordDurability` reads the durability head and any record
 * with the draft's identity in one statement, lets the core engine decide, and inserts a new
 * record with one conditional statement (a moved head or a duplicate identity reads and decides
 * again); `readDurability` reads a page, checking every record against its position and row.
 */
import { throwIfAborted } from '../../core/abort.js';
import type {
  DurabilityReadOptions,
  DurabilityReadResult,
  DurabilityRecord,
  DurabilityRecordDraft,
  DurabilityRecordResult,
} from '../../core/durability/record-contract.js';
import {
  buildDurabilityPage,
  checkDurabilityCursor,
  checkDurabilitySessionId,
  decodeDurabilityRecord,
  durabilityIdentity,
  planDurabilityRead,
  planDurabilityRecord,
  validateDurabilityDraft,
} from '../../core/durability/record-engine.js';
import type { DurableStoreCallOptions } from '../../core/store.js';
import { DurabilityError } from '../../protocol/errors.js';
import type { SessionId } from '../../protocol/ids.js';
import type { PostgresConnection } from './connection.js';
import { isRetryableRollback, sqlState } from './driver.js';
import { integer, writeFailure } from './failures.js';
import type { SessionWrites } from './session-writes.js';
import type { PostgresStatements } from './statements.js';
import type { PostgresWatchers } from './watchers.js';

interface RecordRow {
  ledger_head: string | null;
  sequence: string | null;
  identity: string | null;
  kind: string | null;
  body: string | null;
}

/** The durability records of one store. */
export class PostgresDurability {
  constructor(
    private readonly connection: PostgresConnection,
    private readonly sql: PostgresStatements,
    private readonly writes: SessionWrites,
    private readonly watchers: PostgresWatchers,
    private readonly clock: () => number,
  ) {}

  async recordDurability(sessionId: SessionId, draft: DurabilityRecordDraft, options?: DurableStoreCallOptions): Promise<DurabilityRecordResult> {
    const id = checkDurabilitySessionId(sessionId);
    const valid = validateDurabilityDraft(draft);
    const identity = durabilityIdentity(valid);
    throwIfAborted(options?.signal);
    const result = await this.writes.serialize(id, () => this.#record(id, valid, identity, options?.signal));
    if (result.created) this.watchers.committed('d', id, result.record.sequence);
    return result;
  }

  async #record(id: SessionId, draft: DurabilityRecordDraft, identity: string, signal: AbortSignal | undefined): Promise<DurabilityRecordResult> {
    for (;;) {
      throwIfAborted(signal);
      let rows: RecordRow[];
      try {
        rows = await this.connection.query<RecordRow>(this.sql.readRecordState, [id, identity], signal);
      } catch (error) {
        throw writeFailure(error, 'durability record', signal, 'read');
      }
      const row = rows[0];
      const exists = row?.ledger_head !== null && row?.ledger_head !== undefined;
      const head = exists ? integer(row?.ledger_head, 'ledger_head') : 0;
      const existing = row?.sequence === null || row?.sequence === undefined ? undefined : this.#decodeRecord(id, row, integer(row.sequence, 'sequence'));
      const planned = planDurabilityRecord({ sessionId: id, draft, existing, head: head === 0 ? null : head, nowMs: this.clock() });
      if (!planned.created) return planned;
      const { record } = planned;
      let count: number;
      try {
        ({ rowCount: count } = await this.connection.statement(exists ? this.sql.recordExisting : this.sql.recordNew, [
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
        const known = this.writes.remembered(id);
        if (known !== undefined) this.writes.remember(id, { ...known, exists: true, durabilityHead: record.sequence });
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
    const rows = await this.connection.read<RecordRow>('durability read', this.sql.readRecordPage, [id, plan.after ?? 0, plan.limit], options?.signal);
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
}
