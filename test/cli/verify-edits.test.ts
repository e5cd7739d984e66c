/**
 * `agent-ledger verify` sees every kind of edit of stored events up to the checkpoint, on JSONL
 * lines and SQLite rows: a payload byte, an envelope field, an added, a removed and two reordered
 * events (renumbered so that sequences stay contiguous), and the last event removed. On SQLite
 * rows it also sees an edit of one row after the latest checkpoint, or in a session without one,
 * through the row's stored per-event digest. Each run is the real binary on a real file, exiting 2
 * and naming the place. The PostgreSQL rows are in `test/postgres/verify-edits.test.ts`.
 */
import Database from 'better-sqlite3';
import { copyFileSync, cpSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { JsonlDurableEventStore } from '../../src/adapters/node/jsonl/jsonl-store.js';
import { sessionPaths } from '../../src/adapters/node/jsonl/session-paths.js';
import { SqliteDurableEventStore } from '../../src/adapters/node/sqlite/sqlite-store.js';
import type { DurableEventEnvelope } from '../../src/protocol/events.js';
import { SessionId } from '../../src/protocol/ids.js';
import { runCli, tempDir } from './helpers.js';
import { EARLY_CHECKPOINT, EDITABLE_EVENTS, LOG_EDITS, ROW_EDITS, seedEditable, seedPastCheckpoint, type LogEdit, type RowEdit } from './verify-edits.js';

const sessionId = SessionId('edited');

/**
 * Rewrites the JSONL log of `root` after `edit`, as lines of as many events as before, the last
 * line taking what remains.
 */
function editJsonl(root: string, edit: (events: DurableEventEnvelope[]) => DurableEventEnvelope[]): void {
  const file = sessionPaths(root, sessionId).log;
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

interface Backend {
  name: string;
  /** A fresh copy of the seeded store, edited: its URL for the CLI. */
  edited(label: string, edit: LogEdit['apply']): string;
}

describe('verify sees every edit of stored events', () => {
  const backends: Backend[] = [];
  let dir: string;

  beforeAll(async () => {
    dir = tempDir('agent-ledger-verify-edits-');
    const jsonlRoot = path.join(dir, 'jsonl');
    const jsonl = new JsonlDurableEventStore(jsonlRoot);
    await seedEditable(jsonl, sessionId);
    await jsonl.close();
    const sqliteFile = path.join(dir, 'seeded.db');
    const sqlite = new SqliteDurableEventStore(sqliteFile);
    await seedEditable(sqlite, sessionId);
    await sqlite.close();
    backends.push(
      {
        name: 'JSONL lines',
        edited: (label, edit) => {
          const root = path.join(dir, `jsonl-${label}`);
          cpSync(jsonlRoot, root, { recursive: true });
          editJsonl(root, edit);
          return `jsonl:${root}`;
        },
      },
      {
        name: 'SQLite rows',
        edited: (label, edit) => {
          const file = path.join(dir, `sqlite-${label}.db`);
          copyFileSync(sqliteFile, file);
          editSqlite(file, edit);
          return `sqlite:${file}`;
        },
      },
    );
  }, 60_000);

  it('rewriting the stored events unchanged leaves them byte for byte, and verify passes', async () => {
    for (const backend of backends) {
      const url = backend.edited('unchanged', (events) => events);
      const result = await runCli(['verify', url, sessionId]);
      expect(result.code, `${backend.name}: ${result.stdout}`).toBe(0);
      expect(result.stdout).toContain(`ok      ${sessionId}: ${EDITABLE_EVENTS} events`);
      expect(result.stdout).toContain(`checkpoint at sequence ${EDITABLE_EVENTS} matches the log`);
    }
    const root = path.join(dir, 'jsonl');
    expect(readFileSync(path.join(dir, 'jsonl-unchanged', path.relative(root, sessionPaths(root, sessionId).log)))).toEqual(
      readFileSync(sessionPaths(root, sessionId).log),
    );
  }, 60_000);

  for (const [index, edit] of LOG_EDITS.entries()) {
    it(`${edit.name}: exit 2, naming the place`, async () => {
      for (const backend of backends) {
        const url = backend.edited(`edit-${index}`, edit.apply);
        const result = await runCli(['verify', url, sessionId]);
        expect(result.code, `${backend.name}: ${result.stdout}${result.stderr}`).toBe(2);
        expect(result.stdout, backend.name).toMatch(edit.place);
      }
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
      const result = await runCli(['verify', `sqlite:${seeded}`, session]);
      expect(result.code, result.stdout + result.stderr).toBe(0);
      expect(result.stdout).toContain(`per-event digests match for events 1-${EDITABLE_EVENTS}`);
    }
    expect((await runCli(['verify', `sqlite:${seeded}`, late])).stdout).toContain(`checkpoint at sequence ${EARLY_CHECKPOINT} matches the log`);
  }, 60_000);

  for (const [index, edit] of ROW_EDITS.entries()) {
    it(`${edit.name}: exit 2 naming the sequence, after the checkpoint and without one`, async () => {
      for (const session of [late, none]) {
        const file = path.join(dir, `row-${index}-${session}.db`);
        copyFileSync(seeded, file);
        editSqliteRow(file, session, edit);
        const result = await runCli(['verify', `sqlite:${file}`, session]);
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
    const result = await runCli(['verify', `sqlite:${file}`, none]);
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
    const result = await runCli(['verify', `sqlite:${file}`, none]);
    expect(result.code, result.stdout + result.stderr).toBe(2);
    expect(result.stdout).toMatch(/sequence 30: .*no stored digest/);
  }, 60_000);
});
