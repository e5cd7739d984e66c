/**
 * JsonCompactor: whatever spelling a JSON encoder chose (indentation, every non-ASCII character
 * escaped as Python's json.dumps does, `<>&` escaped as Go does, escaped slashes), the compact text
 * parses to the same value and is never longer than JSON.stringify's; invalid JSON stays invalid.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { JsonCompactor } from '../../src/protocol/json-compactor.js';

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: true });

/** Compacts `text`, fed in chunks of `chunkSize` bytes. */
function compact(text: string, chunkSize = 7, limit = 1 << 30): { ok: boolean; text: string } {
  const compactor = new JsonCompactor(limit);
  const bytes = encoder.encode(text);
  let ok = true;
  for (let i = 0; i < bytes.length && ok; i += chunkSize) ok = compactor.push(bytes.subarray(i, i + chunkSize));
  return { ok, text: decoder.decode(compactor.finish()) };
}

/** Python's `json.dumps(value)` default: every non-ASCII UTF-16 unit escaped. */
function pythonStyle(value: unknown, indent?: number): string {
  return JSON.stringify(value, null, indent).replace(/[\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** Go's `encoding/json` default: `<`, `>`, `&` (and U+2028/9) escaped. */
function goStyle(value: unknown): string {
  return JSON.stringify(value).replace(/[<>&\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

const jsonValue = fc.jsonValue({ maxDepth: 4 });

describe('JsonCompactor', () => {
  it('keeps the value of every spelling and is never longer than JSON.stringify', () => {
    fc.assert(
      fc.property(jsonValue, fc.integer({ min: 1, max: 13 }), (value, chunk) => {
        const plain = JSON.stringify(value);
        for (const spelling of [plain, JSON.stringify(value, null, 2), pythonStyle(value), pythonStyle(value, 4), goStyle(value), plain.replace(/\//g, '\\/')]) {
          const { ok, text } = compact(spelling, chunk);
          expect(ok).toBe(true);
          expect(JSON.parse(text)).toEqual(JSON.parse(plain));
          expect(encoder.encode(text).length).toBeLessThanOrEqual(encoder.encode(plain).length);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('turns escaped non-ASCII and surrogate pairs into UTF-8, keeping lone surrogates and required escapes', () => {
    expect(compact('"\\u00e9\\ud83d\\ude00\\u0041\\/"').text).toBe('"é😀A/"');
    expect(compact('"\\ud800x\\udc00\\u0022\\u005c\\u0001\\n"').text).toBe('"\\ud800x\\udc00\\u0022\\u005c\\u0001\\n"');
    expect(compact('"\\ud800\\ud83d\\ude00"').text).toBe('"\\ud800😀"');
  });

  it('never makes invalid JSON valid', () => {
    for (const bad of ['[1 2]', '[tr ue]', '{"a":1 .5}', '"\\u12G4"', '"\\x"', '[1,]', '- 1', '"abc', 'nul l']) {
      expect(() => JSON.parse(compact(bad).text), bad).toThrow();
    }
  });

  it('reports a compact text over the limit', () => {
    expect(compact(`"${'\\u00e9'.repeat(10)}"`, 5, 21).ok).toBe(false);
    expect(compact(`"${'\\u00e9'.repeat(10)}"`, 5, 22).ok).toBe(true);
    expect(compact(`[${' '.repeat(10_000)}1]`, 100, 3).ok).toBe(true);
  });
});
