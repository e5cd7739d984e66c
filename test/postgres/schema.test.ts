/**
 * Schema, migrations and the parts of PostgresDurableEventStore the conformance suites do not
 * reach: versioned migrations (concurrent openers, the printed script, `migrate: false`, a newer
 * schema refused), the unique key that refuses duplicate sequences whatever the isolation level,
 * the command-ID index, LISTEN/NOTIFY with its self-test and the polling fallback, the xid8 global
 * order, and the clear error when the `pg` package is missing.
 */
import { spawnSync } from 'node:child_process';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { markerDraft } from '../../src/conformance/fixtures.js';
import {
  POSTGRES_SCHEMA_VERSION,
  PostgresDurableEventStore,
  postgresMigrationSql,
  type PostgresGlobalEvent,
  type PostgresGlobalPage,
} from '../../src/postgres.js';
import type { DurableAppendNotice } from '../../src/core/store.js';
import { CommandId, SessionId } from '../../src/protocol/ids.js';
import { dropSchema, freshSchema, postgresUrl } from './helpers.js';

const url = postgresUrl();
const schemas: string[] = [];
const stores: PostgresDurableEventStore[] = [];
let admin: pg.Client;

function schemaFor(label: string): string {
  const schema = freshSchema(label);
  schemas.push(schema);
  return schema;
}

async function open(schema: string, options: Partial<Parameters<typeof PostgresDurableEventStore.open>[0]> = {}): Promise<PostgresDurableEventStore> {
  const store = await PostgresDurableEventStore.open({ connectionString: url, schema, poolSize: 3, ...options });
  stores.push(store);
  return store;
}

beforeAll(async () => {
  admin = new pg.Client({ connectionString: url });
  admin.on('error', () => undefined);
  await admin.connect();
});
afterAll(async () => {
  for (const store of stores) await store.close();
  await admin.end();
  for (const schema of schemas) await dropSchema(url, schema);
});

