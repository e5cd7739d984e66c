/**
 * The checkpoint byte format (format 2): the checksum covers the bytes before the key filter and
 * the filter's incrementally kept word sum. These tests fail if a changed byte anywhere in a record
 * could decode, if the sum kept across merges drifted from the filter's bytes, or if a format-1
 * record were read as corrupt instead of as an unknown format.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MemoryDurableEventStore } from '../../src/adapters/memory/memory-store.js';
import { lifecycleDrafts as d } from '../../src/conformance/checks-journal.js';
import { CHECKPOINT_FORMAT, decodeCheckpoint, encodeCheckpoint, encodeCheckpointAdding, type DecodedCheckpoint } from '../../src/core/checkpoint/codec.js';
import type { DurableCheckpointRecord } from '../../src/core/checkpoint/contract.js';
import { addWords, EMPTY_WORD_SUM, hashBytes, hashKey } from '../../src/core/checkpoint/hash.js';
import { HashedKeyFilter, RADIX_SCRATCH_KEEP, radixScratchSize } from '../../src/core/checkpoint/key-filter.js';
import { DurableSessionJournal } from '../../src/core/journal/index.js';
import { ID_SPACE } from '../../src/core/projector/fold-state.js';
import { CommandId, SessionId } from '../../src/protocol/ids.js';

const sessionId = SessionId('codec-session');

/** A real checkpoint of a short session (a few dozen keys), decoded. */
async function sample(commands = 4): Promise<{ record: DurableCheckpointRecord; decoded: DecodedCheckpoint }> {
  const store = new MemoryDurableEventStore();
  const journal = await DurableSessionJournal.open(store, sessionId, { checkpoints: { everyEvents: 1_000_000 } });
  await journal.commit({ commandId: CommandId('create'), events: [d.sessionCreated()] });
  for (let index = 0; index < commands; index++) {
    const r = `request-${index}`;
    await journal.commit({ commandId: CommandId(`cmd-${index}`), events: [
        d.requestAccepted(r),
        d.requestStarted(r),
        d.turnStarted(r, `turn-${index}`, 1),
        d.turnCompleted(r, `turn-${index}`, 1),
        d.requestCompleted(r, undefined, `output ${index}`),
      ],
    });
  }
  expect(await journal.writeCheckpoint()).toBe(true);
  const record = await store.readCheckpoint(sessionId);
  if (record === null) throw new Error('no checkpoint');
  const decoded = decodeCheckpoint(record);
  if (typeof decoded === 'string') throw new Error(decoded);
  return { record, decoded };
}

const sumOfBytes = (filter: HashedKeyFilter) =>
  addWords(EMPTY_WORD_SUM, new Uint32Array(filter.hashes.buffer, filter.hashes.byteOffset, filter.hashes.length * 2));

