/**
 * Validation and parsing of durability records, shared by the durability record engine and every reader.
 *
 * 1. Drafts are read strictly, field by field, through property descriptors (getters are never
 *    invoked): a known `kind`, exactly its fields, bounded IDs/keys/scopes, integer deadlines and
 *    lossless JSON values, copied so that nobody else holds a reference into a stored record.
 * 2. The same reader parses records coming back from storage, plus the store-assigned fields
 *    (`sequence`, `sessionId`, `recordedAt`); there every problem is `DURABILITY_CORRUPT_RECORD`,
 *    so a damaged record stream fails closed instead of replaying a guess.
 */
import { DurabilityError } from '../../protocol/errors.js';
import { describeInvalidId, type SessionId } from '../../protocol/ids.js';
import { cloneJson, describeLosslessJsonProblem, type JsonValue } from '../../protocol/json.js';
import { isIsoTimestamp } from '../../protocol/timestamp.js';
import {
  MAX_DURABILITY_SCOPE_LENGTH,
  type DurabilityRecord,
  type DurabilityRecordDraft,
} from './record-contract.js';

// C0 controls, DEL and C1 controls.
// eslint-disable-next-line no-control-regex
const CONTROL_CHARACTERS = /[\u0000-\u001f\u007f-\u009f]/;

/** The fields each kind carries besides `kind` (drafts are strict: nothing else is allowed). */
const DRAFT_FIELDS: Readonly<Record<DurabilityRecordDraft['kind'], readonly string[]>> = {
  step: ['scope', 'key', 'result'],
  sleep: ['scope', 'key', 'untilMs'],
  wait: ['scope', 'key', 'deadlineMs'],
  wait_timeout: ['scope', 'key'],
  delivery: ['runId', 'key', 'deliveryId', 'payload'],
  run_event: ['scope', 'key', 'status', 'detail'],
};
const META_FIELDS = ['sequence', 'sessionId', 'recordedAt'] as const;

function invalidInput(message: string, details?: Record<string, unknown>): DurabilityError {
  return new DurabilityError('DURABILITY_INVALID_INPUT', message, details === undefined ? undefined : { details });
}

function corrupt(message: string, details?: Record<string, unknown>): DurabilityError {
  return new DurabilityError('DURABILITY_CORRUPT_RECORD', message, details === undefined ? undefined : { details });
}

/** Why `scope` is not a valid scope, or `undefined`. */
export function describeInvalidScope(scope: unknown): string | undefined {
  if (typeof scope !== 'string') return 'must be a string';
  if (scope.length === 0) return 'must not be empty';
  if (scope.length > MAX_DURABILITY_SCOPE_LENGTH) return `must be at most ${MAX_DURABILITY_SCOPE_LENGTH} characters`;
  if (CONTROL_CHARACTERS.test(scope)) return 'must not contain control characters';
  return undefined;
}

/** Why `value` is not an epoch-millisecond deadline (a safe integer >= 0), or `undefined`. */
export function describeInvalidDeadline(value: unknown): string | undefined {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0 || Object.is(value, -0)) {
    const shown = typeof value === 'number' ? String(value) : typeof value;
    return `must be an integer number of epoch milliseconds >= 0, got ${shown}`;
  }
  return undefined;
}

/** Throws `DURABILITY_INVALID_INPUT` unless `sessionId` is a valid session ID. */
export function checkDurabilitySessionId(sessionId: unknown): SessionId {
  const problem = describeInvalidId(sessionId);
  if (problem !== undefined) throw invalidInput(`sessionId ${problem}`);
  // SAFETY: validated just above.
  return sessionId as SessionId;
}

/** Throws `DURABILITY_INVALID_INPUT` unless `key` is a valid key (an ID: 1..256 chars, no controls). */
export function checkDurabilityKey(key: unknown, label = 'key'): string {
  const problem = describeInvalidId(key);
  if (problem !== undefined) throw invalidInput(`${label} ${problem}`);
  // SAFETY: validated just above.
  return key as string;
}

