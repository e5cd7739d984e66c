/**
 * The built bin (`package.json` -> `bin.agent-ledger` -> `dist/cli/main.js`, produced by
 * `npm run build`, which `npm ci` runs through `prepare`): it starts with plain node, reads a real
 * store, rebuilds and audits a checkpoint (`checkpoint --rebuild`, `verify`), and serves the
 * JSX-rendered inspector page. A missing build fails this test, it does not skip it.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { builtCliExists, CLI_BUILT, ROOT, runCli, seed, spawnCli, tempDir } from './helpers.js';

describe('built bin', () => {
  let store: string;

  beforeAll(async () => {
    store = `jsonl:${path.join(tempDir(), 'data')}`;
    await seed(store, 'permission', 'built');
  }, 60_000);

  it('is what package.json declares, and it exists', () => {
    const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { bin?: Record<string, string> };
    expect(pkg.bin?.['agent-ledger']).toBe('./dist/cli/main.js');
    expect(builtCliExists(), `${CLI_BUILT} is missing: run npm run build`).toBe(true);
    expect(readFileSync(CLI_BUILT, 'utf8').startsWith('#!/usr/bin/env node')).toBe(true);
  });

  it('runs commands and serves the page with plain node', async () => {
    const help = await runCli(['--help'], {}, 'built');
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Usage: agent-ledger');
    const plan = await runCli(['plan', store, 'built', '--json'], {}, 'built');
    expect(plan.code).toBe(0);
    expect(JSON.parse(plan.stdout)).toMatchObject({ action: 'resolve_permissions' });
    // The checkpoint commands: rebuild one at the head, then verify's audit finds it matching.
    const rebuilt = await runCli(['checkpoint', store, 'built', '--rebuild', '--json'], {}, 'built');
    expect(rebuilt.code).toBe(0);
    expect(JSON.parse(rebuilt.stdout)).toMatchObject({ head: 12, rebuilt: { sequence: 12 } });
    const verify = await runCli(['verify', store, 'built', '--json'], {}, 'built');
    expect(verify.code).toBe(0);
    expect(JSON.parse(verify.stdout)).toMatchObject({ ok: true, sessions: [{ checkpoint: { sequence: 12, status: 'matches' } }] });
    const child = spawnCli(['serve', store, '--port', '0', '--page-token-env', 'T'], { T: 'built-bin-test-token-0123' }, 'built');
    try {
      let out = '';
      const url = await new Promise<string>((resolve, reject) => {
        child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
          out += chunk;
          const match = /on (http:\/\/127\.0\.0\.1:\d+)/.exec(out);
          if (match?.[1] !== undefined) resolve(match[1]);
        });
        child.once('exit', (code) => reject(new Error(`serve exited ${String(code)}`)));
      });
      const page = await fetch(`${url}/v1/sessions/built/inspect`, { headers: { cookie: 'agent_ledger_inspector=built-bin-test-token-0123' } });
      expect(page.status).toBe(200);
      expect(await page.text()).toContain('needs a person');
    } finally {
      child.kill('SIGTERM');
    }
  }, 60_000);
});
