/**
 * A quicker yes/no form of the lossless-JSON rule, for the append fast path.
 *
 * `describeLosslessJsonProblem` (protocol `json.ts`) walks a value and builds a path string for
 * every key it visits, so that its first problem can be reported precisely. Appending a batch only
 * needs the verdict; the message is wanted only when the value is refused, and then the caller
 * falls back to the precise validator. This walk applies the same rules, in the same order of
 * concerns, without building any path:
 * 1. strings, booleans, `null`, and finite numbers other than `-0` pass; anything else that is
 *    not an object fails;
 * 2. an array must have `Array.prototype` as prototype, an own data property at every index,
 *    and no own key besides the indices and `length`;
 * 3. an object must have `Object.prototype` or `null` as prototype, and only enumerable,
 *    string-keyed, own data properties (accessors are read through their descriptors, never
 *    invoked);
 * 4. a container met again on the current path is a cycle; more than `maxDepth` nested
 *    containers fail.
 * `test/protocol/draft-fast-path.test.ts` checks it against `isLosslessJson` on generated values.
 */
import { MAX_JSON_DEPTH } from './limits.js';

/**
 * True exactly when `isLosslessJson(value, maxDepth)` is true (see the module header).
 *
 * @example
 * isLosslessJsonFast({ a: [1, 'x', null] }); // true
 * isLosslessJsonFast({ a: -0 }); // false
 */
export function isLosslessJsonFast(value: unknown, maxDepth: number = MAX_JSON_DEPTH): boolean {
  return check(value, 0, maxDepth, []);
}

function check(value: unknown, depth: number, maxDepth: number, path: object[]): boolean {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return true;
    case 'number':
      return Number.isFinite(value) && !Object.is(value, -0);
    case 'object': {
      if (value === null) return true;
      // The path is short (at most maxDepth containers): a linear scan beats a Set here.
      if (path.includes(value) || depth + 1 > maxDepth) return false;
      path.push(value);
      const ok = Array.isArray(value) ? checkArray(value, depth + 1, maxDepth, path) : checkObject(value, depth + 1, maxDepth, path);
      path.pop();
      return ok;
    }
    default:
      return false;
  }
}

function checkArray(array: unknown[], depth: number, maxDepth: number, path: object[]): boolean {
  if (Object.getPrototypeOf(array) !== Array.prototype) return false;
  const length = array.length;
  for (let index = 0; index < length; index++) {
    const descriptor = Object.getOwnPropertyDescriptor(array, index);
    if (descriptor === undefined || !('value' in descriptor)) return false;
    if (!check(descriptor.value, depth, maxDepth, path)) return false;
  }
  // Every index is an own property, so any own key beyond the indices and `length` is extra.
  return Reflect.ownKeys(array).length === length + 1;
}

function checkObject(object: object, depth: number, maxDepth: number, path: object[]): boolean {
  const proto: unknown = Object.getPrototypeOf(object);
  if (proto !== Object.prototype && proto !== null) return false;
  for (const key of Reflect.ownKeys(object)) {
    if (typeof key === 'symbol') return false;
    // SAFETY: `key` came from ownKeys of this object, so the descriptor exists.
    const descriptor = Object.getOwnPropertyDescriptor(object, key) as PropertyDescriptor;
    if (!('value' in descriptor) || descriptor.enumerable !== true) return false;
    if (!check(descriptor.value, depth, maxDepth, path)) return false;
  }
  return true;
}

/**
 * `isLosslessJsonFast` for a value that `JSON.parse` just produced, and nothing else. Such a value
 * is made of plain objects with enumerable own data properties, dense arrays and primitives, and
 * has no cycles; of the lossless rules only two can fail: a number that is `-0` or not finite
 * (`JSON.parse('-0')`, `JSON.parse('1e999')`), and nesting deeper than `maxDepth`. Only those
 * are checked, with plain property reads.
 */
export function isParsedJsonLossless(value: unknown, maxDepth: number = MAX_JSON_DEPTH): boolean {
  return checkParsed(value, 0, maxDepth);
}

function checkParsed(value: unknown, depth: number, maxDepth: number): boolean {
  if (typeof value === 'number') return Number.isFinite(value) && !Object.is(value, -0);
  if (typeof value !== 'object' || value === null) return true;
  if (depth + 1 > maxDepth) return false;
  if (Array.isArray(value)) {
    for (let index = 0; index < value.length; index++) {
      if (!checkParsed(value[index], depth + 1, maxDepth)) return false;
    }
    return true;
  }
  // Own keys only, as the full walk (an enumerable key inherited from a polluted prototype is not
  // part of the value).
  for (const key of Object.keys(value)) {
    if (!checkParsed((value as Record<string, unknown>)[key], depth + 1, maxDepth)) return false;
  }
  return true;
}
