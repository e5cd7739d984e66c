/**
 * Immutable plain-data helpers for the projection.
 *
 * The projector never mutates a view once built: an update builds a new frozen object and shares
 * every untouched part with the previous state. That makes `snapshot()` O(1) and `clone()` a
 * reference copy. Payload values taken from events are deep-copied once on ingestion (parsed
 * envelopes share their JSON values with the caller) and deep-frozen.
 */

/** A deep, detached, deeply frozen copy of plain JSON-like data. */
export function detach<T>(value: T): T {
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) {
    // SAFETY: mapping each element through detach preserves the array's element type.
    return Object.freeze(value.map((item: unknown) => detach(item))) as T;
  }
  const copy: Record<string, unknown> = {};
  for (const key of Object.keys(value)) {
    const item = detach((value as Record<string, unknown>)[key]);
    // An own `__proto__` key must stay a data property, not change the prototype (assignment
    // would call the setter); any other key is a plain assignment, the same once frozen.
    if (key === '__proto__') Object.defineProperty(copy, key, { value: item, enumerable: true, writable: true, configurable: true });
    else copy[key] = item;
  }
  // SAFETY: same keys and (recursively) same values as the input.
  return Object.freeze(copy) as T;
}

/** `record[key]` when it is an own property (IDs such as `"constructor"` are legal keys). */
export function ownEntry<V>(record: Readonly<Record<string, V>>, key: string): V | undefined {
  return Object.prototype.hasOwnProperty.call(record, key) ? record[key] : undefined;
}

/** A new frozen record equal to `record` with `key` set to `value`. */
export function withEntry<V>(record: Readonly<Record<string, V>>, key: string, value: V): Readonly<Record<string, V>> {
  const copy: Record<string, V> = { ...record };
  // See `detach`: only an own `__proto__` key needs defineProperty.
  if (key === '__proto__') Object.defineProperty(copy, key, { value, enumerable: true, writable: true, configurable: true });
  else copy[key] = value;
  return Object.freeze(copy);
}

/** A new frozen record equal to `record` without `key`. */
export function withoutEntry<V>(record: Readonly<Record<string, V>>, key: string): Readonly<Record<string, V>> {
  const copy: Record<string, V> = { ...record };
  delete copy[key];
  return Object.freeze(copy);
}

/** The own values of a record. */
export function entriesOf<V>(record: Readonly<Record<string, V>>): V[] {
  return Object.keys(record).map((key) => record[key] as V);
}

/** Shallow-freezes a freshly built view (its parts are already frozen). */
export function seal<T extends object>(value: T): Readonly<T> {
  return Object.freeze(value);
}

/** A new frozen array: `items` plus `item`. */
export function appended<T>(items: readonly T[], item: T): readonly T[] {
  return Object.freeze([...items, item]);
}
