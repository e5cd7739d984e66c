/**
 * The recovery coordinator: constrained, idempotent, head-pinned repairs above the projector's
 * recovery plan, and the continuation format of a rolled-over Turn.
 */
export { DurableSessionRecoveryCoordinator } from './coordinator.js';
export {
  DEFAULT_MAX_CONTINUATION_RESPONSE_BYTES,
  MAX_CONTINUATION_RESPONSE_BYTES,
  parseRecoveryContinuation,
  type DurableContinuationModelResponse,
  type DurableContinuationTool,
  type DurableContinuationToolStatus,
  type DurableRecoveryContinuation,
} from './continuation.js';
export type {
  DurableModelOutcome,
  DurableRecoveryCallOptions,
  DurableRecoveryCommandInput,
  DurableRecoveryCommandResult,
  DurableRecoveryCommandStatus,
  DurableRequestOutcome,
  DurableRequestPreparation,
  DurableResumableRequest,
  DurableResumeDecision,
  DurableSessionRecoveryCoordinatorOptions,
  DurableStartToolAttemptResult,
  DurableToolOutcome,
  DurableTurnRecoveryResult,
  PrepareRequestRecoveryInput,
  PrepareTurnRecoveryInput,
  ReconcileModelOutcomeInput,
  ReconcileRequestOutcomeInput,
  ReconcileToolOutcomeInput,
  ResolvePermissionInput,
  StartToolAttemptInput,
} from './coordinator-types.js';