/** Throws `DURABILITY_INVALID_INPUT` unless `scope` is a valid scope. */
export function checkDurabilityScope(scope: unknown): string {
  const problem = describeInvalidScope(scope);
  if (problem !== undefined) throw invalidInput(`scope ${problem}`);
  // SAFETY: validated just above.
  return scope as string;
}

/** Throws `DURABILITY_INVALID_VALUE` unless `value` is lossless JSON; returns a detached copy. */
export function checkDurabilityValue(value: unknown, label: string): JsonValue {
  if (value === undefined) {
    throw new DurabilityError('DURABILITY_INVALID_VALUE', `${label} is undefined, which is not JSON`);
  }
  const problem = describeLosslessJsonProblem(value);
  if (problem !== undefined) {
    throw new DurabilityError('DURABILITY_INVALID_VALUE', `${label} is not lossless JSON: ${problem}`, {
      details: { problem },
    });
  }
  // SAFETY: lossless JSON, checked just above.
  return cloneJson(value as JsonValue);
}

/** Reads an own data property without invoking accessors. */
function ownData(object: object, key: string): { ok: true; value: unknown } | { ok: false; why: string } {
  const descriptor = Object.getOwnPropertyDescriptor(object, key);
  if (descriptor === undefined) return { ok: false, why: 'is missing' };
  if (!('value' in descriptor)) return { ok: false, why: 'is an accessor' };
  return { ok: true, value: descriptor.value };
}

