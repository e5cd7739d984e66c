/**
 * Options, inputs and results of {@link DurableSessionRecoveryCoordinator}.
 *
 * Every mutating operation takes a caller-chosen `commandId` (reuse it on retry) and, optionally,
 * the head the caller observed (`expectedHeadSequence`); it returns a
 * {@link DurableRecoveryCommandResult}. Inputs are plain data and are checked strictly at run time:
 * an unknown key, a malformed ID or an unknown status is `DURABLE_EVENT_INVALID_INPUT`.
 */
import type { DurableCheckpointPolicy } from '../checkpoint/policy.js';
import type { DurableJournalExecutionLease } from '../journal/journal-options.js';
import type {
  DurableRecoveryPlan,
  DurableSessionProjection,
  DurableToolAttemptView,
} from '../projector/projection-types.js';
import type { DurableExecutionLeaseStore } from '../store.js';
import type {
  DurableErrorInfo,
  DurableInput,
  DurableReason,
  ModelResponse,
  ModelSelection,
  PermissionDecision,
  Priority,
  RequestRecovery,
  RequestUsage,
} from '../../protocol/event-payloads.js';
import type { DurableEventEnvelope } from '../../protocol/events.js';
import type {
  CommandId,
  EventId,
  EventSequence,
  InputId,
  ModelAttemptId,
  PermissionRequestId,
  RequestId,
  ToolAttemptId,
  TurnId,
} from '../../protocol/ids.js';
import type { JsonObject, JsonValue } from '../../protocol/json.js';
import type { DurableRecoveryContinuation } from './continuation.js';

/** Options of {@link DurableSessionRecoveryCoordinator.open}. */
export interface DurableSessionRecoveryCoordinatorOptions {
  /** Deadline of each store call, in ms (default 15 000). Passed to the journal. */
  storeTimeoutMs?: number;
  /** Passed to the journal. Recovery commands pin the head, so they are never retried after a conflict. */
  maxConflictRetries?: number;
  /** Every recovery command carries `executionLease.fence`; nothing starts once its signal aborted. */
  executionLease?: DurableJournalExecutionLease;
  /**
   * Lease store of the session. Without `executionLease`, `open` refuses a session that requires a
   * lease; with it, `open` (and every result that appended nothing) confirms the lease is current.
   */
  executionLeaseStore?: DurableExecutionLeaseStore;
  /** Cancels `open`. */
  signal?: AbortSignal;
  /** Budget, in UTF-8 bytes, of the confirmed model response content a turn continuation carries (default 64 KiB). */
  maxContinuationResponseBytes?: number;
  /** Events per read while loading (1..1000, default 100). */
  pageSize?: number;
  /** Projection checkpoint policy, passed to the journal (default: read and write when the store supports them). */
  checkpoints?: DurableCheckpointPolicy | false;
}

/** Options of a single coordinator call. */
export interface DurableRecoveryCallOptions {
  signal?: AbortSignal;
}

/** Fields every mutating operation accepts. */
export interface DurableRecoveryCommandInput {
  /** Stable identity of this decision: a retry must reuse it, and then reconciles. */
  commandId: CommandId;
  /**
   * The head the caller based its decision on. Default: the head the coordinator observes when the
   * call starts. Either way the command commits only while the log's head is exactly that.
   */
  expectedHeadSequence?: EventSequence | null;
}

/** An outcome of a Tool Attempt, established outside the log (the external system, an operator). */
export type DurableToolOutcome =
  | { status: 'completed'; result: JsonValue }
  | { status: 'failed'; error: DurableErrorInfo }
  | { status: 'cancelled'; reason?: DurableReason };

/** An outcome of a Model Attempt, established from provider or application records. */
export type DurableModelOutcome =
  | { status: 'completed'; response: ModelResponse }
  | { status: 'failed'; error: DurableErrorInfo }
  | { status: 'aborted'; reason?: DurableReason };

/** The final outcome of a Request whose last Turn ended without a Request terminal event. */
export type DurableRequestOutcome =
  | { status: 'completed'; output?: JsonValue; usage?: RequestUsage }
  | { status: 'failed'; error: DurableErrorInfo }
  | { status: 'interrupted'; reason: DurableReason };

/** Input of {@link DurableSessionRecoveryCoordinator.reconcileToolOutcome}. */
export interface ReconcileToolOutcomeInput extends DurableRecoveryCommandInput {
  toolAttemptId: ToolAttemptId;
  outcome: DurableToolOutcome;
}

/** Input of {@link DurableSessionRecoveryCoordinator.reconcileModelOutcome}. */
export interface ReconcileModelOutcomeInput extends DurableRecoveryCommandInput {
  requestId: RequestId;
  turnId: TurnId;
  modelAttemptId: ModelAttemptId;
  outcome: DurableModelOutcome;
}

