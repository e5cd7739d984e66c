/**
 * The SQL durability ledger on a real SQLite file, beyond the conformance checks: migration of a
 * version-1 database, fail-closed reads of tampered rows, the in-transaction hooks, the schema's
 * own uniqueness guarantee, key order on replay, and wake-ups across connections.
 */
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { BetterSqlite3Driver } from '../../src/adapters/node/sqlite/better-sqlite3-driver.js';
import { SqliteDurableEventStore } from '../../src/adapters/node/sqlite/sqlite-store.js';
import { SQL_MIGRATIONS, SQL_SCHEMA_VERSION, readSchemaVersion } from '../../src/adapters/sql/schema.js';
import type { SqlDurability } from '../../src/adapters/sql/sql-durability.js';
import { SqlDurableEventStore } from '../../src/adapters/sql/sql-store.js';
import type { DurabilityNotice } from '../../src/core/durability/record-contract.js';
import { durabilityIdentity } from '../../src/core/durability/record-engine.js';
import { createDurabilityPort } from '../../src/core/durability/port.js';
import { SessionId } from '../../src/protocol/ids.js';
import { tempDir } from './helpers.js';

const cleanups: Array<() => void> = [];
afterEach(() => {
  while (cleanups.length > 0) cleanups.pop()?.();
});

function fresh(): { file: string } {
  const tmp = tempDir('agent-ledger-sqlite-durability-');
  cleanups.push(tmp.cleanup);
  return { file: tmp.file('ledger.db') };
}

function open(file: string, pollMs = 10): SqliteDurableEventStore {
  const store = new SqliteDurableEventStore(file, { watchPollIntervalMs: pollMs });
  cleanups.push(() => store.close());
  return store;
}

function raw(file: string): Database.Database {
  const db = new Database(file);
  cleanups.push(() => db.close());
  return db;
}

const session = SessionId('durability-sql');

describe('SQL durability ledger: schema', () => {
  it('upgrades a file written at version 1 without touching its rows', () => {
    const { file } = fresh();
    const db = raw(file);
    for (const statement of SQL_MIGRATIONS[0] ?? []) db.prepare(statement).run();
    db.prepare('INSERT INTO schema_version (id, version) VALUES (1, 1)').run();
    db.prepare("INSERT INTO ledger_meta (key, value) VALUES ('session_id', 'kept')").run();
    expect(readSchemaVersion(new BetterSqlite3Driver(db))).toBe(1);

    open(file);
    expect(readSchemaVersion(new BetterSqlite3Driver(db))).toBe(SQL_SCHEMA_VERSION);
    expect(db.prepare("SELECT value FROM ledger_meta WHERE key = 'session_id'").get()).toEqual({ value: 'kept' });
    const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all();
    expect(tables).toEqual(expect.arrayContaining([{ name: 'durability_records' }, { name: 'checkpoints' }]));
    // The Durable Object's own tables are not created on Node.
    expect(tables).not.toEqual(expect.arrayContaining([{ name: 'timers' }]));
  });

  it('serves events and the ledger from one upgraded file', async () => {
    const { file } = fresh();
    const db = raw(file);
    for (const statement of SQL_MIGRATIONS[0] ?? []) db.prepare(statement).run();
    db.prepare('INSERT INTO schema_version (id, version) VALUES (1, 1)').run();
    const store = open(file);
    await store.append(session, [{ type: 'session_created', data: {} }], { expectedLastSequence: null });
    const { record } = await store.recordDurability(session, { kind: 'step', scope: 's', key: 'k', result: 1 });
    expect([record.sequence, await store.getHeadSequence(session)]).toEqual([1, 1]);
  });

  it('backs first-writer-wins with a UNIQUE (session_id, identity) constraint', async () => {
    const { file } = fresh();
    const store = open(file);
    await store.recordDurability(session, { kind: 'step', scope: 's', key: 'k', result: 1 });
    const db = raw(file);
    const identity = durabilityIdentity({ kind: 'step', scope: 's', key: 'k', result: 2 });
    expect(() =>
      db
        .prepare('INSERT INTO durability_records (session_id, sequence, identity, kind, body) VALUES (?, 2, ?, ?, ?)')
        .run(session, identity, 'step', '{}'),
    ).toThrow(/UNIQUE/);
  });
});

describe('SQL durability ledger: fail-closed reads', () => {
  async function seeded(): Promise<{ file: string; db: Database.Database }> {
    const { file } = fresh();
    const store = open(file);
    for (let index = 0; index < 3; index++) {
      await store.recordDurability(session, { kind: 'step', scope: 's', key: `k${index}`, result: index });
    }
    return { file, db: raw(file) };
  }

  it('refuses a body that is not a record', async () => {
    const { file, db } = await seeded();
    db.prepare("UPDATE durability_records SET body = '{\"kind\":\"step\"}' WHERE sequence = 2").run();
    await expect(open(file).readDurability(session)).rejects.toMatchObject({ code: 'DURABILITY_CORRUPT_RECORD' });
  });

  it('refuses a body that disagrees with its identity column', async () => {
    const { file, db } = await seeded();
    const body = db.prepare('SELECT body FROM durability_records WHERE sequence = 2').get() as { body: string };
    db.prepare('UPDATE durability_records SET body = ? WHERE sequence = 2').run(body.body.replace('"k1"', '"kX"'));
    await expect(open(file).readDurability(session)).rejects.toMatchObject({ code: 'DURABILITY_CORRUPT_RECORD' });
    // Recording the identity whose row is tampered with fails closed too (nothing is guessed).
    await expect(
      open(file).recordDurability(session, { kind: 'step', scope: 's', key: 'k1', result: 9 }),
    ).rejects.toMatchObject({ code: 'DURABILITY_CORRUPT_RECORD' });
  });

  it('refuses a sequence gap', async () => {
    const { file, db } = await seeded();
    db.prepare('DELETE FROM durability_records WHERE sequence = 2').run();
    await expect(open(file).readDurability(session)).rejects.toMatchObject({ code: 'DURABILITY_CORRUPT_RECORD' });
  });
});

