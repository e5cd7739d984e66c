/**
 * Argument checks of the recovery coordinator.
 *
 * Inputs come from callers that may not be type-checked (JavaScript, JSON over a wire), so every
 * operation first checks its argument strictly: a plain object, only the keys the operation
 * knows (an extra key such as `sideEffect` on `startToolAttempt` is refused rather than
 * ignored), well-formed IDs, known statuses. A failure is `DURABLE_EVENT_INVALID_INPUT` and happens
 * before any store call. Payload values (results, errors, responses) are then checked by the
 * protocol's strict draft schemas when the command is built.
 */
import { DurableEventStoreError } from '../../protocol/errors.js';
import { safeParseDurableEventDraft } from '../../protocol/events.js';
import { describeInvalidId, type CommandId, type EventSequence } from '../../protocol/ids.js';
import type { DurableCommandEventDraft } from '../journal/journal-options.js';

/** A checked argument: a plain record of the operation's own keys. */
export type CheckedInput = Readonly<Record<string, unknown>>;

/** `DURABLE_EVENT_INVALID_INPUT` naming the operation. */
export function invalidInput(operation: string, message: string): DurableEventStoreError {
  return new DurableEventStoreError('DURABLE_EVENT_INVALID_INPUT', `${operation}: ${message}`, {
    details: { operation },
  });
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const prototype: unknown = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}

/** Checks that `value` is a plain object with every `required` key and no key outside `required` + `optional`. */
export function checkShape(
  operation: string,
  label: string,
  value: unknown,
  required: readonly string[],
  optional: readonly string[] = [],
): CheckedInput {
  if (!isPlainObject(value)) throw invalidInput(operation, `${label} must be a plain object`);
  const known = new Set([...required, ...optional]);
  for (const key of Object.keys(value)) {
    if (!known.has(key)) throw invalidInput(operation, `${label} has an unknown key "${key}"`);
  }
  for (const key of required) {
    if (value[key] === undefined) throw invalidInput(operation, `${label}.${key} is required`);
  }
  return value;
}

/** The command fields every mutating operation accepts besides its own. */
export const COMMAND_KEYS = ['commandId'] as const;
export const OPTIONAL_COMMAND_KEYS = ['expectedHeadSequence'] as const;

/** Checks an ID-valued field and returns it with its brand. */
export function checkId<T extends string>(operation: string, input: CheckedInput, key: string): T {
  const value = input[key];
  const problem = describeInvalidId(value);
  if (problem !== undefined) throw invalidInput(operation, `${key} ${problem}`);
  // SAFETY: validated just above; the brand only exists at compile time.
  return value as T;
}

/** Checks the command identity and the optional head pin shared by every mutating operation. */
export function checkCommandFields(
  operation: string,
  input: CheckedInput,
): { commandId: CommandId; expectedHeadSequence: EventSequence | null | undefined } {
  const commandId = checkId<CommandId>(operation, input, 'commandId');
  const expected = input['expectedHeadSequence'];
  if (expected !== undefined && expected !== null && (typeof expected !== 'number' || !Number.isSafeInteger(expected) || expected < 1)) {
    throw invalidInput(operation, 'expectedHeadSequence must be null or an integer sequence >= 1');
  }
  // SAFETY: validated just above.
  return { commandId, expectedHeadSequence: expected as EventSequence | null | undefined };
}

/** Checks that `value` is one of `allowed`. */
export function checkOneOf<T extends string>(operation: string, label: string, value: unknown, allowed: readonly T[]): T {
  if (typeof value !== 'string' || !(allowed as readonly string[]).includes(value)) {
    throw invalidInput(operation, `${label} must be one of ${allowed.join(', ')}, got ${String(value)}`);
  }
  // SAFETY: membership checked just above.
  return value as T;
}

/**
 * Parses each built draft (stamped with the command ID) with the protocol's strict schema, so a
 * bad payload value is reported as `DURABLE_EVENT_INVALID_INPUT` before anything is sent.
 */
export function checkDrafts(
  operation: string,
  commandId: CommandId,
  drafts: readonly DurableCommandEventDraft[],
): DurableCommandEventDraft[] {
  return drafts.map((draft, index) => {
    const parsed = safeParseDurableEventDraft({ ...draft, commandId });
    if (!parsed.ok) throw invalidInput(operation, `event ${index} (${draft.type}): ${parsed.problem}`);
    const checked: DurableCommandEventDraft = parsed.value;
    return checked;
  });
}
