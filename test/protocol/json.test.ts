import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  DurableEventStoreError,
  MAX_JSON_DEPTH,
  assertLosslessJson,
  canonicalJson,
  cloneJson,
  describeLosslessJsonProblem,
  isLosslessJson,
  jsonEquals,
  jsonObjectSchema,
  jsonValueSchema,
  utf8ByteLength,
  type JsonValue,
} from '../../src/protocol/index.js';
import { sparse } from './event-fixtures.js';

/** Replaces -0 (which JSON cannot carry) with 0, everywhere. */
function withoutNegativeZero(value: JsonValue): JsonValue {
  if (typeof value === 'number') return Object.is(value, -0) ? 0 : value;
  if (Array.isArray(value)) return value.map(withoutNegativeZero);
  if (value !== null && typeof value === 'object') {
    const out: Record<string, JsonValue> = {};
    for (const [key, item] of Object.entries(value)) {
      Object.defineProperty(out, key, { value: withoutNegativeZero(item), enumerable: true, writable: true, configurable: true });
    }
    return out;
  }
  return value;
}

const jsonArb = fc.jsonValue().map((value) => withoutNegativeZero(value as JsonValue));

/** The same value with every object's keys inserted in a generated order. */
function reorder(value: JsonValue, pick: (max: number) => number): JsonValue {
  if (Array.isArray(value)) return value.map((item) => reorder(item, pick));
  if (value === null || typeof value !== 'object') return value;
  const keys = Object.keys(value);
  const order: string[] = [];
  while (keys.length > 0) order.push(keys.splice(pick(keys.length - 1), 1)[0] as string);
  const out: Record<string, JsonValue> = {};
  for (const key of order) {
    Object.defineProperty(out, key, { value: reorder(value[key] as JsonValue, pick), enumerable: true, writable: true, configurable: true });
  }
  return out;
}

function containers(value: unknown, into = new Set<object>()): Set<object> {
  if (value !== null && typeof value === 'object') {
    into.add(value);
    for (const item of Object.values(value)) containers(item, into);
  }
  return into;
}

function nested(depth: number): JsonValue {
  let value: JsonValue = 1;
  for (let index = 0; index < depth; index++) value = index % 2 === 0 ? [value] : { k: value };
  return value;
}

describe('lossless JSON: properties', () => {
  it('accepts every JSON value and survives a JSON round trip', () => {
    fc.assert(
      fc.property(jsonArb, (value) => {
        expect(describeLosslessJsonProblem(value)).toBeUndefined();
        expect(isLosslessJson(value)).toBe(true);
        expect(JSON.parse(JSON.stringify(value))).toStrictEqual(value);
        expect(jsonEquals(JSON.parse(JSON.stringify(value)) as JsonValue, value)).toBe(true);
      }),
    );
  });

  it('canonicalJson is invariant under key order, parses back, and sorts keys', () => {
    fc.assert(
      fc.property(jsonArb, fc.gen(), (value, gen) => {
        const shuffled = reorder(value, (max) => gen(fc.nat, { max }));
        expect(canonicalJson(shuffled)).toBe(canonicalJson(value));
        expect(jsonEquals(shuffled, value)).toBe(true);
        expect(JSON.parse(canonicalJson(value))).toStrictEqual(value);
        expect(canonicalJson(value)).not.toMatch(/^\s|\s$/);
      }),
    );
  });

  it('jsonEquals agrees with canonicalJson', () => {
    fc.assert(
      fc.property(jsonArb, jsonArb, (a, b) => {
        expect(jsonEquals(a, b)).toBe(canonicalJson(a) === canonicalJson(b));
      }),
    );
  });

  it('cloneJson is equal and detached', () => {
    fc.assert(
      fc.property(jsonArb, (value) => {
        const before = canonicalJson(value);
        const clone = cloneJson(value);
        expect(clone).toStrictEqual(value);
        const originals = containers(value);
        for (const container of containers(clone)) expect(originals.has(container)).toBe(false);
        if (clone !== null && typeof clone === 'object') {
          if (Array.isArray(clone)) clone.push('mutated');
          else clone['__mutated__'] = true;
        }
        expect(canonicalJson(value)).toBe(before);
      }),
    );
  });

  it('utf8ByteLength matches TextEncoder, lone surrogates included', () => {
    const unit = fc.integer({ min: 0, max: 0xffff }).map((code) => String.fromCharCode(code));
    fc.assert(
      fc.property(fc.oneof(fc.string({ unit }), fc.string({ unit: 'binary' }), fc.string()), (text) => {
        expect(utf8ByteLength(text)).toBe(new TextEncoder().encode(text).length);
      }),
    );
  });
});

