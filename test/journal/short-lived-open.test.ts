/**
 * A short-lived process (a CLI call, a serverless invocation, a cron job) that opens a journal on
 * a long log without a checkpoint, closes its store and exits at once must leave a checkpoint
 * behind, so that the next such process folds only what came after it. Real files, real child
 * processes (`fixtures/open-and-exit.ts`), on JSONL and SQLite; the fold work is counted as the
 * events the store's reads returned, never timed.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { JsonlDurableEventStore } from '../../src/adapters/node/jsonl/jsonl-store.js';
import { SqliteDurableEventStore } from '../../src/adapters/node/sqlite/sqlite-store.js';
import type { DurableCheckpointOutcome } from '../../src/core/checkpoint/index.js';
import { SessionId } from '../../src/protocol/ids.js';
import { appendCycles } from '../checkpoint/lifecycle-log.js';
import { tsChildArgs } from '../ts-child.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const repoRoot = path.resolve(here, '../..');
const root = mkdtempSync(path.join(os.tmpdir(), 'short-lived-open-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** The checkpoint period the children open with (the policy's `everyEvents`). */
const PERIOD = 500;

type Backend = 'jsonl' | 'sqlite';
type ChildResult = { head: number; outcome: DurableCheckpointOutcome; eventsRead: number; writeErrors: string[] };

function open(backend: Backend, location: string): JsonlDurableEventStore | SqliteDurableEventStore {
  return backend === 'jsonl' ? new JsonlDurableEventStore(location) : new SqliteDurableEventStore(location, { busyTimeoutMs: 20_000 });
}

/** Runs one short-lived open in a child process and returns what it printed. */
function openInChild(backend: Backend, location: string, sessionId: string): Promise<ChildResult> {
  const child = spawn(
    process.execPath,
    [...tsChildArgs(path.join(here, 'fixtures', 'open-and-exit.ts')), backend, location, sessionId, String(PERIOD)],
    { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0) reject(new Error(`the child exited with ${String(code)}: ${stderr}`));
      else resolve(JSON.parse(stdout) as ChildResult);
    });
  });
}

async function storedCheckpoint(backend: Backend, location: string, sessionId: SessionId): Promise<number | null> {
  const store = open(backend, location);
  try {
    return (await store.readCheckpoint(sessionId))?.sequence ?? null;
  } finally {
    await store.close();
  }
}

describe.each<Backend>(['jsonl', 'sqlite'])('a short-lived open of a long log without a checkpoint (%s)', (backend) => {
  const location = backend === 'jsonl' ? path.join(root, 'jsonl') : path.join(root, 'store.sqlite');

  it('writes a checkpoint before the open returns when the tail was over the period; the next process folds only the tail', async () => {
    const sessionId = SessionId(`long-${backend}`);
    const setup = open(backend, location);
    // 2,001 events written by raw appends: no journal, no checkpoint (a log from another tool).
    const head = await appendCycles(setup, sessionId, 0, 400, 200);
    await setup.close();
    expect(await storedCheckpoint(backend, location, sessionId)).toBeNull();

    const first = await openInChild(backend, location, sessionId);
    expect(first).toEqual({ head, outcome: { status: 'none' }, eventsRead: head, writeErrors: [] });
    expect(await storedCheckpoint(backend, location, sessionId)).toBe(head);

    // The next process stands on that checkpoint: it reads the event at the checkpoint's sequence
    // to check its anchor, and once more as the refresh's anchor; nothing is folded.
    const second = await openInChild(backend, location, sessionId);
    expect(second).toEqual({ head, outcome: { status: 'used', sequence: head }, eventsRead: 2, writeErrors: [] });

    // A tail longer than the period after that checkpoint: the open folds it and moves the checkpoint.
    const more = open(backend, location);
    const newHead = await appendCycles(more, sessionId, 400, PERIOD / 5 + 20, 200);
    await more.close();
    const third = await openInChild(backend, location, sessionId);
    expect(third).toEqual({ head: newHead, outcome: { status: 'used', sequence: head }, eventsRead: 2 + (newHead - head), writeErrors: [] });
    expect(await storedCheckpoint(backend, location, sessionId)).toBe(newHead);

    // A tail shorter than the period: folded, and the checkpoint stays where it is (no write per open).
    const few = open(backend, location);
    const lastHead = await appendCycles(few, sessionId, 1000, 20, 200);
    await few.close();
    const fourth = await openInChild(backend, location, sessionId);
    expect(fourth).toEqual({ head: lastHead, outcome: { status: 'used', sequence: newHead }, eventsRead: 2 + (lastHead - newHead), writeErrors: [] });
    expect(await storedCheckpoint(backend, location, sessionId)).toBe(newHead);
  }, 120_000);
});
