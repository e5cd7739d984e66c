/**
 * Error classes and codes.
 *
 * One base class, {@link DurableError}, carries a string `code`. Each public error class
 * narrows the codes it may carry. Classification must use the `code` (see the `is*`
 * guards at the bottom), never the message, so that an error rebuilt on the far side of
 * HTTP or RPC by {@link durableErrorFromJson} still classifies exactly like the original.
 */

/** Every domain error code, grouped by the class that carries it. */
export const DURABLE_ERROR_CODES = {
  DurableEventStoreError: [
    'DURABLE_EVENT_INVALID_INPUT',
    'DURABLE_EVENT_INVALID_CURSOR',
    'DURABLE_EVENT_INVALID_OPTIONS',
    'DURABLE_EVENT_LIMIT_EXCEEDED',
    'DURABLE_EVENT_LOCK_FAILED',
    'DURABLE_EVENT_LOCK_TIMEOUT',
    'DURABLE_EVENT_IO_TIMEOUT',
    'DURABLE_EVENT_WRITE_FAILED',
    'DURABLE_EVENT_READ_FAILED',
    'DURABLE_EVENT_CORRUPT_LOG',
    'DURABLE_EVENT_UNAVAILABLE',
  ],
  DurableEventSequenceConflictError: ['DURABLE_EVENT_SEQUENCE_CONFLICT'],
  DurableCommandConflictError: ['DURABLE_COMMAND_CONFLICT'],
  DurableCommandOutcomeUnknownError: ['DURABLE_COMMAND_OUTCOME_UNKNOWN'],
  DurableSessionJournalError: ['DURABLE_SESSION_JOURNAL_INVALID'],
  DurableEventSubscriptionError: ['DURABLE_EVENT_SUBSCRIPTION_INVALID'],
  DurableSessionRecoveryRequiredError: ['DURABLE_SESSION_RECOVERY_REQUIRED'],
  DurableExecutionLeaseError: [
    'DURABLE_EXECUTION_LEASE_CONFLICT',
    'DURABLE_EXECUTION_LEASE_REQUIRED',
    'DURABLE_EXECUTION_LEASE_LOST',
    'DURABLE_EXECUTION_LEASE_INVALID',
  ],
  DurableExecutionLeaseTimeoutError: ['DURABLE_EXECUTION_LEASE_TIMEOUT'],
  SessionDurableRecorderError: ['SESSION_DURABLE_RECORDER_INVALID'],
  DurableSessionRecoveryError: [
    'DURABLE_RECOVERY_INVALID_STATE',
    'DURABLE_RECOVERY_TARGET_NOT_FOUND',
    'DURABLE_RECOVERY_UNSAFE_ROLLOVER',
  ],
  DurableEventProjectionError: ['DURABLE_EVENT_PROJECTION_INVALID'],
  DurabilityError: [
    'DURABILITY_INVALID_VALUE',
    'DURABILITY_INVALID_INPUT',
    'DURABILITY_CORRUPT_RECORD',
    'DURABILITY_CONFLICT',
    'DURABILITY_RUN_FAILED',
  ],
} as const;

type CodeTable = typeof DURABLE_ERROR_CODES;
/** Name of a public error class. */
export type DurableErrorClassName = keyof CodeTable;
/** Any domain error code. */
export type DurableErrorCode = CodeTable[DurableErrorClassName][number];
export type DurableEventStoreErrorCode = CodeTable['DurableEventStoreError'][number];
export type DurableExecutionLeaseErrorCode = CodeTable['DurableExecutionLeaseError'][number];
export type DurableSessionRecoveryErrorCode = CodeTable['DurableSessionRecoveryError'][number];
export type DurabilityErrorCode = CodeTable['DurabilityError'][number];

/** Extra machine-readable facts attached to an error (JSON-safe). */
export type DurableErrorDetails = Readonly<Record<string, unknown>>;

/** Options accepted by every error constructor. */
export interface DurableErrorOptions {
  cause?: unknown;
  details?: DurableErrorDetails;
}

/** Base class of every domain error. Classify by `code`, not by message. */
export class DurableError extends Error {
  readonly code: DurableErrorCode;
  readonly details: DurableErrorDetails | undefined;

