/**
 * The validation fast path (`src/protocol/draft-fast-path.ts`, `json-fast-check.ts`) against
 * the reference validators, differentially:
 * - `isLosslessJsonFast` gives `isLosslessJson`'s verdict on generated values of every kind and
 *   on hand-made exotic ones; `isParsedJsonLossless` does on anything `JSON.parse` returns;
 * - `fastParseDraft` (objects) and `fastParseParsedDraft` (JSON.parse output) accept every valid
 *   fixture they cover and return exactly zod's result (same values, same key order), decline
 *   every invalid fixture, and, on thousands of generated mutations of valid drafts, never accept
 *   anything zod refuses nor return anything zod would not;
 * - the batch entry points (`validateDraftBatch`, `parseDraftBatchJson`) return the zod-only
 *   `validateDraftBatchStrict`'s result and throw its exact error.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseDraftBatchJson, validateDraftBatch, validateDraftBatchStrict } from '../../src/core/log-engine.js';
import { fastParseDraft, fastParseParsedDraft } from '../../src/protocol/draft-fast-path.js';
import { isLosslessJsonFast, isParsedJsonLossless } from '../../src/protocol/json-fast-check.js';
import { safeParseDurableEventDraft, type DurableEventDraft, type DurableEventType } from '../../src/protocol/events.js';
import { isLosslessJson } from '../../src/protocol/json.js';
import { MAX_JSON_DEPTH } from '../../src/protocol/limits.js';
import { copy, invalidDataMutations, sparse, validDrafts } from './event-fixtures.js';

const TYPES = Object.keys(validDrafts) as DurableEventType[];

/** Asserts what the fast path promises for `input`; returns whether it accepted. */
function agreesWithZod(fast: DurableEventDraft | undefined, input: unknown): boolean {
  if (fast === undefined) return false;
  const reference = safeParseDurableEventDraft(input);
  expect(reference.ok).toBe(true);
  if (!reference.ok) return false;
  expect(fast).toStrictEqual(reference.value);
  expect(JSON.stringify(fast)).toBe(JSON.stringify(reference.value));
  return true;
}

/** The error `fn` throws, as a comparable value. */
function errorOf(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    const e = error as { name?: unknown; code?: unknown; message?: unknown; details?: unknown };
    return { name: e.name, code: e.code, message: e.message, details: e.details };
  }
  return 'no error';
}

function deep(levels: number): unknown {
  let value: unknown = 1;
  for (let i = 0; i < levels; i++) value = i % 2 === 0 ? [value] : { v: value };
  return value;
}

class Thing {
  a = 1;
}

function withAccessor(): object {
  const value = { a: 1 };
  Object.defineProperty(value, 'b', { get: () => 2, enumerable: true, configurable: true });
  return value;
}

/** Values that break one lossless rule each (plus a few that do not). */
function exoticValues(): unknown[] {
  const cycle: Record<string, unknown> = {};
  cycle['self'] = cycle;
  const shared = { x: 1 };
  const arrayWithExtra = Object.assign([1, 2], { extra: true });
  const hidden = { a: 1 };
  Object.defineProperty(hidden, 'b', { value: 2, enumerable: false });
  class MyArray extends Array<number> {}
  return [
    -0,
    NaN,
    Infinity,
    undefined,
    1n,
    Symbol('s'),
    () => 1,
    new Date(0),
    new Map(),
    new Thing(),
    Object.assign(Object.create(null), { a: 1 }),
    { [Symbol('k')]: 1 },
    hidden,
    withAccessor(),
    sparse([1, 2, 3], 1),
    arrayWithExtra,
    MyArray.from([1]),
    cycle,
    { a: shared, b: [shared, shared] },
    JSON.parse('{"__proto__": {"x": 1}}'),
    deep(MAX_JSON_DEPTH),
    deep(MAX_JSON_DEPTH + 1),
    { nested: [{ deeper: [1, 'two', null, false, { n: -0 }] }] },
  ];
}

