/**
 * Execution leases on PostgreSQL: the lease lives in the session row; a change is decided by the
 * core engine (`decideAcquire`, `decideRenew`, `decideRelease`) and written with the shared
 * conditional write on the row's `lease_version` (see `session-writes.ts`). Lease calls always
 * read the row first; `assert` and `inspect` read it and decide without writing.
 */
import { throwIfAborted } from '../../core/abort.js';
import { checkFence, checkSessionId, decideAcquire, decideRelease, decideRenew, leaseRecord, type LeaseState } from '../../core/log-engine.js';
import type {
  DurableExecutionFence,
  DurableExecutionLeaseRecord,
  DurableLeaseAcquireOptions,
  DurableLeaseRenewOptions,
  DurableStoreCallOptions,
} from '../../core/store.js';
import type { SessionId } from '../../protocol/ids.js';
import { integer } from './failures.js';
import type { SessionWrites } from './session-writes.js';
import type { PostgresStatements } from './statements.js';

/** The execution leases of one store. */
export class PostgresLeases {
  constructor(
    private readonly writes: SessionWrites,
    private readonly sql: PostgresStatements,
    private readonly clock: () => number,
  ) {}

  async #updateLease(
    sessionId: SessionId,
    signal: AbortSignal | undefined,
    decide: (state: LeaseState | null, nowMs: number) => LeaseState,
  ): Promise<DurableExecutionLeaseRecord> {
    throwIfAborted(signal);
    const decided = await this.writes.serialize(sessionId, () =>
      this.writes.write<{ previous: LeaseState | null; next: LeaseState }>(
        sessionId,
        signal,
        'lease update',
        (state) => ({ previous: state.lease, next: decide(state.lease, this.clock()) }),
        async (run, state, plan) => {
          if (plan.next === plan.previous) return state;
          const lease = plan.next;
          const { rows } = await run(state.exists ? this.sql.leaseExisting : this.sql.leaseNew, [
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
    const state = await this.writes.readState(id, options?.signal);
    checkFence(state.lease, fence, this.clock());
  }

  async inspectExecutionLease(sessionId: SessionId, options?: DurableStoreCallOptions): Promise<DurableExecutionLeaseRecord | null> {
    const id = checkSessionId(sessionId);
    throwIfAborted(options?.signal);
    const state = await this.writes.readState(id, options?.signal);
    return state.lease === null ? null : leaseRecord(id, state.lease);
  }

  async requiresExecutionLease(sessionId: SessionId, options?: DurableStoreCallOptions): Promise<boolean> {
    return (await this.inspectExecutionLease(sessionId, options)) !== null;
  }
}
