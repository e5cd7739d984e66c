/**
 * Helpers of `HttpDurableEventStore`: the errors a call reports when its outcome is unknown
 * (transport failure, deadline), the session id as a URL path segment, and body shape checks.
 */
import {
  DurableCommandOutcomeUnknownError,
  DurableEventStoreError,
  DurableExecutionLeaseTimeoutError,
  type DurableError,
} from '../../protocol/errors.js';
import { httpPath } from '../../protocol/http-paths.js';
import { SESSION_OPERATIONS, type OperationName, type OperationSpec } from '../../core/operations/operations.js';
import type { SessionId } from '../../protocol/ids.js';

/** How a call reports the failures that leave its outcome unknown. */
export interface FailureKinds {
  transport(cause: unknown): DurableError;
  timeout(): DurableError;
}

/** Failures of a store call: `transportCode` when the request fails in transit, IO_TIMEOUT at the deadline. */
export function storeFailures(transportCode: 'DURABLE_EVENT_WRITE_FAILED' | 'DURABLE_EVENT_UNAVAILABLE', what: string): FailureKinds {
  return {
    transport: (cause) =>
      new DurableEventStoreError(
        transportCode,
        transportCode === 'DURABLE_EVENT_WRITE_FAILED'
          ? `${what}: the request failed in transit; the append may or may not have committed`
          : `${what}: the ledger could not be reached`,
        { cause },
      ),
    timeout: () => new DurableEventStoreError('DURABLE_EVENT_IO_TIMEOUT', `${what}: no answer within the deadline`),
  };
}

/** Failures of a command (journal or recovery): the outcome is unknown; resubmit the same command. */
export function commandFailures(what: string, commandId: unknown): FailureKinds {
  const id = typeof commandId === 'string' ? commandId : '(unknown)';
  const make = (message: string, cause?: unknown): DurableCommandOutcomeUnknownError =>
    new DurableCommandOutcomeUnknownError(`${what}: ${message}; resubmit command ${id} to reconcile`, {
      ...(cause === undefined ? {} : { cause }),
      details: { commandId: id },
    });
  return {
    transport: (cause) => make('the request failed in transit; the outcome is unknown', cause),
    timeout: () => make('no answer within the deadline; the outcome is unknown'),
  };
}

/** Failures of a lease call: both report a lease timeout carrying the `leaseId` (retry it to reconcile). */
export function leaseFailures(what: string, leaseId: string | undefined): FailureKinds {
  const make = (message: string, cause?: unknown): DurableExecutionLeaseTimeoutError =>
    new DurableExecutionLeaseTimeoutError(`${what}: ${message}`, {
      ...(cause === undefined ? {} : { cause }),
      ...(leaseId === undefined ? {} : { leaseId }),
    });
  return {
    transport: (cause) => make('the request failed in transit; the outcome is unknown', cause),
    timeout: () => make('no answer within the deadline'),
  };
}

/** Failures of a session operation, by its row's kind (as `operationOutcomeUnknown` over RPC). */
export function operationFailures(name: OperationName, input: unknown, what: string = name): FailureKinds {
  const row: OperationSpec = SESSION_OPERATIONS[name];
  if (row.kind === 'read') return storeFailures('DURABLE_EVENT_UNAVAILABLE', what);
  if (row.kind === 'command') return commandFailures(what, isRecord(input) ? input['commandId'] : undefined);
  if (row.leaseIdOf !== undefined) return leaseFailures(what, row.leaseIdOf(input));
  return storeFailures('DURABLE_EVENT_WRITE_FAILED', what);
}

/**
 * The path of a session route (from `HTTP_PATHS`), relative to the client's base URL (no leading
 * `/`, so a base path prefix is kept). The session id is one percent-encoded segment; `.` and `..`
 * cannot be one (URLs collapse them).
 */
export function sessionPath(template: `/v1/sessions/{sessionId}${string}`, sessionId: SessionId): string {
  if (sessionId === '.' || sessionId === '..') {
    throw new DurableEventStoreError(
      'DURABLE_EVENT_INVALID_INPUT',
      `sessionId ${JSON.stringify(sessionId)} cannot be addressed over HTTP (URL dot segment)`,
    );
  }
  // SAFETY: the template's only placeholder is {sessionId} (the callers pass HTTP_PATHS entries).
  return httpPath(template, { sessionId } as never).slice(1);
}

export function malformed(what: string): DurableEventStoreError {
  return new DurableEventStoreError('DURABLE_EVENT_UNAVAILABLE', `${what}: the ledger answered with an unexpected body`);
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