describe('isLosslessJsonFast', () => {
  it('gives the verdict of isLosslessJson on exotic values', () => {
    for (const [index, value] of exoticValues().entries()) {
      expect(isLosslessJsonFast(value), `exotic value ${index}`).toBe(isLosslessJson(value));
      expect(isLosslessJsonFast({ wrapped: [value] })).toBe(isLosslessJson({ wrapped: [value] }));
    }
  });

  it('gives the verdict of isLosslessJson on generated values', () => {
    const anything = fc.anything({
      withBigInt: true,
      withBoxedValues: true,
      withDate: true,
      withMap: true,
      withNullPrototype: true,
      withObjectString: true,
      withSet: true,
      withSparseArray: true,
      withTypedArray: true,
      withUnicodeString: true,
      maxDepth: 4,
    });
    fc.assert(
      fc.property(anything, (value) => {
        expect(isLosslessJsonFast(value)).toBe(isLosslessJson(value));
      }),
      { numRuns: 2000 },
    );
  });

  it('applies the depth limit it is given', () => {
    expect(isLosslessJsonFast(deep(3), 3)).toBe(true);
    expect(isLosslessJsonFast(deep(4), 3)).toBe(false);
    expect(isLosslessJsonFast(deep(4), 3)).toBe(isLosslessJson(deep(4), 3));
  });
});

describe('isParsedJsonLossless', () => {
  it('gives the verdict of isLosslessJson on whatever JSON.parse returns', () => {
    const texts = ['-0', '[0, -0]', '{"a": -0.0}', '1e999', '[-1e999]', '1.5', '"x"', 'null', '{"__proto__": []}'];
    texts.push(JSON.stringify(deep(MAX_JSON_DEPTH)), JSON.stringify(deep(MAX_JSON_DEPTH + 1)));
    for (const text of texts) {
      const value: unknown = JSON.parse(text);
      expect(isParsedJsonLossless(value), text).toBe(isLosslessJson(value));
    }
    fc.assert(
      fc.property(fc.json({ maxDepth: 5 }), (text) => {
        const value: unknown = JSON.parse(text);
        expect(isParsedJsonLossless(value)).toBe(isLosslessJson(value));
      }),
      { numRuns: 1000 },
    );
  });
});

