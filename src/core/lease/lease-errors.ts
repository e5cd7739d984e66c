/**
 * Errors the lease handle raises, and the mapping of a store's own deadline errors.
 *
 * A lease call that runs out of time reports `DURABLE_EXECUTION_LEASE_TIMEOUT` with the
 * acquisition's `leaseId` (so a retry can reconcile) and, in `details`, the operation and the
 * deadline it had, whether our deadline fired or the store's own (`DURABLE_EVENT_IO_TIMEOUT`,
 * `DURABLE_EVENT_LOCK_TIMEOUT`, kept as `cause`).
 */
import {
  DurableExecutionLeaseError,
  DurableExecutionLeaseTimeoutError,
  isDurableEventStoreError,
} from '../../protocol/errors.js';

/** `DURABLE_EXECUTION_LEASE_LOST`. */
export function lost(message: string, cause?: unknown): DurableExecutionLeaseError {
  return new DurableExecutionLeaseError('DURABLE_EXECUTION_LEASE_LOST', message, cause === undefined ? undefined : { cause });
}

/** `DURABLE_EXECUTION_LEASE_INVALID`. */
export function invalid(message: string): DurableExecutionLeaseError {
  return new DurableExecutionLeaseError('DURABLE_EXECUTION_LEASE_INVALID', message);
}

/** A store's own deadline codes: a lease call that hits one reports it as a lease timeout. */
const STORE_DEADLINE_CODES: ReadonlySet<string> = new Set(['DURABLE_EVENT_IO_TIMEOUT', 'DURABLE_EVENT_LOCK_TIMEOUT']);

/** A store-side deadline error as a lease timeout; any other error unchanged. */
export function asLeaseTimeout(error: unknown, what: string, leaseId: string): unknown {
  if (isDurableEventStoreError(error) && STORE_DEADLINE_CODES.has(error.code)) {
    return new DurableExecutionLeaseTimeoutError(`lease ${what} hit the store's deadline (${error.code})`, {
      leaseId,
      cause: error,
      details: { operation: what },
    });
  }
  return error;
}

/** Our own deadline of `what` fired after `timeoutMs`. */
export function timeoutError(what: string, timeoutMs: number, leaseId: string): DurableExecutionLeaseTimeoutError {
  return new DurableExecutionLeaseTimeoutError(`lease ${what} did not finish within ${timeoutMs} ms`, {
    leaseId,
    details: { operation: what, timeoutMs },
  });
}
