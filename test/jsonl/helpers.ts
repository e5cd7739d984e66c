/**
 * Shared helpers of the JSONL store tests: temporary roots, a store with a commit-failure switch,
 * small drafts, and child processes running the fixtures in `fixtures/` through tsx.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { JsonlDurableEventStore, type JsonlDurableEventStoreOptions } from '../../src/advanced.js';
import type { DurableEventDraft, DurableEventEnvelope } from '../../src/protocol/events.js';
import { RequestId } from '../../src/protocol/ids.js';
import { tsChildArgs } from '../ts-child.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const repoRoot = path.resolve(here, '../..');

/** A fresh directory under the OS temp dir; removed by the returned cleanup. */
export function tempRoot(): { root: string; cleanup: () => void } {
  const root = mkdtempSync(path.join(os.tmpdir(), 'jsonl-store-'));
  return { root, cleanup: () => rmSync(root, { recursive: true, force: true }) };
}

/** A `request_started` draft tagged by its request ID, easy to find when read back. */
export function tagDraft(tag: string): DurableEventDraft<'request_started'> {
  return { type: 'request_started', requestId: RequestId(tag), data: {} };
}

/** The tag (request ID) of an event built by {@link tagDraft}. */
export function tagOf(event: DurableEventEnvelope): string {
  return 'requestId' in event ? event.requestId : '';
}

/** A JSONL store whose next commit can be made to fail through `testHooks.beforeCommit`. */
export function faultyStore(
  root: string,
  options: Omit<JsonlDurableEventStoreOptions, 'testHooks'> = {},
): { store: JsonlDurableEventStore; failNextCommit: () => void } {
  let failNext = false;
  const store = new JsonlDurableEventStore(root, {
    ...options,
    testHooks: {
      beforeCommit: () => {
        if (!failNext) return;
        failNext = false;
        throw new Error('injected commit failure');
      },
    },
  });
  return { store, failNextCommit: () => (failNext = true) };
}

/** Starts `test/jsonl/fixtures/<name>.ts` in a new Node process (through tsx). */
export function startFixture(name: string, args: string[]): ChildProcess {
  return spawn(process.execPath, [...tsChildArgs(path.join(here, 'fixtures', `${name}.ts`)), ...args], {
    cwd: repoRoot,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

/** Output and exit status of a finished child. */
export interface FixtureResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Collects a child's output until it exits. */
export function finished(child: ChildProcess): Promise<FixtureResult> {
  let stdout = '';
  let stderr = '';
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

/** Runs a fixture to completion and returns its output; throws when it exits non-zero. */
export async function runFixture(name: string, args: string[]): Promise<string> {
  const result = await finished(startFixture(name, args));
  if (result.code !== 0) {
    throw new Error(`fixture ${name} exited with ${String(result.code ?? result.signal)}: ${result.stderr}`);
  }
  return result.stdout;
}

/** Resolves when the child prints a line containing `marker` on stdout. */
export function waitForLine(child: ChildProcess, marker: string, timeoutMs = 10_000): Promise<void> {
  return new Promise((resolve, reject) => {
    let buffered = '';
    const timer = setTimeout(() => reject(new Error(`no "${marker}" from child within ${timeoutMs} ms`)), timeoutMs);
    const onData = (chunk: Buffer | string): void => {
      buffered += chunk.toString();
      if (buffered.includes(marker)) {
        clearTimeout(timer);
        child.stdout?.off('data', onData);
        resolve();
      }
    };
    child.stdout?.on('data', onData);
    child.on('exit', () => {
      clearTimeout(timer);
      reject(new Error(`child exited before printing "${marker}"`));
    });
  });
}
