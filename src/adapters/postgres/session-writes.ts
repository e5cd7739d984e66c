/**
 * The session row and the optimistic write loop every write shares (see `postgres-store.ts`):
 * decide on the session's state (remembered from this store's last read or write, else read),
 * write with one conditional statement, and on a moved state read and decide again; after
 * {@link MAX_OPTIMISTIC_ATTEMPTS} moves, decide and write under the row lock. Writes of one store
 * to one session are chained ({@link SessionWrites.serialize}) so they do not race each other.
 */
import { throwIfAborted } from '../../core/abort.js';
import { parseLeaseState, type LeaseState } from '../../core/log-engine.js';
import type { SessionId } from '../../protocol/ids.js';
import type { PostgresConnection } from './connection.js';
import { isRetryableRollback } from './driver.js';
import { integer, readFailure, writeFailure } from './failures.js';
import type { PostgresStatements } from './statements.js';

/** Conditional writes tried before a write takes the session's row lock first. */
export const MAX_OPTIMISTIC_ATTEMPTS = 4;
/** Sessions whose last state a store remembers before it starts over. */
const MAX_REMEMBERED_SESSIONS = 4096;

/** A session's row as the store last saw it. */
export interface SessionState {
  exists: boolean;
  head: number;
  leaseVersion: number;
  lease: LeaseState | null;
  durabilityHead: number;
}

const EMPTY_STATE: SessionState = { exists: false, head: 0, leaseVersion: 0, lease: null, durabilityHead: 0 };

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

/** Runs one statement of a conditional write (on a pooled connection, or in the locked transaction). */
export type WriteRun = (text: string, values: unknown[]) => Promise<{ rows: Array<Record<string, unknown>>; rowCount: number }>;

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
    durabilityHead: integer(row.ledger_head, 'ledger_head'),
  };
}

/** The remembered session states, the per-session write chains and the optimistic write loop. */
export class SessionWrites {
  readonly #states = new Map<string, SessionState>();
  /** Per-session chains, so one store's writes to a session do not race each other. */
  readonly #queues = new Map<string, Promise<unknown>>();

  constructor(
    private readonly connection: PostgresConnection,
    private readonly sql: PostgresStatements,
  ) {}

  /** The state this store last read or wrote for `sessionId`, if it remembers one. */
  remembered(sessionId: string): SessionState | undefined {
    return this.#states.get(sessionId);
  }

  /** Chains `work` after this store's previous write to the same session. */
  serialize<T>(sessionId: string, work: () => Promise<T>): Promise<T> {
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

  /** Reads the session's row; a failure is what `failure` makes of it (a read failure by default). */
  async readState(
    sessionId: string,
    signal: AbortSignal | undefined,
    failure: (error: unknown) => unknown = (error) => readFailure(error, 'state read', signal),
  ): Promise<SessionState> {
    let rows: StateRow[];
    try {
      rows = await this.connection.query<StateRow>(this.sql.readState, [sessionId], signal);
    } catch (error) {
      throw failure(error);
    }
    const state = parseStateRow(rows[0]);
    this.remember(sessionId, state);
    return state;
  }

  remember(sessionId: string, state: SessionState): void {
    if (!this.#states.has(sessionId) && this.#states.size >= MAX_REMEMBERED_SESSIONS) this.#states.clear();
    this.#states.set(sessionId, state);
  }

  /**
   * The optimistic loop shared by every write: decide on the state (remembered, else read), write
   * conditionally, and on a moved state read and decide again; after
   * {@link MAX_OPTIMISTIC_ATTEMPTS} moves, decide and write under the row lock.
   */
  async write<P>(
    sessionId: SessionId,
    signal: AbortSignal | undefined,
    what: string,
    decide: (state: SessionState) => P,
    write: (run: WriteRun, state: SessionState, plan: P) => Promise<SessionState | null>,
    useRemembered = true,
  ): Promise<P> {
    let state = useRemembered ? this.#states.get(sessionId) : undefined;
    let fresh = false;
    for (let attempt = 0; attempt < MAX_OPTIMISTIC_ATTEMPTS; attempt++) {
      throwIfAborted(signal);
      if (state === undefined) {
        state = await this.readState(sessionId, signal, (error) => writeFailure(error, what, signal, 'read'));
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
        next = await write((text, values) => this.connection.statement(text, values, signal), state, plan);
      } catch (error) {
        if (isRetryableRollback(error)) next = null;
        else {
          this.#states.delete(sessionId);
          throw writeFailure(error, what, signal);
        }
      }
      if (next !== null) {
        this.remember(sessionId, next);
        return plan;
      }
      this.#states.delete(sessionId);
      state = undefined;
      fresh = false;
    }
    // A busy session: take the row lock, then decide and write with nothing in between.
    try {
      return await this.connection.transaction(signal, async (client) => {
        await client.query(this.sql.ensureSession, [sessionId]);
        const locked = await client.query<StateRow>(this.sql.readStateForUpdate, [sessionId]);
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
        this.remember(sessionId, next);
        return plan;
      });
    } catch (error) {
      this.#states.delete(sessionId);
      throw writeFailure(error, what, signal);
    }
  }
}
