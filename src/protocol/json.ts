/**
 * Lossless JSON.
 *
 * A value is "lossless JSON" when `JSON.parse(JSON.stringify(value))` gives back a value that is
 * deep-equal to it, so storing it and reading it back cannot change it. The validator walks the
 * value once, depth-first, and reports the first problem with its path (`$.a[2]: negative zero`):
 * 1. primitives: strings, booleans, `null` and finite numbers other than `-0` pass; `undefined`,
 *    bigint, symbols and functions fail;
 * 2. arrays must be real arrays (Array.prototype) whose every index is an own data property
 *    (no holes, no accessors) and which carry no other own property but `length`;
 * 3. objects must be plain (prototype `Object.prototype` or `null`) with only enumerable own
 *    string-keyed data properties: accessors are inspected through their descriptors and never
 *    invoked, symbol keys fail;
 * 4. an object met again on the current path is a cycle (a shared, acyclic reference is fine);
 *    nesting deeper than `maxDepth` containers fails.
 *
 * `canonicalJson` gives equal strings for equal values (object keys sorted by UTF-16 code units),
 * which is what idempotency checks compare.
 */
import { z } from 'zod';
import { DurableEventStoreError } from './errors.js';
import { MAX_JSON_DEPTH } from './limits.js';

/** Any value JSON can carry without loss. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };
/** A JSON object (not an array, not null). */
export type JsonObject = { [key: string]: JsonValue };

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

function childPath(path: string, key: string): string {
  return IDENTIFIER.test(key) ? `${path}.${key}` : `${path}[${JSON.stringify(key)}]`;
}

function describePrimitive(value: unknown): string | undefined | null {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return undefined;
    case 'number':
      if (!Number.isFinite(value)) return `non-finite number ${String(value)}`;
      if (Object.is(value, -0)) return 'negative zero';
      return undefined;
    case 'undefined':
      return 'undefined is not JSON';
    case 'bigint':
      return 'bigint is not JSON';
    case 'symbol':
      return 'symbol is not JSON';
    case 'function':
      return 'function is not JSON';
    default:
      // object (including null): the caller handles containers.
      return value === null ? undefined : null;
  }
}

class Walker {
  private readonly ancestors = new Set<object>();
  constructor(private readonly maxDepth: number) {}

  check(value: unknown, path: string, depth: number): string | undefined {
    const primitive = describePrimitive(value);
    if (primitive !== null) return primitive === undefined ? undefined : `${path}: ${primitive}`;
    // SAFETY: describePrimitive returns null only for non-null objects.
    const container = value as object;
    if (this.ancestors.has(container)) return `${path}: cycle`;
    if (depth + 1 > this.maxDepth) return `${path}: nesting deeper than ${this.maxDepth}`;
    this.ancestors.add(container);
    const problem = Array.isArray(container)
      ? this.checkArray(container, path, depth + 1)
      : this.checkObject(container, path, depth + 1);
    this.ancestors.delete(container);
    return problem;
  }

  private checkArray(array: unknown[], path: string, depth: number): string | undefined {
    if (Object.getPrototypeOf(array) !== Array.prototype) return `${path}: array subclass is not JSON`;
    const length = array.length;
    for (let index = 0; index < length; index++) {
      const descriptor = Object.getOwnPropertyDescriptor(array, index);
      const itemPath = `${path}[${index}]`;
      if (descriptor === undefined) return `${itemPath}: sparse array hole`;
      if (!('value' in descriptor)) return `${itemPath}: accessor property`;
      const problem = this.check(descriptor.value, itemPath, depth);
      if (problem !== undefined) return problem;
    }
    // Every index is present, so any key beyond the indices and `length` is extra.
    const keys = Reflect.ownKeys(array);
    if (keys.length !== length + 1) {
      const extra = keys.find((key) => typeof key !== 'string' || (key !== 'length' && !isIndex(key, length)));
      return `${path}: array carries extra property ${String(extra)}`;
    }
    return undefined;
  }

