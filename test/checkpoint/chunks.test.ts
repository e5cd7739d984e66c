/**
 * The helpers SQL stores (SQLite, the Durable Object, PostgreSQL) share to read a checkpoint
 * record kept in numbered chunks and to check the stored tail an extension builds on.
 */
import { describe, expect, it } from 'vitest';
import { extendsStoredRecord, joinCheckpointChunks, storedTailMatches, type DurableCheckpointRecord } from '../../src/core/checkpoint/contract.js';
import { EventId, EventSequence } from '../../src/protocol/ids.js';

const bytes = (...values: number[]): Uint8Array => Uint8Array.from(values);

describe('checkpoint chunks', () => {
  it('joins chunks 0..count-1 in order, and refuses anything else', () => {
    const chunks = [
      { index: 0, data: bytes(1, 2, 3) },
      { index: 1, data: bytes(4) },
      { index: 2, data: bytes(5, 6) },
    ];
    expect(joinCheckpointChunks(chunks, 3, 6)).toEqual(bytes(1, 2, 3, 4, 5, 6));
    expect(joinCheckpointChunks(chunks, 3)).toEqual(bytes(1, 2, 3, 4, 5, 6));
    expect(joinCheckpointChunks(chunks, 4), 'a chunk missing').toBeNull();
    expect(joinCheckpointChunks(chunks, 3, 7), 'a different total').toBeNull();
    expect(joinCheckpointChunks([chunks[1], chunks[0], chunks[2]] as typeof chunks, 3), 'out of order').toBeNull();
    expect(joinCheckpointChunks([chunks[0], { index: 1, data: null }, chunks[2]] as typeof chunks, 3), 'a row without bytes').toBeNull();
    expect(joinCheckpointChunks([chunks[0], { index: null, data: bytes(4) }, chunks[2]] as typeof chunks, 3), 'a row without a chunk').toBeNull();
    expect(joinCheckpointChunks([], 0, 0)).toEqual(new Uint8Array(0));
  });

  it('an extension builds on a stored record only when its last 8 bytes are the record prefix end', () => {
    const data = Uint8Array.from({ length: 24 }, (_, index) => index);
    const record: DurableCheckpointRecord = { sequence: EventSequence(3), eventId: EventId('e-3'), data, extendsBytes: 16 };
    const stored = data.slice(0, 16);
    expect(storedTailMatches(stored.subarray(8, 16), record)).toBe(true);
    expect(extendsStoredRecord(stored, record)).toBe(true);
    const changed = stored.slice();
    changed[15] = 99;
    expect(storedTailMatches(changed.subarray(8, 16), record)).toBe(false);
    expect(extendsStoredRecord(changed, record)).toBe(false);
    expect(storedTailMatches(stored.subarray(9, 16), record), 'a short tail').toBe(false);
    expect(storedTailMatches(null, record)).toBe(false);
    expect(storedTailMatches(stored.subarray(8, 16), { ...record, extendsBytes: undefined }), 'not an extension').toBe(false);
    expect(extendsStoredRecord(stored.subarray(0, 8), record), 'a stored record shorter than the prefix').toBe(false);
  });
});
