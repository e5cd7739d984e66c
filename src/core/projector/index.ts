/**
 * The projector: lifecycle invariants, session projection and recovery classification.
 */
export { DURABLE_PROJECTOR_VERSION, DurableSessionProjector, type DurableSessionProjectorOptions } from './projector.js';
export { planDurableRecovery, classifyToolAttempt } from './recovery-plan.js';
export { projectionRuleOf, type DurableProjectionRule } from './projection-errors.js';
export { DURABLE_RECOVERY_ACTIONS } from './projection-types.js';
export type {
  DurableActiveRequestStatus,
  DurableActiveRequestView,
  DurableActiveTurnView,
  DurableModelAttemptStatus,
  DurableModelAttemptView,
  DurablePermissionView,
  DurableRecoveryAction,
  DurableRecoveryKind,
  DurableRecoveryPlan,
  DurableRequestSummary,
  DurableRequestTerminalStatus,
  DurableSessionProjection,
  DurableSessionStatus,
  DurableToolAttemptStatus,
  DurableToolAttemptView,
} from './projection-types.js';
