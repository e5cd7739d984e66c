/**
 * How the PostgreSQL store reports a failed call: a column that is not a safe integer is a
 * corrupt log; a failed read is `DURABLE_EVENT_READ_FAILED`; a failed write is
 * `DURABLE_EVENT_WRITE_FAILED` (outcome unknown after a connection loss) or
 * `DURABLE_EVENT_IO_TIMEOUT` when the server cancelled it. Typed errors and the caller's abort
 * pass through unchanged.
 */
import { DurableError, DurableEventStoreError, isAbortError } from '../../protocol/errors.js';
import { isConnectionLoss, sqlState } from './driver.js';

export function integer(value: string | null | undefined, what: string): number {
  const n = Number(value);
  if (value === null || value === undefined || !Number.isSafeInteger(n)) {
    throw new DurableEventStoreError('DURABLE_EVENT_CORRUPT_LOG', `${what} holds ${String(value)}`);
  }
  return n;
}

/**
 * True for errors a call rejects with unchanged: the signal's reason once the caller aborted
 * (whatever it is: a `TimeoutError` from `AbortSignal.timeout`, an `Error`, any value), an
 * `AbortError`, and the package's typed errors.
 */
function passesThrough(error: unknown, signal: AbortSignal | undefined): boolean {
  return error instanceof DurableError || (signal?.aborted === true && error === signal.reason) || isAbortError(error);
}

/**
 * A failure of a write, as the contract reports it. `stage: 'read'` is a failure of the state read
 * a write starts with: nothing was written, but it is still the write that failed
 * (`DURABLE_EVENT_WRITE_FAILED`, the read's error as `cause`), never a `READ_FAILED` from `append`.
 */
export function writeFailure(error: unknown, what: string, signal: AbortSignal | undefined, stage: 'read' | 'write' = 'write'): unknown {
  if (passesThrough(error, signal)) return error;
  const message = error instanceof Error ? error.message : String(error);
  if (sqlState(error) === '57014') {
    return new DurableEventStoreError('DURABLE_EVENT_IO_TIMEOUT', `PostgreSQL ${what} was cancelled: ${message}`, { cause: error });
  }
  const unknown =
    stage === 'read'
      ? " while reading the session's state (nothing was written)"
      : isConnectionLoss(error)
        ? ' (connection lost: the outcome is unknown, read before retrying)'
        : '';
  return new DurableEventStoreError('DURABLE_EVENT_WRITE_FAILED', `PostgreSQL ${what} failed${unknown}: ${message}`, {
    cause: error,
  });
}

export function readFailure(error: unknown, what: string, signal: AbortSignal | undefined): unknown {
  if (passesThrough(error, signal)) return error;
  const message = error instanceof Error ? error.message : String(error);
  return new DurableEventStoreError('DURABLE_EVENT_READ_FAILED', `PostgreSQL ${what} failed: ${message}`, { cause: error });
}
