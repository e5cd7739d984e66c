/**
 * Live checkpoints on the memory store (`src/core/checkpoint/live.ts`): a journal hands over its
 * immutable state and a fork of its used-ID set; the next open adopts them after the same checks
 * as a record (stale, ahead of the head, replaced log); later commits of the writer do not leak
 * into the checkpoint; the bytes `readCheckpoint` encodes on demand are exactly the record a
 * journal keeping records writes at the same position; records and live checkpoints replace each
 * other; `liveCheckpoints: false` keeps records only.
 */
import { describe, expect, it } from 'vitest';
import { MemoryDurableEventStore } from '../../src/adapters/memory/memory-store.js';
import { lifecycleDrafts as d } from '../../src/conformance/checks-journal.js';
import { decodeCheckpoint } from '../../src/core/checkpoint/codec.js';
import { keepsLiveCheckpoints } from '../../src/core/checkpoint/live.js';
import { DurableSessionJournal } from '../../src/core/journal/index.js';
import type { DurableReadOptions } from '../../src/core/store.js';
import { CommandId, SessionId } from '../../src/protocol/ids.js';
import { ArrayLogStore } from './array-store.js';
import { everyEvent } from '../inspector/read-all.js';
import { appendCycles, cycleDrafts } from './lifecycle-log.js';

const sessionId = SessionId('live-checkpoints');

/** A store holding `cycles` lifecycle cycles and a live checkpoint at the head, and the journal that wrote it. */
async function checkpointed(cycles: number, store = new MemoryDurableEventStore()) {
  await appendCycles(store, sessionId, 0, cycles);
  // Ten command ranges kept exactly: older commands are found through the ID set (and a fold).
  const writer = await DurableSessionJournal.open(store, sessionId, { checkpoints: { everyEvents: 1_000_000, keepCommands: 10 } });
  expect(await writer.writeCheckpoint()).toBe(true);
  return { store, writer };
}