describe('lossless JSON: refusals', () => {
  class Point {
    x = 1;
  }
  const withGetter = {};
  Object.defineProperty(withGetter, 'g', { enumerable: true, get: () => 1 });
  const withSetter = {};
  Object.defineProperty(withSetter, 's', { enumerable: true, set: () => undefined });
  const hidden = {};
  Object.defineProperty(hidden, 'h', { enumerable: false, value: 1 });
  const cyclic: Record<string, unknown> = { a: { b: [] as unknown[] } };
  ((cyclic['a'] as { b: unknown[] }).b).push(cyclic);
  const arrayGetter: unknown[] = [1, 2];
  Object.defineProperty(arrayGetter, 0, { get: () => 1, enumerable: true });
  const arrayExtra = Object.assign([1, 2], { extra: 3 });
  const arrayHoleAndExtra = Object.assign(sparse([1, 2], 0), { extra: 3 });
  const arraySymbol = Object.assign([1], { [Symbol('s')]: 1 });
  class MyArray extends Array {}

  const cases: [label: string, value: unknown, expected: string][] = [
    ['NaN', { a: NaN }, '$.a: non-finite number NaN'],
    ['Infinity', [Infinity], '$[0]: non-finite number Infinity'],
    ['-Infinity', -Infinity, '$: non-finite number -Infinity'],
    ['negative zero', { a: [1, 2, -0] }, '$.a[2]: negative zero'],
    ['undefined in object', { a: undefined }, '$.a: undefined is not JSON'],
    ['undefined in array', [1, undefined], '$[1]: undefined is not JSON'],
    ['undefined at root', undefined, '$: undefined is not JSON'],
    ['sparse array', sparse([1, 2, 3], 1), '$[1]: sparse array hole'],
    ['getter', { o: withGetter }, '$.o.g: accessor property'],
    ['setter', withSetter, '$.s: accessor property'],
    ['array index getter', arrayGetter, '$[0]: accessor property'],
    ['non-enumerable property', hidden, '$.h: non-enumerable property'],
    ['cycle', cyclic, '$.a.b[0]: cycle'],
    ['Date', { when: new Date(0) }, '$.when: Date instance is not a plain object'],
    ['Map', new Map(), '$: Map instance is not a plain object'],
    ['class instance', [new Point()], '$[0]: Point instance is not a plain object'],
    ['boxed string', new String('x'), '$: String instance is not a plain object'],
    ['boxed number', { n: new Number(1) }, '$.n: Number instance is not a plain object'],
    ['symbol key', { [Symbol('k')]: 1 }, '$: symbol key Symbol(k)'],
    ['symbol value', { s: Symbol('v') }, '$.s: symbol is not JSON'],
    ['bigint', { big: 10n }, '$.big: bigint is not JSON'],
    ['function', { f: () => 1 }, '$.f: function is not JSON'],
    ['array with extra property', arrayExtra, '$: array carries extra property extra'],
    ['array with hole and extra property', arrayHoleAndExtra, '$[0]: sparse array hole'],
    ['array with symbol property', arraySymbol, '$: array carries extra property Symbol(s)'],
    ['array subclass', MyArray.from([1]), '$: array subclass is not JSON'],
    ['quoted path', { 'a b': { 'c-d': NaN } }, '$["a b"]["c-d"]: non-finite number NaN'],
    ['too deep', nested(MAX_JSON_DEPTH + 1), 'nesting deeper than 64'],
  ];

  it.each(cases)('refuses %s', (_label, value, expected) => {
    const problem = describeLosslessJsonProblem(value);
    expect(problem).toBeDefined();
    expect(problem).toContain(expected);
    expect(isLosslessJson(value)).toBe(false);
    expect(jsonValueSchema.safeParse(value).success).toBe(false);
  });

  it('assertLosslessJson throws DURABLE_EVENT_INVALID_INPUT with label and path', () => {
    expect(() => assertLosslessJson({ a: NaN }, 'tool result')).toThrow(DurableEventStoreError);
    try {
      assertLosslessJson({ a: NaN }, 'tool result');
    } catch (error) {
      expect((error as DurableEventStoreError).code).toBe('DURABLE_EVENT_INVALID_INPUT');
      expect((error as Error).message).toContain('tool result');
      expect((error as Error).message).toContain('$.a');
    }
    expect(() => assertLosslessJson({ a: 1 }, 'ok')).not.toThrow();
  });

  it('never invokes getters', () => {
    let calls = 0;
    const value = {};
    Object.defineProperty(value, 'g', { enumerable: true, get: () => ++calls });
    describeLosslessJsonProblem(value);
    expect(calls).toBe(0);
  });
});

