/**
 * The object's gathering of a whole checkpoint record written in slices (`checkpoint-uploads.ts`)
 * and the client-side slicer: order, replacement, the idle timeout, refusals, completion.
 */
import { describe, expect, it } from 'vitest';
import { CHECKPOINT_UPLOAD_IDLE_MS, CheckpointUploads } from '../../src/edge/checkpoint-uploads.js';
import {
  CHECKPOINT_SLICE_BYTES,
  checkpointWriteSlices,
  MAX_CHECKPOINT_BYTES,
  writeWholeCheckpoint,
  type CheckpointWriteSlice,
  type DurableCheckpointRecord,
} from '../../src/core/checkpoint/contract.js';
import { EventId, EventSequence } from '../../src/protocol/ids.js';

const record = (length: number): DurableCheckpointRecord => ({
  sequence: EventSequence(7),
  eventId: EventId('e-7'),
  data: Uint8Array.from({ length }, (_, index) => (index * 13) & 255),
});
const codeOf = (run: () => unknown): string | undefined => {
  try {
    run();
    return undefined;
  } catch (error) {
    return (error as { code?: string }).code;
  }
};

describe('checkpoint uploads', () => {
  it('slices a record into copies of at most the slice size, and gathers them back exactly', () => {
    const whole = record(1000);
    const slices = [...checkpointWriteSlices(whole, 'u', 300)];
    expect(slices.every((slice) => slice.data.buffer.byteLength === slice.data.length), 'each slice owns its bytes').toBe(true);
    expect(slices.map((slice) => [slice.offset, slice.data.length])).toEqual([
      [0, 300],
      [300, 300],
      [600, 300],
      [900, 100],
    ]);
    const uploads = new CheckpointUploads(() => 0);
    const results = slices.map((slice) => uploads.add(slice));
    expect(results.slice(0, 3)).toEqual([null, null, null]);
    expect(results[3]).toMatchObject({ sequence: 7, eventId: 'e-7' });
    expect(Array.from(results[3]?.data ?? [])).toEqual(Array.from(whole.data));
    expect(uploads.pending).toBe(false);
  });

  it('refuses a slice that does not continue the upload, and a new upload at offset 0 replaces it', () => {
    const uploads = new CheckpointUploads(() => 0);
    const [first, second, third] = [...checkpointWriteSlices(record(30), 'a', 10)] as [CheckpointWriteSlice, CheckpointWriteSlice, CheckpointWriteSlice];
    expect(uploads.add(first)).toBeNull();
    expect(codeOf(() => uploads.add(third)), 'out of order').toBe('DURABLE_EVENT_INVALID_INPUT');
    expect(codeOf(() => uploads.add({ ...second, uploadId: 'b' })), 'another upload').toBe('DURABLE_EVENT_INVALID_INPUT');
    expect(codeOf(() => uploads.add({ ...second, eventId: 'e-8' })), 'another position').toBe('DURABLE_EVENT_INVALID_INPUT');
    expect(codeOf(() => uploads.add({ ...second, totalBytes: 31 })), 'another size').toBe('DURABLE_EVENT_INVALID_INPUT');
    // A new upload from offset 0 drops the first; the first's next slice is then refused.
    const other = [...checkpointWriteSlices(record(20), 'c', 10)] as [CheckpointWriteSlice, CheckpointWriteSlice];
    expect(uploads.add(other[0])).toBeNull();
    expect(codeOf(() => uploads.add(second))).toBe('DURABLE_EVENT_INVALID_INPUT');
    expect(uploads.add(other[1])?.data.length).toBe(20);
  });

  it('drops an upload nobody continued for the idle time', () => {
    let now = 1000;
    const uploads = new CheckpointUploads(() => now);
    const [first, second] = [...checkpointWriteSlices(record(20), 'a', 10)] as [CheckpointWriteSlice, CheckpointWriteSlice];
    expect(uploads.add(first)).toBeNull();
    now += CHECKPOINT_UPLOAD_IDLE_MS;
    expect(uploads.add(second)?.data.length, 'continued just in time').toBe(20);
    expect(uploads.add(first)).toBeNull();
    now += CHECKPOINT_UPLOAD_IDLE_MS + 1;
    expect(codeOf(() => uploads.add(second)), 'too late').toBe('DURABLE_EVENT_INVALID_INPUT');
    expect(uploads.pending).toBe(false);
  });

  it('refuses malformed slices', () => {
    const uploads = new CheckpointUploads(() => 0);
    const valid = { uploadId: 'u', sequence: 1, eventId: 'e-1', totalBytes: 4, offset: 0, data: new Uint8Array(4) };
    expect(codeOf(() => uploads.add({ ...valid }))).toBeUndefined();
    for (const bad of [
      null,
      { ...valid, uploadId: '' },
      { ...valid, uploadId: 'x'.repeat(129) },
      { ...valid, totalBytes: 0 },
      { ...valid, offset: -1 },
      { ...valid, offset: 1 },
      { ...valid, data: new Uint8Array(0) },
      { ...valid, data: [1, 2, 3, 4] },
      { ...valid, sequence: 0 },
      { ...valid, eventId: '' },
    ]) {
      expect(codeOf(() => uploads.add(bad)), JSON.stringify(bad)).toBe('DURABLE_EVENT_INVALID_INPUT');
    }
    expect(codeOf(() => uploads.add({ ...valid, totalBytes: MAX_CHECKPOINT_BYTES + 1 }))).toBe('DURABLE_EVENT_LIMIT_EXCEEDED');
  });

  it('writeWholeCheckpoint sends a record that fits whole, a larger one in order, and fails when the object loses the upload', async () => {
    const wholes: number[] = [];
    const slices: number[] = [];
    await writeWholeCheckpoint(record(100), async (whole) => wholes.push(whole.data.length), async () => true);
    expect(wholes).toEqual([100]);
    const big = { ...record(0), data: new Uint8Array(CHECKPOINT_SLICE_BYTES * 2 + 5) };
    const uploads = new CheckpointUploads(() => 0);
    await writeWholeCheckpoint(big, async () => {
      throw new Error('not whole');
    }, async (slice) => {
      slices.push(slice.offset);
      return uploads.add(slice) !== null;
    });
    expect(slices).toEqual([0, CHECKPOINT_SLICE_BYTES, 2 * CHECKPOINT_SLICE_BYTES]);
    await expect(writeWholeCheckpoint(big, async () => undefined, async () => false)).rejects.toMatchObject({ code: 'DURABLE_EVENT_UNAVAILABLE' });
  });
});
