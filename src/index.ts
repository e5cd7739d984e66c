/**
 * `agent-ledger`: the runtime-neutral core.
 *
 * Protocol v4 (branded IDs, event types and strict payload schemas, envelopes, cursors, lossless
 * JSON, errors and limits), the store contract and its log engine, the in-memory store, and
 * everything built above the contract: journal, projector and recovery plan, subscriptions,
 * execution leases, the recovery coordinator, and the durability port with the agent runtime.
 * Nothing here imports `node:*`, `cloudflare:*` or `hono`: it runs on Node, in Workers and in
 * browsers. Node storage backends live in `agent-ledger/advanced`, the HTTP client in
 * `agent-ledger/client`, the Durable Object in `agent-ledger/worker`, the conformance harness in
 * `agent-ledger/conformance`.
 */
export * from './protocol/index.js';
export * from './core/store.js';
export {
  MAX_LEASE_TTL_MS,
  MIN_LEASE_TTL_MS,
  buildReadPage,
  checkFence,
  checkReadCursor,
  checkSessionId,
  decideAcquire,
  decideRelease,
  decideRenew,
  leaseRecord,
  parseLeaseState,
  planAppend,
  planRead,
  parseDraftBatchJson,
  validateDraftBatch,
  validateDraftBatchStrict,
  type AppendPlanInput,
  type LeaseState,
  type ReadPlan,
} from './core/log-engine.js';
export { withDeadline, anySignal, newAbortError } from './core/abort.js';
export {
  MemoryDurableEventStore,
  type MemoryDurableEventStoreOptions,
  type StoreTestHooks,
} from './adapters/memory/memory-store.js';
export * from './core/projector/index.js';
export * from './core/journal/index.js';
export * from './core/subscription/index.js';
export * from './core/lease/index.js';
export * from './core/recovery/index.js';
export * from './core/durability/index.js';
export * from './core/runtime/index.js';
