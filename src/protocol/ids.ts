/**
 * Branded identifiers.
 *
 * Every identifier the ledger stores is a string (or a number, for sequences and
 * fencing tokens) carrying a compile-time brand, so a `TurnId` can never be passed
 * where a `RequestId` is expected. The constructors validate at run time too:
 * non-empty, at most {@link MAX_ID_LENGTH} UTF-16 code units, no control characters, and
 * well-formed UTF-16 (no lone surrogates: a file-backed store would otherwise map two distinct IDs
 * onto one name, since UTF-8 encoding turns every lone surrogate into U+FFFD).
 *
 * @example
 * const sessionId = SessionId('session-123');
 * const sequence = EventSequence(12);
 */
import { DurableEventStoreError } from './errors.js';

/** Longest accepted identifier, in UTF-16 code units. */
export const MAX_ID_LENGTH = 256;

declare const brand: unique symbol;
/** A value of type `T` tagged with the nominal brand `B`. */
export type Brand<T, B extends string> = T & { readonly [brand]: B };

export type SessionId = Brand<string, 'SessionId'>;
export type RequestId = Brand<string, 'RequestId'>;
export type TurnId = Brand<string, 'TurnId'>;
export type CommandId = Brand<string, 'CommandId'>;
export type InputId = Brand<string, 'InputId'>;
export type ModelAttemptId = Brand<string, 'ModelAttemptId'>;
export type ToolAttemptId = Brand<string, 'ToolAttemptId'>;
export type PermissionRequestId = Brand<string, 'PermissionRequestId'>;
export type EventId = Brand<string, 'EventId'>;
export type WorkerId = Brand<string, 'WorkerId'>;
/** Position of an event in its session's log: an integer >= 1. */
export type EventSequence = Brand<number, 'EventSequence'>;
/** Monotonic lease generation: an integer >= 1 that grows on every takeover. */
export type FencingToken = Brand<number, 'FencingToken'>;

// C0 controls, DEL and C1 controls.
// eslint-disable-next-line no-control-regex
const CONTROL_CHARACTERS = /[\u0000-\u001f\u007f-\u009f]/;
// A high surrogate not followed by a low one, or a low surrogate not preceded by a high one.
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Why `value` is not a valid identifier, or `undefined` when it is. */
export function describeInvalidId(value: unknown): string | undefined {
  if (typeof value !== 'string') return 'must be a string';
  if (value.length === 0) return 'must not be empty';
  if (value.length > MAX_ID_LENGTH) return `must be at most ${MAX_ID_LENGTH} characters`;
  if (CONTROL_CHARACTERS.test(value)) return 'must not contain control characters';
  if (LONE_SURROGATE.test(value)) return 'must be well-formed UTF-16 (no lone surrogates)';
  return undefined;
}

/** True when `value` is a string that any ID constructor would accept. */
export function isValidId(value: unknown): value is string {
  return describeInvalidId(value) === undefined;
}

function makeId<B extends string>(kind: B): (value: string) => Brand<string, B> {
  return (value: string) => {
    const problem = describeInvalidId(value);
    if (problem !== undefined) {
      throw new DurableEventStoreError('DURABLE_EVENT_INVALID_INPUT', `${kind} ${problem}`);
    }
    // SAFETY: validated just above; the brand only exists at compile time.
    return value as Brand<string, B>;
  };
}

/** Validates and brands a session identifier. */
export const SessionId = makeId('SessionId');
/** Validates and brands a Request identifier. */
export const RequestId = makeId('RequestId');
/** Validates and brands a Turn identifier. */
export const TurnId = makeId('TurnId');
/** Validates and brands a journal command identifier. */
export const CommandId = makeId('CommandId');
/** Validates and brands an input identifier. */
export const InputId = makeId('InputId');
/** Validates and brands a model attempt identifier. */
export const ModelAttemptId = makeId('ModelAttemptId');
/** Validates and brands a tool attempt identifier. */
export const ToolAttemptId = makeId('ToolAttemptId');
/** Validates and brands a permission request identifier. */
export const PermissionRequestId = makeId('PermissionRequestId');
/** Validates and brands an event identifier (normally assigned by the store). */
export const EventId = makeId('EventId');
/** Validates and brands a worker (lease owner) identifier. */
export const WorkerId = makeId('WorkerId');

function makeCounter<B extends string>(kind: B): (value: number) => Brand<number, B> {
  return (value: number) => {
    if (!Number.isSafeInteger(value) || value < 1) {
      throw new DurableEventStoreError(
        'DURABLE_EVENT_INVALID_INPUT',
        `${kind} must be a safe integer >= 1, got ${String(value)}`,
      );
    }
    // SAFETY: validated just above; the brand only exists at compile time.
    return value as Brand<number, B>;
  };
}

/** Validates and brands an event sequence (integer >= 1). */
export const EventSequence = makeCounter('EventSequence');
/** Validates and brands a fencing token (integer >= 1). */
export const FencingToken = makeCounter('FencingToken');
