/**
 * Settings of the recovery coordinator and its lease guard.
 *
 * The coordinator fences twice: every command it appends carries the lease fence (the journal
 * does that, and the store checks it in the same transaction as the append), and whenever a call
 * would hand work back without appending anything (a retry that found its command already in the
 * log, or `open` itself) it first asks the lease store whether the fence is still current. A
 * lease whose signal already aborted stops every decision at once, before any store call.
 */
import { withDeadline } from '../abort.js';
import type { DurableJournalExecutionLease } from '../journal/journal-options.js';
import { isExecutionLeaseStore, type DurableEventStore, type DurableExecutionLeaseStore } from '../store.js';
import { DurableExecutionLeaseError, DurableExecutionLeaseTimeoutError } from '../../protocol/errors.js';
import type { SessionId } from '../../protocol/ids.js';
import { DEFAULT_READ_LIMIT, DEFAULT_STORE_TIMEOUT_MS } from '../../protocol/limits.js';
import { DEFAULT_MAX_CONTINUATION_RESPONSE_BYTES, MAX_CONTINUATION_RESPONSE_BYTES } from './continuation.js';
import type { DurableSessionRecoveryCoordinatorOptions } from './coordinator-types.js';
import { invalidInput } from './input-checks.js';

/** Validated coordinator settings. */
export interface CoordinatorSettings {
  storeTimeoutMs: number;
  pageSize: number;
  maxContinuationResponseBytes: number;
  executionLease: DurableJournalExecutionLease | undefined;
  /** Where ownership is confirmed: `executionLeaseStore`, else the store itself when it has leases. */
  ownershipStore: DurableExecutionLeaseStore | undefined;
}

/** Validates the coordinator's own options (the journal validates the ones it shares). */
export function resolveSettings(store: DurableEventStore, options: DurableSessionRecoveryCoordinatorOptions): CoordinatorSettings {
  const maxBytes = options.maxContinuationResponseBytes ?? DEFAULT_MAX_CONTINUATION_RESPONSE_BYTES;
  if (!Number.isSafeInteger(maxBytes) || maxBytes < 0 || maxBytes > MAX_CONTINUATION_RESPONSE_BYTES) {
    throw invalidInput('open', `maxContinuationResponseBytes must be an integer in 0..${MAX_CONTINUATION_RESPONSE_BYTES}`);
  }
  return {
    storeTimeoutMs: options.storeTimeoutMs ?? DEFAULT_STORE_TIMEOUT_MS,
    pageSize: options.pageSize ?? DEFAULT_READ_LIMIT,
    maxContinuationResponseBytes: maxBytes,
    executionLease: options.executionLease,
    ownershipStore: options.executionLeaseStore ?? (isExecutionLeaseStore(store) ? store : undefined),
  };
}

/** Throws `DURABLE_EXECUTION_LEASE_LOST` when the configured lease's signal aborted. */
export function checkLeaseSignal(settings: CoordinatorSettings, sessionId: SessionId): void {
  const lease = settings.executionLease;
  if (lease?.signal.aborted === true) {
    throw new DurableExecutionLeaseError(
      'DURABLE_EXECUTION_LEASE_LOST',
      `the execution lease of session ${sessionId} is lost; this coordinator can no longer decide`,
      { cause: lease.signal.reason },
    );
  }
}

/** With a lease: confirms with the lease store that its fence is still current (bounded by `storeTimeoutMs`). */
export async function confirmOwnership(
  settings: CoordinatorSettings,
  sessionId: SessionId,
  signal: AbortSignal | undefined,
): Promise<void> {
  const lease = settings.executionLease;
  if (lease === undefined) return;
  checkLeaseSignal(settings, sessionId);
  const leaseStore = settings.ownershipStore;
  if (leaseStore === undefined) return;
  const timeoutMs = settings.storeTimeoutMs;
  await withDeadline(
    timeoutMs,
    signal,
    (callSignal) => leaseStore.assertExecutionLease(sessionId, lease.fence, { signal: callSignal }),
    () => new DurableExecutionLeaseTimeoutError(`assertExecutionLease exceeded ${timeoutMs} ms`, { leaseId: lease.fence.leaseId }),
  );
}
