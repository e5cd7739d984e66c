/**
 * The durability port and its records: `step`, `sleep` and `waitFor` for tool handlers, backed by
 * a per-session, append-only stream of durability records that every store backend keeps next to its event
 * log. See `docs/durability.md`.
 */
export {
  DEFAULT_DURABILITY_READ_LIMIT,
  isDurabilityRecordStore,
  MAX_DURABILITY_READ_LIMIT,
  MAX_DURABILITY_RECORD_BYTES,
  MAX_DURABILITY_SCOPE_LENGTH,
} from './record-contract.js';
export type {
  DurabilityDeliveryDraft,
  DurabilityRecordStore,
  DurabilityListener,
  DurabilityNotice,
  DurabilityReadOptions,
  DurabilityReadResult,
  DurabilityRecord,
  DurabilityRecordDraft,
  DurabilityRecordKind,
  DurabilityRecordMeta,
  DurabilityRecordResult,
  DurabilityRunEventDraft,
  DurabilitySleepDraft,
  DurabilityStepDraft,
  DurabilityWaitDraft,
  DurabilityWaitTimeoutDraft,
} from './record-contract.js';
export {
  buildDurabilityPage,
  checkDurabilityCursor,
  checkDurabilityKey,
  checkDurabilityScope,
  checkDurabilitySessionId,
  checkDurabilityValue,
  decodeDurabilityRecord,
  deliveryAddress,
  describeInvalidDeadline,
  describeInvalidScope,
  durabilityIdentity,
  encodeDurabilityRecord,
  parseDurabilityRecord,
  planDurabilityRead,
  planDurabilityRecord,
  validateDurabilityDraft,
  type DurabilityPlanInput,
  type DurabilityReadPlan,
  type DurabilityRecordExpectation,
} from './record-engine.js';
export { DurabilityRecordView, type WaitDecision } from './record-view.js';
export { MAX_TIMER_INTERVAL_MS } from './local-wait.js';
export { createDurabilityPort } from './port.js';
export { deliverDurably } from './deliver.js';
export { toolCallScope } from './scope.js';
export type {
  DeliveryInput,
  DeliveryReceipt,
  DurabilityPort,
  DurabilityPortLike,
  DurabilityPortOptions,
  DurabilitySubscribe,
  SleepDuration,
  WaitForOptions,
  WaitForResult,
} from './port-types.js';
