/**
 * `agent-ledger verify` sees every kind of edit of stored events up to the checkpoint, on JSONL
 * lines and SQLite rows: a payload byte, an envelope field, an added, a removed and two reordered
 * events (renumbered so that sequences stay contiguous), and the last event removed. On SQLite
 * rows it also sees an edit of one row after the latest checkpoint, or in a session without one,
 * through the row's stored per-event digest. Each run is the CLI's `run()` on a real file, exiting 2
 * and naming the place. The PostgreSQL rows are in `test/postgres/verify-edits.test.ts`.
 *
 * On JSONL every edit is a session of its own in one directory, and one run of `verify` over the
 * whole directory reports them all. On SQLite (a run per session) `npm test` runs one edit of each
 * check (`editRunsOnEveryBackend`, `rowEditSessions` in ./verify-edits.ts); `npm run test:deep`
 * runs every edit there too.
 */
import Database from 'better-sqlite3';
import { copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { JsonlDurableEventStore } from '../../src/adapters/node/jsonl/jsonl-store.js';
import { sessionPaths } from '../../src/adapters/node/jsonl/session-paths.js';
import { SqliteDurableEventStore } from '../../src/adapters/node/sqlite/sqlite-store.js';
import type { DurableEventEnvelope } from '../../src/protocol/events.js';
import { SessionId } from '../../src/protocol/ids.js';
import { DEEP } from '../deep.js';
import { runCliInProcess, tempDir, type CliRun } from './helpers.js';
import {
  EARLY_CHECKPOINT,
  EDITABLE_EVENTS,
  editRunsOnEveryBackend,
  LOG_EDITS,
  ROW_EDITS,
  rowEditSessions,
  seedEditable,
  seedPastCheckpoint,
  type LogEdit,
  type RowEdit,
} from './verify-edits.js';

const sessionId = SessionId('edited');

/**
 * Rewrites the JSONL log of `session` under `root` after `edit`, as lines of as many events as
 * before, the last line taking what remains.
 */
function editJsonl(root: string, session: SessionId, edit: (events: DurableEventEnvelope[]) => DurableEventEnvelope[]): void {
  const file = sessionPaths(root, session).log;
  const batches = readFileSync(file, 'utf8')
    .split('\n')
    .slice(0, -1)
    .map((line) => JSON.parse(line) as DurableEventEnvelope[]);
  const events = edit(batches.flat());
  let text = '';
  let start = 0;
  for (const [index, batch] of batches.entries()) {
    const end = index === batches.length - 1 ? events.length : start + batch.length;
    text += `${JSON.stringify(events.slice(start, end))}\n`;
    start = end;
  }
  writeFileSync(file, text);
}

/** Rewrites the event rows of `file` after `edit`. */
function editSqlite(file: string, edit: (events: DurableEventEnvelope[]) => DurableEventEnvelope[]): void {
  const db = new Database(file);
  try {
    const key = (db.prepare('SELECT session_key FROM session_keys WHERE session_id = ?').get(sessionId) as { session_key: number }).session_key;
    const rows = db.prepare('SELECT body FROM events WHERE session_key = ? ORDER BY position').all(key) as { body: string }[];
    const events = edit(rows.map((row) => JSON.parse(row.body) as DurableEventEnvelope));
    db.transaction(() => {
      db.prepare('DELETE FROM events WHERE session_key = ?').run(key);
      const insert = db.prepare('INSERT INTO events (position, body) VALUES ((? << 32) + ?, ?)');
      for (const event of events) insert.run(key, event.sequence, JSON.stringify(event));
    })();
  } finally {
    db.close();
  }
}

/** The lines `verify` printed for each session of a run over a whole store, by session ID. */
function sections(stdout: string): Map<string, string> {
  const found = new Map<string, string>();
  let current: string | undefined;
  for (const line of stdout.split('\n')) {
    const head = /^(?:ok {5}|DEFECT ) (\S+): /.exec(line);
    if (head?.[1] !== undefined) current = head[1];
    if (current !== undefined) found.set(current, `${found.get(current) ?? ''}${line}\n`);
  }
  return found;
}

describe('verify sees every edit of stored events', () => {
  let dir: string;
  /** One session per edit (`edit-<index>`) and one rewritten unchanged, in one directory. */
  let jsonlRoot: string;
  /** The log of `unchanged` as the store wrote it, before it was rewritten. */
  let unchangedLog: Buffer;
  /** `verify` over the whole JSONL directory. */
  let jsonlRun: CliRun;
  let jsonlSections: Map<string, string>;
  let sqliteSeeded: string;

  /** A fresh copy of the seeded SQLite store, edited: its URL for the CLI. */
  function sqliteEdited(label: string, edit: LogEdit['apply']): string {
    const file = path.join(dir, `sqlite-${label}.db`);
    copyFileSync(sqliteSeeded, file);
    editSqlite(file, edit);
    return `sqlite:${file}`;
  }

  beforeAll(async () => {
    dir = tempDir('agent-ledger-verify-edits-');
    jsonlRoot = path.join(dir, 'jsonl');
    const jsonl = new JsonlDurableEventStore(jsonlRoot);
    const edits: [SessionId, LogEdit['apply']][] = [[SessionId('unchanged'), (events) => events], ...LOG_EDITS.map((edit, index) => [SessionId(`edit-${index}`), edit.apply] as [SessionId, LogEdit['apply']])];
    for (const [session] of edits) await seedEditable(jsonl, session);
    await jsonl.close();
    unchangedLog = readFileSync(sessionPaths(jsonlRoot, SessionId('unchanged')).log);
    for (const [session, apply] of edits) editJsonl(jsonlRoot, session, apply);
    sqliteSeeded = path.join(dir, 'seeded.db');
    const sqlite = new SqliteDurableEventStore(sqliteSeeded);
    await seedEditable(sqlite, sessionId);
    await sqlite.close();
    jsonlRun = await runCliInProcess(['verify', `jsonl:${jsonlRoot}`]);
    jsonlSections = sections(jsonlRun.stdout);
  }, 60_000);

  it('rewriting the stored events unchanged leaves them byte for byte, and verify passes', async () => {
    const unchanged = jsonlSections.get('unchanged') ?? '';
    expect(unchanged, jsonlRun.stdout).toContain(`ok      unchanged: ${EDITABLE_EVENTS} events`);
    expect(unchanged).toContain(`checkpoint at sequence ${EDITABLE_EVENTS} matches the log`);
    expect(readFileSync(sessionPaths(jsonlRoot, SessionId('unchanged')).log)).toEqual(unchangedLog);
    const result = await runCliInProcess(['verify', sqliteEdited('unchanged', (events) => events), sessionId]);
    expect(result.code, `SQLite rows: ${result.stdout}`).toBe(0);
    expect(result.stdout).toContain(`ok      ${sessionId}: ${EDITABLE_EVENTS} events`);
    expect(result.stdout).toContain(`checkpoint at sequence ${EDITABLE_EVENTS} matches the log`);
  }, 60_000);

  for (const [index, edit] of LOG_EDITS.entries()) {
    it(`${edit.name}: exit 2, naming the place`, async () => {
      expect(jsonlRun.code, `JSONL lines: ${jsonlRun.stdout}${jsonlRun.stderr}`).toBe(2);
      const section = jsonlSections.get(`edit-${index}`) ?? '';
      expect(section, `JSONL lines: ${jsonlRun.stdout}`).toMatch(/^DEFECT /);
      expect(section, 'JSONL lines').toMatch(edit.place);
      if (!editRunsOnEveryBackend(edit, DEEP)) return;
      const result = await runCliInProcess(['verify', sqliteEdited(`edit-${index}`, edit.apply), sessionId]);
      expect(result.code, `SQLite rows: ${result.stdout}${result.stderr}`).toBe(2);
      expect(result.stdout, 'SQLite rows').toMatch(edit.place);
    }, 60_000);
  }
});

/** Rewrites the body of one event row of `file` in place (its digest column kept). */
function editSqliteRow(file: string, session: SessionId, edit: RowEdit): void {
  const db = new Database(file);
  try {
    const key = (db.prepare('SELECT session_key FROM session_keys WHERE session_id = ?').get(session) as { session_key: number }).session_key;
    const position = db.prepare('SELECT (? << 32) + ? AS position').get(key, edit.sequence) as { position: number };
    const row = db.prepare('SELECT body FROM events WHERE position = ?').get(position.position) as { body: string };
    const changed = db.prepare('UPDATE events SET body = ? WHERE position = ?').run(JSON.stringify(edit.apply(JSON.parse(row.body) as DurableEventEnvelope)), position.position);
    if (changed.changes !== 1) throw new Error('no row changed');
  } finally {
    db.close();
  }
}

describe('verify sees an edit of an SQLite row after the latest checkpoint, through its per-event digest', () => {
  const late = SessionId('late-checkpoint');
  const none = SessionId('no-checkpoint');
  let dir: string;
  let seeded: string;

  beforeAll(async () => {
    dir = tempDir('agent-ledger-verify-rows-');
    seeded = path.join(dir, 'seeded.db');
    const store = new SqliteDurableEventStore(seeded);
    await seedPastCheckpoint(store, late, true);
    await seedPastCheckpoint(store, none, false);
    await store.close();
  }, 60_000);

  it('unedited: verify passes and says which events the digests cover', async () => {
    for (const session of [late, none]) {
      const result = await runCliInProcess(['verify', `sqlite:${seeded}`, session]);
      expect(result.code, result.stdout + result.stderr).toBe(0);
      expect(result.stdout).toContain(`per-event digests match for events 1-${EDITABLE_EVENTS}`);
      if (session === late) expect(result.stdout).toContain(`checkpoint at sequence ${EARLY_CHECKPOINT} matches the log`);
    }
  }, 60_000);

  for (const [index, edit] of ROW_EDITS.entries()) {
    const sessions = rowEditSessions(index, DEEP).map((checkpoint) => (checkpoint ? late : none));
    const where = sessions.map((session) => (session === late ? 'after the checkpoint' : 'without a checkpoint')).join(' and ');
    it(`${edit.name}: exit 2 naming the sequence, ${where}`, async () => {
      for (const session of sessions) {
        const file = path.join(dir, `row-${index}-${session}.db`);
        copyFileSync(seeded, file);
        editSqliteRow(file, session, edit);
        const result = await runCliInProcess(['verify', `sqlite:${file}`, session]);
        expect(result.code, `${session}: ${result.stdout}${result.stderr}`).toBe(2);
        expect(result.stdout, session).toMatch(edit.place);
      }
    }, 60_000);
  }

  it('rows written without a digest (as before schema version 5) are a note, not a defect', async () => {
    const file = path.join(dir, 'no-digests.db');
    copyFileSync(seeded, file);
    const db = new Database(file);
    db.prepare('UPDATE events SET digest = NULL').run();
    db.close();
    const result = await runCliInProcess(['verify', `sqlite:${file}`, none]);
    expect(result.code, result.stdout + result.stderr).toBe(0);
    expect(result.stdout).toContain(`events 1-${EDITABLE_EVENTS} have no stored per-event digest`);
  }, 60_000);

  it('a row without a digest after rows with one (written around the store) is a defect', async () => {
    const file = path.join(dir, 'late-null.db');
    copyFileSync(seeded, file);
    const db = new Database(file);
    const key = (db.prepare('SELECT session_key FROM session_keys WHERE session_id = ?').get(none) as { session_key: number }).session_key;
    db.prepare('UPDATE events SET digest = NULL WHERE position = (? << 32) + 30').run(key);
    db.close();
    const result = await runCliInProcess(['verify', `sqlite:${file}`, none]);
    expect(result.code, result.stdout + result.stderr).toBe(2);
    expect(result.stdout).toMatch(/sequence 30: .*no stored digest/);
  }, 60_000);
});