function isPlainObject(value: unknown): value is object {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/**
 * Reads the fields of a draft-shaped object strictly. `fail(message)` builds the error
 * (invalid input for drafts, corrupt record for records read back).
 */
function readDraft(
  value: unknown,
  extra: readonly string[],
  fail: (message: string) => DurabilityError,
  valueError: (label: string, problem: unknown) => DurabilityError,
): { draft: DurabilityRecordDraft; fields: Record<string, unknown> } {
  if (!isPlainObject(value)) throw fail('a durability record must be a plain object');
  const kindField = ownData(value, 'kind');
  if (!kindField.ok) throw fail(`kind ${kindField.why}`);
  const kind = kindField.value;
  if (typeof kind !== 'string' || !Object.prototype.hasOwnProperty.call(DRAFT_FIELDS, kind)) {
    throw fail(`unknown durability record kind ${JSON.stringify(String(kind))}`);
  }
  // SAFETY: membership checked just above.
  const names = DRAFT_FIELDS[kind as DurabilityRecordDraft['kind']];
  const allowed = new Set<string>(['kind', ...names, ...extra]);
  for (const key of Reflect.ownKeys(value)) {
    if (typeof key !== 'string' || !allowed.has(key)) throw fail(`unexpected field ${String(key)} on a ${kind} record`);
  }
  const fields: Record<string, unknown> = {};
  for (const name of [...names, ...extra]) {
    const field = ownData(value, name);
    if (!field.ok) throw fail(`${name} ${field.why}`);
    fields[name] = field.value;
  }
  const text = (name: string, check: (v: unknown) => string | undefined): string => {
    const problem = check(fields[name]);
    if (problem !== undefined) throw fail(`${name} ${problem}`);
    return fields[name] as string;
  };
  const json = (name: string): JsonValue => {
    try {
      return checkDurabilityValue(fields[name], name);
    } catch (error) {
      throw valueError(name, error);
    }
  };
  const deadline = (name: string, nullable: boolean): number | null => {
    const v = fields[name];
    if (nullable && v === null) return null;
    const problem = describeInvalidDeadline(v);
    if (problem !== undefined) throw fail(`${name} ${problem}`);
    return v as number;
  };
  let draft: DurabilityRecordDraft;
  switch (kind) {
    case 'delivery':
      draft = {
        kind,
        runId: text('runId', describeInvalidId),
        key: text('key', describeInvalidId),
        deliveryId: text('deliveryId', describeInvalidId),
        payload: json('payload'),
      };
      break;
    case 'step':
      draft = {
        kind,
        scope: text('scope', describeInvalidScope),
        key: text('key', describeInvalidId),
        result: json('result'),
      };
      break;
    case 'sleep':
      draft = {
        kind,
        scope: text('scope', describeInvalidScope),
        key: text('key', describeInvalidId),
        untilMs: deadline('untilMs', false) as number,
      };
      break;
    case 'wait':
      draft = {
        kind,
        scope: text('scope', describeInvalidScope),
        key: text('key', describeInvalidId),
        deadlineMs: deadline('deadlineMs', true),
      };
      break;
    case 'wait_timeout':
      draft = { kind, scope: text('scope', describeInvalidScope), key: text('key', describeInvalidId) };
      break;
    default: {
      const status = fields['status'];
      if (status !== 'completed' && status !== 'failed') throw fail(`status must be 'completed' or 'failed'`);
      draft = {
        kind: 'run_event',
        scope: text('scope', describeInvalidScope),
        key: text('key', describeInvalidId),
        status,
        detail: json('detail'),
      };
    }
  }
  return { draft, fields };
}

/**
 * Strictly validates a draft and returns a detached copy. Shape problems are
 * `DURABILITY_INVALID_INPUT`; a result, payload or detail that is not lossless JSON is
 * `DURABILITY_INVALID_VALUE`.
 */
export function validateDurabilityDraft(draft: unknown): DurabilityRecordDraft {
  return readDraft(
    draft,
    [],
    (message) => invalidInput(message),
    (_label, error) => (error instanceof DurabilityError ? error : invalidInput(String(error))),
  ).draft;
}

/** What a reader expects of a record it parses. */
export interface DurabilityRecordExpectation {
  sessionId?: SessionId;
  sequence?: number;
}

/**
 * Parses a record read back from storage (or received from a backend) into a fresh, detached
 * record. Anything malformed or unexpected — unknown kind, extra or missing field, a value that
 * is not lossless JSON, a wrong session or sequence — is `DURABILITY_CORRUPT_RECORD`.
 */
export function parseDurabilityRecord(value: unknown, expected: DurabilityRecordExpectation = {}): DurabilityRecord {
  const where = expected.sequence === undefined ? 'a durability record' : `durability record ${expected.sequence}`;
  const details = expected.sequence === undefined ? undefined : { sequence: expected.sequence };
  const fail = (message: string): DurabilityError => corrupt(`${where}: ${message}`, details);
  const { draft, fields } = readDraft(value, META_FIELDS, fail, (label, error) =>
    fail(`${label}: ${error instanceof Error ? error.message : String(error)}`),
  );
  const sequence = fields['sequence'];
  if (typeof sequence !== 'number' || !Number.isSafeInteger(sequence) || sequence < 1) {
    throw fail('sequence must be an integer >= 1');
  }
  if (expected.sequence !== undefined && sequence !== expected.sequence) {
    throw fail(`found sequence ${sequence} where ${expected.sequence} was expected`);
  }
  const sessionId = fields['sessionId'];
  if (describeInvalidId(sessionId) !== undefined) throw fail('sessionId is invalid');
  if (expected.sessionId !== undefined && sessionId !== expected.sessionId) {
    throw fail(`belongs to session ${String(sessionId)}, not ${expected.sessionId}`);
  }
  const recordedAt = fields['recordedAt'];
  if (!isIsoTimestamp(recordedAt)) throw fail('recordedAt is not an ISO-8601 UTC timestamp');
  // SAFETY: every field was checked above; the draft keeps its discriminant.
  return { ...draft, sequence, sessionId: sessionId as SessionId, recordedAt } as DurabilityRecord;
}

/** Decodes one stored record ({@link encodeDurabilityRecord} form); malformed text is corrupt. */
export function decodeDurabilityRecord(text: string, expected: DurabilityRecordExpectation = {}): DurabilityRecord {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new DurabilityError('DURABILITY_CORRUPT_RECORD', 'a stored durability record is not JSON', {
      cause: error,
      ...(expected.sequence === undefined ? {} : { details: { sequence: expected.sequence } }),
    });
  }
  return parseDurabilityRecord(parsed, expected);
}
