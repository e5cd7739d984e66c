/**
 * Which append failures prove that nothing was written.
 *
 * After a failed `append`, the journal must decide whether the command might be in the log.
 * Only failures that are refused before the store writes anything prove it is not: a
 * compare-and-append conflict, a lease refusal, invalid input or options, a lock that was never
 * acquired, a corrupt log detected while reading the head. (A read failure is not on the list:
 * a remote backend may report it after the write reached storage.) Everything else (a write or fsync
 * failure, a timeout, an unavailable backend, an unclassified exception, a caller abort while
 * the call was in flight) leaves the outcome unknown, and the journal must reconcile by reading.
 */
import {
  isDurableEventSequenceConflictError,
  isDurableEventStoreError,
  isDurableExecutionLeaseError,
  type DurableEventStoreErrorCode,
} from '../../protocol/errors.js';

const NOTHING_WRITTEN_STORE_CODES: ReadonlySet<DurableEventStoreErrorCode> = new Set<DurableEventStoreErrorCode>([
  'DURABLE_EVENT_INVALID_INPUT',
  'DURABLE_EVENT_INVALID_CURSOR',
  'DURABLE_EVENT_INVALID_OPTIONS',
  'DURABLE_EVENT_LIMIT_EXCEEDED',
  'DURABLE_EVENT_LOCK_FAILED',
  'DURABLE_EVENT_LOCK_TIMEOUT',
  'DURABLE_EVENT_CORRUPT_LOG',
]);

/** True when `error`, thrown by `append`, proves the batch was not written. */
export function appendFailureProvesNothingWritten(error: unknown): boolean {
  if (isDurableEventSequenceConflictError(error)) return true;
  if (isDurableExecutionLeaseError(error)) return true;
  if (isDurableEventStoreError(error)) return NOTHING_WRITTEN_STORE_CODES.has(error.code);
  return false;
}
