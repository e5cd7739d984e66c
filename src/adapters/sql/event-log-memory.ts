/**
 * What a single-writer `SqlEventLog` remembers between calls, and how it forgets.
 *
 * A Durable Object's storage has one writer, the object itself, so once the event log has read (or
 * committed) a session's key, head and lease state it can keep them instead of reading them in
 * every transaction. Memory must never be ahead of the database:
 * 1. values are remembered only after the transaction that read or wrote them returned;
 * 2. {@link ForgetOnRollbackDriver} wraps the event log's driver, and a transaction that throws
 *    (rolled back, perhaps after writes memory already saw, e.g. an append nested in an outer
 *    transaction) makes the event log forget everything; every transaction around event-log calls must
 *    therefore go through `eventLog.driver`;
 * 3. memory is bounded ({@link MAX_REMEMBERED_SESSIONS}); past it, it starts over.
 */
import type { LeaseState } from '../../core/log-engine.js';
import type { EventSequence, SessionId } from '../../protocol/ids.js';
import type { SqlDriver, SqlValue } from './driver.js';

/** Sessions a single-writer event log remembers before it starts over. */
export const MAX_REMEMBERED_SESSIONS = 1024;

/** Per session: its key in `session_keys`, its head, its lease state (absent: unknown, read it). */
export class EventLogMemory {
  readonly keys = new Map<SessionId, number>();
  readonly heads = new Map<SessionId, EventSequence | null>();
  readonly leases = new Map<SessionId, LeaseState | null>();

  /** Sets `map[sessionId]`, starting over when too many sessions are remembered. */
  remember<V>(map: Map<SessionId, V>, sessionId: SessionId, value: V): void {
    if (!map.has(sessionId) && map.size >= MAX_REMEMBERED_SESSIONS) map.clear();
    map.set(sessionId, value);
  }

  /** True when an append to `sessionId` needs no read at all. */
  knows(sessionId: SessionId): boolean {
    return this.keys.has(sessionId) && this.heads.has(sessionId) && this.leases.has(sessionId);
  }

  forget(): void {
    this.keys.clear();
    this.heads.clear();
    this.leases.clear();
  }
}

/**
 * The single-writer event log's view of its driver: every call passes through, and a transaction
 * that throws (so it rolled back) makes the event log forget what it remembered.
 */
export class ForgetOnRollbackDriver implements SqlDriver {
  readonly #inner: SqlDriver;
  readonly #memory: EventLogMemory;

  constructor(inner: SqlDriver, memory: EventLogMemory) {
    this.#inner = inner;
    this.#memory = memory;
  }

  exec(sql: string, ...params: SqlValue[]): void {
    this.#inner.exec(sql, ...params);
  }

  query<T>(sql: string, ...params: SqlValue[]): T[] {
    return this.#inner.query<T>(sql, ...params);
  }

  transaction<T>(fn: () => T): T {
    try {
      return this.#inner.transaction(fn);
    } catch (error) {
      this.#memory.forget();
      throw error;
    }
  }
}
