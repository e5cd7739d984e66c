/**
 * The SQL ledger's write path and its single-writer mode (what a Durable Object runs), on
 * better-sqlite3 with one connection, so the ledger really is the only writer:
 * - the whole store contract (conformance harness, durable: `restart` opens a new connection);
 * - what is remembered is used: a warm append runs exactly one statement (its INSERT), no read;
 * - what is remembered never outlives a rollback: a failed commit, or an outer transaction through
 *   `ledger.driver` that wraps an append and then throws, makes the ledger read the truth again;
 * - the row layout: batches across the multi-row INSERT boundaries, sessions in separate position
 *   ranges, readable `session_key` / `sequence` columns, and the per-session sequence limit.
 */
import Database from 'better-sqlite3';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { BetterSqlite3Driver } from '../../src/adapters/node/sqlite/better-sqlite3-driver.js';
import type { SqlDriver, SqlValue } from '../../src/adapters/sql/driver.js';
import { MAX_ROWS_PER_INSERT, MAX_SEQUENCE } from '../../src/adapters/sql/event-rows.js';
import { SqlEventLog } from '../../src/adapters/sql/sql-event-log.js';
import { SqlDurableEventStore } from '../../src/adapters/sql/sql-store.js';
import { journalConformanceChecks } from '../../src/conformance/checks-journal.js';
import { runStoreConformance, storeConformanceChecks } from '../../src/conformance/index.js';
import { EventSequence, FencingToken, RequestId, SessionId, WorkerId } from '../../src/protocol/ids.js';
import type { DurableEventDraft } from '../../src/protocol/events.js';
import { readAll, tempDir } from './helpers.js';

const tmp = tempDir();
const databases: Database.Database[] = [];
afterAll(() => {
  for (const db of databases) if (db.open) db.close();
  tmp.cleanup();
});

/** A real driver that records every statement (transactions as `BEGIN`). */
class RecordingDriver implements SqlDriver {
  readonly statements: string[] = [];
  constructor(readonly inner: SqlDriver) {}
  exec(sql: string, ...params: SqlValue[]): void {
    this.statements.push(sql);
    this.inner.exec(sql, ...params);
  }
  query<T>(sql: string, ...params: SqlValue[]): T[] {
    this.statements.push(sql);
    return this.inner.query<T>(sql, ...params);
  }
  transaction<T>(fn: () => T): T {
    this.statements.push('BEGIN');
    return this.inner.transaction(fn);
  }
}

function open(file = ':memory:'): { db: Database.Database; driver: RecordingDriver } {
  const db = new Database(file);
  databases.push(db);
  return { db, driver: new RecordingDriver(new BetterSqlite3Driver(db)) };
}

function markers(count: number, prefix: string): DurableEventDraft[] {
  return Array.from({ length: count }, (_, index) => ({
    type: 'request_completed' as const,
    requestId: RequestId('request-1'),
    data: { output: `${prefix}-${index}` },
  }));
}

const failSwitch = { armed: false };
afterEach(() => {
  failSwitch.armed = false;
});

function singleWriterStore(file: string): SqlDurableEventStore {
  const db = new Database(file);
  databases.push(db);
  return new SqlDurableEventStore(new BetterSqlite3Driver(db), {
    singleWriter: true,
    testHooks: {
      beforeCommit: () => {
        if (!failSwitch.armed) return;
        failSwitch.armed = false;
        throw new Error('injected commit failure');
      },
    },
  });
}

describe('a single-writer SQL store', () => {
  it('passes every store and journal conformance check', async () => {
    const file = tmp.file('single-writer.db');
    const result = await runStoreConformance<SqlDurableEventStore>({
      createStore: () => singleWriterStore(file),
      restart: () => {
        // The old connection closes first: there is only ever one writer.
        for (const db of databases) if (db.name === file && db.open) db.close();
        return singleWriterStore(file);
      },
      failNextCommit: () => {
        failSwitch.armed = true;
      },
      leaseTtlMs: 150,
      extraChecks: [...journalConformanceChecks],
    });
    expect(result.mode).toBe('durable');
    expect(result.skipped).toEqual([]);
    expect(result.checks.length).toBe(storeConformanceChecks.length + journalConformanceChecks.length);
  });
});