async function eventually(condition: () => boolean | Promise<boolean>, what: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('PostgreSQL schema and migrations', () => {
  it('migrates once when several stores open a fresh schema at the same time', async () => {
    const schema = schemaFor('migrate');
    const opened = await Promise.all(Array.from({ length: 4 }, () => open(schema)));
    expect(opened).toHaveLength(4);
    const versions = await admin.query<{ version: number }>(`SELECT version FROM "${schema}".schema_migrations ORDER BY version`);
    expect(versions.rows.map((row) => row.version)).toEqual(Array.from({ length: POSTGRES_SCHEMA_VERSION }, (_, i) => i + 1));
    expect(await opened[0]?.migrate()).toBe(0);
  });

  it('prints the migrations as one script a DBA can apply, then opens with migrate: false', async () => {
    const schema = schemaFor('printed');
    const script = postgresMigrationSql({ schema });
    expect(script).toContain(`CREATE TABLE "${schema}".events`);
    expect(script.trim().startsWith('BEGIN;')).toBe(true);
    await admin.query(script);
    const store = await open(schema, { migrate: false });
    const result = await store.append(SessionId('printed'), [markerDraft('x')], { expectedLastSequence: null });
    expect(result.lastSequence).toBe(1);
  });

  it('refuses to open a schema that is behind (migrate: false) or ahead of this release', async () => {
    const behind = schemaFor('behind');
    await expect(open(behind, { migrate: false })).rejects.toMatchObject({ code: 'DURABLE_EVENT_UNAVAILABLE' });
    const ahead = schemaFor('ahead');
    await open(ahead);
    await admin.query(`INSERT INTO "${ahead}".schema_migrations (version, description) VALUES ($1, 'from the future')`, [
      POSTGRES_SCHEMA_VERSION + 1,
    ]);
    await expect(open(ahead)).rejects.toMatchObject({ code: 'DURABLE_EVENT_UNAVAILABLE' });
  });

  it('refuses a duplicate sequence in the table itself, at any isolation level', async () => {
    const schema = schemaFor('unique');
    const store = await open(schema);
    await store.append(SessionId('dup'), [markerDraft('one')]);
    for (const level of ['READ COMMITTED', 'REPEATABLE READ', 'SERIALIZABLE']) {
      await admin.query(`BEGIN ISOLATION LEVEL ${level}`);
      await expect(
        admin.query(`INSERT INTO "${schema}".events (session_id, sequence, body) VALUES ('dup', 1, '{}')`),
      ).rejects.toMatchObject({ code: '23505' });
      await admin.query('ROLLBACK');
    }
  });

  it('indexes command IDs and finds a command through the index', async () => {
    const schema = schemaFor('commands');
    const store = await open(schema);
    const sessionId = SessionId('commands');
    await store.append(sessionId, [markerDraft('a')]);
    await store.append(sessionId, [
      { ...markerDraft('b'), commandId: CommandId('cmd-1') },
      { ...markerDraft('c'), commandId: CommandId('cmd-1') },
    ]);
    expect(await store.findCommand(sessionId, CommandId('cmd-1'))).toEqual({ firstSequence: 2, lastSequence: 3, eventCount: 2 });
    expect(await store.findCommand(sessionId, CommandId('cmd-2'))).toBeNull();
    const indexes = await admin.query<{ indexdef: string }>('SELECT indexdef FROM pg_indexes WHERE schemaname = $1', [schema]);
    expect(indexes.rows.some((row) => row.indexdef.includes('(session_id, command_id)'))).toBe(true);
  });
});

describe('PostgreSQL watch', () => {
  it('passes the LISTEN self-test and wakes a watcher in another store through NOTIFY', async () => {
    const schema = schemaFor('notify');
    const writer = await open(schema);
    const reader = await open(schema, { pollIntervalMs: 300_000 });
    const sessionId = SessionId("notified 'quoted' \\ back");
    const heard: DurableAppendNotice[] = [];
    const stop = reader.watch(sessionId, (notice) => heard.push(notice));
    await eventually(() => reader.watchMode === 'notify', 'notify mode');
    const result = await writer.append(sessionId, [markerDraft('x')]);
    await eventually(() => heard.length === 1, 'a notice');
    expect(heard).toEqual([{ sessionId, lastSequence: result.lastSequence }]);
    stop();
    expect(reader.watchMode).toBe('idle');
  });

  it('still hears a write whose NOTIFY never came (safety poll while notifications flow)', async () => {
    const schema = schemaFor('safety');
    // A writer that sends no NOTIFY stands for one that died between its commit and its NOTIFY.
    const silent = await open(schema, { notify: false });
    const reader = await open(schema, { pollIntervalMs: 20 });
    const sessionId = SessionId('silent');
    const heard: DurableAppendNotice[] = [];
    const stop = reader.watch(sessionId, (notice) => heard.push(notice));
    await eventually(() => reader.watchMode === 'notify', 'notify mode');
    const result = await silent.append(sessionId, [markerDraft('x')]);
    await eventually(() => heard.length === 1, 'a notice from the safety poll');
    expect(heard).toEqual([{ sessionId, lastSequence: result.lastSequence }]);
    expect(reader.watchMode).toBe('notify');
    stop();
  });

  it('falls back to polling when notifications do not arrive', async () => {
    const schema = schemaFor('poll');
    const writer = await open(schema);
    // Nothing listens on port 9 of the loopback: the LISTEN connection fails, the store polls.
    const reader = await open(schema, { listenConnectionString: 'postgres://postgres@127.0.0.1:9/postgres', pollIntervalMs: 50 });
    const sessionId = SessionId('polled');
    const heard: DurableAppendNotice[] = [];
    const stop = reader.watch(sessionId, (notice) => heard.push(notice));
    await eventually(() => reader.watchMode === 'poll', 'poll mode');
    const result = await writer.append(sessionId, [markerDraft('x')]);
    await eventually(() => heard.length === 1, 'a notice from polling');
    expect(heard).toEqual([{ sessionId, lastSequence: result.lastSequence }]);
    stop();
  });
});

describe('PostgreSQL global order', () => {
  it('never skips a transaction that commits after a later one', async () => {
    const schema = schemaFor('global');
    const store = await open(schema);
    // Twelve single-event appends: positions 1..12 (past 9, so a text sort would misorder them).
    for (let i = 0; i < 12; i++) await store.append(SessionId('g-a'), [markerDraft(`a${i}`)]);
    // A slow writer takes a position first and commits last.
    const slow = new pg.Client({ connectionString: url });
    slow.on('error', () => undefined);
    await slow.connect();
    let first: PostgresGlobalPage = { events: [], nextPosition: 0 };
    try {
      await slow.query('BEGIN');
      await slow.query(
        `INSERT INTO "${schema}".events (session_id, sequence, body) VALUES ('g-slow', 1, $1::json)`,
        [JSON.stringify({ placeholder: true })],
      );
      await store.append(SessionId('g-b'), [markerDraft('b1')]);
      // The horizon is the oldest transaction still running anywhere on the server, and the other
      // files of this project share the server: one of their transactions may hold it below the
      // twelve appends for a while. Read until they show; b1 (a later position) stays behind the
      // open transaction all along.
      await eventually(async () => {
        first = await store.readGlobal({ after: 0 });
        expect(first.events.map((e) => e.event.sessionId)).not.toContain('g-b');
        return first.events.length >= 12;
      }, 'the twelve earlier appends', 30_000);
      expect(first.events.map((e) => e.event.sessionId)).toEqual(Array.from({ length: 12 }, () => 'g-a'));
      expect(first.events.map((e) => e.event.sequence)).toEqual(Array.from({ length: 12 }, (_, i) => i + 1));
      await slow.query('ROLLBACK');
    } finally {
      // An open transaction would also block the schema's DROP in afterAll.
      await slow.end();
    }
    const seen: PostgresGlobalEvent[] = [...first.events];
    // b1 shows once no transaction older than it runs on the server (see above).
    await eventually(async () => {
      const second = await store.readGlobal({ after: first.nextPosition });
      seen.push(...second.events);
      return second.events.length > 0;
    }, 'b1', 30_000);
    expect(seen.map((e) => e.event.sessionId)).toEqual([...Array.from({ length: 12 }, () => 'g-a'), 'g-b']);
    const positions = seen.map((e) => e.position);
    expect(positions).toEqual([...positions].sort((a, b) => a - b));
  });
});

describe('agent-ledger/postgres without pg', () => {
  it('names the missing package when it cannot be loaded', () => {
    const hooks = `data:text/javascript,${encodeURIComponent(
      "export async function resolve(s, c, n) { if (s === 'pg') { const e = new Error('Cannot find package pg'); e.code = 'ERR_MODULE_NOT_FOUND'; throw e; } return n(s, c); }",
    )}`;
    const register = `data:text/javascript,${encodeURIComponent(`import { register } from 'node:module'; register(${JSON.stringify(hooks)});`)}`;
    const script =
      "const { PostgresDurableEventStore } = await import('./src/postgres.ts');" +
      "try { await PostgresDurableEventStore.open({ connectionString: 'postgres://x@127.0.0.1:9/x' }); } catch (e) { console.log(e.code + ' ' + e.message); }";
    const child = spawnSync(process.execPath, ['--import', register, '--import', 'tsx', '--input-type=module', '-e', script], {
      encoding: 'utf8',
      cwd: new URL('../../', import.meta.url).pathname,
    });
    expect(child.stdout).toContain("DURABLE_EVENT_UNAVAILABLE agent-ledger/postgres needs the 'pg' package");
  });
});

describe('a pool the caller owns', () => {
  it('uses a pg.Pool passed as `pool` and leaves it open on close', async () => {
    const pool = new pg.Pool({ connectionString: url, max: 2 });
    pool.on('error', () => undefined);
    const store = await PostgresDurableEventStore.open({ pool, schema: schemaFor('own_pool') });
    await store.append(SessionId('own-pool'), [markerDraft('x')], { expectedLastSequence: null });
    await store.close();
    const rows = await pool.query<{ n: string }>('SELECT 1::text AS n');
    expect(rows.rows[0]?.n).toBe('1');
    await pool.end();
  });
});

describe('contention on one session', () => {
  it('keeps sequences contiguous when several stores (own pools) append to one session at once', async () => {
    const schema = schemaFor('contention');
    const writers = await Promise.all(Array.from({ length: 6 }, () => open(schema)));
    const sessionId = SessionId('contended');
    // Unconditioned appends from six pools: most conditional writes find the row moved, retry on a
    // fresh read, and after four moves in a row take the row lock first.
    const results = await Promise.all(
      writers.flatMap((writer, w) => Array.from({ length: 15 }, (_, i) => writer.append(sessionId, [markerDraft(`w${w}-${i}`), markerDraft(`w${w}-${i}b`)]))),
    );
    const firsts = results.map((result) => (result.previousSequence ?? 0) + 1).sort((a, b) => a - b);
    expect(firsts).toEqual(Array.from({ length: 90 }, (_, i) => 1 + 2 * i));
    const page = await writers[0]?.read(sessionId, { limit: 1000 });
    expect(page?.events.map((event) => event.sequence)).toEqual(Array.from({ length: 180 }, (_, i) => i + 1));
    for (const result of results) {
      const [a, b] = result.events;
      expect(page?.events[result.lastSequence - 2]?.eventId).toBe(a?.eventId);
      expect(page?.events[result.lastSequence - 1]?.eventId).toBe(b?.eventId);
    }
  });
});