describe('lossless JSON: acceptances', () => {
  it('accepts null-prototype objects, shared acyclic references and the exact depth limit', () => {
    const bare = Object.create(null) as Record<string, JsonValue>;
    bare['x'] = 1;
    expect(isLosslessJson({ bare })).toBe(true);
    const shared = { s: 1 };
    expect(isLosslessJson([shared, shared, { shared }])).toBe(true);
    expect(isLosslessJson(nested(MAX_JSON_DEPTH))).toBe(true);
    expect(isLosslessJson(nested(3), 3)).toBe(true);
    expect(isLosslessJson(nested(4), 3)).toBe(false);
    expect(isLosslessJson({ ['__proto__']: 1 })).toBe(true);
    expect(isLosslessJson(JSON.parse('{"__proto__":{"a":1}}'))).toBe(true);
    expect(isLosslessJson(['', 0, -1.5, 1e300, true, false, null, '\u0000\ud800'])).toBe(true);
  });

  it('jsonObjectSchema takes objects only', () => {
    expect(jsonObjectSchema.safeParse({ a: [1] }).success).toBe(true);
    expect(jsonObjectSchema.safeParse([1]).success).toBe(false);
    expect(jsonObjectSchema.safeParse(null).success).toBe(false);
    expect(jsonObjectSchema.safeParse({ a: NaN }).success).toBe(false);
  });
});

describe('canonicalJson and cloneJson details', () => {
  it('sorts keys by UTF-16 code units and keeps __proto__ an own key', () => {
    expect(canonicalJson({ b: 1, a: [true, null], B: 'x', é: 2, '😀': 3, '\uffff': 4 })).toBe(
      '{"B":"x","a":[true,null],"b":1,"é":2,"😀":3,"\uffff":4}',
    );
    const parsed = JSON.parse('{"__proto__":{"a":1},"z":0}') as JsonValue;
    expect(canonicalJson(parsed)).toBe('{"__proto__":{"a":1},"z":0}');
    const clone = cloneJson(parsed) as Record<string, JsonValue>;
    expect(Object.getPrototypeOf(clone)).toBe(Object.prototype);
    expect(Object.keys(clone)).toEqual(['__proto__', 'z']);
    expect(canonicalJson(clone)).toBe(canonicalJson(parsed));
  });

  it('canonicalJson refuses values that are not JSON', () => {
    expect(() => canonicalJson({ a: NaN })).toThrow(DurableEventStoreError);
    expect(() => canonicalJson([-0])).toThrow(DurableEventStoreError);
    expect(() => canonicalJson({ a: undefined } as unknown as JsonValue)).toThrow(DurableEventStoreError);
  });

  it('jsonEquals distinguishes arrays from objects and missing keys', () => {
    expect(jsonEquals([], {})).toBe(false);
    expect(jsonEquals({ a: null }, { b: null })).toBe(false);
    expect(jsonEquals({ a: 1, b: 2 }, { b: 2, a: 1 })).toBe(true);
    expect(jsonEquals(0, -0)).toBe(true);
  });
});
