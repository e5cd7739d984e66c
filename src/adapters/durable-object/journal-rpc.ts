/**
 * The SessionObject's journal and recovery RPC surface, runtime-neutral (no `cloudflare:*`).
 *
 * The object runs `DurableSessionJournal` and `DurableSessionRecoveryCoordinator` next to its own
 * storage, so a caller (the Worker's `/commands`, `/projection` and `/recovery/*` routes, or any
 * Worker holding the binding) gets command idempotency, preview, head pinning and the recovery
 * rules in one round trip instead of one per store call.
 *
 * - Recovery operations are named in kebab-case ({@link RECOVERY_OPERATIONS}), one per
 *   coordinator method; `plan-resume` is the read-only one.
 * - Every method answers with an `RpcResult` envelope (see `rpc.ts`), so domain errors keep their
 *   class and code across RPC.
 * - A fence (`executionFence`) travels beside the input, never inside it: the coordinator's
 *   inputs are strict and refuse unknown keys.
 */
import type { DurableCommitResult, DurableJournalCommand } from '../../core/journal/journal-options.js';
import type { DurableRecoveryPlan, DurableSessionProjection } from '../../core/projector/projection-types.js';
import type {
  DurableRecoveryCommandResult,
  DurableResumeDecision,
  DurableStartToolAttemptResult,
  DurableTurnRecoveryResult,
  PrepareRequestRecoveryInput,
  PrepareTurnRecoveryInput,
  ReconcileModelOutcomeInput,
  ReconcileRequestOutcomeInput,
  ReconcileToolOutcomeInput,
  ResolvePermissionInput,
  StartToolAttemptInput,
} from '../../core/recovery/coordinator-types.js';
import type { DurableExecutionFence } from '../../core/store.js';
import type { EventSequence } from '../../protocol/ids.js';
import type { RpcResult } from './rpc.js';

/** Recovery operations that commit one command, by kebab-case name -> coordinator method. */
export const RECOVERY_MUTATIONS = {
  'reconcile-tool-outcome': 'reconcileToolOutcome',
  'reconcile-model-outcome': 'reconcileModelOutcome',
  'resolve-permission': 'resolvePermission',
  'start-tool-attempt': 'startToolAttempt',
  'prepare-request-recovery': 'prepareRequestRecovery',
  'prepare-turn-recovery': 'prepareTurnRecovery',
  'reconcile-request-outcome': 'reconcileRequestOutcome',
} as const;

/** A recovery operation that commits a command. */
export type RecoveryMutation = keyof typeof RECOVERY_MUTATIONS;

/** The read-only recovery operation. */
export const PLAN_RESUME_OPERATION = 'plan-resume';

/** Every recovery operation name, mutations first. */
export const RECOVERY_OPERATIONS = [
  ...(Object.keys(RECOVERY_MUTATIONS) as RecoveryMutation[]),
  PLAN_RESUME_OPERATION,
] as const;

/** Any recovery operation name. */
export type RecoveryOperation = RecoveryMutation | typeof PLAN_RESUME_OPERATION;

/** True when `value` names a recovery operation. */
export function isRecoveryOperation(value: unknown): value is RecoveryOperation {
  return typeof value === 'string' && (RECOVERY_OPERATIONS as readonly string[]).includes(value);
}

/** True when `value` names a recovery operation that commits a command. */
export function isRecoveryMutation(value: unknown): value is RecoveryMutation {
  return typeof value === 'string' && Object.hasOwn(RECOVERY_MUTATIONS, value);
}

/** Result of `plan-resume`: the coordinator's decision and the head it was taken on. */
export type PlanResumeResult = DurableResumeDecision & { headSequence: EventSequence | null };

/** Input of each recovery operation (`plan-resume` takes none). */
export interface RecoveryInputs {
  'reconcile-tool-outcome': ReconcileToolOutcomeInput;
  'reconcile-model-outcome': ReconcileModelOutcomeInput;
  'resolve-permission': ResolvePermissionInput;
  'start-tool-attempt': StartToolAttemptInput;
  'prepare-request-recovery': PrepareRequestRecoveryInput;
  'prepare-turn-recovery': PrepareTurnRecoveryInput;
  'reconcile-request-outcome': ReconcileRequestOutcomeInput;
  'plan-resume': Record<string, never> | undefined;
}

/** Result of each recovery operation. */
export interface RecoveryResults {
  'reconcile-tool-outcome': DurableRecoveryCommandResult;
  'reconcile-model-outcome': DurableRecoveryCommandResult;
  'resolve-permission': DurableRecoveryCommandResult;
  'start-tool-attempt': DurableStartToolAttemptResult;
  'prepare-request-recovery': DurableRecoveryCommandResult;
  'prepare-turn-recovery': DurableTurnRecoveryResult;
  'reconcile-request-outcome': DurableRecoveryCommandResult;
  'plan-resume': PlanResumeResult;
}

/** Options of a journal or recovery call that cross RPC. */
export interface RpcJournalCallOptions {
  /**
   * The execution lease the caller holds. Required once the session has lease state (the lease
   * rule is sticky); the object checks it before deciding and the append carries it.
   */
  executionFence?: DurableExecutionFence | undefined;
}

/** Result of `projection`: the session's folded state, its recovery plan and their head. */
export interface SessionProjectionResult {
  projection: DurableSessionProjection;
  recoveryPlan: DurableRecoveryPlan;
  headSequence: EventSequence | null;
}

/**
 * The journal and recovery methods of the per-session object. Like every SessionObject method,
 * each names the session it means; the object serves exactly one session.
 */
export interface SessionObjectJournalRpc {
  /**
   * Commits one journal command (idempotent by `commandId`, previewed, optionally head-pinned).
   * Subscribers of the session receive the committed events like any append's.
   */
  commit(
    sessionId: string,
    command: DurableJournalCommand,
    options?: RpcJournalCallOptions,
  ): Promise<RpcResult<DurableCommitResult>>;
  /** The projection, recovery plan and head, refreshed to the log's current head. */
  projection(sessionId: string): Promise<RpcResult<SessionProjectionResult>>;
  /** Runs one recovery operation through the object's coordinator. */
  recover<O extends RecoveryOperation>(
    sessionId: string,
    operation: O,
    input: RecoveryInputs[O],
    options?: RpcJournalCallOptions,
  ): Promise<RpcResult<RecoveryResults[O]>>;
}

/** The part of a SessionObject namespace {@link sessionJournalRpc} needs (structural, no Workers types). */
export interface SessionJournalNamespaceLike {
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
