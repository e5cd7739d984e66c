/**
 * `agent-ledger/conformance`: one contract suite for every store backend.
 *
 * `runStoreConformance` takes a store factory plus optional test controls and runs every
 * contract check from `src/core/store.ts` against it: compare-and-append, validation and
 * limits, cursor reads, concurrency, cancellation, `watch`, execution leases, and (given the
 * controls) restart durability and failed commits. It imports no test runner: it resolves with
 * `{ mode, checks, skipped }` or rejects with a {@link StoreConformanceError} naming the first
 * failing check, so any runner (vitest, node:test, workerd) can host it.
 *
 * @example Running it from a test
 * ```ts
 * const result = await runStoreConformance({
 *   createStore: () => store,
 *   restart: async (old) => reopen(old),          // durable backends only
 *   failNextCommit: (s) => s.armCommitFailure(),  // fault injection, if the backend has it
 *   skip: [{ reason: 'no clock control on this host', checks: ['lease-expired-holder-is-lost'] }],
 * });
 * expect(result.mode).toBe('durable');
 * ```
 *
 * @example Adding a suite (journal, subscription, lease handle, durability records)
 * Write checks in your own file and pass them as `extraChecks`; they run after the built-in
 * ones with the same context: fresh session IDs (`ctx.newSessionId()`), the store
 * (`ctx.store`, replaced by `ctx.restart()`), test controls, and the assertion helpers exported
 * here. Declare `requires` so that stores lacking a capability skip the check with a reason.
 * ```ts
 * export const journalChecks: ConformanceCheck<DurableSessionStore>[] = [
 *   {
 *     name: 'journal-replays-identical-command',
 *     async run(ctx) {
 *       const sessionId = ctx.newSessionId();
 *       // ... open a journal on ctx.store, commit twice ...
 *       assertEqual(second.status, 'replayed', 'second commit of the same command');
 *     },
 *   },
 * ];
 * await runStoreConformance({ createStore, extraChecks: journalChecks });
 * ```
 */
export { runStoreConformance, StoreConformanceError, DEFAULT_CHECK_TIMEOUT_MS } from './run-store-conformance.js';
export { storeConformanceChecks } from './checks.js';
export { DEFAULT_SHORT_LEASE_TTL_MS } from './context.js';
export {
  assert,
  assertDeepEqual,
  assertEqual,
  describeValue,
  expectAbortError,
  expectCode,
  expectDurableError,
  expectRejection,
  expectResolves,
  expectSequenceConflict,
  fail,
  findDifference,
  sleep,
} from './assertions.js';
export { eventually, seed, settle } from './helpers.js';
export { fenceOf, leaseStoreOf, LONG_LEASE_TTL_MS } from './checks-lease.js';
export {
  asDrafts,
  FIXTURE_REQUEST_ID,
  fullyCorrelatedDraft,
  invalidDraftCases,
  markerDraft,
  markerDrafts,
  markerLabel,
  oversizedDraft,
  overfullBatch,
  requestAcceptedDraft,
  requestStartedDraft,
  sessionCreatedDraft,
  type InvalidDraftCase,
} from './fixtures.js';
export type {
  ConformanceCheck,
  ConformanceContext,
  ConformanceFailure,
  ConformanceRequirement,
  StoreConformanceOptions,
  StoreConformanceResult,
} from './types.js';

// Suites above the store contract: pass any of them as `extraChecks`.
export {
  journalConformanceChecks,
  lifecycleDrafts,
  writtenButFailedStore,
  type StoreAgnosticCheck,
  type StoreCheckContext,
} from './checks-journal.js';
export { subscriptionConformanceChecks } from './checks-subscription.js';
export {
  durabilityConformanceChecks,
  durabilityWatchConformanceChecks,
  type DurabilityConformanceStore,
} from './checks-durability.js';
export { durabilityPortChecks } from './checks-durability-port.js';
export { leaseHandleConformanceChecks, LeaseFaultStore } from './checks-lease-handle.js';
export { recoveryConformanceChecks } from './checks-recovery.js';
