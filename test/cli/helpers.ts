/**
 * Helpers of the CLI and inspector tests: run the CLI in this process ({@link runCliInProcess}),
 * or the real binary as a child process ({@link runCli}, {@link spawnCli}) where the test is about
 * the process itself: its exit code, signals, a terminal, a SIGKILL, the native addons it loads.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { SessionId } from '../../src/protocol/ids.js';
import { tsChildArgs } from '../ts-child.js';
import { openSeedStore, seedForkable, seedLong, seedPermission } from './fixtures/seed.js';

/** Repository root. */
export const ROOT = path.resolve(import.meta.dirname, '../..');
/** The CLI's source entry. */
export const CLI_SOURCE = path.join(ROOT, 'src/cli/main.ts');
/** The built CLI (exists once the package has been built). */
export const CLI_BUILT = path.join(ROOT, 'dist/cli/main.js');

/** Result of one CLI run. */
export interface CliRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** A fresh temporary directory. */
export function tempDir(prefix = 'agent-ledger-cli-'): string {
  return mkdtempSync(path.join(tmpdir(), prefix));
}

/** Arguments that run the CLI from source (bundled once per test process, see test/ts-child.ts) or built. */
export function cliCommand(args: readonly string[], entry: 'source' | 'built' = 'source'): string[] {
  return entry === 'built' ? [CLI_BUILT, ...args] : [...tsChildArgs(CLI_SOURCE), ...args];
}

/** Starts the CLI; the caller owns the child. */
export function spawnCli(args: readonly string[], env: NodeJS.ProcessEnv = {}, entry: 'source' | 'built' = 'source'): ChildProcess {
  return spawn(process.execPath, cliCommand(args, entry), {
    cwd: ROOT,
    env: { ...process.env, NO_COLOR: '1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

/** Runs the CLI to completion. */
export function runCli(args: readonly string[], env: NodeJS.ProcessEnv = {}, entry: 'source' | 'built' = 'source'): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawnCli(args, env, entry);
    let stdout = '';
    let stderr = '';
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.once('error', reject);
    child.once('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

/**
 * Runs the CLI's `run()` in this process with buffers for stdout and stderr and `env` over this
 * process's environment. The commands, stores and output are the same code as the bin's; what a
 * child adds is a node start and a bundle load, about 0.25 s of CPU per run over a few hundred runs.
 * `signal` is always null.
 */
export async function runCliInProcess(args: readonly string[], env: NodeJS.ProcessEnv = {}): Promise<CliRun> {
  const { run } = await import('../../src/cli/main.js');
  let stdout = '';
  let stderr = '';
  const code = await run(args, {
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: (text: string) => (stderr += text) },
    env: { ...process.env, NO_COLOR: '1', ...env },
  });
  return { code, signal: null, stdout, stderr };
}

/**
 * Seeds `sessionId` in `store` with a scenario of `fixtures/seed.ts`, in this process: the same
 * store classes write the same events a child would, and the child (a node start and a bundle
 * load) bought nothing for a test of the CLI that reads the store afterwards.
 */
export async function seed(store: string, scenario: 'permission' | 'long' | 'forkable', sessionId: string, count?: number): Promise<void> {
  const opened = openSeedStore(store);
  try {
    const id = SessionId(sessionId);
    if (scenario === 'permission') await seedPermission(opened, id);
    else if (scenario === 'long') await seedLong(opened, id, count ?? 10);
    else await seedForkable(opened, id);
  } finally {
    await opened.close();
  }
}

/** Resolves once `child` printed `count` lines on stdout; rejects if it exits first. */
export function linesOf(child: ChildProcess): { lines: () => string[]; waitFor: (count: number) => Promise<void> } {
  let out = '';
  const lines = (): string[] => out.split('\n').filter((line) => line.length > 0);
  const waiters: { count: number; resolve: () => void; reject: (error: Error) => void }[] = [];
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    out += chunk;
    for (const waiter of waiters.splice(0)) {
      if (lines().length >= waiter.count) waiter.resolve();
      else waiters.push(waiter);
    }
  });
  child.once('exit', (code, signal) => {
    for (const waiter of waiters.splice(0)) waiter.reject(new Error(`exited (${String(code ?? signal)}) after ${lines().length} line(s)`));
  });
  return {
    lines,
    waitFor: (count) =>
      new Promise((resolve, reject) => {
        if (lines().length >= count) resolve();
        else if (child.exitCode !== null || child.signalCode !== null) reject(new Error(`exited (${String(child.exitCode ?? child.signalCode)})`));
        else waiters.push({ count, resolve, reject });
      }),
  };
}

/** A running `agent-ledger serve`. */
export interface ServeHandle {
  url: string;
  token: string;
  child: ChildProcess;
  stop(): Promise<void>;
}

/** Starts `agent-ledger serve <store> --port 0` with a known page token and waits for its URL. */
export async function startServe(store: string, token = 'inspector-test-token-0123456789'): Promise<ServeHandle> {
  const child = spawnCli(['serve', store, '--port', '0', '--page-token-env', 'INSPECTOR_TEST_TOKEN'], { INSPECTOR_TEST_TOKEN: token });
  let stdout = '';
  let stderr = '';
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
      const match = /on (http:\/\/127\.0\.0\.1:\d+)/.exec(stdout);
      if (match?.[1] !== undefined) resolve(match[1]);
    });
    child.once('exit', (code) => reject(new Error(`serve exited with ${String(code)}: ${stderr}`)));
  });
  return {
    url,
    token,
    child,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** True when the package has been built (`dist/cli/main.js` exists). */
export function builtCliExists(): boolean {
  return existsSync(CLI_BUILT);
}
