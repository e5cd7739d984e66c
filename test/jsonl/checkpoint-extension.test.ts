/**
 * JSONL checkpoint extensions (`checkpointExtension`): a journal's later checkpoints append one
 * small segment to `{name}.checkpoint` instead of rewriting the whole file; a torn append reads as
 * the previous checkpoint, and the write after it falls back to a whole file. Real files.
 */
import { appendFileSync, statSync, truncateSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { JsonlDurableEventStore } from '../../src/advanced.js';
import { decodeCheckpoint } from '../../src/core/checkpoint/codec.js';
import { DurableSessionJournal } from '../../src/core/journal/index.js';
import { CommandId, SessionId } from '../../src/protocol/ids.js';
import { appendCycles, cycleDrafts } from '../checkpoint/lifecycle-log.js';
import { tempRoot } from './helpers.js';
import { sized } from '../deep.js';

/** Lifecycle cycles before the first checkpoint, and the command ranges a checkpoint keeps (see the test). */
const CYCLES = sized(600, 6000);
const KEEP_COMMANDS = sized(64, 1024);

let root: string;
let cleanup: () => void;
beforeEach(() => {
  ({ root, cleanup } = tempRoot());
});
afterEach(() => cleanup());

/** Commits `count` lifecycle cycles from `from`, then writes a checkpoint; returns the file size after it. */
async function cyclesThenCheckpoint(journal: DurableSessionJournal, from: number, count: number, file: string): Promise<number> {
  for (let index = from; index < from + count; index++) await journal.commit({ commandId: CommandId(`cycle-${index}`), events: cycleDrafts(index) });
  expect(await journal.writeCheckpoint()).toBe(true);
  return statSync(file).size;
}

describe('JSONL checkpoint extensions', () => {
  it('append small segments, read back as the journal wrote them, and survive a torn append', async () => {
    const store = new JsonlDurableEventStore(root);
    const id = SessionId('extension-session');
    // CYCLES cycles (5 events, about 9 IDs each) in raw batches, then a journal's first
    // checkpoint over them (whole), then two small steps (each extends it: a frame is one header
    // of up to `keepCommands` command ranges, about 70 bytes each, plus the new IDs). The record
    // must dwarf a frame for the growth check below: with the default 1,024 ranges (about 70 KB a
    // header) that takes 6,000 cycles (test:deep); with 64 ranges (about 4.5 KB) 600 cycles, about
    // 43 KB of IDs, keep the same ratio at a tenth of the events.
    await appendCycles(store, id, 0, CYCLES, 200);
    const file = store.pathsOf(id).checkpoint;
    const journal = await DurableSessionJournal.open(store, id, { checkpoints: { everyEvents: 1_000_000, keepCommands: KEEP_COMMANDS } });
    const sizes = [await cyclesThenCheckpoint(journal, CYCLES, 1, file)];
    const records = [await store.readCheckpoint(id)];
    for (let round = 1; round <= 2; round++) {
      sizes.push(await cyclesThenCheckpoint(journal, CYCLES + round * 20, 20, file));
      records.push(await store.readCheckpoint(id));
    }
    // Later checkpoints grew the file by much less than a whole record: they were appended.
    const last = records.at(-1);
    if (last === null || last === undefined) throw new Error('no checkpoint');
    const growth = (sizes[2] as number) - (sizes[1] as number);
    expect(growth).toBeGreaterThan(0);
    expect(growth).toBeLessThan((records[2]?.data.length ?? 0) / 2);
    expect(last.sequence).toBe(journal.getHeadSequence());
    const decoded = decodeCheckpoint(last);
    if (typeof decoded === 'string') throw new Error(decoded);
    expect(decoded.extent.runs.length).toBeGreaterThan(1);
    const reopened = await DurableSessionJournal.open(store, id, { checkpoints: { write: false } });
    expect(reopened.getCheckpointOutcome()).toEqual({ status: 'used', sequence: last.sequence });

    // A torn append (the last segment cut short): the previous checkpoint is what reads back.
    const previous = records.at(-2);
    if (previous === null || previous === undefined) throw new Error('no previous checkpoint');
    truncateSync(file, (sizes.at(-1) as number) - 5);
    const torn = await store.readCheckpoint(id);
    expect(torn?.sequence).toBe(previous.sequence);
    expect(Buffer.from(torn?.data ?? []).equals(Buffer.from(previous.data))).toBe(true);
    const afterTear = await DurableSessionJournal.open(store, id, { checkpoints: { everyEvents: 1_000_000, keepCommands: KEEP_COMMANDS } });
    expect(afterTear.getCheckpointOutcome()).toEqual({ status: 'used', sequence: previous.sequence });
    const full = await DurableSessionJournal.open(store, id, { checkpoints: false });
    expect(afterTear.getProjection()).toEqual(full.getProjection());
    // The next write cannot extend a torn file: it replaces it whole, and reads back.
    await afterTear.commit({ commandId: CommandId('cycle-9999'), events: cycleDrafts(9999) });
    expect(await afterTear.writeCheckpoint()).toBe(true);
    const rewritten = await store.readCheckpoint(id);
    expect(rewritten?.sequence).toBe(afterTear.getHeadSequence());
    expect(typeof decodeCheckpoint(rewritten as NonNullable<typeof rewritten>)).not.toBe('string');
    expect(statSync(file).size).toBeLessThan(sizes.at(-1) as number);

    // Garbage after intact segments is ignored too.
    appendFileSync(file, Buffer.from('not a segment'));
    expect((await store.readCheckpoint(id))?.sequence).toBe(rewritten?.sequence);
    await store.close();
  }, 120_000); // a hang guard: 30,001 events through a real file in test:deep took over 30 s with both cores saturated
});
