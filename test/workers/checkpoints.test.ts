/**
 * Projection checkpoints inside workerd: the SessionObject writes them itself after plain RPC
 * appends (off the appends' critical path), and after the object is reset (a cold start with the
 * same storage) a journal opens from that checkpoint and matches a full fold. A record larger than
 * one RPC value (32 MiB) crosses between a client and the object in slices both ways, and a client
 * extends one by sending its tail.
 */
import { abortAllDurableObjects, runInDurableObject } from 'cloudflare:test';
import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { DurableObjectEventStore } from '../../src/adapters/durable-object/durable-object-store.js';
import { decodeCheckpoint } from '../../src/core/checkpoint/codec.js';
import { CHECKPOINT_SLICE_BYTES, type DurableCheckpointRecord } from '../../src/core/checkpoint/contract.js';
import { DEFAULT_CHECKPOINT_EVERY_EVENTS } from '../../src/core/checkpoint/policy.js';
import { DurableSessionJournal } from '../../src/core/journal/index.js';
import { CommandId, EventId, EventSequence } from '../../src/protocol/ids.js';
import { appendCycles, cycleDrafts } from '../checkpoint/lifecycle-log.js';
import { freshSessionId, stubFor } from './session-object-helpers.js';

/** Just over one RPC value (32 MiB), which is all the sliced paths below need: three slices of at most 16 MiB. */
const OVER_ONE_RPC_VALUE = 33 * 1024 * 1024;

