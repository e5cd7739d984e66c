/**
 * `agent-ledger verify` sees every kind of edit of stored events up to the checkpoint, on JSONL
 * lines and SQLite rows: a payload byte, an envelope field, an added, a removed and two reordered
 * events (renumbered so that sequences stay contiguous), and the last event removed. Each run is
 * the real binary on a real file, exiting 2 and naming the place. The PostgreSQL rows are in
 * `test/postgres/verify-edits.test.ts`.
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
import { EDITABLE_EVENTS, LOG_EDITS, seedEditable, type LogEdit } from './verify-edits.js';

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
