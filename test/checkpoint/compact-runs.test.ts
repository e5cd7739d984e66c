/**
 * Compact key runs (format 5): a run of at least COMPACT_MIN_RUN hashes is stored as a 16-bit
 * bucket directory plus the low 32 bits of each hash. Merges that cross the threshold, lookups,
 * the sortedness check and the codec must agree with exact membership of the 48-bit hashes.
 */
import { describe, expect, it } from 'vitest';
import { MemoryDurableEventStore } from '../../src/adapters/memory/memory-store.js';
import { lifecycleDrafts as d } from '../../src/conformance/checks-journal.js';
import { decodeCheckpoint, encodeCompacted, encodeExtension, type DecodedCheckpoint } from '../../src/core/checkpoint/codec.js';
import { hashFrameBytes, hashKey, INITIAL_HASH_STATE } from '../../src/core/hash.js';
import {
  COMPACT_BUCKETS,
  COMPACT_MIN_RUN,
  CompactRun,
  HashedKeyFilter,
  isSortedRun,
  mergeRunsInto,
  runBytes,
  sortedHashes,
  type KeyRun,
} from '../../src/core/projector/key-filter.js';
import { DurableSessionJournal } from '../../src/core/journal/index.js';
import { CommandId, SessionId } from '../../src/protocol/ids.js';

const keysOf = (prefix: string, count: number): string[] => Array.from({ length: count }, (_, index) => `${prefix}:${index}`);
const runOf = (keys: string[]): Float64Array => sortedHashes(keys).slice();

/** Every hash of `run`, ascending, read the slow way. */
function valuesOf(run: KeyRun): number[] {
  if (!(run instanceof CompactRun)) return Array.from(run);
  const values: number[] = [];
  for (let bucket = 0; bucket < COMPACT_BUCKETS; bucket++) {
    for (let index = run.starts[bucket] as number; index < (run.starts[bucket + 1] as number); index++) {
      values.push(bucket * 2 ** 32 + (run.low[index] as number));
    }
  }
  return values;
}

/**
 * `actual` holds exactly `expected`, in order. Compares element by element and reports the first
 * difference: a deep `toEqual` of arrays of 300,000 hashes took about half a CPU-second apiece.
 */
function expectSameHashes(actual: readonly number[], expected: ArrayLike<number>): void {
  expect(actual.length).toBe(expected.length);
  const first = actual.findIndex((value, index) => value !== expected[index]);
  expect(first === -1 ? null : { index: first, actual: actual[first], expected: expected[first] }).toBeNull();
}

function expectExactOn(filter: HashedKeyFilter, members: readonly string[], others: readonly string[]): void {
  const hashes = new Set(members.map(hashKey));
  for (const key of members) if (!filter.mightContain(key)) throw new Error(`lost ${key}`);
  let hits = 0;
  for (const key of others) {
    const expected = hashes.has(hashKey(key));
    if (filter.mightContain(key) !== expected) throw new Error(`${key}: expected ${String(expected)}`);
    if (expected) hits += 1;
  }
  expect(hits).toBeLessThan(2);
}

async function smallCheckpoint(): Promise<Omit<DecodedCheckpoint, 'keys' | 'extent'>> {
  const sessionId = SessionId('compact-session');
  const store = new MemoryDurableEventStore();
  const journal = await DurableSessionJournal.open(store, sessionId, { checkpoints: { everyEvents: 1_000_000 } });
  await journal.commit({ commandId: CommandId('create'), events: [d.sessionCreated()] });
  expect(await journal.writeCheckpoint()).toBe(true);
  const record = await store.readCheckpoint(sessionId);
  const decoded = record === null ? 'none' : decodeCheckpoint(record);
  if (typeof decoded === 'string') throw new Error(decoded);
  const { keys: _keys, extent: _extent, ...rest } = decoded;
  return rest;
}

