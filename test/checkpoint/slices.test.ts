/**
 * Checkpoint records read in slices (`sliceCheckpointRecord`, `readCheckpointSlices`), as the
 * Durable Object RPC and the HTTP route carry them: a record larger than one message is joined
 * byte for byte, a record replaced between two slices restarts the read, and a store that keeps
 * replacing it, or answers malformed slices, fails the read with a typed error.
 */
import { describe, expect, it } from 'vitest';
import {
  readCheckpointSlices,
  sliceCheckpointRecord,
  type DurableCheckpointRecord,
  type DurableCheckpointSlice,
} from '../../src/core/checkpoint/contract.js';
import { EventId, EventSequence } from '../../src/protocol/ids.js';

function recordOf(bytes: number, sequence = 7, seed = 1): DurableCheckpointRecord {
  const data = new Uint8Array(bytes);
  for (let index = 0; index < bytes; index++) data[index] = (index * 31 + seed) & 255;
  return { sequence: EventSequence(sequence), eventId: EventId(`event-${sequence}`), data };
}

/** A store side that answers slices of whatever `current()` holds, `size` bytes at a time. */
function slicer(current: () => DurableCheckpointRecord | null, size: number, calls: number[] = []) {
  return async (offset: number): Promise<DurableCheckpointSlice | null> => {
    calls.push(offset);
    const record = current();
    return record === null ? null : sliceCheckpointRecord(record, offset, size);
  };
}

describe('checkpoint slices', () => {
  it('joins a record read in slices, byte for byte, and reads a small one in one call', async () => {
    const record = recordOf(10_000);
    const calls: number[] = [];
    const read = await readCheckpointSlices(slicer(() => record, 3_000, calls));
    expect(calls).toEqual([0, 3_000, 6_000, 9_000]);
    expect(read?.sequence).toBe(7);
    expect(read?.eventId).toBe('event-7');
    expect(read?.data).toEqual(record.data);
    const one: number[] = [];
    expect((await readCheckpointSlices(slicer(() => record, 10_000, one)))?.data).toEqual(record.data);
    expect(one).toEqual([0]);
    expect(await readCheckpointSlices(slicer(() => null, 10))).toBeNull();
  });

  it('copies the slice, answers an offset past the end with an empty one, and refuses bad input', () => {
    const record = recordOf(100);
    const slice = sliceCheckpointRecord(record, 90, 50);
    expect(slice).toMatchObject({ totalBytes: 100, offset: 90 });
    expect(slice.data.length).toBe(10);
    expect(slice.data.buffer).not.toBe(record.data.buffer);
    expect(sliceCheckpointRecord(record, 100, 5).data.length).toBe(0);
    expect(sliceCheckpointRecord(record, 500, 5)).toMatchObject({ totalBytes: 100, offset: 500, data: new Uint8Array(0) });
    for (const [offset, length] of [[-1, 5], [1.5, 5], [0, 0]] as const) {
      expect(() => sliceCheckpointRecord(record, offset, length)).toThrow(expect.objectContaining({ code: 'DURABLE_EVENT_INVALID_INPUT' }));
    }
  });

  it('restarts when the record is replaced between two slices, and gives up after three tries', async () => {
    const older = recordOf(9_000, 7, 1);
    const newer = recordOf(12_000, 9, 2);
    let reads = 0;
    // The record changes right after the first slice of the first attempt.
    const once = await readCheckpointSlices(slicer(() => (reads++ === 0 ? older : newer), 4_000));
    expect(once?.sequence).toBe(9);
    expect(once?.data).toEqual(newer.data);
    // Compacted to a shorter record between two slices: the offset is past its end.
    const shorter = recordOf(5_000, 8, 3);
    let calls = 0;
    const shrunk = await readCheckpointSlices(slicer(() => (calls++ < 2 ? newer : shorter), 4_000));
    expect(shrunk?.sequence).toBe(8);
    expect(shrunk?.data).toEqual(shorter.data);
    // A writer that replaces it before every second slice.
    let flip = 0;
    const restless = slicer(() => (flip++ % 2 === 0 ? older : newer), 4_000);
    await expect(readCheckpointSlices(restless)).rejects.toMatchObject({ code: 'DURABLE_EVENT_UNAVAILABLE', message: expect.stringMatching(/replaced while it was read, 3 times/) });
  });

  it('fails with a typed error on malformed slices', async () => {
    const record = recordOf(1_000);
    const wrongOffset = async (offset: number) => ({ ...sliceCheckpointRecord(record, offset, 400), offset: offset + 1 });
    await expect(readCheckpointSlices(async (offset) => (offset === 0 ? sliceCheckpointRecord(record, 0, 400) : wrongOffset(offset)))).rejects.toMatchObject({
      code: 'DURABLE_EVENT_UNAVAILABLE',
    });
    const empty = async (offset: number) => ({ ...sliceCheckpointRecord(record, offset, 400), data: new Uint8Array(0) });
    await expect(readCheckpointSlices(empty)).rejects.toMatchObject({ code: 'DURABLE_EVENT_UNAVAILABLE' });
  });
});
