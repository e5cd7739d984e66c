import { describe, expect, it } from 'vitest';
import {
  DURABLE_ERROR_CODES,
  DurabilityError,
  DurableCommandConflictError,
  DurableCommandOutcomeUnknownError,
  DurableError,
  DurableEventProjectionError,
  DurableEventSequenceConflictError,
  DurableEventStoreError,
  DurableEventSubscriptionError,
  DurableExecutionLeaseError,
  DurableExecutionLeaseTimeoutError,
  DurableSessionJournalError,
  DurableSessionRecoveryError,
  DurableSessionRecoveryRequiredError,
  SessionDurableRecorderError,
  durableErrorFromJson,
  isAbortError,
  isDurabilityError,
  isDurableCommandConflictError,
  isDurableCommandOutcomeUnknownError,
  isDurableError,
  isDurableErrorCode,
  isDurableEventProjectionError,
  isDurableEventSequenceConflictError,
  isDurableEventStoreError,
  isDurableEventSubscriptionError,
  isDurableExecutionLeaseError,
  isDurableExecutionLeaseTimeoutError,
  isDurableSessionJournalError,
  isDurableSessionRecoveryError,
  isDurableSessionRecoveryRequiredError,
  isSessionDurableRecorderError,
  type DurableErrorClassName,
} from '../../src/protocol/index.js';

const classes: Record<DurableErrorClassName, abstract new (...args: never[]) => DurableError> = {
  DurableEventStoreError,
  DurableEventSequenceConflictError,
  DurableCommandConflictError,
  DurableCommandOutcomeUnknownError,
  DurableSessionJournalError,
  DurableEventSubscriptionError,
  DurableSessionRecoveryRequiredError,
  DurableExecutionLeaseError,
  DurableExecutionLeaseTimeoutError,
  SessionDurableRecorderError,
  DurableSessionRecoveryError,
  DurableEventProjectionError,
  DurabilityError,
};

const guards: Record<DurableErrorClassName, (error: unknown) => boolean> = {
  DurableEventStoreError: isDurableEventStoreError,
  DurableEventSequenceConflictError: isDurableEventSequenceConflictError,
  DurableCommandConflictError: isDurableCommandConflictError,
  DurableCommandOutcomeUnknownError: isDurableCommandOutcomeUnknownError,
  DurableSessionJournalError: isDurableSessionJournalError,
  DurableEventSubscriptionError: isDurableEventSubscriptionError,
  DurableSessionRecoveryRequiredError: isDurableSessionRecoveryRequiredError,
  DurableExecutionLeaseError: isDurableExecutionLeaseError,
  DurableExecutionLeaseTimeoutError: isDurableExecutionLeaseTimeoutError,
  SessionDurableRecorderError: isSessionDurableRecorderError,
  DurableSessionRecoveryError: isDurableSessionRecoveryError,
  DurableEventProjectionError: isDurableEventProjectionError,
  DurabilityError: isDurabilityError,
};

const everyCode = (Object.entries(DURABLE_ERROR_CODES) as [DurableErrorClassName, readonly string[]][]).flatMap(
  ([className, codes]) => codes.map((code) => [code, className] as const),
);

describe.each(everyCode)('%s', (code, className) => {
  it('round-trips through JSON keeping class, name and code', () => {
    const rebuilt = durableErrorFromJson({ code, message: 'boom', details: { expected: 3, actual: 4, leaseId: 'l-1' } });
    expect(rebuilt).toBeInstanceOf(classes[className]);
    expect(rebuilt).toBeInstanceOf(DurableError);
    expect(rebuilt.code).toBe(code);
    expect(rebuilt.name).toBe(className);
    const again = durableErrorFromJson(JSON.parse(JSON.stringify(rebuilt)) as Record<string, unknown>);
    expect(again).toBeInstanceOf(classes[className]);
    expect(again.code).toBe(code);
    expect(again.message).toBe(rebuilt.message);
  });

  it('classifies a plain object carrying the code with exactly its own guard', () => {
    const plain = { code, message: 'from the wire' };
    expect(isDurableError(plain)).toBe(true);
    expect(isDurableErrorCode(code)).toBe(true);
    for (const [name, guard] of Object.entries(guards)) expect(guard(plain), name).toBe(name === className);
  });
});

describe('error specifics', () => {
  it('keeps sequence-conflict expected/actual across the wire', () => {
    const original = new DurableEventSequenceConflictError(3, null);
    const rebuilt = durableErrorFromJson(JSON.parse(JSON.stringify(original)) as Record<string, unknown>);
    expect(rebuilt).toBeInstanceOf(DurableEventSequenceConflictError);
    expect((rebuilt as DurableEventSequenceConflictError).expected).toBe(3);
    expect((rebuilt as DurableEventSequenceConflictError).actual).toBeNull();
  });

  it('keeps the lease id of a lease timeout', () => {
    const original = new DurableExecutionLeaseTimeoutError('slow', { leaseId: 'lease-7' });
    const rebuilt = durableErrorFromJson(JSON.parse(JSON.stringify(original)) as Record<string, unknown>);
    expect((rebuilt as DurableExecutionLeaseTimeoutError).leaseId).toBe('lease-7');
  });

  it('turns unknown codes into DURABLE_EVENT_UNAVAILABLE', () => {
    const rebuilt = durableErrorFromJson({ code: 'NOPE', message: 'x' });
    expect(rebuilt).toBeInstanceOf(DurableEventStoreError);
    expect(rebuilt.code).toBe('DURABLE_EVENT_UNAVAILABLE');
    expect(isDurableError({ code: 'NOPE' })).toBe(false);
    expect(isDurableError(null)).toBe(false);
    expect(isDurableEventStoreError('DURABLE_EVENT_INVALID_INPUT')).toBe(false);
  });

  it('recognises AbortError by name', () => {
    expect(isAbortError(new DOMException('stop', 'AbortError'))).toBe(true);
    expect(isAbortError(new Error('stop'))).toBe(false);
  });
});
