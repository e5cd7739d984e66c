/**
 * Reading events back: a page of one session (`read`), its head, where a command's events are
 * (`findCommand`), and the global order of every session (`readGlobal`). Every row goes through
 * the full envelope parser and is checked against its position; a gap or a row that does not
 * match is `DURABLE_EVENT_CORRUPT_LOG`.
 */
import { throwIfAborted } from '../../core/abort.js';
import { buildReadPage, checkReadCursor, checkSessionId, markParsedEnvelopes, planRead } from '../../core/log-engine.js';
import type { DurableReadOptions, DurableReadResult, DurableStoreCallOptions } from '../../core/store.js';
import { DurableEventStoreError } from '../../protocol/errors.js';
import { parseDurableEventEnvelope, type DurableEventEnvelope } from '../../protocol/events.js';
import { EventSequence, type CommandId, type SessionId } from '../../protocol/ids.js';
import { MAX_READ_LIMIT } from '../../protocol/limits.js';
import type { PostgresConnection } from './connection.js';
import { integer } from './failures.js';
import type { PostgresStatements } from './statements.js';

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

/** The event reads of one store. */
export class PostgresEventReads {
  constructor(
    private readonly connection: PostgresConnection,
    private readonly sql: PostgresStatements,
  ) {}

  async read(sessionId: SessionId, options?: DurableReadOptions): Promise<DurableReadResult> {
    const id = checkSessionId(sessionId);
    const plan = planRead(options);
    throwIfAborted(options?.signal);
    const rows = await this.connection.read<{ head: string | null; sequence: string | null; body: string | null }>('read', this.sql.readPage, [id, plan.after ?? 0, plan.limit], options?.signal);
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

  async getHeadSequence(sessionId: SessionId, options?: DurableStoreCallOptions): Promise<EventSequence | null> {
    const id = checkSessionId(sessionId);
    throwIfAborted(options?.signal);
    const rows = await this.connection.read<{ head: string }>('head read', this.sql.readHead, [id], options?.signal);
    const head = rows.length === 0 ? 0 : integer(rows[0]?.head, 'head');
    return head === 0 ? null : EventSequence(head);
  }

  async findCommand(sessionId: SessionId, commandId: CommandId, options?: DurableStoreCallOptions): Promise<PostgresCommandRange | null> {
    const id = checkSessionId(sessionId);
    throwIfAborted(options?.signal);
    const rows = await this.connection.read<{ first: string | null; last: string | null; count: string }>('command lookup', this.sql.findCommand, [id, commandId], options?.signal);
    const row = rows[0];
    if (row === undefined || row.first === null || row.last === null) return null;
    return {
      firstSequence: EventSequence(integer(row.first, 'sequence')),
      lastSequence: EventSequence(integer(row.last, 'sequence')),
      eventCount: integer(row.count, 'count'),
    };
  }

  async readGlobal(options: { after?: number; limit?: number; signal?: AbortSignal } = {}): Promise<PostgresGlobalPage> {
    const after = options.after ?? 0;
    const limit = options.limit ?? 100;
    if (!Number.isSafeInteger(after) || after < 0) throw new DurableEventStoreError('DURABLE_EVENT_INVALID_CURSOR', 'after must be an integer >= 0');
    if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_READ_LIMIT) {
      throw new DurableEventStoreError('DURABLE_EVENT_INVALID_INPUT', `limit must be an integer in 1..${MAX_READ_LIMIT}`);
    }
    const rows = await this.connection.read<{ position: string; session_id: string; sequence: string; body: string }>('global read', this.sql.readGlobal, [after, limit], options.signal);
    const events = rows.map((row) => {
      const sequence = integer(row.sequence, 'sequence');
      // SAFETY: session IDs in the table were validated by `append`.
      return { position: integer(row.position, 'position'), event: this.#decode(row.session_id as SessionId, row.sequence, row.body, sequence) };
    });
    return { events, nextPosition: events[events.length - 1]?.position ?? after };
  }
}
