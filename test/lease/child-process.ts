/**
 * Child processes for the cross-process lease tests: start `fixtures/lease-holder.ts` through tsx,
 * read its JSON lines as they arrive, wait for a given line, and tell when a process is stopped.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { tsChildArgs } from '../ts-child.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const repoRoot = path.resolve(here, '../..');

/** One line a holder printed. */
export type HolderLine = Record<string, unknown> & { event: string; owner: string };

/** A running holder and everything it printed so far. */
export interface Holder {
  child: ChildProcess;
  lines: HolderLine[];
  stderr: () => string;
  /** Resolves with the first line (already printed or future) matching `match`. */
  waitFor(match: (line: HolderLine) => boolean, what: string, timeoutMs?: number): Promise<HolderLine>;
  /** Resolves with the exit code and signal. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Starts a lease holder with `config` (see the fixture's `HolderConfig`). */
export function startHolder(config: Record<string, unknown>): Holder {
  const child = spawn(process.execPath, [...tsChildArgs(path.join(here, 'fixtures', 'lease-holder.ts')), JSON.stringify(config)], {
    cwd: repoRoot,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: HolderLine[] = [];
  const waiters = new Set<() => void>();
  let buffered = '';
  let stderr = '';
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    buffered += chunk;
    let newline = buffered.indexOf('\n');
    while (newline >= 0) {
      lines.push(JSON.parse(buffered.slice(0, newline)) as HolderLine);
      buffered = buffered.slice(newline + 1);
      newline = buffered.indexOf('\n');
    }
    for (const wake of [...waiters]) wake();
  });
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.on('close', (code, signal) => {
      for (const wake of [...waiters]) wake();
      resolve({ code, signal });
    });
  });
  let closed = false;
  void exited.then(() => (closed = true));
  return {
    child,
    lines,
    stderr: () => stderr,
    exited,
    waitFor(match, what, timeoutMs = 60_000) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => finish(new Error(`${what}: not within ${timeoutMs} ms; stderr: ${stderr}`)), timeoutMs);
        const check = (): void => {
          const found = lines.find(match);
          if (found !== undefined) finish(undefined, found);
          else if (closed) finish(new Error(`${what}: the holder exited first; stderr: ${stderr}`));
        };
        function finish(error?: Error, line?: HolderLine): void {
          clearTimeout(timer);
          waiters.delete(check);
          if (error !== undefined) reject(error);
          else resolve(line as HolderLine);
        }
        waiters.add(check);
        check();
      });
    },
  };
}

/** True when the process is stopped (Linux `/proc`); `undefined` where that cannot be read. */
export function isStopped(pid: number): boolean | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Field 3, after the parenthesised command name.
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    return state === 'T' || state === 't';
  } catch {
    return undefined;
  }
}
