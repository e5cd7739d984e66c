/**
 * `agent-ledger`: what an application calls, runtime-neutral.
 *
 * Protocol v4 (branded IDs, event types, drafts and envelopes with their parsers, cursors, the
 * error classes), the store contract and the in-memory store, and everything built on the
 * contract: journal, projector and recovery plan, subscriptions, execution leases, the recovery
 * coordinator, and the durability port with the agent runtime. Nothing here imports `node:*`,
 * `cloudflare:*` or `hono`: it runs on Node, in Workers and in browsers.
 *
 * Other entries: Node storage backends in `agent-ledger/advanced`, the HTTP client in
 * `agent-ledger/client`, the Durable Object and the HTTP app in `agent-ledger/worker`, the
 * conformance harness in `agent-ledger/conformance`, and the pieces for writing a store of your
 * own (log engine, limits, zod schemas, SQL adapter) in `agent-ledger/store-kit`.
 */

// ---- protocol: IDs, events, cursors, JSON, errors ----
export {
  CommandId,
  EventId,
  EventSequence,
  FencingToken,
  InputId,
  ModelAttemptId,
  PermissionRequestId,
  RequestId,
  SessionId,
  ToolAttemptId,
  TurnId,
  WorkerId,
} from './protocol/ids.js';
export * from './protocol/errors.js';
export type * from './protocol/event-payloads.js';
export {
  DURABLE_EVENT_SCHEMA_VERSION,
  DURABLE_EVENT_TYPES,
  DurableEventType,
  isDurableEventType,
  type ModelTerminalType,
  type RequestTerminalType,
  type ToolTerminalType,
  type TurnTerminalType,
} from './protocol/event-types.js';
export {
  parseDurableEventDraft,
  parseDurableEventEnvelope,
  safeParseDurableEventDraft,
  safeParseDurableEventEnvelope,
  type DurableEventDraft,
  type DurableEventDraftOf,
  type DurableEventEnvelope,
  type DurableEventEnvelopeOf,
  type DurableParseResult,
} from './protocol/events.js';
export {
  decodeDurableEventCursor,
  durableEventCursor,
  encodeDurableEventCursor,
  parseDurableEventCursor,
  type DurableEventCursor,
} from './protocol/cursor.js';
export type { JsonObject, JsonValue } from './protocol/json.js';
export type { RecoveryMutation, RecoveryOperation } from './protocol/recovery-operations.js';

// ---- the store contract and the in-memory store ----
export type {
  DurableAppendListener,
  DurableAppendNotice,
  DurableAppendOptions,
  DurableAppendResult,
  DurableEventStore,
  DurableExecutionFence,
  DurableExecutionLeaseRecord,
  DurableExecutionLeaseStore,
  DurableLeaseAcquireOptions,
  DurableLeaseRenewOptions,
  DurableSessionStore,
  DurableReadOptions,
  DurableReadResult,
  DurableStoreCallOptions,
} from './core/store.js';
export { MemoryDurableEventStore, type MemoryDurableEventStoreOptions } from './adapters/memory/memory-store.js';

// ---- journal, projector, subscriptions, leases, recovery ----
export {
  DurableSessionJournal,
  type DurableCommandEventDraft,
  type DurableCommitResult,
  type DurableCommitStatus,
  type DurableJournalCallOptions,
  type DurableJournalCommand,
  type DurableJournalExecutionLease,
  type DurableSessionJournalOptions,
} from './core/journal/index.js';
export {
  DURABLE_RECOVERY_ACTIONS,
  DurableSessionProjector,
  type DurableActiveRequestStatus,
  type DurableActiveRequestView,
  type DurableActiveTurnView,
  type DurableModelAttemptStatus,
  type DurableModelAttemptView,
  type DurablePermissionView,
  type DurableRecoveryAction,
  type DurableRecoveryKind,
  type DurableRecoveryPlan,
  type DurableRequestSummary,
  type DurableRequestTerminalStatus,
  type DurableSessionProjection,
  type DurableSessionProjectorOptions,
  type DurableSessionStatus,
  type DurableToolAttemptStatus,
  type DurableToolAttemptView,
} from './core/projector/index.js';
export {
  DurableCheckpointInconclusiveError,
  isCheckpointInconclusive,
  projectDurableSession,
  type DurableCheckpointOutcome,
  type DurableCheckpointPolicy,
  type DurableCheckpointRecord,
  type DurableCheckpointStore,
  type DurableCheckpointWriteInfo,
  type ProjectDurableSessionOptions,
  type ProjectedDurableSession,
} from './core/checkpoint/index.js';
export {
  DurableEventSubscription,
  type DurableEventSubscriptionOptions,
  type DurableSubscriptionCaughtUpMessage,
  type DurableSubscriptionEventMessage,
  type DurableSubscriptionMessage,
} from './core/subscription/index.js';
export { ManualTimeSource, systemTime, type TimeSource } from './core/time.js';
export {
  DurableExecutionLease,
  withExecutionLease,
  type DurableExecutionLeaseBody,
  type DurableExecutionLeaseOptions,
} from './core/lease/index.js';
export {
  DurableSessionRecoveryCoordinator,
  parseRecoveryContinuation,
  type DurableContinuationModelResponse,
  type DurableContinuationTool,
  type DurableContinuationToolStatus,
  type DurableModelOutcome,
  type DurableRecoveryCallOptions,
  type DurableRecoveryCommandInput,
  type DurableRecoveryCommandResult,
  type DurableRecoveryCommandStatus,
  type DurableRecoveryContinuation,
  type DurableRequestOutcome,
  type DurableRequestPreparation,
  type DurableResumableRequest,
  type DurableResumeDecision,
  type DurableSessionRecoveryCoordinatorOptions,
  type DurableStartToolAttemptResult,
  type DurableToolOutcome,
  type DurableTurnRecoveryResult,
  type PrepareRequestRecoveryInput,
  type PrepareTurnRecoveryInput,
  type ReconcileModelOutcomeInput,
  type ReconcileRequestOutcomeInput,
  type ReconcileToolOutcomeInput,
  type ResolvePermissionInput,
  type StartToolAttemptInput,
} from './core/recovery/index.js';

// ---- durability port and agent runtime ----
export {
  createDurabilityPort,
  deliverDurably,
  toolCallScope,
  type DeliveryInput,
  type DeliveryReceipt,
  type DurabilityDeliveryDraft,
  type DurabilityRecordStore,
  type DurabilityListener,
  type DurabilityNotice,
  type DurabilityPort,
  type DurabilityPortLike,
  type DurabilityPortOptions,
  type DurabilityReadOptions,
  type DurabilityReadResult,
  type DurabilityRecord,
  type DurabilityRecordDraft,
  type DurabilityRecordKind,
  type DurabilityRecordMeta,
  type DurabilityRecordResult,
  type DurabilityRunEventDraft,
  type DurabilitySleepDraft,
  type DurabilityStepDraft,
  type DurabilitySubscribe,
  type DurabilityWaitDraft,
  type DurabilityWaitTimeoutDraft,
  type SleepDuration,
  type WaitForOptions,
  type WaitForResult,
} from './core/durability/index.js';
export {
  createAgentRuntime,
  type AgentRuntime,
  type AgentRuntimeOptions,
  type DurabilityPortFactory,
  type DurabilityPortFactoryArgs,
  type MountAgentOptions,
  type MountedAgent,
  type RecoverToolCallInput,
  type RecoveryDecision,
  type RuntimeDeliveryInput,
  type RuntimeToolContext,
  type RuntimeToolHandler,
  type ToolCallInput,
} from './core/runtime/index.js';
