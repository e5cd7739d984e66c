/**
 * PostgreSQL checkpoints on a real server: an extension inserts one chunk and leaves the bytes
 * before it alone; a record written before migration 4 (whole in `checkpoints.data`) still reads
 * and its next write is whole; a head whose chunks or byte count do not match reads as none; a
 * journal extends its checkpoint and reopens from it with the same projection.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DurableSessionJournal } from '../../src/core/journal/index.js';
import { PostgresDurableEventStore } from '../../src/postgres.js';
import { CommandId, EventId, EventSequence, SessionId } from '../../src/protocol/ids.js';
import { concat, fill, sameBytes } from '../checkpoint/bytes.js';
import { appendCycles, cycleDrafts } from '../checkpoint/lifecycle-log.js';
import { dropSchema, freshSchema, postgresUrl } from './helpers.js';

const url = postgresUrl();
const schema = freshSchema('checkpoints');
let store: PostgresDurableEventStore;
let admin: pg.Client;

const chunkSizes = async (sessionId: string): Promise<number[]> =>
  (await admin.query<{ size: number }>(`SELECT octet_length(data) AS size FROM "${schema}".checkpoint_chunks WHERE session_id = $1 ORDER BY chunk`, [sessionId])).rows.map((row) => row.size);

beforeAll(async () => {
  store = await PostgresDurableEventStore.open({ connectionString: url, schema, notify: false });
  admin = new pg.Client({ connectionString: url });
  admin.on('error', () => undefined);
  await admin.connect();
});
afterAll(async () => {
  await store?.close();
  await admin?.end();
  await dropSchema(url, schema);
});

describe('PostgreSQL checkpoints', () => {
  it('appends an extension as one chunk and replaces every chunk on a whole write', async () => {
    const sessionId = SessionId('pg-extend');
    await store.append(sessionId, [{ type: 'session_created', data: {} }]);
    const base = fill(64 * 1024, 1);
    await store.writeCheckpoint(sessionId, { sequence: EventSequence(1), eventId: EventId('x-1'), data: base });
    const extended = concat(base, fill(800, 2));
    await store.writeCheckpoint(sessionId, { sequence: EventSequence(1), eventId: EventId('x-2'), data: extended, extendsBytes: base.length });
    expect(await chunkSizes('pg-extend')).toEqual([64 * 1024, 800]);
    const read = await store.readCheckpoint(sessionId);
    expect(read?.eventId).toBe('x-2');
    expect(sameBytes(read?.data, extended)).toBe(true);
    await store.writeCheckpoint(sessionId, { sequence: EventSequence(1), eventId: EventId('x-3'), data: fill(512, 3) });
    expect(await chunkSizes('pg-extend')).toEqual([512]);
    expect(sameBytes((await store.readCheckpoint(sessionId))?.data, fill(512, 3))).toBe(true);
  });

  it('reads a record written before migration 4, writes the next one whole, and reads a damaged head as none', async () => {
    const sessionId = SessionId('pg-legacy');
    await store.append(sessionId, [{ type: 'session_created', data: {} }]);
    const legacy = fill(4096, 4);
    await admin.query(`INSERT INTO "${schema}".checkpoints (session_id, sequence, event_id, data) VALUES ($1, 1, 'old-1', $2)`, ['pg-legacy', Buffer.from(legacy)]);
    const read = await store.readCheckpoint(sessionId);
    expect(read?.eventId).toBe('old-1');
    expect(sameBytes(read?.data, legacy)).toBe(true);
    const extended = concat(legacy, fill(8, 5));
    await store.writeCheckpoint(sessionId, { sequence: EventSequence(1), eventId: EventId('x-4'), data: extended, extendsBytes: legacy.length });
    expect(await chunkSizes('pg-legacy')).toEqual([4104]);
    expect(sameBytes((await store.readCheckpoint(sessionId))?.data, extended)).toBe(true);
    await admin.query(`UPDATE "${schema}".checkpoints SET bytes = bytes + 8 WHERE session_id = 'pg-legacy'`);
    expect(await store.readCheckpoint(sessionId)).toBeNull();
    await admin.query(`UPDATE "${schema}".checkpoints SET bytes = bytes - 8, chunks = 2 WHERE session_id = 'pg-legacy'`);
    expect(await store.readCheckpoint(sessionId)).toBeNull();
  });

  it('a journal extends its checkpoint and reopens from it with the same projection', async () => {
    const sessionId = SessionId('pg-journal');
    await appendCycles(store, sessionId, 0, 2000, 200);
    const journal = await DurableSessionJournal.open(store, sessionId, { checkpoints: { everyEvents: 500 } });
    await journal.flushCheckpoints();
    for (let index = 0; index < 300; index++) {
      await journal.commit({ commandId: CommandId(`more-${index}`), events: cycleDrafts(5000 + index, 'more').map(({ commandId: _c, ...rest }) => rest) as never });
    }
    await journal.flushCheckpoints();
    // Extensions appended chunks (a whole write leaves exactly one).
    expect((await chunkSizes('pg-journal')).length).toBeGreaterThan(1);
    const reopened = await DurableSessionJournal.open(store, sessionId, { checkpoints: { write: false } });
    expect(reopened.getCheckpointOutcome().status).toBe('used');
    const folded = await DurableSessionJournal.open(store, sessionId, { checkpoints: false });
    expect(reopened.getProjection()).toEqual(folded.getProjection());
  });

  it('two stores racing an extension and a whole write leave one of the two records, whole, and no stray chunk', async () => {
    const other = await PostgresDurableEventStore.open({ connectionString: url, schema, notify: false });
    try {
      const sessionId = SessionId('pg-race');
      await store.append(sessionId, [{ type: 'session_created', data: {} }]);
      for (let round = 0; round < 15; round++) {
        const base = fill(8192, round);
        await store.writeCheckpoint(sessionId, { sequence: EventSequence(1), eventId: EventId(`base-${round}`), data: base });
        const extended = concat(base, fill(256, round + 100));
        const whole = fill(4096, round + 200);
        await Promise.all([
          store.writeCheckpoint(sessionId, { sequence: EventSequence(1), eventId: EventId(`ext-${round}`), data: extended, extendsBytes: base.length }),
          other.writeCheckpoint(sessionId, { sequence: EventSequence(1), eventId: EventId(`whole-${round}`), data: whole }),
        ]);
        const read = await store.readCheckpoint(sessionId);
        const expected = read?.eventId === `ext-${round}` ? extended : whole;
        expect([`ext-${round}`, `whole-${round}`]).toContain(read?.eventId);
        expect(sameBytes(read?.data, expected)).toBe(true);
        const head = (await admin.query<{ chunks: number }>(`SELECT chunks FROM "${schema}".checkpoints WHERE session_id = 'pg-race'`)).rows[0];
        expect((await chunkSizes('pg-race')).length).toBe(head?.chunks);
      }
    } finally {
      await other.close();
    }
  });
});
