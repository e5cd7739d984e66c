/**
 * The versioned SQL schema on a real SQLite file: created once, DDL skipped when current,
 * migrated atomically, and a newer schema refused.
 */
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { BetterSqlite3Driver } from '../../src/adapters/node/sqlite/better-sqlite3-driver.js';
import { OBJECT_MIGRATIONS, OBJECT_SCHEMA } from '../../src/edge/schema.js';
import { SqliteDurableEventStore } from '../../src/adapters/node/sqlite/sqlite-store.js';
import type { SqlDriver, SqlValue } from '../../src/adapters/sql/driver.js';
import { SQL_MIGRATIONS, SQL_SCHEMA_VERSION, SQL_STORE_SCHEMA, migrateSqlSchema, readSchemaVersion } from '../../src/adapters/sql/schema.js';
import { eventDigest } from '../../src/core/checkpoint/event-digest.js';
import { SessionId } from '../../src/protocol/ids.js';
import { tempDir } from './helpers.js';

/** A real driver that records every statement and can fail the n-th `exec`. */
class RecordingDriver implements SqlDriver {
  readonly statements: string[] = [];
  failAtExec: number | undefined;
  #execs = 0;
  constructor(readonly inner: SqlDriver) {}
  exec(sql: string, ...params: SqlValue[]): void {
    this.statements.push(sql);
    this.#execs += 1;
    if (this.#execs === this.failAtExec) throw new Error('injected failure');
    this.inner.exec(sql, ...params);
  }
  query<T>(sql: string, ...params: SqlValue[]): T[] {
    this.statements.push(sql);
    return this.inner.query<T>(sql, ...params);
  }
  transaction<T>(fn: () => T): T {
    return this.inner.transaction(fn);
  }
}

const cleanups: Array<() => void> = [];
afterEach(() => {
  while (cleanups.length > 0) cleanups.pop()?.();
});

function openRaw(): { db: Database.Database; driver: RecordingDriver; file: string } {
  const tmp = tempDir();
  const file = tmp.file('ledger.db');
  const db = new Database(file);
  cleanups.push(tmp.cleanup, () => db.close());
  return { db, driver: new RecordingDriver(new BetterSqlite3Driver(db)), file };
}

function tables(db: Database.Database): string[] {
  const rows = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all() as Array<{
    name: string;
  }>;
  return rows.map((row) => row.name);
}

describe('SQL schema migration', () => {
  it('creates every table and records the current version on a new database', () => {
    const { db, driver } = openRaw();
    expect(readSchemaVersion(driver)).toBe(0);
    expect(migrateSqlSchema(driver)).toBe(SQL_SCHEMA_VERSION);
    expect(readSchemaVersion(driver)).toBe(SQL_SCHEMA_VERSION);
    // The Durable Object's own tables (timers, tool runs) are not part of the shared schema.
    expect(tables(db)).toEqual([
      'checkpoint_heads',
      'checkpoints',
      'durability_records',
      'events',
      'leases',
      'ledger_meta',
      'schema_version',
      'session_keys',
    ]);
  });

  it("migrates the session object's own tables as a separate schema with its own version", () => {
    const { db, driver } = openRaw();
    migrateSqlSchema(driver);
    expect(migrateSqlSchema(driver, OBJECT_SCHEMA)).toBe(OBJECT_MIGRATIONS.length);
    expect(readSchemaVersion(driver, OBJECT_SCHEMA.versionTable)).toBe(OBJECT_MIGRATIONS.length);
    expect(readSchemaVersion(driver)).toBe(SQL_SCHEMA_VERSION);
    expect(tables(db)).toEqual(expect.arrayContaining(['object_schema_version', 'timers', 'tool_runs']));
    expect(migrateSqlSchema(driver, OBJECT_SCHEMA)).toBe(0);
  });

  it('migrates an object created before the split, whose timers came with the shared schema', () => {
    const { db, driver } = openRaw();
    migrateSqlSchema(driver);
    for (const statement of OBJECT_MIGRATIONS[0] ?? []) driver.exec(statement);
    db.prepare("INSERT INTO timers (kind, key, due_ms, payload) VALUES ('user', 'k', 1, '{}')").run();
    expect(migrateSqlSchema(driver, OBJECT_SCHEMA)).toBe(OBJECT_MIGRATIONS.length);
    expect(db.prepare('SELECT COUNT(*) AS n FROM timers').get()).toEqual({ n: 1 });
  });

  it('is idempotent and runs no DDL when the database is current', () => {
    const { driver } = openRaw();
    migrateSqlSchema(driver);
    driver.statements.length = 0;
    expect(migrateSqlSchema(driver)).toBe(0);
    expect(migrateSqlSchema(driver)).toBe(0);
    expect(driver.statements.some((sql) => /^\s*(CREATE|ALTER|DROP|INSERT|UPDATE)/i.test(sql))).toBe(false);
  });

  it('keeps the data when a store is reopened on a migrated file', async () => {
    const { file } = openRaw();
    const sessionId = SessionId('schema-reopen');
    const first = new SqliteDurableEventStore(file);
    await first.append(sessionId, [{ type: 'session_created', data: {} }], { expectedLastSequence: null });
    first.close();
    const second = new SqliteDurableEventStore(file);
    cleanups.push(() => second.close());
    expect(await second.getHeadSequence(sessionId)).toBe(1);
  });

  it('migrates in one transaction: a failure half-way leaves the old version and no tables', () => {
    const { db, driver } = openRaw();
    driver.failAtExec = 2;
    expect(() => migrateSqlSchema(driver)).toThrow('injected failure');
    expect(readSchemaVersion(driver)).toBe(0);
    expect(tables(db)).toEqual([]);
    driver.failAtExec = undefined;
    expect(migrateSqlSchema(driver)).toBe(SQL_SCHEMA_VERSION);
  });

  it('refuses a database migrated by a newer release', () => {
    const { db, driver, file } = openRaw();
    migrateSqlSchema(driver);
    db.prepare('UPDATE schema_version SET version = ?').run(SQL_SCHEMA_VERSION + 1);
    expect(() => migrateSqlSchema(driver)).toThrow(expect.objectContaining({ code: 'DURABLE_EVENT_UNAVAILABLE' }));
    expect(() => new SqliteDurableEventStore(file)).toThrow(expect.objectContaining({ code: 'DURABLE_EVENT_UNAVAILABLE' }));
  });

  it('migrates a version-4 database to per-event digests: old rows keep NULL and read unchanged, new rows get theirs', async () => {
    const sessionId = SessionId('schema-digests');
    // A real event body, as a store writes it.
    const source = tempDir();
    cleanups.push(source.cleanup);
    const writer = new SqliteDurableEventStore(source.file('source.db'));
    await writer.append(sessionId, [{ type: 'session_created', data: { source: 'create' } }], { expectedLastSequence: null });
    const [event] = (await writer.read(sessionId)).events;
    writer.close();
    if (event === undefined) throw new Error('no event');
    const { db, driver, file } = openRaw();
    expect(migrateSqlSchema(driver, { ...SQL_STORE_SCHEMA, migrations: SQL_MIGRATIONS.slice(0, 4) })).toBe(4);
    db.prepare("INSERT INTO session_keys (session_key, session_id) VALUES (1, ?)").run(sessionId);
    db.prepare('INSERT INTO events (position, body) VALUES ((1 << 32) + 1, ?)').run(JSON.stringify(event));
    expect(migrateSqlSchema(driver)).toBe(SQL_SCHEMA_VERSION - 4);
    const store = new SqliteDurableEventStore(file);
    cleanups.push(() => store.close());
    expect((await store.read(sessionId)).events).toEqual([event]);
    const appended = await store.append(sessionId, [{ type: 'session_created', data: { source: 'fork' } }]);
    const second = appended.events[0];
    if (second === undefined) throw new Error('no event');
    expect(await store.readEventDigests(sessionId, { limit: 10 })).toEqual([
      { sequence: 1, digest: null },
      { sequence: 2, digest: eventDigest(second) },
    ]);
    // What a read returns is the envelope appended, whatever the extra column holds.
    expect((await store.read(sessionId, { after: event.sequence })).events).toEqual([second]);
    expect(await store.readEventDigests(sessionId, { after: 1, limit: 1 })).toEqual([{ sequence: 2, digest: eventDigest(second) }]);
  });
});
