/**
 * A temporary directory for one test, removed when that test finishes (after its `afterEach`
 * hooks, pass or fail). Call it inside a test, not in `beforeAll`.
 *
 * @example
 * const dir = scratchDir('agent-ledger-start-');
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { onTestFinished } from 'vitest';

export function scratchDir(prefix: string): string {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}