  constructor(code: DurableErrorCode, message: string, options: DurableErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'DurableError';
    this.code = code;
    this.details = options.details;
  }

  /** JSON form used by the HTTP and RPC boundaries. */
  toJSON(): DurableErrorJson {
    return {
      name: this.name,
      code: this.code,
      message: this.message,
      ...(this.details === undefined ? {} : { details: this.details }),
    };
  }
}

/** Wire form of a {@link DurableError}. */
export interface DurableErrorJson {
  name: string;
  code: string;
  message: string;
  details?: DurableErrorDetails;
}

/** Invalid input, cursor or options; I/O, lock or deadline failure; corrupt log. */
export class DurableEventStoreError extends DurableError {
  declare readonly code: DurableEventStoreErrorCode;
  constructor(code: DurableEventStoreErrorCode, message: string, options?: DurableErrorOptions) {
    super(code, message, options);
    this.name = 'DurableEventStoreError';
  }
}

/** The compare-and-append precondition failed: the head was `actual`, not `expected`. */
export class DurableEventSequenceConflictError extends DurableError {
  declare readonly code: 'DURABLE_EVENT_SEQUENCE_CONFLICT';
  readonly expected: number | null;
  readonly actual: number | null;
  constructor(expected: number | null, actual: number | null, options: DurableErrorOptions = {}) {
    super(
      'DURABLE_EVENT_SEQUENCE_CONFLICT',
      `expected head sequence ${String(expected)}, found ${String(actual)}`,
      { ...options, details: { ...options.details, expected, actual } },
    );
    this.name = 'DurableEventSequenceConflictError';
    this.expected = expected;
    this.actual = actual;
  }
}

/** One commandId maps to different content or to non-contiguous ranges. */
export class DurableCommandConflictError extends DurableError {
  declare readonly code: 'DURABLE_COMMAND_CONFLICT';
  constructor(message: string, options?: DurableErrorOptions) {
    super('DURABLE_COMMAND_CONFLICT', message, options);
    this.name = 'DurableCommandConflictError';
  }
}

/** A failed write could not be reconciled; the journal is fenced until it is. */
export class DurableCommandOutcomeUnknownError extends DurableError {
  declare readonly code: 'DURABLE_COMMAND_OUTCOME_UNKNOWN';
  constructor(message: string, options?: DurableErrorOptions) {
    super('DURABLE_COMMAND_OUTCOME_UNKNOWN', message, options);
    this.name = 'DurableCommandOutcomeUnknownError';
  }
}

/** Command input, a store page or a commit result violates the journal's contract. */
export class DurableSessionJournalError extends DurableError {
  declare readonly code: 'DURABLE_SESSION_JOURNAL_INVALID';
  constructor(message: string, options?: DurableErrorOptions) {
    super('DURABLE_SESSION_JOURNAL_INVALID', message, options);
    this.name = 'DurableSessionJournalError';
  }
}

/** Subscription options, cursor anchors or store pages violate the replay contract. */
export class DurableEventSubscriptionError extends DurableError {
  declare readonly code: 'DURABLE_EVENT_SUBSCRIPTION_INVALID';
  constructor(message: string, options?: DurableErrorOptions) {
    super('DURABLE_EVENT_SUBSCRIPTION_INVALID', message, options);
    this.name = 'DurableEventSubscriptionError';
  }
}

/** The session has unfinished work that needs recovery or reconciliation first. */
export class DurableSessionRecoveryRequiredError extends DurableError {
  declare readonly code: 'DURABLE_SESSION_RECOVERY_REQUIRED';
  constructor(message: string, options?: DurableErrorOptions) {
    super('DURABLE_SESSION_RECOVERY_REQUIRED', message, options);
    this.name = 'DurableSessionRecoveryRequiredError';
  }
}

/** Lease acquisition, heartbeat, ownership or persisted lease state failed. */
export class DurableExecutionLeaseError extends DurableError {
  declare readonly code: DurableExecutionLeaseErrorCode;
  constructor(code: DurableExecutionLeaseErrorCode, message: string, options?: DurableErrorOptions) {
    super(code, message, options);
    this.name = 'DurableExecutionLeaseError';
  }
}

