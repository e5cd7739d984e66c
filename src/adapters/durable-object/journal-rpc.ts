/**
 * The SessionObject's journal and recovery RPC surface, runtime-neutral (no `cloudflare:*`).
 *
 * The object runs `DurableSessionJournal` and `DurableSessionRecoveryCoordinator` next to its own
 * storage, so a caller (the Worker's `/commands`, `/projection` and `/recovery/*` routes, or any
 * Worker holding the binding) gets command idempotency, preview, head pinning and the recovery
 * rules in one round trip instead of one per store call.
 *
 * - `commit` and `projection` are rows of `SESSION_OPERATIONS` (`src/core/operations/journal-rows.ts`),
 *   served through the object's positional methods of their names.
 * - Recovery operations are the rows of `RECOVERY_OPERATIONS` (src/protocol/recovery-operations.ts),
 *   named like the coordinator methods; each input and result type is the method's own. `recover`
 *   runs the row of that name of `SESSION_OPERATIONS` through the object's `operation` entry.
 * - Every method answers with an `RpcResult` envelope (see `rpc.ts`), so domain errors keep their
 *   class and code across RPC.
 * - A fence (`executionFence`) travels beside the input, never inside it: the coordinator's
 *   inputs are strict and refuse unknown keys.
 */
import type { DurableSessionRecoveryCoordinator } from '../../core/recovery/coordinator.js';
import type { DurableResumeDecision } from '../../core/recovery/coordinator-types.js';
import type { DurableExecutionFence } from '../../core/store.js';
import type { EventSequence } from '../../protocol/ids.js';
import type { RecoveryMutation, RecoveryOperation } from '../../protocol/recovery-operations.js';
import type { RpcResult, SessionObjectPositionalRpc } from './rpc.js';

export type { SessionProjectionResult } from '../../core/operations/journal-rows.js';

/** Result of `planResume`: the coordinator's decision and the head it was taken on. */
export type PlanResumeResult = DurableResumeDecision & { headSequence: EventSequence | null };

/**
 * Input of each recovery operation, taken from the coordinator method of the same name
 * (`planResume` takes none).
 */
export type RecoveryInputs = {
  [O in RecoveryMutation]: Parameters<DurableSessionRecoveryCoordinator[O]>[0];
} & { planResume: Record<string, never> | undefined };

/** Result of each recovery operation, taken from the coordinator method of the same name. */
export type RecoveryResults = {
  [O in RecoveryMutation]: Awaited<ReturnType<DurableSessionRecoveryCoordinator[O]>>;
} & { planResume: PlanResumeResult };

/** Options of a journal or recovery call that cross RPC. */
export interface RpcJournalCallOptions {
  /**
   * The execution lease the caller holds. Required once the session has lease state (the lease
   * rule is sticky); the object checks it before deciding and the append carries it.
   */
  executionFence?: DurableExecutionFence | undefined;
}

/**
 * The journal and recovery methods of the per-session object. Like every SessionObject method,
 * each names the session it means; the object serves exactly one session.
 */
export interface SessionObjectJournalRpc extends Pick<SessionObjectPositionalRpc, 'commit' | 'projection'> {
  /** Runs one recovery operation through the object's coordinator. */
  recover<O extends RecoveryOperation>(
    sessionId: string,
    operation: O,
    input: RecoveryInputs[O],
    options?: RpcJournalCallOptions,
  ): Promise<RpcResult<RecoveryResults[O]>>;
}

/** The part of a SessionObject namespace {@link sessionJournalRpc} needs (structural, no Workers types). */
interface SessionJournalNamespaceLike {
  idFromName(name: string): unknown;
  get(id: never): object;
}

/**
 * The SessionObject of `sessionId`, typed as {@link SessionObjectJournalRpc} (the Workers stub
 * type of these methods is too deep for the compiler). Results are envelopes: unwrap them with
 * `unwrapRpcResult`.
 *
 * @example
 * const result = unwrapRpcResult(await sessionJournalRpc(env.SESSIONS, sessionId).projection(sessionId));
 */
export function sessionJournalRpc(namespace: SessionJournalNamespaceLike, sessionId: string): SessionObjectJournalRpc {
  // SAFETY: `get` accepts what `idFromName` of the same namespace returns; a SessionObject stub
  // exposes these methods (each call returns an awaitable of the envelope).
  return namespace.get(namespace.idFromName(sessionId) as never) as SessionObjectJournalRpc;
}
