/**
 * Two real processes resume the same session at once, without an execution lease, over one JSONL
 * or SQLite store, with the same fixed clock and the same IDs: they build byte-identical
 * `tool_started` commands for a `non_idempotent` tool, and a file barrier releases their appends
 * together. The tool runs exactly once, in the process whose own append committed; the other
 * stops with `ExecutionStopped` (`superseded`) and writes nothing.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { projectDurableSession, SessionId } from '../../src/index.js';
import { createSession } from '../../src/session.js';
import { chargeRuns, openRaceStore, RACE_SESSION_ID, raceOptions, type RaceBackend } from './fixtures/race-agent.js';
import { crashAfter, readAll, types } from './helpers.js';
import { tsChildArgs } from '../ts-child.js';
import { sized } from '../deep.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const repoRoot = path.resolve(here, '../..');
const CHILD = path.join(here, 'fixtures', 'race-child.ts');
const root = mkdtempSync(path.join(tmpdir(), 'session-race-'));
/** Races per backend: each round is the same race from the same log; test:deep runs it again. */
const ROUNDS = sized(1, 2);
afterAll(() => rmSync(root, { recursive: true, force: true }));

interface ChildLine {
  name: string;
  outcome: 'completed' | 'stopped';
  result?: unknown;
  error?: { name: string; reason?: string; message: string };
}

function runChild(backend: RaceBackend, dir: string, name: string): Promise<ChildLine> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...tsChildArgs(CHILD), backend, dir, name, '2'], { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) => {
      const line = stdout.trim().split('\n').at(-1);
      if (code !== 0 || line === undefined || line === '') reject(new Error(`child ${name} exited ${String(code)}: ${stderr}`));
      else resolve(JSON.parse(line) as ChildLine);
    });
  });
}

/** The log stops after model_request_completed (k = 8): the non_idempotent tool is scheduled, not started. */
async function prepare(backend: RaceBackend, dir: string): Promise<void> {
  const store = openRaceStore(backend, dir);
  try {
    const session = await createSession({ ...raceOptions(dir, 'setup', 0), durableEventStore: crashAfter(store, 8) });
    await session.send('charge 5 dollars once');
    await session.whenIdle();
    expect(types(await readAll(store, RACE_SESSION_ID)).at(-1)).toBe('model_request_completed');
  } finally {
    await store.close();
  }
}

describe.each<RaceBackend>(['jsonl', 'sqlite'])('two processes race to start one non_idempotent tool (%s)', (backend) => {
  it('it runs once, in the process whose own append committed', { timeout: 120_000 }, async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const dir = path.join(root, `${backend}-${round}`);
      mkdirSync(dir, { recursive: true });
      await prepare(backend, dir);
      const lines = await Promise.all([runChild(backend, dir, 'a'), runChild(backend, dir, 'b')]);
      expect(chargeRuns(dir)).toHaveLength(1);
      const winners = lines.filter((line) => line.outcome === 'completed');
      const losers = lines.filter((line) => line.outcome === 'stopped');
      expect(winners).toHaveLength(1);
      expect(winners[0]?.result).toMatchObject({ status: 'completed', output: 'done' });
      expect(losers).toHaveLength(1);
      expect(losers[0]?.error).toMatchObject({ name: 'ExecutionStopped', reason: 'superseded' });
      // One execution, by the winner.
      expect(chargeRuns(dir)).toEqual([winners[0]?.name]);
      const store = openRaceStore(backend, dir);
      try {
        const events = await readAll(store, RACE_SESSION_ID);
        expect(types(events).filter((type) => type === 'tool_started')).toHaveLength(1);
        expect(new Set(events.map((event) => event.eventId)).size).toBe(events.length);
        const projected = await projectDurableSession(store, SessionId(RACE_SESSION_ID), { checkpoints: false });
        expect(projected.recoveryPlan.action).toBe('none');
      } finally {
        await store.close();
      }
    }
  });
});