  private checkObject(object: object, path: string, depth: number): string | undefined {
    const proto: unknown = Object.getPrototypeOf(object);
    if (proto !== Object.prototype && proto !== null) {
      return `${path}: ${describeConstructor(object)} is not a plain object`;
    }
    for (const key of Reflect.ownKeys(object)) {
      if (typeof key === 'symbol') return `${path}: symbol key ${String(key)}`;
      const keyPath = childPath(path, key);
      // SAFETY: `key` came from ownKeys of this object, so the descriptor exists.
      const descriptor = Object.getOwnPropertyDescriptor(object, key) as PropertyDescriptor;
      if (!('value' in descriptor)) return `${keyPath}: accessor property`;
      if (descriptor.enumerable !== true) return `${keyPath}: non-enumerable property`;
      const problem = this.check(descriptor.value, keyPath, depth);
      if (problem !== undefined) return problem;
    }
    return undefined;
  }
}

function isIndex(key: string, length: number): boolean {
  const index = Number(key);
  return Number.isInteger(index) && index >= 0 && index < length && String(index) === key;
}

function describeConstructor(object: object): string {
  const proto: unknown = Object.getPrototypeOf(object);
  const ctor =
    typeof proto === 'object' && proto !== null
      ? Object.getOwnPropertyDescriptor(proto, 'constructor')?.value
      : undefined;
  return typeof ctor === 'function' && ctor.name !== '' ? `${ctor.name} instance` : 'object with a custom prototype';
}

/**
 * Why `value` is not lossless JSON, as `<path>: <problem>` for the first problem found, or
 * `undefined` when it is. Never invokes getters.
 *
 * @example
 * describeLosslessJsonProblem({ a: [1, 2, -0] }); // '$.a[2]: negative zero'
 */
export function describeLosslessJsonProblem(value: unknown, maxDepth: number = MAX_JSON_DEPTH): string | undefined {
  return new Walker(maxDepth).check(value, '$', 0);
}

/** True when `value` is lossless JSON (see {@link describeLosslessJsonProblem}). */
export function isLosslessJson(value: unknown, maxDepth: number = MAX_JSON_DEPTH): value is JsonValue {
  return describeLosslessJsonProblem(value, maxDepth) === undefined;
}

/**
 * Throws `DURABLE_EVENT_INVALID_INPUT` unless `value` is lossless JSON.
 *
 * @example
 * assertLosslessJson(body, 'tool result');
 */
export function assertLosslessJson(value: unknown, label: string): asserts value is JsonValue {
  const problem = describeLosslessJsonProblem(value);
  if (problem !== undefined) {
    throw new DurableEventStoreError('DURABLE_EVENT_INVALID_INPUT', `${label} is not lossless JSON: ${problem}`);
  }
}

function notJson(value: unknown): DurableEventStoreError {
  return new DurableEventStoreError(
    'DURABLE_EVENT_INVALID_INPUT',
    `not lossless JSON: ${describePrimitive(value) ?? typeof value}`,
  );
}

function writeCanonical(value: JsonValue, out: string[]): void {
  if (value === null || typeof value === 'boolean' || typeof value === 'string') {
    out.push(JSON.stringify(value));
  } else if (typeof value === 'number') {
    if (!Number.isFinite(value) || Object.is(value, -0)) throw notJson(value);
    out.push(JSON.stringify(value));
  } else if (Array.isArray(value)) {
    out.push('[');
    for (let index = 0; index < value.length; index++) {
      if (index > 0) out.push(',');
      // SAFETY: index < length and lossless arrays have no holes.
      writeCanonical(value[index] as JsonValue, out);
    }
    out.push(']');
  } else if (typeof value === 'object') {
    out.push('{');
    const keys = Object.keys(value).sort();
    for (let index = 0; index < keys.length; index++) {
      // SAFETY: index < keys.length.
      const key = keys[index] as string;
      if (index > 0) out.push(',');
      out.push(JSON.stringify(key), ':');
      writeCanonical(value[key] as JsonValue, out);
    }
    out.push('}');
  } else {
    throw notJson(value);
  }
}

/**
 * Deterministic encoding: no whitespace, object keys sorted by UTF-16 code units, so equal
 * values give equal strings. The input must be lossless JSON (validate foreign values first).
 *
 * @example
 * canonicalJson({ b: 1, a: [true, null] }); // '{"a":[true,null],"b":1}'
 */
