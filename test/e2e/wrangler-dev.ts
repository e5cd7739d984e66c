/**
 * Starts and stops `wrangler dev` for end-to-end tests and benchmarks (Node side).
 *
 * 1. `startWranglerDev` picks a free port on 127.0.0.1, runs the repository's wrangler on a given
 *    config with `--persist-to <dir>` (so a restart on the same dir keeps Durable Object storage
 *    and alarms) and secrets passed as `--var`, in its OWN process group, offline (no telemetry,
 *    no update check, no `request.cf` download, no Cloudflare credentials).
 * 2. It resolves once `/healthz` answers, or rejects (after killing the group) at the deadline.
 * 3. `kill(signal)` signals the whole group — wrangler and its workerd child — and waits until no
 *    process of the group is left. Callers kill in `finally`, so nothing outlives a test. It also
 *    removes the bundle directories this instance left under `<config dir>/.wrangler/tmp` (a
 *    killed wrangler cannot clean up after itself).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const WRANGLER = path.join(ROOT, 'node_modules', 'wrangler', 'bin', 'wrangler.js');

/** A port that was free a moment ago on 127.0.0.1. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no TCP address');
  return address.port;
}

/** Options of {@link startWranglerDev}. */
export interface WranglerDevOptions {
  /** Wrangler config file (absolute, or relative to the repository root). */
  config: string;
  /** Directory for `--persist-to`. */
  persistTo: string;
  /** Plain-text bindings passed with `--var`. */
  vars: Readonly<Record<string, string>>;
  /** How long to wait for `/healthz` (default 60 s). */
  readyTimeoutMs?: number;
  /** Port on 127.0.0.1 (default a free one): a restart on the same port keeps a page's origin. */
  port?: number;
}

/** A running `wrangler dev`. */
export interface WranglerDev {
  readonly url: string;
  readonly port: number;
  /** Process group of wrangler and its workerd (to measure memory). */
  readonly pgid: number;
  /** Everything wrangler printed so far (for failure messages). */
  output(): string;
  /** Signals the whole process group and waits (bounded) until it is gone. */
  kill(signal?: NodeJS.Signals): Promise<void>;
}

function signalGroup(pgid: number, signal: NodeJS.Signals | 0): boolean {
  try {
    process.kill(-pgid, signal);
    return true;
  } catch {
    return false;
  }
}

async function waitGroupGone(pgid: number, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (!signalGroup(pgid, 0)) return true;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return !signalGroup(pgid, 0);
}

async function waitReady(url: string, child: ChildProcess, deadline: number): Promise<void> {
  let lastError: unknown;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error('wrangler dev exited before it was ready');
    try {
      const response = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(2_000) });
      await response.body?.cancel();
      if (response.ok) return;
    } catch (error) {
      lastError = error;
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`wrangler dev did not answer ${url}/healthz in time`, { cause: lastError });
}

function tmpEntries(dir: string): Set<string> {
  return new Set(existsSync(dir) ? readdirSync(dir) : []);
}

/** Starts `wrangler dev` (see the module header). */
export async function startWranglerDev(options: WranglerDevOptions): Promise<WranglerDev> {
  const configPath = path.resolve(ROOT, options.config);
  const tmpDir = path.join(path.dirname(configPath), '.wrangler', 'tmp');
  const before = tmpEntries(tmpDir);
  const port = options.port ?? (await freePort());
  const url = `http://127.0.0.1:${port}`;
  // Its own DevTools port: wrangler takes 9229 when it looks free, and two `wrangler dev` started
  // at once by files running side by side can both see it free (one then dies on bind).
  const inspectorPort = await freePort();
  const args = [
    WRANGLER,
    'dev',
    '--config',
    configPath,
    '--ip',
    '127.0.0.1',
    '--port',
    String(port),
    '--inspector-port',
    String(inspectorPort),
    '--persist-to',
    options.persistTo,
    '--show-interactive-dev-session=false',
    ...Object.entries(options.vars).flatMap(([name, value]) => ['--var', `${name}:${value}`]),
  ];
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    CLOUDFLARE_CF_FETCH_ENABLED: 'false',
    WRANGLER_SEND_METRICS: 'false',
    WRANGLER_HIDE_BANNER: 'true',
    CI: 'true',
  };
  for (const name of ['CLOUDFLARE_API_TOKEN', 'CLOUDFLARE_API_KEY', 'CLOUDFLARE_EMAIL', 'CLOUDFLARE_ACCOUNT_ID']) delete env[name];
  let output = '';
  const child = spawn(process.execPath, args, { cwd: ROOT, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const pgid = child.pid;
  if (pgid === undefined) throw new Error('wrangler dev did not start');
  const kill = async (signal: NodeJS.Signals = 'SIGKILL'): Promise<void> => {
    signalGroup(pgid, signal);
    if (!(await waitGroupGone(pgid, 10_000))) {
      signalGroup(pgid, 'SIGKILL');
      await waitGroupGone(pgid, 5_000);
    }
    for (const entry of tmpEntries(tmpDir)) {
      if (!before.has(entry)) rmSync(path.join(tmpDir, entry), { recursive: true, force: true });
    }
  };
  try {
    await waitReady(url, child, Date.now() + (options.readyTimeoutMs ?? 60_000));
  } catch (error) {
    await kill();
    throw new Error(`${String(error)}\n--- wrangler output ---\n${output.slice(-4000)}`, { cause: error });
  }
  return { url, port, pgid, output: () => output, kill };
}
