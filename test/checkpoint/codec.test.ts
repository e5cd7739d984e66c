/**
 * The checkpoint byte format (format 5: frames with chained checksums, key hashes in sorted runs).
 * These tests fail if a changed byte could decode as the checkpoint it was, if a torn or damaged
 * last frame hid the intact frame before it, if extending records let the number of runs or the
 * dead bytes grow without bound, if an extension lost a used ID, or if a format-2 record were read
 * as corrupt instead of as an unknown format.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MemoryDurableEventStore } from '../../src/adapters/memory/memory-store.js';
import { lifecycleDrafts as d } from '../../src/conformance/checks-journal.js';
import {
  CHECKPOINT_FORMAT,
  checkpointPosition,
  decodeCheckpoint,
  encodeCheckpoint,
  encodeCompacted,
  type DecodedCheckpoint,
} from '../../src/core/checkpoint/codec.js';
import type { DurableCheckpointRecord } from '../../src/core/checkpoint/contract.js';
import { hashFrameBytes, hashKey, INITIAL_HASH_STATE } from '../../src/core/hash.js';
import { HashedKeyFilter, SORT_SCRATCH_KEEP, sortHashes, sortScratchSize, sortedHashes } from '../../src/core/projector/key-filter.js';
import { DurableSessionJournal } from '../../src/core/journal/index.js';
import { ID_SPACE } from '../../src/core/projector/fold-state.js';
import { CommandId, SessionId } from '../../src/protocol/ids.js';

const sessionId = SessionId('codec-session');

async function commitRequests(journal: DurableSessionJournal, from: number, count: number): Promise<void> {
  for (let index = from; index < from + count; index++) {
    const r = `request-${index}`;
    await journal.commit({
      commandId: CommandId(`cmd-${index}`),
      events: [d.requestAccepted(r), d.requestStarted(r), d.turnStarted(r, `turn-${index}`, 1), d.turnCompleted(r, `turn-${index}`, 1), d.requestCompleted(r, undefined, `output ${index}`)],
    });
  }
}

function decodeOrThrow(record: DurableCheckpointRecord): DecodedCheckpoint {
  const decoded = decodeCheckpoint(record);
  if (typeof decoded === 'string') throw new Error(decoded);
  return decoded;
}

/** A real checkpoint of a short session (a few dozen keys), decoded. */
async function sample(commands = 4): Promise<{ record: DurableCheckpointRecord; decoded: DecodedCheckpoint }> {
  const store = new MemoryDurableEventStore();
  const journal = await DurableSessionJournal.open(store, sessionId, { checkpoints: { everyEvents: 1_000_000 } });
  await journal.commit({ commandId: CommandId('create'), events: [d.sessionCreated()] });
  await commitRequests(journal, 0, commands);
  expect(await journal.writeCheckpoint()).toBe(true);
  const record = await store.readCheckpoint(sessionId);
  if (record === null) throw new Error('no checkpoint');
  return { record, decoded: decodeOrThrow(record) };
}

/**
 * A record of several frames: `checkpoints` checkpoints written through one journal on the memory
 * store keeping records (it keeps extensions), `perCheckpoint` requests apart. Returns every record written.
 */
async function extended(checkpoints: number, perCheckpoint = 3): Promise<{ records: DurableCheckpointRecord[]; store: MemoryDurableEventStore }> {
  const store = new MemoryDurableEventStore({ liveCheckpoints: false });
  const journal = await DurableSessionJournal.open(store, sessionId, { checkpoints: { everyEvents: 1_000_000 } });
  await journal.commit({ commandId: CommandId('create'), events: [d.sessionCreated()] });
  const records: DurableCheckpointRecord[] = [];
  for (let index = 0; index < checkpoints; index++) {
    await commitRequests(journal, index * perCheckpoint, perCheckpoint);
    expect(await journal.writeCheckpoint()).toBe(true);
    const record = await store.readCheckpoint(sessionId);
    if (record === null) throw new Error('no checkpoint');
    records.push(record);
  }
  return { records, store };
}