/** Input of {@link DurableSessionRecoveryCoordinator.resolvePermission}. */
export interface ResolvePermissionInput extends DurableRecoveryCommandInput {
  permissionRequestId: PermissionRequestId;
  decision: PermissionDecision;
  message?: string;
}

/** Input of {@link DurableSessionRecoveryCoordinator.startToolAttempt}: the side effect comes from the log only. */
export interface StartToolAttemptInput extends DurableRecoveryCommandInput {
  toolAttemptId: ToolAttemptId;
}

/** The caller's reconciliation of a pre-Turn preparation stage. */
export interface DurableRequestPreparation {
  status: 'reconciled';
  /** Exactly the active Request's `appliedInputIds`, as observed. */
  appliedInputIds: readonly InputId[];
  /** The final prepared input the recovery Request executes (content parts stay parts). */
  input: DurableInput;
}

/** Input of {@link DurableSessionRecoveryCoordinator.prepareRequestRecovery}. */
export interface PrepareRequestRecoveryInput extends DurableRecoveryCommandInput {
  requestId: RequestId;
  inputId: InputId;
  /** The source Request's `lastTurn` as observed; the synthetic Turn is `sourceLastTurn + 1`. */
  sourceLastTurn: number;
  recoveryTurnId: TurnId;
  recoveryRequestId: RequestId;
  recoveryInputId: InputId;
  preparation: DurableRequestPreparation;
}

/** Input of {@link DurableSessionRecoveryCoordinator.prepareTurnRecovery}. */
export interface PrepareTurnRecoveryInput extends DurableRecoveryCommandInput {
  requestId: RequestId;
  turnId: TurnId;
  recoveryRequestId: RequestId;
  recoveryInputId: InputId;
}

/** Input of {@link DurableSessionRecoveryCoordinator.reconcileRequestOutcome}. */
export interface ReconcileRequestOutcomeInput extends DurableRecoveryCommandInput {
  requestId: RequestId;
  /** The terminal Turn event the caller inspected (the projection's `activeRequest.lastTurnEventId`). */
  lastTurnEventId: EventId;
  outcome: DurableRequestOutcome;
}

/**
 * How a recovery command ended:
 * - `committed`: this call appended it;
 * - `reconciled`: the identical command was already in the log (an earlier attempt of this caller,
 *   or a competitor); nothing was appended.
 */
export type DurableRecoveryCommandStatus = 'committed' | 'reconciled';

/** Result of every mutating coordinator operation. */
export interface DurableRecoveryCommandResult {
  status: DurableRecoveryCommandStatus;
  commandId: CommandId;
  /** The command's events as stored. */
  events: DurableEventEnvelope[];
  /** The head after the call. */
  headSequence: EventSequence;
  projection: DurableSessionProjection;
  recoveryPlan: DurableRecoveryPlan;
}

/** Result of {@link DurableSessionRecoveryCoordinator.startToolAttempt}. */
export interface DurableStartToolAttemptResult extends DurableRecoveryCommandResult {
  /**
   * The attempt as the projection now holds it (`null` once its Turn is gone). After `committed`
   * this call owns the dispatch: run `toolAttempt.input`. After `reconciled` someone already
   * crossed the execution boundary: treat the tool as started, do not dispatch it again blindly.
   */
  toolAttempt: DurableToolAttemptView | null;
}

/** Result of {@link DurableSessionRecoveryCoordinator.prepareTurnRecovery}. */
export interface DurableTurnRecoveryResult extends DurableRecoveryCommandResult {
  /** The recovery facts the continuation Request carries. */
  continuation: DurableRecoveryContinuation;
}

/** An accepted Request that can be resumed in place, with its complete execution snapshot. */
export interface DurableResumableRequest {
  requestId: RequestId;
  inputId: InputId;
  input: DurableInput;
  priority: Priority;
  maxTurns: number;
  model: ModelSelection;
  context: JsonObject;
  /** Present when the Request is itself a recovery Request. */
  recovery?: RequestRecovery;
}

/** What {@link DurableSessionRecoveryCoordinator.planResume} decided. */
export type DurableResumeDecision =
  | { action: 'resume_accepted_request'; request: DurableResumableRequest }
  | { action: 'none' }
  | { action: 'recovery_required'; plan: DurableRecoveryPlan };

/** The state a coordinator decides on: projection, plan and head, all from one refresh. */
export interface DurableRecoveryView {
  projection: DurableSessionProjection;
  plan: DurableRecoveryPlan;
  head: EventSequence | null;
}