describe('fastParseDraft and fastParseParsedDraft', () => {
  it('accept every valid fixture they cover, exactly as zod parses it', () => {
    for (const type of TYPES) {
      const draft = validDrafts[type];
      // Content-part arrays are left to zod on purpose; their text form is covered.
      const covered = type === 'request_accepted' ? { ...copy(draft), data: { ...copy(draft.data), input: 'text' } } : copy(draft);
      expect(agreesWithZod(fastParseDraft(covered), covered), type).toBe(true);
      const parsed: unknown = JSON.parse(JSON.stringify(covered));
      expect(agreesWithZod(fastParseParsedDraft(parsed), parsed), type).toBe(true);
      expect(fastParseDraft({ ...covered, occurredAt: '2024-02-29T23:59:59.123Z' })).toBeDefined();
    }
    expect(fastParseDraft(validDrafts.request_accepted)).toBeUndefined();
  });

  it('decline every invalid fixture', () => {
    for (const type of TYPES) {
      for (const [label, mutate] of invalidDataMutations[type]) {
        const draft = copy(validDrafts[type]) as unknown as { data: Record<string, unknown> };
        mutate(draft.data);
        expect(safeParseDurableEventDraft(draft).ok, `${type}: ${label}`).toBe(false);
        expect(fastParseDraft(draft), `${type}: ${label}`).toBeUndefined();
      }
    }
  });

  it('read a schema-level getter once, as zod does; decline accessors in JSON values, foreign prototypes and a polluted Object.prototype', () => {
    let reads = 0;
    const draft: Record<string, unknown> = { type: 'request_started', data: {} };
    Object.defineProperty(draft, 'requestId', {
      get: () => {
        reads++;
        return `request-${reads}`;
      },
      enumerable: true,
    });
    const fast = fastParseDraft(draft);
    expect(reads).toBe(1);
    expect(fast).toEqual({ type: 'request_started', data: {}, requestId: 'request-1' });
    // zod reads it once too (hence `request-2` on this second parse), into the same shape.
    expect(safeParseDurableEventDraft(draft)).toStrictEqual({ ok: true, value: { ...fast, requestId: 'request-2' } });
    expect(reads).toBe(2);
    let jsonReads = 0;
    const output = {};
    Object.defineProperty(output, 'lazy', {
      get: () => {
        jsonReads++;
        return 1;
      },
      enumerable: true,
    });
    expect(fastParseDraft({ type: 'request_completed', requestId: 'r', data: { output } })).toBeUndefined();
    expect(jsonReads).toBe(0);
    expect(fastParseDraft(Object.assign(new Thing(), { type: 'request_started', requestId: 'r', data: {} }))).toBeUndefined();
    const clean = { type: 'request_started', requestId: 'r', data: {} };
    expect(fastParseDraft(clean)).toBeDefined();
    // SAFETY: deliberately polluting the prototype, undone below.
    (Object.prototype as Record<string, unknown>)['polluted'] = 1;
    try {
      expect(safeParseDurableEventDraft(clean).ok).toBe(false);
      expect(fastParseDraft(clean)).toBeUndefined();
      expect(fastParseParsedDraft(JSON.parse(JSON.stringify(clean)))).toBeUndefined();
    } finally {
      delete (Object.prototype as Record<string, unknown>)['polluted'];
    }
  });

  it('never accept what zod refuses, nor return what zod would not, on generated mutations', () => {
    const tally = { accepted: 0, declined: 0, parsedAccepted: 0 };
    fc.assert(
      fc.property(fc.constantFrom(...TYPES), fc.array(mutation, { minLength: 0, maxLength: 3 }), (type, mutations) => {
        const base = copy(validDrafts[type]) as unknown;
        if (type === 'request_accepted') (base as { data: { input: unknown } }).data.input = 'text';
        const input = mutations.reduce<unknown>((value, m) => applyMutation(value, m), base);
        if (agreesWithZod(fastParseDraft(input), input)) tally.accepted++;
        else tally.declined++;
        let text: string | undefined;
        try {
          text = JSON.stringify(input);
        } catch {
          text = undefined; // bigint or a cycle: nothing to parse
        }
        if (text === undefined) return;
        const parsed: unknown = JSON.parse(text);
        const fromParsed = fastParseParsedDraft(parsed);
        if (agreesWithZod(fromParsed, parsed)) tally.parsedAccepted++;
        expect(fromParsed).toStrictEqual(fastParseDraft(parsed));
      }),
      { numRuns: 4000 },
    );
    // Both outcomes were exercised, so the agreement above is not vacuous.
    expect(tally.accepted).toBeGreaterThan(200);
    expect(tally.declined).toBeGreaterThan(200);
    expect(tally.parsedAccepted).toBeGreaterThan(200);
  });
});

describe('validateDraftBatch and parseDraftBatchJson (fast path in front)', () => {
  const valid = [validDrafts.session_created, validDrafts.request_started, validDrafts.request_accepted, validDrafts.tool_completed];

  it('return what validateDraftBatchStrict returns', () => {
    expect(validateDraftBatch(valid)).toStrictEqual(validateDraftBatchStrict(valid));
    expect(parseDraftBatchJson(JSON.stringify(valid))).toStrictEqual(validateDraftBatchStrict(copy(valid)));
  });

  it('throw the exact error of validateDraftBatchStrict', () => {
    const badDraft = { ...validDrafts.turn_started, data: { turn: 0 } };
    const batches: unknown[] = [
      'not an array',
      [],
      Array.from({ length: 1001 }, () => validDrafts.request_started),
      [validDrafts.request_started, badDraft],
      [validDrafts.request_started, { ...validDrafts.request_started, extra: 1 }],
      [validDrafts.request_started, null],
    ];
    for (const batch of batches) {
      const expected = errorOf(() => validateDraftBatchStrict(batch));
      expect(expected).not.toBe('no error');
      expect(errorOf(() => validateDraftBatch(batch))).toEqual(expected);
      if (Array.isArray(batch)) expect(errorOf(() => parseDraftBatchJson(JSON.stringify(batch)))).toEqual(expected);
    }
  });

  it('refuse text that is not JSON, and anything but text, as invalid input', () => {
    expect(errorOf(() => parseDraftBatchJson('[{"type":'))).toMatchObject({ code: 'DURABLE_EVENT_INVALID_INPUT' });
    expect(errorOf(() => parseDraftBatchJson(valid))).toMatchObject({ code: 'DURABLE_EVENT_INVALID_INPUT' });
    const negativeZero = '[{"type":"request_completed","requestId":"r","data":{"output":-0}}]';
    expect(errorOf(() => parseDraftBatchJson(negativeZero))).toEqual(errorOf(() => validateDraftBatchStrict(JSON.parse(negativeZero))));
  });
});

