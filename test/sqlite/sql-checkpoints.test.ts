/**
 * The SQL checkpoint tables on a real SQLite file: extensions append chunk rows and leave the rows
 * before them untouched; a record written before `checkpoint_heads` existed still reads; a torn or
 * tampered head reads as no checkpoint; a journal on SQLite writes extensions and reopens from them.
 */
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { SqliteDurableEventStore } from '../../src/adapters/node/sqlite/sqlite-store.js';
import { CHECKPOINT_CHUNK_BYTES } from '../../src/adapters/sql/sql-checkpoints.js';
import { DurableSessionJournal } from '../../src/core/journal/index.js';
import { CommandId, EventId, EventSequence, SessionId } from '../../src/protocol/ids.js';
import { concat, fill, sameBytes } from '../checkpoint/bytes.js';
import { appendCycles, cycleDrafts } from '../checkpoint/lifecycle-log.js';
import { tempDir } from './helpers.js';

const temp = tempDir();
afterAll(() => temp.cleanup());
type Row = { chunk: number; data: Buffer };
const rowsOf = (file: string, sessionId: string): Row[] => {
  const db = new Database(file, { readonly: true });
  try {
    return db.prepare('SELECT chunk, data FROM checkpoints WHERE session_id = ? ORDER BY chunk').all(sessionId) as Row[];
  } finally {
    db.close();
  }
};

describe('SQL checkpoints (SQLite file)', () => {
  it('appends an extension as new chunk rows and never rewrites the rows before it', async () => {
    const file = temp.file('extend.sqlite');
    const store = new SqliteDurableEventStore(file);
    const sessionId = SessionId('extend');
    await store.append(sessionId, [{ type: 'session_created', data: {} }]);
    const base = fill(CHECKPOINT_CHUNK_BYTES + 4096, 1);
    await store.writeCheckpoint(sessionId, { sequence: EventSequence(1), eventId: EventId('x-1'), data: base });
    const before = rowsOf(file, 'extend');
    expect(before.map((row) => row.data.length)).toEqual([CHECKPOINT_CHUNK_BYTES, 4096]);
    const extended = concat(base, fill(800, 2));
    await store.writeCheckpoint(sessionId, { sequence: EventSequence(1), eventId: EventId('x-2'), data: extended, extendsBytes: base.length });
    const after = rowsOf(file, 'extend');
    expect(after.map((row) => row.data.length)).toEqual([CHECKPOINT_CHUNK_BYTES, 4096, 800]);
    expect(after[0]?.data.equals(before[0]?.data as Buffer)).toBe(true);
    const read = await store.readCheckpoint(sessionId);
    expect(read?.eventId).toBe('x-2');
    expect(sameBytes(read?.data, extended)).toBe(true);
    // A whole record replaces every row.
    const whole = fill(2048, 3);
    await store.writeCheckpoint(sessionId, { sequence: EventSequence(1), eventId: EventId('x-3'), data: whole });
    expect(rowsOf(file, 'extend').map((row) => row.data.length)).toEqual([2048]);
    expect(sameBytes((await store.readCheckpoint(sessionId))?.data, whole)).toBe(true);
    store.close();
  });

  it('reads a record written before checkpoint_heads existed, and writes the next one whole', async () => {
    const file = temp.file('legacy.sqlite');
    const store = new SqliteDurableEventStore(file);
    const sessionId = SessionId('legacy');
    await store.append(sessionId, [{ type: 'session_created', data: {} }]);
    store.close();
    const legacy = fill(CHECKPOINT_CHUNK_BYTES + 16, 4);
    const db = new Database(file);
    const insert = db.prepare('INSERT INTO checkpoints (session_id, chunk, chunks, sequence, event_id, data) VALUES (?, ?, ?, ?, ?, ?)');
    insert.run('legacy', 0, 2, 1, 'old-1', legacy.subarray(0, CHECKPOINT_CHUNK_BYTES));
    insert.run('legacy', 1, 2, 1, 'old-1', legacy.subarray(CHECKPOINT_CHUNK_BYTES));
    db.close();
    const reopened = new SqliteDurableEventStore(file);
    const read = await reopened.readCheckpoint(sessionId);
    expect(read?.eventId).toBe('old-1');
    expect(sameBytes(read?.data, legacy)).toBe(true);
    // No head row yet: an extension of it is written whole (and gets a head).
    const extended = concat(legacy, fill(8, 5));
    await reopened.writeCheckpoint(sessionId, { sequence: EventSequence(1), eventId: EventId('x-4'), data: extended, extendsBytes: legacy.length });
    expect(sameBytes((await reopened.readCheckpoint(sessionId))?.data, extended)).toBe(true);
    expect(rowsOf(file, 'legacy').map((row) => row.data.length)).toEqual([CHECKPOINT_CHUNK_BYTES, 24]);
    reopened.close();
  });

  it('reads a head whose chunks or byte count do not match as no checkpoint', async () => {
    const file = temp.file('torn.sqlite');
    const store = new SqliteDurableEventStore(file);
    const sessionId = SessionId('torn');
    await store.append(sessionId, [{ type: 'session_created', data: {} }]);
    await store.writeCheckpoint(sessionId, { sequence: EventSequence(1), eventId: EventId('x-1'), data: fill(4096, 6) });
    const extended = concat(fill(4096, 6), fill(64, 7));
    await store.writeCheckpoint(sessionId, { sequence: EventSequence(1), eventId: EventId('x-2'), data: extended, extendsBytes: 4096 });
    store.close();
    for (const change of ['UPDATE checkpoint_heads SET bytes = bytes + 8', 'UPDATE checkpoint_heads SET chunks = 3', 'DELETE FROM checkpoints WHERE chunk = 1']) {
      const copy = temp.file(`torn-${change.length}.sqlite`);
      const source = new Database(file);
      await source.backup(copy);
      source.close();
      const db = new Database(copy);
      db.prepare(change).run();
      db.close();
      const damaged = new SqliteDurableEventStore(copy);
      expect(await damaged.readCheckpoint(sessionId), change).toBeNull();
      damaged.close();
    }
  });

  it('a journal on SQLite extends its checkpoint and reopens from it with the same state', async () => {
    const file = temp.file('journal.sqlite');
    const store = new SqliteDurableEventStore(file);
    const sessionId = SessionId('journal');
    await appendCycles(store, sessionId, 0, 2000, 200);
    const sizes: number[] = [];
    const journal = await DurableSessionJournal.open(store, sessionId, { checkpoints: { everyEvents: 500, onWrite: (write) => sizes.push(write.bytes) } });
    await journal.flushCheckpoints();
    const rowsAtStart = rowsOf(file, 'journal').length;
    for (let index = 0; index < 300; index++) {
      await journal.commit({ commandId: CommandId(`more-${index}`), events: cycleDrafts(5000 + index, 'more').map(({ commandId: _c, ...rest }) => rest) as never });
    }
    await journal.flushCheckpoints();
    expect(sizes.length).toBeGreaterThanOrEqual(3);
    // Extensions appended rows (the whole record would have been rewritten into the same count).
    expect(rowsOf(file, 'journal').length).toBeGreaterThan(rowsAtStart);
    const reopened = await DurableSessionJournal.open(store, sessionId, { checkpoints: { write: false } });
    expect(reopened.getCheckpointOutcome().status).toBe('used');
    const folded = await DurableSessionJournal.open(store, sessionId, { checkpoints: false });
    expect(reopened.getProjection()).toEqual(folded.getProjection());
    store.close();
  });
});