describe('compact key runs', () => {
  const first = keysOf('a', 200_000);
  const second = keysOf('b', 100_000);
  const third = keysOf('c', 270_000);
  const others = keysOf('z', 50_000);

  it('a merge that reaches COMPACT_MIN_RUN hashes yields a compact run with exactly the merged hashes', () => {
    const filter = HashedKeyFilter.fromRuns([runOf(first)]);
    if (filter === null) throw new Error('unsorted');
    const merged = filter.withKeys(second);
    expect(merged.runs).toHaveLength(1);
    const run = merged.runs[0] as KeyRun;
    expect(run).toBeInstanceOf(CompactRun);
    expect(run.length).toBe(first.length + second.length);
    expect(isSortedRun(run)).toBe(true);
    expectSameHashes(valuesOf(run), runOf([...first, ...second]));
    expectExactOn(merged, [...first, ...second], others);
  });

  it('merges compact runs with each other and with Float64 runs, whichever is largest', () => {
    const big = HashedKeyFilter.EMPTY.withKeys([...first, ...second]).runs[0] as CompactRun;
    const other = HashedKeyFilter.EMPTY.withKeys(third).runs[0] as CompactRun;
    expect(other).toBeInstanceOf(CompactRun);
    const combined = HashedKeyFilter.fromRuns([big, other, runOf(keysOf('d', 5000))]);
    if (combined === null) throw new Error('unsorted');
    const all = combined.withKeys(keysOf('e', 3));
    expect(all.runs).toHaveLength(1);
    expectSameHashes(valuesOf(all.runs[0] as KeyRun), runOf([...first, ...second, ...third, ...keysOf('d', 5000), ...keysOf('e', 3)]));
    expectExactOn(all, [...first, ...second, ...third, ...keysOf('d', 5000), ...keysOf('e', 3)], others);
  });

  it('merging a compact run with a shorter run, bucket by bucket, equals the sorted union (clustered, edge and repeated hashes)', () => {
    const big = HashedKeyFilter.EMPTY.withKeys(third).runs[0] as CompactRun;
    const bigValues = valuesOf(big);
    const limit = 2 ** 48;
    const cases: number[][] = [
      [],
      [0, 1, limit - 1],
      bigValues.slice(0, 50), // hashes already in the big run
      Array.from({ length: 3000 }, (_, index) => 7 * 2 ** 32 + index * 1_000_003), // one bucket
      Array.from({ length: 3000 }, (_, index) => (COMPACT_BUCKETS - 1) * 2 ** 32 + index), // the last bucket
      Array.from({ length: 20_000 }, (_, index) => Math.floor(((index + 0.5) / 20_000) * limit)), // spread
    ];
    for (const values of cases) {
      const small = Float64Array.from(values).sort();
      for (const runs of [
        [big, small],
        [small, big],
      ]) {
        const out = CompactRun.allocate(big.length + small.length);
        mergeRunsInto(runs, out);
        expect(isSortedRun(out)).toBe(true);
        expectSameHashes(valuesOf(out), Float64Array.from([...bigValues, ...values]).sort());
      }
    }
  });

  it('the sortedness check rejects an inconsistent directory or an unsorted bucket', () => {
    const run = HashedKeyFilter.EMPTY.withKeys([...first, ...second]).runs[0] as CompactRun;
    const copy = (): CompactRun => new CompactRun(run.starts.slice(), run.low.slice());
    expect(isSortedRun(copy())).toBe(true);
    const shifted = copy();
    shifted.starts[0] = 1;
    expect(isSortedRun(shifted)).toBe(false);
    const short = copy();
    short.starts[COMPACT_BUCKETS] = run.length - 1;
    expect(isSortedRun(short)).toBe(false);
    const backwards = copy();
    backwards.starts[100] = (backwards.starts[99] as number) - 1;
    expect(isSortedRun(backwards)).toBe(false);
    const unsorted = copy();
    const at = unsorted.starts[7] as number;
    [unsorted.low[at], unsorted.low[at + 1]] = [unsorted.low[at + 1] as number, unsorted.low[at] as number];
    expect(unsorted.low[at]).not.toBe(unsorted.low[at + 1]);
    expect(isSortedRun(unsorted)).toBe(false);
    expect(isSortedRun(Float64Array.of(1, 2 ** 48))).toBe(false);
    expect(isSortedRun(Float64Array.of(-1, 2))).toBe(false);
  });

  it('a record with a compact run round-trips, extends, and takes 52-65% of the bytes of Float64 runs', async () => {
    const checkpoint = await smallCheckpoint();
    const keys = [...first, ...second];
    const encoded = encodeCompacted(checkpoint, [runOf(first), runOf(second)], (bytes) => new ArrayBuffer(bytes));
    const count = keys.length;
    expect(runBytes(count)).toBe(Math.ceil(((COMPACT_BUCKETS + 1 + count) * 4) / 8) * 8);
    expect(encoded.record.data.length).toBeLessThan(count * 8 * 0.65);
    expect(runBytes(1_600_000)).toBeLessThan(1_600_000 * 8 * 0.53);
    const decoded = decodeCheckpoint(encoded.record);
    if (typeof decoded === 'string') throw new Error(decoded);
    expect(decoded.keys.runs[0]).toBeInstanceOf(CompactRun);
    expectExactOn(decoded.keys, keys, others);

    // An extension frame over the compact run; then a damaged directory is reported, not trusted.
    const fresh = runOf(keysOf('f', 4000));
    const extended = encodeExtension(checkpoint, encoded.extent, encoded.record.data, fresh, (bytes) => {
      const room = new Uint8Array(bytes);
      room.set(encoded.record.data);
      return room;
    });
    if (extended === null) throw new Error('not extended');
    const again = decodeCheckpoint(extended.record);
    if (typeof again === 'string') throw new Error(again);
    expectExactOn(again.keys, [...keys, ...keysOf('f', 4000)], others);

    const data = encoded.record.data.slice();
    const runOffset = encoded.extent.runs[0]?.offset ?? 0;
    new DataView(data.buffer).setUint32(runOffset + 4 * 500, 0xffffffff, true);
    new DataView(data.buffer).setFloat64(data.length - 8, hashFrameBytes(data.subarray(0, data.length - 8), INITIAL_HASH_STATE), true);
    expect(decodeCheckpoint({ ...encoded.record, data })).toBe('corrupt: key filter not sorted');
  });

  it('an extension whose merges cascade past COMPACT_MIN_RUN writes a compact run that reads back exactly', async () => {
    const checkpoint = await smallCheckpoint();
    const grow = (base: Uint8Array) => (bytes: number) => {
      const room = new Uint8Array(bytes);
      room.set(base);
      return room;
    };
    const a = keysOf('p', 150_000);
    const b = keysOf('q', 80_000);
    const c = keysOf('r', 40_000);
    const e = keysOf('s', 100_000);
    let encoded = encodeCompacted(checkpoint, [runOf(a)], (bytes) => new ArrayBuffer(bytes));
    for (const fresh of [b, c, e]) {
      const next = encodeExtension(checkpoint, encoded.extent, encoded.record.data, runOf(fresh), grow(encoded.record.data), 10);
      if (next === null) throw new Error('not extended');
      encoded = next;
    }
    // 150k, then +80k merged (230k), then 40k kept apart, then 100k merges with both: 370k, compact.
    expect(encoded.extent.runs.map((run) => run.count)).toEqual([370_000]);
    const decoded = decodeCheckpoint(encoded.record);
    if (typeof decoded === 'string') throw new Error(decoded);
    expect(decoded.keys.runs[0]).toBeInstanceOf(CompactRun);
    expect(decoded.keys.size).toBe(370_000);
    expectExactOn(decoded.keys, [...a, ...b, ...c, ...e], others);
  });

  it(`runs below ${COMPACT_MIN_RUN} hashes stay Float64 runs`, () => {
    const run = HashedKeyFilter.EMPTY.withKeys(keysOf('g', COMPACT_MIN_RUN - 1)).runs[0];
    expect(run).toBeInstanceOf(Float64Array);
    expect(runBytes(COMPACT_MIN_RUN - 1)).toBe((COMPACT_MIN_RUN - 1) * 8);
  });
});