// ---- generated mutations of valid drafts ----------------------------------------------------

const KEYS = [
  ...new Set([
    ...TYPES.flatMap((type) => Object.keys(validDrafts[type])),
    ...TYPES.flatMap((type) => Object.keys(validDrafts[type].data)),
    'commandId',
    'causationEventId',
    'occurredAt',
    'usage',
    'retryable',
    'details',
    'api',
    'cacheWriteTokens',
    'extra',
    '__proto__',
    'constructor',
    '0',
  ]),
];

const WEIRD: Array<() => unknown> = [
  () => undefined,
  () => null,
  () => '',
  () => 'x',
  () => 'a'.repeat(1025),
  () => 'a\u0000b',
  () => 0,
  () => -0,
  () => 1,
  () => 3,
  () => 1.5,
  () => -1,
  () => NaN,
  () => Infinity,
  () => 10_000,
  () => 10_001,
  () => 2 ** 53,
  () => true,
  () => false,
  () => [],
  () => ({}),
  () => [1],
  () => ({ a: 1 }),
  () => 'completed',
  () => 'next',
  () => 'allow',
  () => 'pure',
  () => 'cancel',
  () => 'end_turn',
  () => 'create',
  () => 'request_started',
  () => '2024-02-29T23:59:59.123Z',
  () => '2023-02-29T00:00:00.000Z',
  () => new Date(0),
  () => Object.assign(Object.create(null), { a: 1 }),
  () => new Thing(),
  () => withAccessor(),
  () => sparse([1, 2], 0),
  () => ({ provider: 'p', model: 'm' }),
  () => ({ provider: 'p', api: 'a' }),
  () => ({ code: 'x', message: 'y' }),
  () => ({ inputTokens: 1, outputTokens: 2, totalTokens: 3 }),
  () => ({ promptTokens: 1, completionTokens: 1, totalTokens: 2 }),
  () => [{ id: 'c', name: 'n', arguments: {} }],
  () => ({ requestId: 'r', turnId: 't', turn: 1 }),
  () => ({ content: 'x' }),
  () => [{ type: 'text', text: 'x' }],
];

type Mutation = { op: 'set' | 'delete' | 'add' | 'accessor'; pick: number; value: number; key: number };

const mutation: fc.Arbitrary<Mutation> = fc.record({
  op: fc.constantFrom('set', 'delete', 'add', 'accessor'),
  pick: fc.nat(),
  value: fc.nat(),
  key: fc.nat(),
});

/** Every object and array of a JSON-like tree (own enumerable values only), root first. */
function containers(root: unknown): Array<Record<string, unknown>> {
  const out: Array<Record<string, unknown>> = [];
  const visit = (value: unknown, depth: number): void => {
    if (typeof value !== 'object' || value === null || depth > 6) return;
    out.push(value as Record<string, unknown>);
    for (const key of Object.keys(value)) {
      const descriptor = Object.getOwnPropertyDescriptor(value, key);
      if (descriptor !== undefined && 'value' in descriptor) visit(descriptor.value, depth + 1);
    }
  };
  visit(root, 0);
  return out;
}

function applyMutation(root: unknown, m: Mutation): unknown {
  const targets = containers(root);
  const target = targets[m.pick % Math.max(1, targets.length)];
  if (target === undefined) return WEIRD[m.value % WEIRD.length]?.();
  const keys = Object.keys(target);
  const existing = keys[m.key % Math.max(1, keys.length)];
  const value = WEIRD[m.value % WEIRD.length]?.();
  if (m.op === 'add' || existing === undefined) {
    const key = KEYS[m.key % KEYS.length] ?? 'extra';
    Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  } else if (m.op === 'set') {
    Object.defineProperty(target, existing, { value, enumerable: true, writable: true, configurable: true });
  } else if (m.op === 'delete') {
    delete target[existing];
  } else {
    const current = target[existing];
    Object.defineProperty(target, existing, { get: () => current, enumerable: true, configurable: true });
  }
  return root;
}
