/**
 * The read commands' answers at the edges, against real stores: `events` paging that ends exactly
 * at the head and `inspect` of a log that does not project (in this process), and `tail -f` on
 * SQLite (a child) following the appends of another process.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { SqliteDurableEventStore } from '../../src/adapters/node/sqlite/sqlite-store.js';
import { SessionId } from '../../src/protocol/ids.js';
import { linesOf, ROOT, runCliInProcess, seed, spawnCli, tempDir } from './helpers.js';
import { tsChildArgs } from '../ts-child.js';

let dir: string;
let jsonl: string;
let sqlite: string;

beforeAll(async () => {
  dir = tempDir('agent-ledger-read-');
  jsonl = `jsonl:${path.join(dir, 'data')}`;
  sqlite = `sqlite:${path.join(dir, 'ledger.db')}`;
  // 5 Requests of 8 events after session_created: 41 events.
  await Promise.all([seed(jsonl, 'long', 'five', 5), seed(sqlite, 'long', 'five', 5)]);
}, 120_000);

interface Page {
  events: { sequence: number }[];
  nextCursor: string | null;
  hasMore: boolean;
}

describe('events', () => {
  it('a page that ends at the head says there is no more, on JSONL and SQLite', async () => {
    for (const store of [jsonl, sqlite]) {
      const whole = await runCliInProcess(['events', store, 'five', '--limit', '41', '--json']);
      expect(whole.code, store).toBe(0);
      const page = JSON.parse(whole.stdout) as Page;
      expect(page.events).toHaveLength(41);
      expect({ hasMore: page.hasMore, nextCursor: page.nextCursor }, store).toEqual({ hasMore: false, nextCursor: null });
      expect((await runCliInProcess(['events', store, 'five', '--limit', '41'])).stdout, store).not.toContain('more:');
      // One short of the head: more, and the cursor leads to the last event and the end.
      const short = JSON.parse((await runCliInProcess(['events', store, 'five', '--limit', '40', '--json'])).stdout) as Page;
      expect(short.hasMore, store).toBe(true);
      const rest = JSON.parse((await runCliInProcess(['events', store, 'five', '--after', short.nextCursor ?? '', '--json'])).stdout) as Page;
      expect(rest, store).toMatchObject({ events: [{ sequence: 41 }], hasMore: false, nextCursor: null });
      // Filtered: the 5th request_completed is the last event.
      const typed = JSON.parse((await runCliInProcess(['events', store, 'five', '--type', 'request_completed', '--limit', '5', '--json'])).stdout) as Page;
      expect(typed, store).toMatchObject({ hasMore: false, nextCursor: null });
      expect(typed.events.at(-1)?.sequence, store).toBe(41);
    }
  }, 120_000);
});

describe('inspect', () => {
  it('exits 2 when the log does not project, printing the summary', async () => {
    const file = path.join(dir, 'broken.db');
    await seed(`sqlite:${file}`, 'long', 'broken', 1);
    const store = new SqliteDurableEventStore(file);
    // A valid envelope, an impossible lifecycle: a Turn of a Request that does not exist.
    await store.append(SessionId('broken'), [{ type: 'turn_started', requestId: 'ghost' as never, turnId: 'ghost-turn' as never, data: { turn: 1 } }]);
    store.close();
    const text = await runCliInProcess(['inspect', `sqlite:${file}`, 'broken']);
    expect(text.stdout).toContain('status    PROJECTION FAILED at sequence 10');
    expect(text.code).toBe(2);
    expect(text.stderr.trim().split('\n')).toEqual(['agent-ledger: the log of broken does not project (run verify)']);
    const json = await runCliInProcess(['inspect', `sqlite:${file}`, 'broken', '--json']);
    expect(json.code).toBe(2);
    expect(json.stderr).toBe('');
    expect(JSON.parse(json.stdout)).toMatchObject({ projectionFailure: { sequence: 10 } });
    const healthy = await runCliInProcess(['inspect', sqlite, 'five']);
    expect(healthy.code).toBe(0);
  }, 120_000);
});

describe('tail -f', () => {
  it("follows another process's appends to a SQLite store until the session closes", async () => {
    const file = path.join(dir, 'follow.db');
    await seed(`sqlite:${file}`, 'long', 'follow', 2);
    const tail = spawnCli(['tail', `sqlite:${file}`, 'follow', '-f', '-n', '2', '--json']);
    let stderr = '';
    tail.stderr?.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const exited = new Promise<number | null>((resolve) => tail.once('exit', resolve));
    const output = linesOf(tail);
    await output.waitFor(2);
    const writer = spawn(process.execPath, [...tsChildArgs(path.join(ROOT, 'test/cli/fixtures/append-and-close.ts')), `sqlite:${file}`, 'follow'], {
      cwd: ROOT,
      stdio: 'inherit',
    });
    expect(await new Promise((resolve) => writer.once('exit', resolve))).toBe(0);
    expect(await exited, stderr).toBe(0);
    const events = output.lines().map((line) => JSON.parse(line) as { sequence: number; type: string });
    expect(events.map((event) => event.sequence)).toEqual(Array.from({ length: 11 }, (_, index) => 16 + index));
    expect(events.at(-1)?.type).toBe('session_closed');
  }, 120_000);
});
