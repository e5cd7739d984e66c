/**
 * Controlled worker handoff between two real processes holding the execution lease, on SQLite.
 *
 * Worker A runs a Request whose idempotent tool records a durable step and keeps working; the test
 * asks A to `suspendForHandoff()`. A cancels the tool cooperatively, leaves the retry-safe tool
 * `started` (no outcome is known), writes no `turn_aborted` / `request_interrupted` /
 * `session_closed`, releases the lease and returns the plan. Worker B then acquires the next
 * fencing token at once (no waiting for expiry), resumes the Turn in place, marks its retry of
 * the tool (`tool_outcome_unknown`), and the tool's recorded step is replayed instead of executed
 * again.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { SqliteDurableEventStore } from '../../src/advanced.js';
import { SessionId } from '../../src/index.js';
import { readAll, types } from './helpers.js';
import { tsChildArgs } from '../ts-child.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const repoRoot = path.resolve(here, '../..');
const CHILD = path.join(here, 'fixtures', 'handoff-child.ts');
const root = mkdtempSync(path.join(tmpdir(), 'session-handoff-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

interface Worker {
  lines: Array<Record<string, unknown>>;
  waitFor(event: string): Promise<Record<string, unknown>>;
  send(line: string): void;
  exited: Promise<{ code: number | null; stderr: string }>;
}

function start(mode: 'source' | 'successor', dir: string): Worker {
  const child = spawn(process.execPath, [...tsChildArgs(CHILD), mode, dir], { cwd: repoRoot, stdio: ['pipe', 'pipe', 'pipe'] });
  const lines: Array<Record<string, unknown>> = [];
  const wakers = new Set<() => void>();
  let buffer = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    buffer += chunk;
    for (let newline = buffer.indexOf('\n'); newline >= 0; newline = buffer.indexOf('\n')) {
      lines.push(JSON.parse(buffer.slice(0, newline)) as Record<string, unknown>);
      buffer = buffer.slice(newline + 1);
    }
    for (const wake of [...wakers]) wake();
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  let closed = false;
  const exited = new Promise<{ code: number | null; stderr: string }>((resolve) =>
    child.on('close', (code) => {
      closed = true;
      for (const wake of [...wakers]) wake();
      resolve({ code, stderr });
    }),
  );
  return {
    lines,
    send: (line) => child.stdin.write(`${line}\n`),
    exited,
    waitFor: (event) =>
      new Promise((resolve, reject) => {
        const check = (): void => {
          const found = lines.find((line) => line['event'] === event);
          if (found !== undefined) {
            wakers.delete(check);
            resolve(found);
          } else if (closed) {
            wakers.delete(check);
            reject(new Error(`${mode} exited before printing ${event}: ${stderr}`));
          }
        };
        wakers.add(check);
        check();
      }),
  };
}

describe('suspendForHandoff between two processes with the lease', () => {
  it('source finalizes conservatively and releases the lease; the successor takes over with the next token', { timeout: 60_000 }, async () => {
    const dir = path.join(root, 'one');
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    const source = start('source', dir);
    const running = await source.waitFor('tool_running');
    expect(running['fencingToken']).toBe(1);
    source.send('handoff');
    const handedOff = await source.waitFor('handed_off');
    expect((await source.exited).code).toBe(0);
    expect(handedOff).toMatchObject({ action: 'resume_turn', request: 'ExecutionStopped', state: 'handed_off' });

    const store = new SqliteDurableEventStore(path.join(dir, 'store.db'));
    try {
      const atHandoff = await readAll(store, 'handoff-session');
      expect(handedOff['head']).toBe(atHandoff.length);
      expect(types(atHandoff).at(-1)).toBe('tool_started');
      for (const forbidden of ['turn_aborted', 'request_interrupted', 'session_closed']) expect(types(atHandoff)).not.toContain(forbidden);
      const lease = await store.inspectExecutionLease(SessionId('handoff-session'));
      expect(lease).toMatchObject({ ownerId: 'worker-a', released: true });

      writeFileSync(path.join(dir, 'go'), '');
      const successor = start('successor', dir);
      const running2 = await successor.waitFor('tool_running');
      expect(running2['fencingToken']).toBe(2);
      const done = await successor.waitFor('done');
      expect((await successor.exited).code).toBe(0);
      expect(done['result']).toMatchObject({ status: 'completed', output: 'job finished' });
      // The step recorded by the source is replayed, not executed again.
      expect(readFileSync(path.join(dir, 'parts.log'), 'utf8').trim().split('\n')).toEqual(['source']);
      const final = await readAll(store, 'handoff-session');
      const completed = final.find((event) => event.type === 'tool_completed');
      expect(completed?.type === 'tool_completed' && completed.data.result).toEqual({ parts: 2, finishedBy: 'successor' });
      // Two executions, two traces: the source's tool_started, the successor's retry mark.
      expect(types(final).slice(atHandoff.length, atHandoff.length + 2)).toEqual(['tool_outcome_unknown', 'tool_completed']);
      expect(types(final).slice(-3)).toEqual(['turn_completed', 'request_completed', 'session_closed']);
    } finally {
      store.close();
    }
  });
});
