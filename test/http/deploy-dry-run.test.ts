/**
 * `wrangler deploy --dry-run --outdir <tmp>` builds the Worker bundle and validates the config
 * without touching any Cloudflare account. The run is kept offline: no credentials, no metrics,
 * no `request.cf` download, and every proxy variable points at a closed local port so any
 * attempted outside request fails instead of leaving the machine.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const outdir = mkdtempSync(path.join(tmpdir(), 'agent-ledger-dry-run-'));

afterAll(() => {
  rmSync(outdir, { recursive: true, force: true });
});

function run(args: string[]): Promise<{ code: number | null; output: string }> {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    CLOUDFLARE_CF_FETCH_ENABLED: 'false',
    WRANGLER_SEND_METRICS: 'false',
    WRANGLER_HIDE_BANNER: 'true',
    HTTPS_PROXY: 'http://127.0.0.1:9',
    HTTP_PROXY: 'http://127.0.0.1:9',
    https_proxy: 'http://127.0.0.1:9',
    http_proxy: 'http://127.0.0.1:9',
    NO_PROXY: '',
    no_proxy: '',
  };
  for (const name of ['CLOUDFLARE_API_TOKEN', 'CLOUDFLARE_API_KEY', 'CLOUDFLARE_EMAIL', 'CLOUDFLARE_ACCOUNT_ID']) delete env[name];
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(ROOT, 'node_modules/wrangler/bin/wrangler.js'), ...args], {
      cwd: ROOT,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, output }));
  });
}

describe('wrangler deploy --dry-run', () => {
  it('bundles the Worker with its Durable Object binding, offline', async () => {
    const { code, output } = await run(['deploy', '--dry-run', '--outdir', outdir]);
    expect(code, output).toBe(0);
    expect(output).toContain('--dry-run: exiting now.');
    expect(output).toMatch(/env\.SESSIONS \(SessionObject\)\s+Durable Object/);
    const bundle = path.join(outdir, 'index.js');
    expect(existsSync(bundle)).toBe(true);
    const source = readFileSync(bundle, 'utf8');
    expect(source).toContain('SessionObject');
    expect(source).not.toMatch(/from\s+["']node:/);
  }, 60_000);
});