describe('SqlEventLog memory', () => {
  it('appends with a single INSERT once the session is known', () => {
    const { driver } = open();
    const ledger = new SqlEventLog(driver, { singleWriter: true });
    const sessionId = SessionId('warm');
    ledger.append(sessionId, markers(1, 'first'));
    for (const size of [1, 4, MAX_ROWS_PER_INSERT]) {
      driver.statements.length = 0;
      ledger.append(sessionId, markers(size, 'warm'));
      expect(driver.statements, driver.statements.join('\n')).toHaveLength(1);
      expect(driver.statements[0]).toMatch(/^INSERT INTO events/);
    }
    // A batch of more than one statement still takes a transaction.
    for (const size of [3, MAX_ROWS_PER_INSERT + 1]) {
      driver.statements.length = 0;
      ledger.append(sessionId, markers(size, 'big'));
      expect(driver.statements[0]).toBe('BEGIN');
      expect(driver.statements.filter((sql) => sql.startsWith('INSERT INTO events'))).toHaveLength(2);
    }
    expect(ledger.getHeadSequence(sessionId)).toBe(1 + 1 + 4 + MAX_ROWS_PER_INSERT + 3 + MAX_ROWS_PER_INSERT + 1);
    // Without single-writer mode, every append reads the head and lease inside a transaction.
    const plain = new SqlEventLog(driver);
    driver.statements.length = 0;
    plain.append(sessionId, markers(1, 'plain'));
    expect(driver.statements[0]).toBe('BEGIN');
    expect(driver.statements.some((sql) => sql.includes('MAX(position)'))).toBe(true);
  });

  it('forgets after a failed commit and keeps the sequence contiguous', () => {
    const { driver } = open();
    let fail = false;
    const ledger = new SqlEventLog(driver, {
      singleWriter: true,
      testHooks: {
        beforeCommit: () => {
          if (fail) throw new Error('injected');
        },
      },
    });
    const sessionId = SessionId('fail');
    ledger.append(sessionId, markers(2, 'a'));
    fail = true;
    expect(() => ledger.append(sessionId, markers(2, 'lost'))).toThrow(expect.objectContaining({ code: 'DURABLE_EVENT_WRITE_FAILED' }));
    fail = false;
    driver.statements.length = 0;
    const result = ledger.append(sessionId, markers(1, 'b'));
    expect(result.previousSequence).toBe(2);
    expect(driver.statements.some((sql) => sql.includes('MAX(position)'))).toBe(true);
  });

  it('forgets what a rolled-back outer transaction wrote', () => {
    const { driver } = open();
    const ledger = new SqlEventLog(driver, { singleWriter: true });
    const sessionId = SessionId('outer');
    const fence = { leaseId: 'lease-1', ownerId: WorkerId('w-1'), fencingToken: FencingToken(1) };
    ledger.append(sessionId, markers(2, 'kept'));
    const lease = ledger.acquireExecutionLease(sessionId, { ownerId: fence.ownerId, leaseId: fence.leaseId, ttlMs: 60_000 });
    expect(() =>
      ledger.driver.transaction(() => {
        ledger.append(sessionId, markers(3, 'rolled-back'), { executionFence: fence });
        ledger.releaseExecutionLease(sessionId, fence);
        throw new Error('outer failure');
      }),
    ).toThrow('outer failure');
    // The truth is read again: two events, and the lease still active.
    expect(ledger.getHeadSequence(sessionId)).toBe(2);
    expect(ledger.inspectExecutionLease(sessionId)).toEqual(lease);
    const next = ledger.append(sessionId, markers(1, 'after'), { executionFence: fence });
    expect(next.events[0]?.sequence).toBe(3);
  });
});

describe('the events layout', () => {
  it('stores batches of every size around the statement boundaries contiguously', async () => {
    const { db } = open(tmp.file('sizes.db'));
    const store = new SqlDurableEventStore(new BetterSqlite3Driver(db));
    const sessionId = SessionId('sizes');
    const sizes = [1, 2, MAX_ROWS_PER_INSERT - 1, MAX_ROWS_PER_INSERT, MAX_ROWS_PER_INSERT + 1, 2 * MAX_ROWS_PER_INSERT + 3, 1000];
    let expected = 0;
    for (const size of sizes) {
      const result = await store.append(sessionId, markers(size, `s${size}`));
      expect(result.previousSequence).toBe(expected === 0 ? null : expected);
      expected += size;
      expect(result.lastSequence).toBe(expected);
    }
    const events = await readAll(store, sessionId);
    expect(events.map((event) => event.sequence)).toEqual(Array.from({ length: expected }, (_, index) => index + 1));
    expect(events.at(-1)?.data).toEqual({ output: 's1000-999' });
  });

  it('keeps each session in its own position range, readable by column', async () => {
    const { db } = open(tmp.file('sessions.db'));
    const store = new SqlDurableEventStore(new BetterSqlite3Driver(db));
    for (let round = 0; round < 3; round++) {
      await store.append(SessionId('alpha'), markers(2, `a${round}`));
      await store.append(SessionId('beta'), markers(1, `b${round}`));
    }
    expect((await readAll(store, SessionId('alpha'))).map((event) => event.data)).toEqual(
      [0, 1, 2].flatMap((round) => [{ output: `a${round}-0` }, { output: `a${round}-1` }]),
    );
    expect(await store.getHeadSequence(SessionId('beta'))).toBe(3);
    const rows = db
      .prepare(
        'SELECT k.session_id AS session, e.sequence AS sequence FROM events e JOIN session_keys k ON k.session_key = e.session_key ORDER BY e.position',
      )
      .all();
    expect(rows).toEqual([
      ...[1, 2, 3, 4, 5, 6].map((sequence) => ({ session: 'alpha', sequence })),
      ...[1, 2, 3].map((sequence) => ({ session: 'beta', sequence })),
    ]);
  });

  it(`refuses to pass sequence ${MAX_SEQUENCE} in a session`, async () => {
    const { db } = open(tmp.file('limit.db'));
    const store = new SqlDurableEventStore(new BetterSqlite3Driver(db));
    const sessionId = SessionId('full');
    const first = await store.append(sessionId, markers(1, 'first'));
    // Plant the session's last possible event (its body is only read by `read`, not by append).
    db.prepare('INSERT INTO events (position, body) SELECT (session_key << 32) + ?, ? FROM session_keys WHERE session_id = ?').run(
      MAX_SEQUENCE,
      JSON.stringify({ ...first.events[0], sequence: MAX_SEQUENCE }),
      sessionId,
    );
    expect(await store.getHeadSequence(sessionId)).toBe(EventSequence(MAX_SEQUENCE));
    await expect(store.append(sessionId, markers(1, 'over'))).rejects.toMatchObject({ code: 'DURABLE_EVENT_LIMIT_EXCEEDED' });
    // Another session is unaffected.
    await expect(store.append(SessionId('other'), markers(1, 'fine'))).resolves.toMatchObject({ lastSequence: 1 });
  });
});
