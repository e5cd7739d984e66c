/**
 * One SQLite file per session (SqliteSessionFilesStore) against the single-file layout, with a
 * process paused inside a write transaction (it took the file's write lock, then got SIGSTOP):
 * - single file: every append to an unrelated session of the same file fails with
 *   DURABLE_EVENT_LOCK_TIMEOUT once the busy timeout passes;
 * - one file per session: only the paused writer's session is blocked; unrelated sessions commit.
 * Plus the conformance suites (store, journal, subscription, lease handle, recovery, durability)
 * on the per-session layout, across a restart.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { SqliteDurableEventStore, SqliteSessionFilesStore } from '../../src/advanced.js';
import { markerDraft } from '../../src/conformance/fixtures.js';
import { journalConformanceChecks } from '../../src/conformance/checks-journal.js';
import { leaseHandleConformanceChecks } from '../../src/conformance/checks-lease-handle.js';
import { recoveryConformanceChecks } from '../../src/conformance/checks-recovery.js';
import { subscriptionConformanceChecks } from '../../src/conformance/checks-subscription.js';
import {
  durabilityConformanceChecks,
  durabilityWatchConformanceChecks,
  runStoreConformance,
  storeConformanceChecks,
  type DurabilityConformanceStore,
} from '../../src/conformance/index.js';
import { SessionId } from '../../src/protocol/ids.js';
import { tempDir } from './helpers.js';
import { tsChildArgs } from '../ts-child.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const tmp = tempDir('agent-ledger-session-files-');
const children: ChildProcess[] = [];
const stores: Array<{ close(): void }> = [];
afterEach(() => {
  for (const child of children.splice(0)) child.kill('SIGKILL');
  for (const store of stores.splice(0)) store.close();
});
afterAll(() => tmp.cleanup());

/** Starts a process that takes `file`'s write lock, and pauses it (SIGSTOP) once it holds it. */
async function pausedWriter(file: string): Promise<void> {
  const child = spawn(process.execPath, [...tsChildArgs(path.join(here, 'fixtures', 'hold-write-lock.ts')), file], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let stderr = '';
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  await new Promise<void>((resolve, reject) => {
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      if (chunk.includes('locked')) resolve();
    });
    child.on('exit', (code) => reject(new Error(`lock holder exited (${String(code)}): ${stderr}`)));
  });
  child.kill('SIGSTOP');
}

async function outcome(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
    return 'ok';
  } catch (error) {
    return String((error as { code?: unknown }).code);
  }
}

const BUSY_TIMEOUT_MS = 250;
const unrelated = Array.from({ length: 10 }, (_, index) => SessionId(`unrelated-${index}`));

describe('a process paused inside a write', () => {
  it('blocks every session of a single database file', async () => {
    const file = tmp.file('single.db');
    const store = new SqliteDurableEventStore(file, { busyTimeoutMs: BUSY_TIMEOUT_MS });
    stores.push(store);
    await store.append(SessionId('stuck'), [markerDraft('before')]);
    await pausedWriter(file);
    const results: string[] = [];
    for (const sessionId of unrelated) results.push(await outcome(store.append(sessionId, [markerDraft('x')])));
    expect(results).toEqual(unrelated.map(() => 'DURABLE_EVENT_LOCK_TIMEOUT'));
  });

  it('blocks only its own session with one file per session', async () => {
    const store = new SqliteSessionFilesStore(tmp.file('per-session'), { busyTimeoutMs: BUSY_TIMEOUT_MS });
    stores.push(store);
    const stuck = SessionId('stuck');
    await store.append(stuck, [markerDraft('before')]);
    await pausedWriter(store.fileOf(stuck));
    const results: string[] = [];
    for (const sessionId of unrelated) results.push(await outcome(store.append(sessionId, [markerDraft('x')])));
    expect(results).toEqual(unrelated.map(() => 'ok'));
    expect(await outcome(store.append(stuck, [markerDraft('blocked')]))).toBe('DURABLE_EVENT_LOCK_TIMEOUT');
    // Reads are not blocked by a writer (WAL).
    expect(await store.getHeadSequence(stuck)).toBe(1);
  });
});

describe('runStoreConformance against SqliteSessionFilesStore', () => {
  it('passes every suite as a durable store, with few connections open', async () => {
    const directory = tmp.file('conformance');
    const open = (): SqliteSessionFilesStore => {
      const store = new SqliteSessionFilesStore(directory, { maxOpenSessions: 8, watchPollIntervalMs: 10 });
      stores.push(store);
      return store;
    };
    const extraChecks = [
      ...journalConformanceChecks,
      ...subscriptionConformanceChecks,
      ...durabilityConformanceChecks,
      ...durabilityWatchConformanceChecks,
      ...leaseHandleConformanceChecks,
      ...recoveryConformanceChecks,
    ];
    const failures = [...storeConformanceChecks, ...extraChecks].filter((check) => check.requires?.includes('failNextCommit'));
    const result = await runStoreConformance<DurabilityConformanceStore>({
      createStore: open,
      restart: (old) => {
        (old as SqliteSessionFilesStore).close();
        return open();
      },
      leaseTtlMs: 150,
      skip: [{ reason: 'the per-session store has no fault hook', checks: failures.map((check) => check.name) }],
      extraChecks,
    });
    expect(result.mode).toBe('durable');
    expect(result.checks.length + result.skipped.length).toBe(storeConformanceChecks.length + extraChecks.length);
    expect(result.checks).toContain('read-pages-bounded-by-bytes');
    expect(result.checks).toContain('durability-survives-restart');
  });
});