describe('live checkpoints (memory store)', () => {
  it('are adopted by the next open, which then matches a full fold and keeps committing', async () => {
    const { store } = await checkpointed(400);
    const live = await store.readLiveCheckpoint(sessionId);
    expect(live).toMatchObject({ sessionId, sequence: 2001 });
    await appendCycles(store, sessionId, 400, 20);
    const reads: number[] = [];
    const counting = new Proxy(store, {
      get(target, key, receiver) {
        if (key === 'read') {
          return (id: SessionId, options?: DurableReadOptions) => {
            reads.push(options?.after ?? 0);
            return target.read(id, options);
          };
        }
        const value: unknown = Reflect.get(target, key, receiver);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const opened = await DurableSessionJournal.open(counting, sessionId, { checkpoints: { write: false } });
    expect(opened.getCheckpointOutcome()).toEqual({ status: 'used', sequence: 2001 });
    // Only the anchor event and the events after it were read.
    expect(Math.min(...reads)).toBe(2000);
    const full = await DurableSessionJournal.open(store, sessionId, { checkpoints: false });
    expect(opened.getProjection()).toEqual(full.getProjection());
    expect(opened.getRecoveryPlan()).toEqual(full.getRecoveryPlan());
    // A command from before the checkpoint, older than the ranges it keeps, replays exactly as in a full fold.
    const replay = { commandId: CommandId('cycle-3'), events: cycleDrafts(3) };
    const replayed = await opened.commit(replay);
    expect(replayed.status).toBe('replayed');
    expect(replayed.events.map((event) => event.sequence)).toEqual([17, 18, 19, 20, 21]);
    expect(opened.getCheckpointOutcome().status).toBe('rebuilt');
    // And a new command commits on top.
    const next = await opened.commit({ commandId: CommandId('after'), events: [d.requestAccepted('after-request')] });
    expect(next.status).toBe('committed');
  });

  it('does not change when the writer goes on committing (a fork of the ID set, immutable state)', async () => {
    const { store, writer } = await checkpointed(50);
    const live = await store.readLiveCheckpoint(sessionId);
    if (live === null) throw new Error('no live checkpoint');
    const size = live.ids.size;
    const state = live.state;
    await writer.commit({ commandId: CommandId('later-0'), events: cycleDrafts(0, 'later') });
    expect(writer.getHeadSequence()).toBe(256);
    expect(live.ids.size).toBe(size);
    expect(live.ids.has('r:later-request-0')).toBe(false);
    expect(live.state).toBe(state);
    expect(await store.readLiveCheckpoint(sessionId)).toBe(live); // far below the policy's count: not rewritten
    // Two journals opened from it diverge without affecting each other or it.
    const a = await DurableSessionJournal.open(store, sessionId, { checkpoints: { write: false } });
    const b = await DurableSessionJournal.open(store, sessionId, { checkpoints: { write: false } });
    await a.commit({ commandId: CommandId('a-0'), events: cycleDrafts(0, 'a') });
    await b.refresh();
    expect(b.getHeadSequence()).toBe(261);
    expect(live.ids.has('r:a-request-0')).toBe(false);
    expect(live.ids.size).toBe(size);
    expect(b.getProjection()).toEqual(a.getProjection());
  });

  it('encode on demand to exactly the record a journal keeping records writes at the same position', async () => {
    const { store } = await checkpointed(300);
    const encoded = await store.readCheckpoint(sessionId);
    if (encoded === null) throw new Error('no record');
    const copy = new ArrayLogStore(false);
    copy.events = await everyEvent(store, sessionId);
    const recordWriter = await DurableSessionJournal.open(copy, sessionId, { checkpoints: { read: false, everyEvents: 1_000_000, keepCommands: 10 } });
    expect(await recordWriter.writeCheckpoint()).toBe(true);
    expect(copy.checkpoint?.data).toEqual(encoded.data);
    expect(decodeCheckpoint(encoded)).toMatchObject({ sequence: 1501, projectorVersion: expect.any(Number) });
    // The encoding is kept: a second read gives the same bytes (a copy).
    const again = await store.readCheckpoint(sessionId);
    expect(again?.data).toEqual(encoded.data);
    expect(again?.data).not.toBe(encoded.data);
  });

  it('are discarded like records: stale projector, log ahead of it restored, replaced log', async () => {
    const { store } = await checkpointed(20);
    const live = await store.readLiveCheckpoint(sessionId);
    if (live === null) throw new Error('no live checkpoint');
    const outcome = async (target: MemoryDurableEventStore) =>
      (await DurableSessionJournal.open(target, sessionId, { checkpoints: { write: false } })).getCheckpointOutcome();

    await store.writeLiveCheckpoint(sessionId, { ...live, projectorVersion: live.projectorVersion + 1 });
    expect(await outcome(store)).toMatchObject({ status: 'discarded', reason: expect.stringMatching(/^stale: projector version/) });

    // The same checkpoint on a shorter log (as after restoring an older backup).
    const shorter = new MemoryDurableEventStore();
    await appendCycles(shorter, sessionId, 0, 10);
    await shorter.writeLiveCheckpoint(sessionId, live);
    expect(await outcome(shorter)).toMatchObject({ status: 'discarded', reason: expect.stringMatching(/^ahead of the head/) });

    // A log of the same length whose events differ.
    const replaced = new MemoryDurableEventStore();
    await appendCycles(replaced, sessionId, 0, 20);
    await replaced.writeLiveCheckpoint(sessionId, live);
    expect(await outcome(replaced)).toMatchObject({ status: 'discarded', reason: expect.stringMatching(/^replaced log/) });

    // A checkpoint of another session is refused by the store.
    await expect(store.writeLiveCheckpoint(SessionId('another'), live)).rejects.toMatchObject({ code: 'DURABLE_EVENT_INVALID_INPUT' });
  });

  it('and records replace each other; a journal opens from whichever is latest', async () => {
    const { store, writer } = await checkpointed(20);
    const record = await store.readCheckpoint(sessionId);
    if (record === null) throw new Error('no record');
    // A record written over the live checkpoint (a copy from elsewhere, a test): the next open decodes it.
    await store.writeCheckpoint(sessionId, record);
    expect(await store.readLiveCheckpoint(sessionId)).toBeNull();
    const fromRecord = await DurableSessionJournal.open(store, sessionId);
    expect(fromRecord.getCheckpointOutcome()).toEqual({ status: 'used', sequence: 101 });
    // Its next write is live again, standing on the record's key filter for the IDs before it.
    await appendCycles(store, sessionId, 20, 5);
    await fromRecord.refresh();
    expect(await fromRecord.writeCheckpoint()).toBe(true);
    const live = await store.readLiveCheckpoint(sessionId);
    expect(live?.sequence).toBe(126);
    expect(live?.ids.base.size).toBeGreaterThan(0);
    // Its encoding holds the filter's hashes and the exact IDs: a journal keeping records opens
    // from it and judges an ID from before the first checkpoint like a full fold.
    const copy = new ArrayLogStore(false);
    copy.events = await everyEvent(store, sessionId);
    copy.checkpoint = await store.readCheckpoint(sessionId);
    const reopened = await DurableSessionJournal.open(copy, sessionId, { checkpoints: { write: false } });
    expect(reopened.getCheckpointOutcome()).toEqual({ status: 'used', sequence: 126 });
    const full = await DurableSessionJournal.open(store, sessionId, { checkpoints: false });
    expect(reopened.getProjection()).toEqual(full.getProjection());
    expect(writer.getHeadSequence()).toBe(101);
  });

  it('are off with liveCheckpoints: false (records only, as on every other store)', async () => {
    const store = new MemoryDurableEventStore({ liveCheckpoints: false });
    expect(keepsLiveCheckpoints(store)).toBe(false);
    expect(keepsLiveCheckpoints(new MemoryDurableEventStore())).toBe(true);
    const { writer } = await checkpointed(20, store);
    expect(await store.readLiveCheckpoint(sessionId)).toBeNull();
    expect((await store.readCheckpoint(sessionId))?.sequence).toBe(101);
    const live = { ...(await new MemoryDurableEventStore().readLiveCheckpoint(sessionId)) } as never;
    await expect(store.writeLiveCheckpoint(sessionId, live)).rejects.toMatchObject({ code: 'DURABLE_EVENT_INVALID_INPUT' });
    expect(writer.getHeadSequence()).toBe(101);
  });
});