describe('SessionObject checkpoints', () => {
  it('writes a checkpoint on its own after enough appends, and a cold start opens from it', async () => {
    const store = new DurableObjectEventStore(env.SESSIONS);
    const sessionId = freshSessionId('checkpoints');
    const cycles = Math.ceil(DEFAULT_CHECKPOINT_EVERY_EVENTS / 5) + 10;
    const head = await appendCycles(store, sessionId, 0, cycles, 100);
    // The object schedules its catch-up after the append answered: poll for it (bounded).
    let record = await store.readCheckpoint(sessionId);
    for (let attempt = 0; record === null && attempt < 200; attempt++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      record = await store.readCheckpoint(sessionId);
    }
    expect(record).not.toBeNull();
    const decoded = decodeCheckpoint(record!);
    expect(typeof decoded).not.toBe('string');
    expect(record!.sequence).toBeGreaterThanOrEqual(DEFAULT_CHECKPOINT_EVERY_EVENTS);
    expect(record!.sequence).toBeLessThanOrEqual(head);

    await abortAllDurableObjects();
    const journal = await DurableSessionJournal.open(store, sessionId, { checkpoints: { write: false } });
    expect(journal.getCheckpointOutcome()).toEqual({ status: 'used', sequence: record!.sequence });
    const full = await DurableSessionJournal.open(store, sessionId, { checkpoints: false });
    expect(journal.getProjection()).toEqual(full.getProjection());
    // The object's own journal (commit RPC) also runs after the reset; an old command replays.
    const replay = await journal.commit({
      commandId: CommandId('cycle-3'),
      events: cycleDrafts(3).map(({ commandId: _, ...rest }) => rest) as never,
    });
    expect(replay.status).toBe('replayed');
  });

  it("keeps extensions: a later checkpoint is appended to the stored one as chunk rows", async () => {
    const store = new DurableObjectEventStore(env.SESSIONS);
    const sessionId = freshSessionId('checkpoint-rows');
    const cycles = Math.ceil(DEFAULT_CHECKPOINT_EVERY_EVENTS / 5) + 10;
    const waitForCheckpointPast = async (sequence: number) => {
      let record = await store.readCheckpoint(sessionId);
      for (let attempt = 0; (record === null || record.sequence <= sequence) && attempt < 200; attempt++) {
        await new Promise((resolve) => setTimeout(resolve, 50));
        record = await store.readCheckpoint(sessionId);
      }
      expect(record?.sequence ?? 0).toBeGreaterThan(sequence);
      return record!;
    };
    const rows = () =>
      runInDurableObject(stubFor(sessionId), (_instance, state) =>
        state.storage.sql.exec<{ chunk: number; size: number }>('SELECT chunk, length(data) AS size FROM checkpoints WHERE session_id = ? ORDER BY chunk', sessionId).toArray(),
      );
    await appendCycles(store, sessionId, 0, cycles, 100);
    const first = await waitForCheckpointPast(0);
    const rowsBefore = await rows();
    await appendCycles(store, sessionId, cycles, cycles, 100);
    const second = await waitForCheckpointPast(first.sequence);
    const rowsAfter = await rows();
    // A record far below one chunk (1 MiB) in more than one row can only be an extension: the
    // object appended a frame's bytes as a row instead of rewriting the record. (Which write
    // extends and which compacts depends on the frame sizes, so both states are looked at.)
    const extended = [rowsBefore, rowsAfter].filter((list) => list.length > 1 && list.reduce((sum, row) => sum + row.size, 0) < 1024 * 1024);
    expect(extended.length).toBeGreaterThan(0);
    expect(typeof decodeCheckpoint(second)).not.toBe('string');
    await abortAllDurableObjects();
    const journal = await DurableSessionJournal.open(store, sessionId, { checkpoints: { write: false } });
    expect(journal.getCheckpointOutcome()).toEqual({ status: 'used', sequence: second.sequence });
    const full = await DurableSessionJournal.open(store, sessionId, { checkpoints: false });
    expect(journal.getProjection()).toEqual(full.getProjection());
  });

  it('a client writes and reads a record larger than one RPC value (32 MiB), in slices', async () => {
    const store = new DurableObjectEventStore(env.SESSIONS);
    const sessionId = freshSessionId('checkpoint-big');
    await appendCycles(store, sessionId, 0, 1);
    const data = new Uint8Array(OVER_ONE_RPC_VALUE);
    for (let index = 0; index < data.length; index += 997) data[index] = (index >>> 3) & 255;
    const record: DurableCheckpointRecord = { sequence: EventSequence(1), eventId: EventId('big-record'), data };
    // One RPC value cannot hold it: the client sends three slices of at most 16 MiB.
    await store.writeCheckpoint(sessionId, record);
    const read = await store.readCheckpoint(sessionId);
    expect(read?.eventId).toBe('big-record');
    expect(read?.data.length).toBe(data.length);
    // Compared by hand: the matcher's deep equality on tens of MiB exhausts the runtime's heap.
    let firstDifference = -1;
    for (let index = 0; index < data.length; index++) {
      if (read?.data[index] !== data[index]) {
        firstDifference = index;
        break;
      }
    }
    expect(firstDifference).toBe(-1);
    // Each RPC answer is one slice, capped whatever length a caller asks for.
    const slice = await runInDurableObject(stubFor(sessionId), async (instance) => {
      const object = instance as unknown as { readCheckpoint(id: string, offset?: number, length?: number): Promise<{ ok: true; value: { totalBytes: number; data: Uint8Array } }> };
      return (await object.readCheckpoint(sessionId, 0, 64 * 1024 * 1024)).value;
    });
    expect(slice.totalBytes).toBe(data.length);
    expect(slice.data.length).toBe(CHECKPOINT_SLICE_BYTES);
  });

  it('a client extends a record larger than one RPC value: only the tail crosses', async () => {
    const store = new DurableObjectEventStore(env.SESSIONS);
    expect(store.checkpointExtension).toBe(true);
    const sessionId = freshSessionId('checkpoint-big-extension');
    await appendCycles(store, sessionId, 0, 1);
    const baseBytes = OVER_ONE_RPC_VALUE;
    // One buffer holds the extended record; the object first stores its 33 MiB prefix itself.
    const data = new Uint8Array(baseBytes + 1024);
    for (let index = 0; index < data.length; index += 997) data[index] = (index >>> 3) & 255;
    for (let index = baseBytes; index < data.length; index++) data[index] = (index * 7) & 255;
    await runInDurableObject(stubFor(sessionId), async (instance) => {
      const object = instance as unknown as { writeCheckpoint(id: string, record: DurableCheckpointRecord): Promise<{ ok: boolean }> };
      const base = { sequence: EventSequence(1), eventId: EventId('big-base'), data: data.subarray(0, baseBytes) };
      expect((await object.writeCheckpoint(sessionId, base)).ok).toBe(true);
    });
    // A whole record this size cannot cross RPC (the test above); its extension does.
    await store.writeCheckpoint(sessionId, { sequence: EventSequence(6), eventId: EventId('big-extended'), data, extendsBytes: baseBytes });
    const read = await store.readCheckpoint(sessionId);
    expect(read?.eventId).toBe('big-extended');
    expect(read?.data.length).toBe(data.length);
    let firstDifference = -1;
    for (let index = baseBytes - 4096; index < data.length; index++) {
      if (read?.data[index] !== data[index]) {
        firstDifference = index;
        break;
      }
    }
    expect(firstDifference).toBe(-1);
    // An extension of a prefix the object does not hold changes nothing through the RPC itself.
    const refused = await runInDurableObject(stubFor(sessionId), async (instance) => {
      const object = instance as unknown as { extendCheckpoint(id: string, extension: unknown): Promise<{ ok: true; value: boolean }> };
      return (await object.extendCheckpoint(sessionId, { sequence: 6, eventId: 'other', extendsBytes: baseBytes, tail: new Uint8Array(16) })).value;
    });
    expect(refused).toBe(false);
    expect((await store.readCheckpoint(sessionId))?.eventId).toBe('big-extended');
  });

  it('gathers a sliced whole record in order and writes it only once complete', async () => {
    const store = new DurableObjectEventStore(env.SESSIONS);
    const sessionId = freshSessionId('checkpoint-slices');
    await appendCycles(store, sessionId, 0, 1);
    type SliceRpc = { writeCheckpointSlice(id: string, slice: unknown): Promise<{ ok: boolean; value?: boolean; error?: { code: string } }> };
    const send = (slice: Record<string, unknown>) =>
      runInDurableObject(stubFor(sessionId), async (instance) => (instance as unknown as SliceRpc).writeCheckpointSlice(sessionId, slice));
    const base = { uploadId: 'u-1', sequence: 1, eventId: 'sliced', totalBytes: 10 };
    expect(await send({ ...base, offset: 0, data: new Uint8Array([0, 1, 2, 3]) })).toMatchObject({ ok: true, value: false });
    // Out of order, or another upload's continuation: refused; the upload stays as it was.
    expect(await send({ ...base, offset: 6, data: new Uint8Array([6, 7, 8, 9]) })).toMatchObject({ ok: false, error: { code: 'DURABLE_EVENT_INVALID_INPUT' } });
    expect(await send({ ...base, uploadId: 'u-2', offset: 4, data: new Uint8Array([4, 5]) })).toMatchObject({ ok: false });
    expect(await store.readCheckpoint(sessionId)).toBeNull();
    expect(await send({ ...base, offset: 4, data: new Uint8Array([4, 5]) })).toMatchObject({ ok: true, value: false });
    expect(await store.readCheckpoint(sessionId)).toBeNull();
    expect(await send({ ...base, offset: 6, data: new Uint8Array([6, 7, 8, 9]) })).toMatchObject({ ok: true, value: true });
    const read = await store.readCheckpoint(sessionId);
    expect(read?.eventId).toBe('sliced');
    expect(Array.from(read?.data ?? [])).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  });
});
