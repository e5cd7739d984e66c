/**
 * `scripts/start.mjs` (`npm start`).
 *
 * The script works in its current directory, so each test runs it in a scratch directory:
 * the dry runs check `.dev.vars` handling and the printed hints without starting anything; the
 * last test starts the real `wrangler dev` (the scratch directory links to this repository's
 * `worker/` and `node_modules/`), calls /healthz, pastes every printed `curl` line twice into bash
 * (the second paste must change nothing), stops it with SIGTERM and checks the exit.
 */
import { spawn, spawnSync } from 'node:child_process';
import { copyFileSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { scratchDir } from '../scratch-dir.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const START = path.join(ROOT, 'scripts/start.mjs');


function dryRun(cwd: string, env: Record<string, string> = {}) {
  const result = spawnSync(process.execPath, [START, '--dry-run'], {
    cwd,
    encoding: 'utf8',
    env: { ...process.env, PORT: '8799', ...env },
    timeout: 30_000,
  });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

function parseVars(text: string): Map<string, string> {
  const vars = new Map<string, string>();
  for (const line of text.split('\n')) {
    const match = /^([A-Z_]+)=(.*)$/.exec(line);
    if (match?.[1] !== undefined && match[2] !== undefined) vars.set(match[1], match[2]);
  }
  return vars;
}

describe('scripts/start.mjs --dry-run', () => {
  it('creates a private .dev.vars with fresh secrets and prints the admin token', () => {
    const dir = scratchDir('agent-ledger-start-');
    const { status, stdout } = dryRun(dir);
    expect(status).toBe(0);

    const file = path.join(dir, '.dev.vars');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const vars = parseVars(readFileSync(file, 'utf8'));
    const adminToken = vars.get('ADMIN_TOKEN');
    expect(adminToken).toMatch(/^[0-9a-f]{64}$/);
    expect(vars.get('TOKEN_SECRET')).toMatch(/^[0-9a-f]{64}$/);
    expect(vars.get('TOKEN_SECRET')).not.toBe(adminToken);

    expect(stdout).toContain(`Admin token: ${adminToken}`);
    expect(stdout).toContain('curl -s http://127.0.0.1:8799/healthz');
    expect(stdout).toContain('Talk to the demo agent in a browser: http://127.0.0.1:8799/ ');
    expect(stdout).toContain('dev --ip 127.0.0.1 --port 8799');
    // The demo viewer reads PORT too: the line to paste names the port the server listens on.
    expect(stdout).toContain('  PORT=8799 node scripts/agent-demo.mjs ');
  });

  it('keeps an existing .dev.vars untouched', () => {
    const dir = scratchDir('agent-ledger-start-');
    const file = path.join(dir, '.dev.vars');
    const content = 'ADMIN_TOKEN="kept-token"\nTOKEN_SECRET=kept-secret\n';
    writeFileSync(file, content, { mode: 0o600 });

    const { status, stdout } = dryRun(dir);
    expect(status).toBe(0);
    expect(readFileSync(file, 'utf8')).toBe(content);
    expect(stdout).toContain('Admin token: kept-token');
  });

  it('rejects a PORT that is not a port number', () => {
    const { status, stderr } = dryRun(scratchDir('agent-ledger-start-'), { PORT: '80; rm -rf /' });
    expect(status).toBe(2);
    expect(stderr).toContain('PORT must be a port number');
  });
});

/** The `curl` lines `npm start` printed, continuation lines joined. */
function printedCurlCommands(output: string): string[] {
  const joined = output.replace(/\\\n\s*/g, ' ');
  return joined
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line.startsWith('curl '));
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no TCP address');
  return address.port;
}

/**
 * Polls `url` until it answers; returns the status and the parsed body. The body is read inside the
 * attempt: the attempt's timeout also covers the body, which on a loaded machine can arrive after
 * the headers (reading it later let that timeout fail the test instead of retrying).
 */
async function fetchHealth(url: string, deadline: number): Promise<{ status: number; body: unknown }> {
  let lastError: unknown;
  while (Date.now() < deadline) {
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(10_000) });
      return { status: response.status, body: await response.json() };
    } catch (error) {
      lastError = error;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
  throw new Error(`no answer from ${url}`, { cause: lastError });
}