describe('checkpoint codec (format 2)', () => {
  it('round-trips, and the decoded filter holds exactly the hashKey of every used ID', async () => {
    const { record, decoded } = await sample();
    expect(decoded.keys.size).toBeGreaterThan(10);
    expect(decoded.keys.mightContain(`${ID_SPACE.command}cmd-0`)).toBe(true);
    expect(decoded.keys.mightContain(`${ID_SPACE.command}cmd-99`)).toBe(false);
    const again = encodeCheckpoint(decoded);
    expect(again.data).toEqual(record.data);
    expect(new TextDecoder().decode(record.data.subarray(8, 200))).toContain(`"format":${CHECKPOINT_FORMAT}`);
  });

  it('rejects a change of any single byte, of any value', async () => {
    const { record } = await sample();
    const data = record.data;
    for (let index = 0; index < data.length; index++) {
      for (const flip of [0x01, 0x80, 0xff, 0x5a]) {
        const copy = data.slice();
        copy[index] = ((copy[index] as number) ^ flip) & 0xff;
        const result = decodeCheckpoint({ ...record, data: copy });
        if (typeof result !== 'string') throw new Error(`byte ${index} ^ ${flip} of ${data.length} decoded`);
      }
    }
  });

  it('rejects two key-filter entries swapped, an entry replaced by another, and a truncated record', async () => {
    const { record, decoded } = await sample();
    const keysOffset = record.data.length - 8 - decoded.keys.size * 8;
    const swapped = record.data.slice();
    swapped.copyWithin(keysOffset, keysOffset + 8, keysOffset + 16);
    swapped.set(record.data.subarray(keysOffset, keysOffset + 8), keysOffset + 8);
    expect(decodeCheckpoint({ ...record, data: swapped })).toMatch(/^corrupt/);
    const duplicated = record.data.slice();
    duplicated.copyWithin(keysOffset + 8, keysOffset, keysOffset + 8);
    expect(decodeCheckpoint({ ...record, data: duplicated })).toMatch(/^corrupt/);
    for (const cut of [1, 8, 9, 16]) {
      expect(decodeCheckpoint({ ...record, data: record.data.subarray(0, record.data.length - cut) })).toMatch(/^corrupt/);
    }
  });

  it('the word sum kept across incremental merges equals the sum of the merged bytes', () => {
    fc.assert(
      fc.property(fc.array(fc.array(fc.string({ maxLength: 30 }), { maxLength: 40 }), { minLength: 1, maxLength: 6 }), (batches) => {
        let filter = HashedKeyFilter.EMPTY;
        for (const batch of batches) {
          filter = filter.withKeysInto(batch, (count) => new Float64Array(count));
          expect(filter.sum).toEqual(sumOfBytes(filter));
          const restored = HashedKeyFilter.fromSorted(filter.hashes.slice());
          expect(restored?.sum).toEqual(filter.sum);
        }
        for (const key of batches.flat()) expect(filter.mightContain(key)).toBe(true);
      }),
      { numRuns: 100 },
    );
  });

  it('hashes a drained array (joined in chunks) exactly as hashKey hashes each key', () => {
    const keys = Array.from({ length: 1300 }, (_, index) => (index % 7 === 0 ? '' : `e:${'\u00e9\ud83d\ude00x'.repeat(index % 5)}${index}`));
    const fromArray = HashedKeyFilter.EMPTY.withKeysInto(keys, (count) => new Float64Array(count));
    const expected = Float64Array.from(keys.map(hashKey)).sort();
    expect(Array.from(fromArray.hashes)).toEqual(Array.from(expected));
    expect(Array.from(HashedKeyFilter.EMPTY.withKeys(new Set(keys)).hashes)).toEqual(Array.from(new Float64Array(new Set(expected)).sort()));
  });

  it('sorts large batches of new hashes (radix sort) exactly as the native sort does', () => {
    fc.assert(
      fc.property(fc.array(fc.string({ maxLength: 12 }), { minLength: 1024, maxLength: 3000 }), fc.integer({ min: 0, max: 50 }), (keys, repeats) => {
        const batch = [...keys, ...keys.slice(0, repeats)]; // equal hashes too
        const expected = Float64Array.from(batch.map(hashKey)).sort();
        expect(Array.from(HashedKeyFilter.EMPTY.withKeysInto(batch, (count) => new Float64Array(count)).hashes)).toEqual(Array.from(expected));
      }),
      { numRuns: 20 },
    );
  });

  it('keeps radix scratch for a period-sized batch but drops the scratch of a huge one', () => {
    const keysOf = (count: number, tag: string): string[] => Array.from({ length: count }, (_, index) => `${tag}:${index}`);
    const sortOf = (keys: string[]): number[] => Array.from(HashedKeyFilter.EMPTY.withKeysInto(keys, (count) => new Float64Array(count)).hashes);
    const small = keysOf(5000, 'small');
    expect(sortOf(small)).toEqual(Array.from(Float64Array.from(small.map(hashKey)).sort()));
    const kept = radixScratchSize();
    expect(kept).toBeGreaterThanOrEqual(5000);
    expect(kept).toBeLessThanOrEqual(RADIX_SCRATCH_KEEP);
    const huge = keysOf(RADIX_SCRATCH_KEEP + 1000, 'huge');
    expect(sortOf(huge)).toEqual(Array.from(Float64Array.from(huge.map(hashKey)).sort()));
    expect(radixScratchSize()).toBe(0);
    expect(sortOf(small)).toEqual(Array.from(Float64Array.from(small.map(hashKey)).sort()));
  });

  it('a single changed filter entry always changes the word sum', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 0xffffffff }), { minLength: 2, maxLength: 2 }), fc.integer({ min: 0, max: 63 }), ([lo, hi], bit) => {
        const words = new Uint32Array([lo as number, hi as number]);
        const changed = words.slice();
        changed[bit >>> 5] = ((changed[bit >>> 5] as number) ^ (1 << (bit & 31))) >>> 0;
        expect(addWords(EMPTY_WORD_SUM, changed)).not.toEqual(addWords(EMPTY_WORD_SUM, words));
      }),
      { numRuns: 2000 },
    );
  });

  it('hashKey distinguishes lengths and code-unit pairs', () => {
    expect(hashKey('a')).not.toBe(hashKey('a\u0000'));
    expect(hashKey('ab')).not.toBe(hashKey('ba'));
    expect(hashKey('')).not.toBe(hashKey('\u0000'));
    for (const key of ['', 'a', 'e:0f6e', 'r:request-1']) expect(Number.isSafeInteger(hashKey(key)) && hashKey(key) >= 0).toBe(true);
  });

  it('reports an intact format-1 record (checksum over every byte) as an unknown format, not as corrupt', async () => {
    const { record } = await sample();
    const data = record.data.slice();
    const header = new TextDecoder().decode(data.subarray(8, 8 + new DataView(data.buffer).getUint32(4, true)));
    const old = header.replace(`"format":${CHECKPOINT_FORMAT}`, '"format":1');
    expect(old.length).toBe(header.length);
    data.set(new TextEncoder().encode(old), 8);
    new DataView(data.buffer).setFloat64(data.length - 8, hashBytes(data.subarray(0, data.length - 8)), true);
    expect(decodeCheckpoint({ ...record, data })).toBe('unknown format');
  });

  it('encodes into a reused buffer holding other bytes exactly as into a fresh one', async () => {
    const { decoded } = await sample(6);
    const { keys, ...rest } = decoded;
    const base = HashedKeyFilter.EMPTY.withKeys(['x', 'y']);
    const fresh = encodeCheckpointAdding(rest, base, ['k1', 'k2', 'k3']).record.data;
    const dirty = new ArrayBuffer(fresh.length + 64);
    new Uint8Array(dirty).fill(0xa7);
    const reused = encodeCheckpointAdding(rest, base, ['k1', 'k2', 'k3'], () => dirty).record.data;
    expect(reused).toEqual(fresh);
    expect(keys.size).toBeGreaterThan(0);
  });
});
