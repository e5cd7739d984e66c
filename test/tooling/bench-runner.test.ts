/**
 * `scripts/bench.mjs` runs benchmark files one by one through tsx, passes their output through,
 * keeps going after a failure and reports it in its exit code. Checked against the fixture
 * benchmarks in test/fixtures/bench (one TypeScript, one failing, one plain, one non-benchmark).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const FIXTURES = path.join(ROOT, 'test/fixtures/bench');

function runBench(...args: string[]): { status: number | null; stdout: string; stderr: string } {
  const result = spawnSync(process.execPath, ['scripts/bench.mjs', ...args], {
    cwd: ROOT,
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

describe('scripts/bench.mjs', () => {
  it('runs every benchmark in name order and fails when one fails', () => {
    const { status, stdout, stderr } = runBench(FIXTURES);

    expect(status).toBe(1);
    const order = ['typed bench ran', 'broken bench ran', 'plain bench ran'].map((line) => stdout.indexOf(line));
    expect(order.every((index) => index >= 0)).toBe(true);
    expect([...order].sort((a, b) => a - b)).toEqual(order);
    expect(stdout).not.toContain('helper must not run');
    expect(stdout).toContain('2 of 3 benchmarks passed');
    expect(stderr).toContain('b-broken.bench.mjs failed (exit code 3)');
  });

  it('succeeds when every selected benchmark succeeds', () => {
    const { status, stdout } = runBench(FIXTURES, 'plain');

    expect(status).toBe(0);
    expect(stdout).toContain('plain bench ran');
    expect(stdout).not.toContain('typed bench ran');
    expect(stdout).toContain('1 of 1 benchmarks passed');
  });

  it('says so when there is nothing to run', () => {
    const empty = mkdtempSync(path.join(tmpdir(), 'agent-ledger-bench-'));
    try {
      const { status, stdout } = runBench(empty);
      expect(status).toBe(0);
      expect(stdout.trim()).toBe('no benchmarks');
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });
});
