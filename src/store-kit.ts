/**
 * `agent-ledger/store-kit`: what a store author needs beyond `agent-ledger`.
 *
 * A new backend (another database, another runtime) implements `DurableEventStore`,
 * `DurableExecutionLeaseStore` and `DurabilityRecordStore` (types in `agent-ledger`) and proves
 * it with `agent-ledger/conformance`. This entry holds the shared, runtime-neutral parts every
 * built-in backend is made of, so a new one decides exactly like them:
 * - the log engine: draft validation, append planning (sequences, IDs, fence and
 *   compare-and-append checks), read planning and paging, lease decisions;
 * - the durability records engine: record validation, identities, planning and paging;
 * - the SQL adapter (`SqlDurableEventStore`, `SqlDurability`) over any synchronous SQLite driver;
 * - the capability guards (`isExecutionLeaseStore`, `isCheckpointStore`, ...);
 * - the protocol's limits, zod schemas, ID, JSON and timestamp helpers, cursor constants;
 * - deadline and abort helpers, and the test hooks the conformance suites use.
 * Runtime-neutral: nothing here imports `node:*`, `cloudflare:*` or `hono`.
 */

// ---- the log engine ----
export {
  MAX_LEASE_TTL_MS,
  MIN_LEASE_TTL_MS,
  buildReadPage,
  checkExpectedLastSequence,
  checkFence,
  checkReadCursor,
  checkSessionId,
  decideAcquire,
  decideRelease,
  decideRenew,
  leaseRecord,
  parseDraftBatchJson,
  parseLeaseState,
  planAppend,
  planRead,
  validateDraftBatch,
  validateDraftBatchStrict,
  type AppendPlanInput,
  type LeaseState,
  type ReadPlan,
} from './core/log-engine.js';
export { isExecutionLeaseStore, type StoreTestHooks } from './core/store.js';
export {
  CHECKPOINT_SLICE_BYTES,
  checkCheckpointExtension,
  checkCheckpointRecord,
  checkpointExtensionOf,
  extendsStoredRecord,
  isCheckpointStore,
  MAX_CHECKPOINT_BYTES,
  readCheckpointSlices,
  sliceCheckpointRecord,
  type DurableCheckpointExtension,
  type DurableCheckpointSlice,
  eventDigest,
  isEventDigestStore,
  type DurableEventDigestReadOptions,
  type DurableEventDigestRow,
  type DurableEventDigestStore,
} from './core/checkpoint/index.js';
export { anySignal, newAbortError, withDeadline } from './core/abort.js';

// ---- the durability records engine ----
export {
  DEFAULT_DURABILITY_READ_LIMIT,
  MAX_DURABILITY_READ_LIMIT,
  MAX_DURABILITY_RECORD_BYTES,
  MAX_DURABILITY_SCOPE_LENGTH,
  DurabilityRecordView,
  MAX_TIMER_INTERVAL_MS,
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
  isDurabilityRecordStore,
  parseDurabilityRecord,
  planDurabilityRead,
  planDurabilityRecord,
  validateDurabilityDraft,
  type DurabilityPlanInput,
  type DurabilityReadPlan,
  type DurabilityRecordExpectation,
  type WaitDecision,
} from './core/durability/index.js';

// ---- the SQL adapter (any synchronous SQLite driver) ----
export { SqlDurableEventStore, type SqlDurableEventStoreOptions } from './adapters/sql/sql-store.js';
export { SqlDurability, type SqlDurabilityOptions, type SqlDurabilityWithin } from './adapters/sql/sql-durability.js';
export type { SqlDriver, SqlValue } from './adapters/sql/driver.js';

// ---- protocol details: limits, schemas, JSON, time, cursors, correlation ----
export * from './protocol/limits.js';
export * from './protocol/event-schemas.js';
export { MAX_ID_LENGTH, describeInvalidId, isValidId, type Brand } from './protocol/ids.js';
export {
  DURABLE_EVENT_CORRELATION,
  durableEventDraftSchema,
  durableEventEnvelopeSchema,
  encodedEventBytes,
  type CorrelationIdTypes,
  type CorrelationKey,
} from './protocol/events.js';
export { isModelTerminalType, isRequestTerminalType, isToolTerminalType, isTurnTerminalType } from './protocol/event-types.js';
export { DURABLE_EVENT_CURSOR_VERSION, MAX_CURSOR_TEXT_LENGTH } from './protocol/cursor.js';
export {
  assertLosslessJson,
  canonicalJson,
  cloneJson,
  describeLosslessJsonProblem,
  isLosslessJson,
  jsonEquals,
  jsonObjectSchema,
  jsonValueSchema,
  parsedJsonValueSchema,
  utf8ByteLength,
} from './protocol/json.js';
export { isIsoTimestamp, nowIsoTimestamp } from './protocol/timestamp.js';