describe('checkpoint codec (format 5)', () => {
  it('round-trips, and the decoded filter holds exactly the hashKey of every used ID', async () => {
    const { record, decoded } = await sample();
    expect(decoded.keys.size).toBeGreaterThan(10);
    expect(decoded.keys.runs).toHaveLength(1);
    expect(decoded.keys.mightContain(`${ID_SPACE.command}cmd-0`)).toBe(true);
    expect(decoded.keys.mightContain(`${ID_SPACE.command}cmd-99`)).toBe(false);
    expect(encodeCheckpoint(decoded).data).toEqual(record.data);
    expect(new TextDecoder().decode(record.data.subarray(16, 200))).toContain(`"format":${CHECKPOINT_FORMAT}`);
    expect(decoded.extent).toMatchObject({ length: record.data.length, liveBytes: record.data.length });
  });

  it('rejects a change of any single byte of a one-frame record, of any value', async () => {
    const { record } = await sample();
    const data = record.data;
    for (let index = 0; index < data.length; index++) {
      for (const flip of [0x01, 0x80, 0xff, 0x5a]) {
        const copy = data.slice();
        copy[index] = ((copy[index] as number) ^ flip) & 0xff;
        if (typeof decodeCheckpoint({ ...record, data: copy }) !== 'string') throw new Error(`byte ${index} ^ ${flip} of ${data.length} decoded`);
        if (checkpointPosition(copy) !== null) throw new Error(`byte ${index} ^ ${flip}: a damaged only frame has a position`);
      }
    }
  });

  it('rejects two key entries swapped, an entry duplicated, and a truncated record', async () => {
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

  it('extends records frame by frame: each record starts with the previous one, and decodes to the newest state', async () => {
    const { records } = await extended(6);
    for (let index = 1; index < records.length; index++) {
      const previous = records[index - 1] as DurableCheckpointRecord;
      const record = records[index] as DurableCheckpointRecord;
      const decoded = decodeOrThrow(record);
      expect(decoded.sequence).toBe(record.sequence);
      if (record.data.length > previous.data.length && record.data.subarray(0, previous.data.length).every((byte, at) => byte === previous.data[at])) {
        expect(decoded.keys.runs.length).toBeGreaterThanOrEqual(1);
      }
      for (let request = 0; request < (index + 1) * 3; request++) expect(decoded.keys.mightContain(`${ID_SPACE.command}cmd-${request}`)).toBe(true);
      expect(decoded.keys.mightContain(`${ID_SPACE.command}cmd-${(index + 1) * 3}`)).toBe(false);
    }
    // At least one record really is an extension of the one before it.
    const extensions = records.filter((record, index) => index > 0 && decodeOrThrow(record).extent.runs.length > 1);
    expect(extensions.length).toBeGreaterThan(0);
  });

  it('a damaged or torn last frame leaves the frame before it readable, never the damaged one', async () => {
    const { records } = await extended(8);
    const last = [...records].reverse().find((record) => decodeOrThrow(record).extent.runs.length > 1);
    if (last === undefined) throw new Error('no extended record');
    const walk = decodeOrThrow(last);
    // The record before it: the last record's bytes start with it (the last frame was appended).
    const previousRecord = records[records.indexOf(last) - 1];
    if (previousRecord === undefined) throw new Error('no previous record');
    expect(last.data.subarray(0, previousRecord.data.length)).toEqual(previousRecord.data);
    const start = previousRecord.data.length;
    expect(walk.extent.length).toBe(last.data.length);
    const older = decodeOrThrow(previousRecord);
    for (let index = start; index < last.data.length; index += 3) {
      const copy = last.data.slice();
      copy[index] = ((copy[index] as number) ^ 0x41) & 0xff;
      expect(typeof decodeCheckpoint({ ...last, data: copy })).toBe('string');
      const position = checkpointPosition(copy);
      expect(position).toEqual({ sequence: previousRecord.sequence, eventId: previousRecord.eventId, length: start });
    }
    for (const cut of [1, 8, 40, last.data.length - start - 1]) {
      const torn = last.data.slice(0, last.data.length - cut);
      const position = checkpointPosition(torn);
      expect(position).toEqual({ sequence: previousRecord.sequence, eventId: previousRecord.eventId, length: start });
      const reread = decodeOrThrow({ sequence: previousRecord.sequence, eventId: previousRecord.eventId, data: torn });
      expect(reread.state).toEqual(older.state);
      expect(reread.keys.size).toBe(older.keys.size);
    }
  });

  it('keeps O(log n) runs and at most 1.5 times the live bytes (plus a frame) over many extensions', async () => {
    const { records } = await extended(40, 2);
    let maxRuns = 0;
    for (const record of records) {
      const decoded = decodeOrThrow(record);
      maxRuns = Math.max(maxRuns, decoded.keys.runs.length);
      const lastFrame = decoded.extent.liveBytes - decoded.keys.runs.slice(0, -1).reduce((sum, run) => sum + run.length * 8, 0);
      expect(record.data.length).toBeLessThanOrEqual(1.5 * decoded.extent.liveBytes + lastFrame);
      for (let request = 0; request < 2; request++) expect(decoded.keys.mightContain(`${ID_SPACE.command}cmd-${request}`)).toBe(true);
    }
    expect(maxRuns).toBeGreaterThan(1);
    expect(maxRuns).toBeLessThanOrEqual(8);
  });

  it('the memory store keeps an extension only on top of the record it extends, else writes it whole', async () => {
    const { records, store } = await extended(5);
    const extension = [...records].reverse().find((record) => decodeOrThrow(record).extent.runs.length > 1);
    if (extension === undefined) throw new Error('no extended record');
    const position = checkpointPosition(extension.data.subarray(0, extension.data.length - 1));
    if (position === null) throw new Error('no previous frame');
    const other = SessionId('codec-other');
    // The store holds an unrelated record: an extension claiming a prefix is written whole.
    await store.writeCheckpoint(other, (await sample(2)).record);
    await store.writeCheckpoint(other, { ...extension, extendsBytes: position.length });
    expect((await store.readCheckpoint(other))?.data).toEqual(extension.data);
    await expect(store.writeCheckpoint(other, { ...extension, extendsBytes: 12 })).rejects.toMatchObject({ code: 'DURABLE_EVENT_INVALID_INPUT' });
    await expect(store.writeCheckpoint(other, { ...extension, extendsBytes: extension.data.length })).rejects.toMatchObject({ code: 'DURABLE_EVENT_INVALID_INPUT' });
  });

  it('hashes a drained array (joined in chunks) exactly as hashKey hashes each key', () => {
    const keys = Array.from({ length: 1300 }, (_, index) => (index % 7 === 0 ? '' : `e:${'\u00e9\ud83d\ude00x'.repeat(index % 5)}${index}`));
    const expected = Float64Array.from(keys.map(hashKey)).sort();
    expect(Array.from(sortedHashes(keys))).toEqual(Array.from(expected));
    expect(Array.from((HashedKeyFilter.EMPTY.withKeys(new Set(keys)).runs[0] as Float64Array | undefined) ?? [])).toEqual(Array.from(new Float64Array(new Set(expected)).sort()));
    // All-ASCII chunks take the byte path: still exactly hashKey (odd and even lengths, empty keys).
    const ascii = Array.from({ length: 1500 }, (_, index) => (index % 11 === 0 ? '' : `c:${'x'.repeat(index % 3)}${index}`));
    expect(Array.from(sortedHashes(ascii))).toEqual(Array.from(Float64Array.from(ascii.map(hashKey)).sort()));
  });

  it('sorts large batches of new hashes (bucket sort) exactly as the native sort does', () => {
    fc.assert(
      fc.property(fc.array(fc.string({ maxLength: 12 }), { minLength: 1024, maxLength: 3000 }), fc.integer({ min: 0, max: 50 }), (keys, repeats) => {
        const batch = [...keys, ...keys.slice(0, repeats)]; // equal hashes too
        expect(Array.from(sortedHashes(batch))).toEqual(Array.from(Float64Array.from(batch.map(hashKey)).sort()));
      }),
      { numRuns: 20 },
    );
  });

  it('the bucket sort matches the native sort on clustered hashes, extremes and duplicates, and gives up on a pathological batch', () => {
    const limit = 2 ** 48;
    const hashes = fc.oneof(
      fc.integer({ min: 0, max: limit - 1 }),
      fc.constantFrom(0, 1, limit - 1, limit - 2, 2 ** 32, 2 ** 35 - 1, 2 ** 35),
      // Clustered: a few top-bit prefixes, as IDs chosen to collide in their top bits would give.
      fc.tuple(fc.integer({ min: 0, max: 3 }), fc.integer({ min: 0, max: 2 ** 20 })).map(([top, rest]) => top * 2 ** 40 + rest),
    );
    fc.assert(
      fc.property(fc.array(hashes, { minLength: 0, maxLength: 5000 }), (values) => {
        const input = Float64Array.from(values);
        expect(Array.from(sortHashes(input.slice()))).toEqual(Array.from(input.slice().sort()));
      }),
      { numRuns: 60 },
    );
    // Every hash in one bucket, descending: the insertion pass would be quadratic; the native sort finishes.
    const worst = Float64Array.from({ length: 20_000 }, (_, index) => 20_000 - index);
    expect(Array.from(sortHashes(worst.slice()))).toEqual(Array.from(worst.slice().sort()));
  });

  it('merged filters hold every key of every batch, as one run', () => {
    fc.assert(
      fc.property(fc.array(fc.array(fc.string({ maxLength: 30 }), { maxLength: 40 }), { minLength: 1, maxLength: 6 }), (batches) => {
        let filter = HashedKeyFilter.EMPTY;
        for (const batch of batches) {
          filter = filter.withKeys(batch);
          expect(filter.runs.length).toBeLessThanOrEqual(1);
        }
        for (const key of batches.flat()) expect(filter.mightContain(key)).toBe(true);
        expect(HashedKeyFilter.fromRuns(filter.runs)?.size).toBe(filter.size);
      }),
      { numRuns: 100 },
    );
  });

  it('keeps sort scratch for a period-sized batch but drops the scratch of a huge one', () => {
    const keysOf = (count: number, tag: string): string[] => Array.from({ length: count }, (_, index) => `${tag}:${index}`);
    const sortOf = (keys: string[]): number[] => Array.from(sortedHashes(keys));
    const small = keysOf(5000, 'small');
    expect(sortOf(small)).toEqual(Array.from(Float64Array.from(small.map(hashKey)).sort()));
    const kept = sortScratchSize();
    expect(kept).toBeGreaterThanOrEqual(5000);
    expect(kept).toBeLessThanOrEqual(SORT_SCRATCH_KEEP);
    const huge = keysOf(SORT_SCRATCH_KEEP + 1000, 'huge');
    expect(sortOf(huge)).toEqual(Array.from(Float64Array.from(huge.map(hashKey)).sort()));
    expect(sortScratchSize()).toBe(0);
    expect(sortOf(small)).toEqual(Array.from(Float64Array.from(small.map(hashKey)).sort()));
  });

  it('hashKey distinguishes lengths and code-unit pairs', () => {
    expect(hashKey('a')).not.toBe(hashKey('a\u0000'));
    expect(hashKey('ab')).not.toBe(hashKey('ba'));
    expect(hashKey('')).not.toBe(hashKey('\u0000'));
    for (const key of ['', 'a', 'e:0f6e', 'r:request-1']) expect(Number.isSafeInteger(hashKey(key)) && hashKey(key) >= 0).toBe(true);
  });

  for (const [format, magic] of [
    [2, 'ALCP'],
    [3, 'ALC3'],
    [4, 'ALC4'],
  ] as const) {
    it(`reports a format-${format} record ("${magic}") as an unknown format, not as corrupt`, async () => {
      const { record } = await sample();
      const data = record.data.slice();
      data.set(new TextEncoder().encode(magic), 0);
      new DataView(data.buffer).setFloat64(data.length - 8, hashFrameBytes(data.subarray(0, data.length - 8), INITIAL_HASH_STATE), true);
      expect(decodeCheckpoint({ ...record, data })).toBe('unknown format');
    });
  }

  it('key filter lookups through bucket directories agree with exact membership, for uniform and skewed runs', () => {
    const keys = Array.from({ length: 9000 }, (_, index) => `e:event-${index}`);
    const uniform = [sortedHashes(keys.slice(0, 6000)).slice(), sortedHashes(keys.slice(6000, 8990)).slice(), sortedHashes(keys.slice(8990)).slice()];
    const filter = HashedKeyFilter.fromRuns(uniform);
    expect(filter).not.toBeNull();
    for (const key of keys) expect(filter?.mightContain(key)).toBe(true);
    const members = new Set(uniform.flatMap((run) => [...run]));
    for (let index = 0; index < 20_000; index++) {
      const key = `e:other-${index}`;
      expect(filter?.mightContain(key)).toBe(members.has(hashKey(key)));
    }
    // Skewed runs: a cluster in the first bucket, the extremes of the range, one bucket's edge.
    const top = 2 ** 48 - 1;
    const skewed = Float64Array.from([...Array.from({ length: 2000 }, (_, index) => index * 2), 2 ** 40, 2 ** 47, 2 ** 47 + 2, top - 2, top]);
    const skewedFilter = HashedKeyFilter.fromRuns([skewed]);
    for (const value of skewed) expect(skewedFilter?.mightContainHash(value)).toBe(true);
    for (const value of [1, 3, 3999, 4001, 2 ** 40 - 1, 2 ** 40 + 1, 2 ** 47 + 1, top - 1, 2 ** 48, -1, 0.5]) {
      expect(skewedFilter?.mightContainHash(value)).toBe(false);
    }
  });

  it('frame checksum: the same at any alignment, and changed by a flipped bit in any lane or in the tail', () => {
    const bytes = new Uint8Array(8 * 64 + 8 + 3);
    for (let index = 0; index < bytes.length; index++) bytes[index] = (index * 167 + 13) & 0xff;
    const base = hashFrameBytes(bytes, INITIAL_HASH_STATE);
    expect(Number.isSafeInteger(base) && base >= 0).toBe(true);
    for (const shift of [1, 2, 3, 5]) {
      const shifted = new Uint8Array(bytes.length + shift);
      shifted.set(bytes, shift);
      expect(hashFrameBytes(shifted.subarray(shift), INITIAL_HASH_STATE)).toBe(base);
    }
    const seen = new Set([base]);
    // Words 0..3 feed the four lanes, 516 is a tail word, 520..522 tail bytes.
    for (const at of [0, 4, 8, 12, 100, 516, 520, 522]) {
      const flipped = bytes.slice();
      flipped[at] = (flipped[at] as number) ^ 0x10;
      seen.add(hashFrameBytes(flipped, INITIAL_HASH_STATE));
    }
    expect(seen.size).toBe(9);
    expect(hashFrameBytes(bytes, { h1: INITIAL_HASH_STATE.h1 ^ 1, h2: INITIAL_HASH_STATE.h2 })).not.toBe(base);
    expect(hashFrameBytes(bytes.subarray(0, 520), INITIAL_HASH_STATE)).not.toBe(hashFrameBytes(bytes.subarray(0, 516), INITIAL_HASH_STATE));
  });

  it('encodes into a reused buffer holding other bytes exactly as into a fresh one', async () => {
    const { decoded } = await sample(6);
    const { keys, extent: _extent, ...rest } = decoded;
    const runs = [...keys.runs, sortedHashes(['k1', 'k2', 'k3']).slice()];
    const fresh = encodeCompacted(rest, runs, (bytes) => new ArrayBuffer(bytes)).record.data;
    const dirty = new ArrayBuffer(fresh.length + 64);
    new Uint8Array(dirty).fill(0xa7);
    const reused = encodeCompacted(rest, runs, () => dirty).record.data;
    expect(reused).toEqual(fresh);
    expect(keys.size).toBeGreaterThan(0);
  });
});