/** A lease store call exceeded its deadline. `leaseId` lets a retry reconcile an uncertain acquisition. */
export class DurableExecutionLeaseTimeoutError extends DurableError {
  declare readonly code: 'DURABLE_EXECUTION_LEASE_TIMEOUT';
  readonly leaseId: string | undefined;
  constructor(message: string, options: DurableErrorOptions & { leaseId?: string } = {}) {
    super('DURABLE_EXECUTION_LEASE_TIMEOUT', message, {
      ...options,
      details: { ...options.details, ...(options.leaseId === undefined ? {} : { leaseId: options.leaseId }) },
    });
    this.name = 'DurableExecutionLeaseTimeoutError';
    this.leaseId = options.leaseId;
  }
}

/** A session runtime observed an invalid durable lifecycle state. */
export class SessionDurableRecorderError extends DurableError {
  declare readonly code: 'SESSION_DURABLE_RECORDER_INVALID';
  constructor(message: string, options?: DurableErrorOptions) {
    super('SESSION_DURABLE_RECORDER_INVALID', message, options);
    this.name = 'SessionDurableRecorderError';
  }
}

/** Recovery coordinator state is invalid, a target is missing, or a rollover is unsafe. */
export class DurableSessionRecoveryError extends DurableError {
  declare readonly code: DurableSessionRecoveryErrorCode;
  constructor(code: DurableSessionRecoveryErrorCode, message: string, options?: DurableErrorOptions) {
    super(code, message, options);
    this.name = 'DurableSessionRecoveryError';
  }
}

/** Schema, ordering or correlation violates a lifecycle invariant. */
export class DurableEventProjectionError extends DurableError {
  declare readonly code: 'DURABLE_EVENT_PROJECTION_INVALID';
  constructor(message: string, options?: DurableErrorOptions) {
    super('DURABLE_EVENT_PROJECTION_INVALID', message, options);
    this.name = 'DurableEventProjectionError';
  }
}

/** The durability port (step / sleep / waitFor) refused a value or found a corrupt record. */
export class DurabilityError extends DurableError {
  declare readonly code: DurabilityErrorCode;
  constructor(code: DurabilityErrorCode, message: string, options?: DurableErrorOptions) {
    super(code, message, options);
    this.name = 'DurabilityError';
  }
}

const CLASS_BY_CODE = new Map<string, DurableErrorClassName>(
  (Object.entries(DURABLE_ERROR_CODES) as [DurableErrorClassName, readonly string[]][]).flatMap(
    ([name, codes]) => codes.map((code) => [code, name] as const),
  ),
);

/** True when `code` is a known domain error code. */
export function isDurableErrorCode(code: unknown): code is DurableErrorCode {
  return typeof code === 'string' && CLASS_BY_CODE.has(code);
}

function codeOf(error: unknown): unknown {
  return typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined;
}

function hasCodeIn(error: unknown, name: DurableErrorClassName): boolean {
  const code = codeOf(error);
  return typeof code === 'string' && CLASS_BY_CODE.get(code) === name;
}

