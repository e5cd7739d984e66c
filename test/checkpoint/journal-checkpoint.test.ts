/**
 * Journals opened from a checkpoint against the memory store: command IDs from before the
 * checkpoint replay or conflict exactly as with a full fold; an ID the checkpoint cannot judge
 * falls back to folding the log; the write policy writes checkpoints on its own. The memory store
 * keeps checkpoints live by default (`liveCheckpoints`); tests about records turn that off, the
 * others run both ways.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MemoryDurableEventStore } from '../../src/adapters/memory/memory-store.js';
import { lifecycleDrafts as d } from '../../src/conformance/checks-journal.js';
import { DurableSessionJournal, type DurableCommandEventDraft } from '../../src/core/journal/index.js';
import type { DurableCheckpointWriteInfo } from '../../src/core/checkpoint/index.js';
import { decodeCheckpoint } from '../../src/core/checkpoint/codec.js';
import { CommandId, SessionId } from '../../src/protocol/ids.js';

const sessionId = SessionId('checkpoint-session');

function cycle(index: number, output = `output ${index}`): DurableCommandEventDraft[] {
  const r = `request-${index}`;
  return [
    d.requestAccepted(r),
    d.requestStarted(r),
    d.turnStarted(r, `turn-${index}`, 1),
    d.turnCompleted(r, `turn-${index}`, 1),
    d.requestCompleted(r, undefined, output),
  ];
}

async function build(commands: number, checkpointAfter: number, liveCheckpoints: boolean): Promise<MemoryDurableEventStore> {
  const store = new MemoryDurableEventStore({ liveCheckpoints });
  const journal = await DurableSessionJournal.open(store, sessionId, { checkpoints: { write: false } });
  const writer = await DurableSessionJournal.open(store, sessionId, { checkpoints: { keepCommands: 3 } });
  await journal.commit({ commandId: CommandId('create'), events: [d.sessionCreated()] });
  for (let index = 0; index < commands; index++) {
    await journal.commit({ commandId: CommandId(`cmd-${index}`), events: cycle(index) });
    if (index === checkpointAfter) {
      await writer.refresh();
      expect(await writer.writeCheckpoint()).toBe(true);
    }
  }
  return store;
}

async function attempt(journal: DurableSessionJournal, commandId: string, events: DurableCommandEventDraft[]) {
  try {
    const result = await journal.commit({ commandId: CommandId(commandId), events });
    return { status: result.status, sequences: result.events.map((event) => event.sequence), head: result.headSequence };
  } catch (error) {
    const e = error as { name: string; code?: string; message: string };
    return { name: e.name, code: e.code, message: e.message.replace(/journal-preview-[0-9a-f-]+/g, 'journal-preview') };
  }
}

describe('journal from a checkpoint', () => {
  it('replays and conflicts old command IDs exactly as a full fold (few commands kept exactly)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: 29 }),
        fc.integer({ min: 0, max: 29 }),
        fc.constantFrom('same', 'different', 'new-but-reused-request'),
        fc.boolean(),
        async (checkpointAfter, target, variant, live) => {
          const store = await build(30, checkpointAfter, live);
          const fromCheckpoint = await DurableSessionJournal.open(store, sessionId, { checkpoints: { write: false } });
          expect(fromCheckpoint.getCheckpointOutcome()).toEqual({ status: 'used', sequence: 2 + 5 * checkpointAfter + 4 });
          const full = await DurableSessionJournal.open(store, sessionId, { checkpoints: false });
          const [commandId, events] =
            variant === 'same'
              ? [`cmd-${target}`, cycle(target)]
              : variant === 'different'
                ? [`cmd-${target}`, cycle(target, 'another output')]
                : ['fresh-command', cycle(target)];
          const fromCheckpointResult = await attempt(fromCheckpoint, commandId, events);
          // The full journal runs second: when the first one committed (it must not), the log differs.
          const fullResult = await attempt(full, commandId, events);
          expect(fromCheckpointResult).toEqual(fullResult);
          if (variant === 'same') expect(fullResult).toMatchObject({ status: 'replayed' });
          else expect(fullResult).toMatchObject({ name: variant === 'different' ? 'DurableCommandConflictError' : 'DurableEventProjectionError' });
          // Only an ID from before the checkpoint that it does not keep exactly needs the full fold:
          // a command older than the ranges it keeps, or (in a record: a hash) a reused request ID.
          // A live checkpoint knows every ID, so a reused request needs no fold there.
          const needsLog =
            variant === 'new-but-reused-request' ? !live && target <= checkpointAfter : target <= checkpointAfter - 3;
          expect(fromCheckpoint.getCheckpointOutcome().status).toBe(needsLog ? 'rebuilt' : 'used');
        },
      ),
      { numRuns: 60 },
    );
  });

  it('writes checkpoints by policy, after the commit returns, and the next open uses the latest', async () => {
    const store = new MemoryDurableEventStore();
    const errors: unknown[] = [];
    const journal = await DurableSessionJournal.open(store, sessionId, {
      checkpoints: { everyEvents: 10, onWriteError: (error) => errors.push(error) },
    });
    await journal.commit({ commandId: CommandId('create'), events: [d.sessionCreated()] });
    for (let index = 0; index < 6; index++) {
      await journal.commit({ commandId: CommandId(`cmd-${index}`), events: cycle(index) });
    }
    await journal.flushCheckpoints();
    expect(errors).toEqual([]);
    const saved = await store.readCheckpoint(sessionId);
    expect(saved?.sequence).toBe(31); // due at 11 (create + 2 cycles of 5), 21 and 31
    const reopened = await DurableSessionJournal.open(store, sessionId);
    expect(reopened.getCheckpointOutcome()).toEqual({ status: 'used', sequence: 31 });
    expect(reopened.getProjection()).toEqual(journal.getProjection());
    expect(reopened.getRecoveryPlan()).toEqual(journal.getRecoveryPlan());
  });

  it('spaces writes by head / spacingDivisor only on a store that rewrites whole records', async () => {
    // everyEvents 10 and spacingDivisor 2: at head h a spaced journal waits for h / 2 new events.
    const sequences = async (store: MemoryDurableEventStore): Promise<number[]> => {
      const written: number[] = [];
      const journal = await DurableSessionJournal.open(store, sessionId, {
        checkpoints: { everyEvents: 10, spacingDivisor: 2, onWrite: (write) => written.push(write.sequence) },
      });
      await journal.commit({ commandId: CommandId('create'), events: [d.sessionCreated()] });
      for (let index = 0; index < 20; index++) await journal.commit({ commandId: CommandId(`cmd-${index}`), events: cycle(index) });
      await journal.flushCheckpoints();
      return written;
    };
    // The memory store keeps extensions: a write every 10 events (every 2 cycles), however long.
    expect(await sequences(new MemoryDurableEventStore())).toEqual([11, 21, 31, 41, 51, 61, 71, 81, 91, 101]);
    // The same store without extensions (as the HTTP and RPC clients): due once both counts are met,
    // 10 events and half the head (at 26: 15 >= 13; at 56: 30 >= 28; at 101 only 45 < 51).
    const whole = new MemoryDurableEventStore();
    Object.defineProperty(whole, 'checkpointExtension', { value: false });
    expect(await sequences(whole)).toEqual([11, 26, 56]);
  });

  it.each([true, false])('reports every write it made to onWrite: position, size, keys and the time of each part (live %s)', async (live) => {
    const store = new MemoryDurableEventStore({ liveCheckpoints: live });
    const writes: DurableCheckpointWriteInfo[] = [];
    const errors: unknown[] = [];
    const journal = await DurableSessionJournal.open(store, sessionId, {
      checkpoints: {
        everyEvents: 10,
        onWrite: (write) => {
          writes.push(write);
          if (writes.length === 2) throw new Error('hook failed');
        },
        onWriteError: (error) => errors.push(error),
      },
    });
    await journal.commit({ commandId: CommandId('create'), events: [d.sessionCreated()] });
    for (let index = 0; index < 6; index++) {
      await journal.commit({ commandId: CommandId(`cmd-${index}`), events: cycle(index) });
    }
    expect(await journal.writeCheckpoint()).toBe(true); // at 31 again: nothing new to add
    await journal.flushCheckpoints();
    const saved = await store.readCheckpoint(sessionId);
    expect(writes.map((write) => write.sequence)).toEqual([11, 21, 31, 31]);
    // A live checkpoint is not encoded: no bytes (the read above encoded it on demand).
    expect(saved?.data.length).toBeGreaterThan(100);
    expect(writes.at(-1)?.bytes).toBe(live ? 0 : saved?.data.length);
    if (live) expect(writes.every((write) => write.encodeMs === 0)).toBe(true);
    // Every ID used lands in exactly one write; the last one adds none.
    expect(writes.at(-1)?.addedKeys).toBe(0);
    expect(writes.reduce((sum, write) => sum + write.addedKeys, 0)).toBe(writes.at(-1)?.keys);
    for (const write of writes) {
      for (const ms of [write.captureMs, write.encodeMs, write.storeMs]) expect(ms).toBeGreaterThanOrEqual(0);
    }
    // The hook threw once: reported as a write error, the write itself stands.
    expect(errors).toHaveLength(1);
  });

  it('counts the bytes of committed events: a large output makes a checkpoint due long before the event count', async () => {
    const store = new MemoryDurableEventStore();
    const journal = await DurableSessionJournal.open(store, sessionId, { checkpoints: { everyEvents: 1_000_000, everyBytes: 20_000 } });
    await journal.commit({ commandId: CommandId('create'), events: [d.sessionCreated()] });
    await journal.commit({ commandId: CommandId('small'), events: cycle(0) });
    await journal.flushCheckpoints();
    expect(await store.readCheckpoint(sessionId)).toBeNull(); // 6 small events: far below 20 KB
    await journal.commit({ commandId: CommandId('large'), events: cycle(1, 'x'.repeat(25_000)) });
    await journal.flushCheckpoints();
    expect((await store.readCheckpoint(sessionId))?.sequence).toBe(11);
  });

  it('alternates two encoding buffers without corrupting any checkpoint it wrote', async () => {
    const store = new MemoryDurableEventStore({ liveCheckpoints: false });
    const lent: Uint8Array[] = [];
    const copies: Array<{ sequence: never; eventId: never; data: Uint8Array }> = [];
    const recording = new Proxy(store, {
      get(target, key, receiver) {
        if (key === 'writeCheckpoint') {
          return async (id: SessionId, record: { sequence: never; eventId: never; data: Uint8Array }, options?: object) => {
            lent.push(record.data);
            copies.push({ ...record, data: record.data.slice() });
            return target.writeCheckpoint(id, record as never, options);
          };
        }
        const value: unknown = Reflect.get(target, key, receiver);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const journal = await DurableSessionJournal.open(recording, sessionId, { checkpoints: { everyEvents: 5 } });
    await journal.commit({ commandId: CommandId('create'), events: [d.sessionCreated()] });
    for (let index = 0; index < 12; index++) {
      await journal.commit({ commandId: CommandId(`cmd-${index}`), events: cycle(index) });
      await journal.flushCheckpoints();
    }
    expect(copies.length).toBeGreaterThanOrEqual(10);
    // The buffers really are reused (otherwise this test proves nothing)...
    expect(new Set(lent.map((data) => data.buffer)).size).toBeLessThan(lent.length);
    // ...and every record was complete and valid when the store received it.
    for (const copy of copies) expect(decodeCheckpoint(copy)).toMatchObject({ sequence: copy.sequence });
    // A journal opened from the last checkpoint judges an ID used before any of them exactly as a full fold.
    const reused = [d.requestAccepted('request-0')];
    const fromCheckpoint = await DurableSessionJournal.open(store, sessionId, { checkpoints: { write: false } });
    expect(fromCheckpoint.getCheckpointOutcome()).toEqual({ status: 'used', sequence: 61 });
    const full = await DurableSessionJournal.open(store, sessionId, { checkpoints: false });
    expect(await attempt(fromCheckpoint, 'reuse', reused)).toEqual(await attempt(full, 'reuse', reused));
    expect(fromCheckpoint.getProjection()).toEqual(full.getProjection());
  });
});