export function canonicalJson(value: JsonValue): string {
  const out: string[] = [];
  writeCanonical(value, out);
  return out.join('');
}

/** Structural equality of two JSON values (object key order does not matter). */
export function jsonEquals(a: JsonValue, b: JsonValue): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let index = 0; index < a.length; index++) {
      // SAFETY: both arrays have this index and no holes.
      if (!jsonEquals(a[index] as JsonValue, b[index] as JsonValue)) return false;
    }
    return true;
  }
  if (Array.isArray(b)) return false;
  const keys = Object.keys(a);
  if (keys.length !== Object.keys(b).length) return false;
  for (const key of keys) {
    if (!Object.prototype.hasOwnProperty.call(b, key)) return false;
    if (!jsonEquals(a[key] as JsonValue, b[key] as JsonValue)) return false;
  }
  return true;
}

/**
 * A deep, detached copy: no array or object of the result is shared with the input. Objects
 * come back as plain `{}` objects (a `"__proto__"` key stays an own data property).
 */
export function cloneJson<T extends JsonValue>(value: T): T {
  // SAFETY: cloning preserves the JSON shape, hence the type.
  return cloneValue(value) as T;
}

function cloneValue(value: JsonValue): JsonValue {
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) return value.map(cloneValue);
  const copy: JsonObject = {};
  for (const key of Object.keys(value)) {
    const item = cloneValue(value[key] as JsonValue);
    if (key === '__proto__') {
      Object.defineProperty(copy, key, { value: item, enumerable: true, writable: true, configurable: true });
    } else {
      copy[key] = item;
    }
  }
  return copy;
}

/** Zod schema accepting any lossless JSON value (reference kept, not copied). */
export const jsonValueSchema = z.custom<JsonValue>((value) => isLosslessJson(value), {
  error: (issue) =>
    issue.input === undefined
      ? 'required (undefined is not JSON)'
      : `not lossless JSON: ${describeLosslessJsonProblem(issue.input) ?? 'invalid'}`,
});

/** Zod schema accepting a lossless JSON object (not an array, not null). */
export const jsonObjectSchema = z.custom<JsonObject>(
  (value) => typeof value === 'object' && value !== null && !Array.isArray(value) && isLosslessJson(value),
  {
    error: (issue) => {
      const input = issue.input;
      if (typeof input !== 'object' || input === null || Array.isArray(input)) return 'expected a JSON object';
      return `not lossless JSON: ${describeLosslessJsonProblem(input) ?? 'invalid'}`;
    },
  },
);

/** Text made of ASCII characters only (one UTF-8 byte each). */
// eslint-disable-next-line no-control-regex
const ASCII_ONLY = /^[\u0000-\u007f]*$/;

/**
 * Number of bytes `new TextEncoder().encode(text)` would produce, counted without allocating
 * (a lone surrogate counts as the 3-byte replacement character, as TextEncoder writes it).
 * ASCII text, the common case of an encoded event, is answered by one native regular-expression
 * scan instead of a loop over its characters.
 */
export function utf8ByteLength(text: string): number {
  if (ASCII_ONLY.test(text)) return text.length;
  let bytes = 0;
  const length = text.length;
  for (let index = 0; index < length; index++) {
    const unit = text.charCodeAt(index);
    if (unit < 0x80) bytes += 1;
    else if (unit < 0x800) bytes += 2;
    else if (unit >= 0xd800 && unit <= 0xdbff && index + 1 < length) {
      const next = text.charCodeAt(index + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        bytes += 4;
        index++;
      } else {
        bytes += 3;
      }
    } else bytes += 3;
  }
  return bytes;
}

/**
 * Zod schema of a value that came out of `JSON.parse` (a request body field, a frame field): any
 * JSON value, accepted as is. Where the value is stored, its owner checks it for losslessness with
 * its own error code (the durability records answers `DURABILITY_INVALID_VALUE`, for example).
 * Unlike `z.json()` it documents as one plain "any JSON value" schema, not a recursive component.
 */
export const parsedJsonValueSchema = z.custom<JsonValue>((value) => value !== undefined, { error: "required (undefined is not JSON)" });
