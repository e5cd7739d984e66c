/**
 * The helpers SQL stores (SQLite, the Durable Object, PostgreSQL) share to read a checkpoint
 * record kept in numbered chunks and to check the stored tail an extension builds on; the
 * extension a remote writer sends instead of a whole record, and the SQL store's `extendCheckpoint`.
 */
import { describe, expect, it } from 'vitest';
import {
  checkCheckpointExtension,
  checkpointExtensionOf,
  extendsStoredRecord,
  joinCheckpointChunks,
  MAX_CHECKPOINT_BYTES,
  storedTailMatches,
  type DurableCheckpointRecord,
} from '../../src/core/checkpoint/contract.js';
import { SqliteDurableEventStore } from '../../src/adapters/node/sqlite/sqlite-store.js';
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

  it('a remote extension is the record from extendsBytes - 8 on, checked like the whole record', () => {
    const data = Uint8Array.from({ length: 40 }, (_, index) => index);
    const record: DurableCheckpointRecord = { sequence: EventSequence(3), eventId: EventId('e-3'), data, extendsBytes: 16 };
    const extension = checkpointExtensionOf(record);
    expect(extension).toMatchObject({ sequence: 3, eventId: 'e-3', extendsBytes: 16 });
    expect(Array.from(extension?.tail ?? [])).toEqual(Array.from(data.subarray(8)));
    expect(checkpointExtensionOf({ ...record, extendsBytes: undefined })).toBeNull();
    expect(checkCheckpointExtension(extension)).toEqual(extension);
    const refused = (value: unknown): string | undefined => {
      try {
        checkCheckpointExtension(value);
        return undefined;
      } catch (error) {
        return (error as { code?: string }).code;
      }
    };
    const valid = { sequence: 3, eventId: 'e-3', extendsBytes: 16, tail: new Uint8Array(9) };
    expect(refused(valid)).toBeUndefined();
    for (const bad of [
      null,
      { ...valid, extendsBytes: 12 },
      { ...valid, extendsBytes: 0 },
      { ...valid, extendsBytes: undefined },
      { ...valid, tail: new Uint8Array(8) },
      { ...valid, tail: [1, 2, 3, 4, 5, 6, 7, 8, 9] },
      { ...valid, sequence: 0 },
      { ...valid, eventId: '' },
    ]) {
      expect(refused(bad), JSON.stringify(bad)).toBe('DURABLE_EVENT_INVALID_INPUT');
    }
    // The size limit applies to the record the extension makes, not to the tail.
    expect(refused({ ...valid, extendsBytes: MAX_CHECKPOINT_BYTES })).toBe('DURABLE_EVENT_LIMIT_EXCEEDED');
  });

  it('the SQL store appends an extension only onto exactly its prefix, in one transaction', async () => {
    const store = new SqliteDurableEventStore(':memory:');
    try {
      const session = 's-1' as never;
      await store.append(session, [{ type: 'session_created', data: {} }]);
      const base = Uint8Array.from({ length: 3 * 1024 * 1024 + 8 }, (_, index) => (index * 7) & 255);
      await store.writeCheckpoint(session, { sequence: EventSequence(1), eventId: EventId('a'), data: base });
      const tail = Uint8Array.from({ length: 108 }, (_, index) => (index < 8 ? (base[base.length - 8 + index] as number) : index));
      // A prefix of another length, or other last 8 bytes: nothing written.
      expect(await store.extendCheckpoint(session, { sequence: EventSequence(1), eventId: EventId('b'), extendsBytes: base.length - 8, tail })).toBe(false);
      const other = tail.slice();
      other[0] = (other[0] as number) ^ 1;
      expect(await store.extendCheckpoint(session, { sequence: EventSequence(1), eventId: EventId('b'), extendsBytes: base.length, tail: other })).toBe(false);
      expect((await store.readCheckpoint(session))?.eventId).toBe('a');
      expect(await store.extendCheckpoint(session, { sequence: EventSequence(1), eventId: EventId('c'), extendsBytes: base.length, tail })).toBe(true);
      const read = await store.readCheckpoint(session);
      expect(read?.eventId).toBe('c');
      expect(read?.data.length).toBe(base.length + 100);
      expect(Buffer.compare(Buffer.from(read?.data.subarray(0, base.length) ?? []), Buffer.from(base))).toBe(0);
      expect(Array.from(read?.data.subarray(base.length) ?? [])).toEqual(Array.from(tail.subarray(8)));
    } finally {
      store.close();
    }
  });
});