/** Sends `signal` to process group `pgid`; false when the group has no processes left. */
function signalGroup(pgid: number, signal: NodeJS.Signals | 0): boolean {
  try {
    process.kill(-pgid, signal);
    return true;
  } catch {
    return false;
  }
}

async function groupGone(pgid: number | undefined, deadline: number): Promise<boolean> {
  if (pgid === undefined) return true;
  while (Date.now() < deadline) {
    if (!signalGroup(pgid, 0)) return true;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return false;
}

describe('scripts/start.mjs (wrangler dev)', () => {
  it('serves /healthz on 127.0.0.1 and stops cleanly on SIGTERM', async () => {
    const dir = scratchDir('agent-ledger-start-');
    copyFileSync(path.join(ROOT, 'wrangler.toml'), path.join(dir, 'wrangler.toml'));
    copyFileSync(path.join(ROOT, 'package.json'), path.join(dir, 'package.json'));
    symlinkSync(path.join(ROOT, 'worker'), path.join(dir, 'worker'), 'dir');
    symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'), 'dir');
    const port = await freePort();

    let output = '';
    // Its own process group, so cleanup can reach wrangler and workerd if the script hangs.
    const child = spawn(process.execPath, [START], {
      cwd: dir,
      env: { ...process.env, PORT: String(port) },
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));

    try {
      const response = await fetchHealth(`http://127.0.0.1:${port}/healthz`, Date.now() + 45_000);
      expect(response.status).toBe(200);
      expect(response.body).toEqual({ ok: true, name: 'agent-ledger', protocol: 4 });
      // The chat page the script prints, with its CSP.
      const chat = await fetch(`http://127.0.0.1:${port}/`);
      expect(chat.status).toBe(200);
      expect(chat.headers.get('content-security-policy')).toContain("script-src 'self'");
      expect(await chat.text()).toContain('<script src="/chat/assets/chat.js" defer=""></script>');

      // Every printed example, pasted twice into a shell: the second paste changes nothing.
      const pasted = printedCurlCommands(output);
      expect(pasted.length).toBeGreaterThanOrEqual(4);
      const answers: Array<Array<{ status: string; body: string }>> = [];
      for (let round = 0; round < 2; round += 1) {
        answers.push(
          pasted.map((command) => {
            const result = spawnSync('bash', ['-c', `${command} -w '\\n%{http_code}'`], { encoding: 'utf8', timeout: 20_000 });
            const lines = result.stdout.trimEnd().split('\n');
            return { status: lines.at(-1) ?? '', body: lines.slice(0, -1).join('\n') };
          }),
        );
      }
      for (const round of answers) {
        for (const [index, answer] of round.entries()) expect(answer.status, `${pasted[index]}\n${answer.body}`).toMatch(/^2\d\d$/);
      }
      const commandIndex = pasted.findIndex((command) => command.includes('/commands'));
      expect(commandIndex).toBeGreaterThanOrEqual(0);
      expect(JSON.parse(answers[0]?.[commandIndex]?.body ?? '{}')).toMatchObject({ status: 'committed', headSequence: 1 });
      expect(JSON.parse(answers[1]?.[commandIndex]?.body ?? '{}')).toMatchObject({ status: 'replayed', headSequence: 1 });
      const eventsIndex = pasted.findIndex((command) => command.endsWith('/events'));
      expect((JSON.parse(answers[1]?.[eventsIndex]?.body ?? '{}') as { events: unknown[] }).events).toHaveLength(1);
      expect(output).toContain('rm -rf .wrangler/state');

      child.kill('SIGTERM');
      const code = await exited;
      expect(code, output).toBe(0);
      expect(output).not.toContain('ERROR');
      expect(await groupGone(child.pid, Date.now() + 10_000), 'wrangler or workerd outlived the script').toBe(true);
    } finally {
      if (child.pid !== undefined) signalGroup(child.pid, 'SIGKILL');
    }
  }, 120_000);
});