/** True for any error carrying a domain code (including rebuilt ones). */
export function isDurableError(error: unknown): error is DurableError {
  return isDurableErrorCode(codeOf(error));
}
export function isDurableEventStoreError(error: unknown): error is DurableEventStoreError {
  return hasCodeIn(error, 'DurableEventStoreError');
}
export function isDurableEventSequenceConflictError(error: unknown): error is DurableEventSequenceConflictError {
  return hasCodeIn(error, 'DurableEventSequenceConflictError');
}
export function isDurableCommandConflictError(error: unknown): error is DurableCommandConflictError {
  return hasCodeIn(error, 'DurableCommandConflictError');
}
export function isDurableCommandOutcomeUnknownError(error: unknown): error is DurableCommandOutcomeUnknownError {
  return hasCodeIn(error, 'DurableCommandOutcomeUnknownError');
}
export function isDurableSessionJournalError(error: unknown): error is DurableSessionJournalError {
  return hasCodeIn(error, 'DurableSessionJournalError');
}
export function isDurableEventSubscriptionError(error: unknown): error is DurableEventSubscriptionError {
  return hasCodeIn(error, 'DurableEventSubscriptionError');
}
export function isDurableSessionRecoveryRequiredError(error: unknown): error is DurableSessionRecoveryRequiredError {
  return hasCodeIn(error, 'DurableSessionRecoveryRequiredError');
}
export function isDurableExecutionLeaseError(error: unknown): error is DurableExecutionLeaseError {
  return hasCodeIn(error, 'DurableExecutionLeaseError');
}
export function isDurableExecutionLeaseTimeoutError(error: unknown): error is DurableExecutionLeaseTimeoutError {
  return hasCodeIn(error, 'DurableExecutionLeaseTimeoutError');
}
export function isDurableSessionRecoveryError(error: unknown): error is DurableSessionRecoveryError {
  return hasCodeIn(error, 'DurableSessionRecoveryError');
}
export function isSessionDurableRecorderError(error: unknown): error is SessionDurableRecorderError {
  return hasCodeIn(error, 'SessionDurableRecorderError');
}
export function isDurableEventProjectionError(error: unknown): error is DurableEventProjectionError {
  return hasCodeIn(error, 'DurableEventProjectionError');
}
export function isDurabilityError(error: unknown): error is DurabilityError {
  return hasCodeIn(error, 'DurabilityError');
}
/** True when `error` is a DOM-style `AbortError` (what an aborted signal throws). */
export function isAbortError(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { name?: unknown }).name === 'AbortError';
}

function numberOrNull(value: unknown): number | null {
  return typeof value === 'number' ? value : null;
}

/**
 * Rebuilds a domain error from its wire form (problem+json or RPC), as an instance of
 * the same class with the same code. Unknown codes become `DURABLE_EVENT_UNAVAILABLE`
 * store errors so that a caller never sees an unclassified failure.
 */
export function durableErrorFromJson(json: { code?: unknown; message?: unknown; details?: unknown }): DurableError {
  const message = typeof json.message === 'string' ? json.message : 'remote error';
  const details =
    typeof json.details === 'object' && json.details !== null ? (json.details as DurableErrorDetails) : undefined;
  const options: DurableErrorOptions = details === undefined ? {} : { details };
  const code = json.code;
  if (!isDurableErrorCode(code)) {
    return new DurableEventStoreError('DURABLE_EVENT_UNAVAILABLE', `${message} (code ${String(code)})`, options);
  }
  switch (CLASS_BY_CODE.get(code)) {
    case 'DurableEventSequenceConflictError':
      return new DurableEventSequenceConflictError(numberOrNull(details?.['expected']), numberOrNull(details?.['actual']));
    case 'DurableCommandConflictError':
      return new DurableCommandConflictError(message, options);
    case 'DurableCommandOutcomeUnknownError':
      return new DurableCommandOutcomeUnknownError(message, options);
    case 'DurableSessionJournalError':
      return new DurableSessionJournalError(message, options);
    case 'DurableEventSubscriptionError':
      return new DurableEventSubscriptionError(message, options);
    case 'DurableSessionRecoveryRequiredError':
      return new DurableSessionRecoveryRequiredError(message, options);
    case 'DurableExecutionLeaseError':
      return new DurableExecutionLeaseError(code as DurableExecutionLeaseErrorCode, message, options);
    case 'DurableExecutionLeaseTimeoutError': {
      const leaseId = details?.['leaseId'];
      return new DurableExecutionLeaseTimeoutError(message, {
        ...options,
        ...(typeof leaseId === 'string' ? { leaseId } : {}),
      });
    }
    case 'SessionDurableRecorderError':
      return new SessionDurableRecorderError(message, options);
    case 'DurableSessionRecoveryError':
      return new DurableSessionRecoveryError(code as DurableSessionRecoveryErrorCode, message, options);
    case 'DurableEventProjectionError':
      return new DurableEventProjectionError(message, options);
    case 'DurabilityError':
      return new DurabilityError(code as DurabilityErrorCode, message, options);
    default:
      return new DurableEventStoreError(code as DurableEventStoreErrorCode, message, options);
  }
}
