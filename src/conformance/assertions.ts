/**
 * Assertion helpers for conformance checks.
 *
 * The harness runs under any test runner (vitest, node:test, workerd), so it carries its own
 * small assertions instead of importing one. Each helper throws a plain `Error` whose message
 * says what was expected and what was seen; the runner prefixes it with the check's name.
 * Errors are classified by their `code` (never by message), so an error rebuilt on the far side
 * of HTTP or RPC passes exactly like the original.
 */
import {
  isAbortError,
  isDurableError,
  isDurableEventSequenceConflictError,
  type DurableErrorCode,
} from '../protocol/errors.js';

/** Longest rendering of a value inside a failure message. */
const MAX_RENDERED_CHARS = 400;

/** A short, printable rendering of any value for failure messages. */
export function describeValue(value: unknown): string {
  let text: string;
  if (value instanceof Error) {
    const code = (value as { code?: unknown }).code;
    text = `${value.name}${typeof code === 'string' ? ` [${code}]` : ''}: ${value.message}`;
  } else if (typeof value === 'string') {
    text = JSON.stringify(value);
  } else if (typeof value === 'number' && Object.is(value, -0)) {
    text = '-0';
  } else {
    try {
      text = JSON.stringify(value) ?? String(value);
    } catch {
      text = String(value);
    }
  }
  return text.length > MAX_RENDERED_CHARS ? `${text.slice(0, MAX_RENDERED_CHARS)}...` : text;
}

/** Throws `message` as a plain Error. */
export function fail(message: string, cause?: unknown): never {
  throw new Error(message, cause === undefined ? undefined : { cause });
}

/** Throws unless `condition` holds. */
export function assert(condition: unknown, message: string): asserts condition {
  if (!condition) fail(message);
}

/** Throws unless `actual` is `expected` (`Object.is`). */
export function assertEqual<T>(actual: unknown, expected: T, what: string): asserts actual is T {
  if (!Object.is(actual, expected)) {
    fail(`${what}: expected ${describeValue(expected)}, got ${describeValue(actual)}`);
  }
}

/**
 * Structural equality for JSON-like data: plain objects compare by own enumerable keys in any
 * order, arrays element-wise, everything else with `Object.is`. Returns the path of the first
 * difference, or `undefined` when equal.
 */
export function findDifference(actual: unknown, expected: unknown, path = '$'): string | undefined {
  if (Object.is(actual, expected)) return undefined;
  if (typeof actual !== 'object' || typeof expected !== 'object' || actual === null || expected === null) {
    return `${path}: expected ${describeValue(expected)}, got ${describeValue(actual)}`;
  }
  if (Array.isArray(actual) !== Array.isArray(expected)) {
    return `${path}: expected ${Array.isArray(expected) ? 'an array' : 'an object'}`;
  }
  if (Array.isArray(actual) && Array.isArray(expected)) {
    if (actual.length !== expected.length) {
      return `${path}: expected length ${expected.length}, got ${actual.length}`;
    }
    for (let index = 0; index < expected.length; index++) {
      const difference = findDifference(actual[index], expected[index], `${path}[${index}]`);
      if (difference !== undefined) return difference;
    }
    return undefined;
  }
  const actualRecord = actual as Record<string, unknown>;
  const expectedRecord = expected as Record<string, unknown>;
  const actualKeys = Object.keys(actualRecord).sort();
  const expectedKeys = Object.keys(expectedRecord).sort();
  const missing = expectedKeys.filter((key) => !Object.prototype.hasOwnProperty.call(actualRecord, key));
  if (missing.length > 0) return `${path}: missing key(s) ${missing.join(', ')}`;
  const extra = actualKeys.filter((key) => !Object.prototype.hasOwnProperty.call(expectedRecord, key));
  if (extra.length > 0) return `${path}: unexpected key(s) ${extra.join(', ')}`;
  for (const key of expectedKeys) {
    const difference = findDifference(actualRecord[key], expectedRecord[key], `${path}.${key}`);
    if (difference !== undefined) return difference;
  }
  return undefined;
}

/** Throws unless `actual` is structurally equal to `expected` (see {@link findDifference}). */
export function assertDeepEqual(actual: unknown, expected: unknown, what: string): void {
  const difference = findDifference(actual, expected);
  if (difference !== undefined) fail(`${what}: ${difference}`);
}

/** Awaits `promise` and returns its rejection; throws when it resolves. */
export async function expectRejection(promise: Promise<unknown>, what: string): Promise<unknown> {
  let value: unknown;
  try {
    value = await promise;
  } catch (error) {
    return error;
  }
  return fail(`${what}: expected a rejection, but it resolved with ${describeValue(value)}`);
}

/**
 * Awaits `promise` and asserts it rejects with a domain error carrying `code`. Returns the
 * error for further checks.
 *
 * @example
 * await expectCode(store.read(sessionId, { limit: 0 }), 'DURABLE_EVENT_INVALID_INPUT');
 */
export async function expectCode(
  promise: Promise<unknown>,
  code: DurableErrorCode,
  what = `expected ${code}`,
): Promise<Error> {
  const error = await expectRejection(promise, what);
  const actual = typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined;
  if (actual !== code) fail(`${what}: expected code ${code}, got ${describeValue(error)}`, error);
  // SAFETY: it carries a domain code; domain errors are Errors (or rebuilt as such).
  return error as Error;
}

/** Awaits `promise` and asserts it rejects with any domain error (any `DurableError` code). */
export async function expectDurableError(promise: Promise<unknown>, what: string): Promise<Error> {
  const error = await expectRejection(promise, what);
  if (!isDurableError(error)) fail(`${what}: expected a DurableError, got ${describeValue(error)}`, error);
  return error;
}

/**
 * Awaits `promise` and asserts a compare-and-append conflict carrying `expected` and `actual`
 * (checked through the code-based guard, so rebuilt errors pass).
 */
export async function expectSequenceConflict(
  promise: Promise<unknown>,
  expected: number | null,
  actual: number | null,
  what = 'compare-and-append',
): Promise<void> {
  const error = await expectRejection(promise, what);
  if (!isDurableEventSequenceConflictError(error)) {
    fail(`${what}: expected DURABLE_EVENT_SEQUENCE_CONFLICT, got ${describeValue(error)}`, error);
  }
  assertEqual(error.expected, expected, `${what}: conflict.expected`);
  assertEqual(error.actual, actual, `${what}: conflict.actual`);
}

/** Awaits `promise` and asserts it rejects with an error named `AbortError`. */
export async function expectAbortError(promise: Promise<unknown>, what: string): Promise<void> {
  const error = await expectRejection(promise, what);
  if (!isAbortError(error)) fail(`${what}: expected an AbortError, got ${describeValue(error)}`, error);
}

/** Awaits `promise` and returns its value; a rejection fails with `what` in the message. */
export async function expectResolves<T>(promise: Promise<T>, what: string): Promise<T> {
  try {
    return await promise;
  } catch (error) {
    return fail(`${what}: expected success, got ${describeValue(error)}`, error);
  }
}

/** Resolves after `ms` milliseconds. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