describe('SQL durability ledger: transactions', () => {
  it('rolls the record back when `within` throws, and runs it inside the same transaction', () => {
    const { file } = fresh();
    const db = raw(file);
    const store = new SqlDurableEventStore(new BetterSqlite3Driver(db));
    // A host's own derived rows (the Durable Object keeps its timers this way).
    db.exec('CREATE TABLE timers (kind TEXT NOT NULL, key TEXT NOT NULL, due_ms INTEGER NOT NULL, payload TEXT NOT NULL)');
    const durability: SqlDurability = store.durability;
    expect(() =>
      durability.record(session, { kind: 'step', scope: 's', key: 'k', result: 1 }, () => {
        db.prepare("INSERT INTO timers (kind, key, due_ms, payload) VALUES ('t', 'k', 1, 'null')").run();
        throw new Error('refused inside the transaction');
      }),
    ).toThrow('refused inside the transaction');
    expect(durability.head(session)).toBeNull();
    expect(db.prepare('SELECT COUNT(*) AS n FROM timers').get()).toEqual({ n: 0 });

    const result = durability.record(session, { kind: 'step', scope: 's', key: 'k', result: 1 }, (planned) => {
      expect(db.inTransaction).toBe(true);
      expect(planned.created).toBe(true);
    });
    expect(result.record.sequence).toBe(1);
  });

  it('rolls the record back when the store-wide onDurabilityCreateWithin hook throws', async () => {
    const { file } = fresh();
    const db = raw(file);
    const seen: string[] = [];
    const store = new SqlDurableEventStore(new BetterSqlite3Driver(db), {
      onDurabilityCreateWithin: (record) => {
        seen.push(record.kind);
        if (record.kind === 'sleep') throw new Error('no timers today');
      },
    });
    await store.recordDurability(session, { kind: 'step', scope: 's', key: 'k', result: 1 });
    await expect(store.recordDurability(session, { kind: 'sleep', scope: 's', key: 'nap', untilMs: 5 })).rejects.toThrow(
      'no timers today',
    );
    // Only created records reach the hook: the repeated step does not.
    await store.recordDurability(session, { kind: 'step', scope: 's', key: 'k', result: 2 });
    expect(seen).toEqual(['step', 'sleep']);
    expect((await store.readDurability(session)).headSequence).toBe(1);
  });
});

describe('SQL durability ledger: replay and wake-ups', () => {
  it('replays a step result with the key order of its first execution, after a restart', async () => {
    const { file } = fresh();
    const first = open(file);
    const port = createDurabilityPort({ store: first, sessionId: session, runId: 'r' });
    const value = await port.step('ordered', () => ({ zeta: 1, alpha: { y: 2, b: 3 } }));
    port.close();
    first.close();
    const replayPort = createDurabilityPort({ store: open(file), sessionId: session, runId: 'r' });
    const replayed = await replayPort.step('ordered', () => ({ alpha: { b: 0, y: 0 }, zeta: 0 }));
    replayPort.close();
    expect(JSON.stringify(replayed)).toBe(JSON.stringify(value));
    expect(JSON.stringify(replayed)).toBe('{"zeta":1,"alpha":{"y":2,"b":3}}');
  });

  it('wakes a ledger watcher when another connection records, and stops polling after unsubscribe', async () => {
    const { file } = fresh();
    const watcher = open(file, 5);
    const writer = open(file);
    const notices: DurabilityNotice[] = [];
    const stop = watcher.watchDurability(session, (notice) => notices.push(notice));
    await writer.recordDurability(session, { kind: 'delivery', runId: 'r', key: 'k', deliveryId: 'd1', payload: 1 });
    const deadline = Date.now() + 5_000;
    while (notices.length === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 5));
    expect(notices).toEqual([{ sessionId: session, lastSequence: 1 }]);
    stop();
    await writer.recordDurability(session, { kind: 'delivery', runId: 'r', key: 'k', deliveryId: 'd2', payload: 2 });
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(notices).toHaveLength(1);
  });

  it('wakes a waiting port when another connection delivers', async () => {
    const { file } = fresh();
    const waiting = open(file, 5);
    const delivering = open(file);
    const port = createDurabilityPort({ store: waiting, sessionId: session, runId: 'r' });
    const answer = port.waitFor('approval', { timeoutMs: 20_000 });
    await new Promise((resolve) => setTimeout(resolve, 20));
    await delivering.recordDurability(session, { kind: 'delivery', runId: 'r', key: 'approval', deliveryId: 'd', payload: 'yes' });
    await expect(answer).resolves.toMatchObject({ status: 'delivered', payload: 'yes', deliveryId: 'd' });
    port.close();
  });
});
