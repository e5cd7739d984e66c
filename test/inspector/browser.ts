/**
 * A real Chromium for the inspector tests, with no download at run time.
 *
 * 1. `@sparticuz/chromium` ships the browser inside the npm package; `executablePath()` extracts
 *    it to /tmp. Launched headless with its arguments plus `--no-sandbox`.
 * 2. Otherwise Debian's `/usr/bin/chromium` when it is installed.
 * If neither starts, this throws with both reasons: the test fails, it never skips.
 */
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import chromium from '@sparticuz/chromium';
import { chromium as playwright, type Browser } from 'playwright-core';
import { ROOT } from '../cli/helpers.js';

/** Where screenshots go (git-ignored). */
export const ARTIFACTS = path.join(ROOT, 'test-artifacts/inspector');

/** Launches a headless Chromium (see the module comment). */
export async function launchChromium(): Promise<Browser> {
  const failures: string[] = [];
  try {
    const executablePath = await chromium.executablePath();
    return await playwright.launch({ executablePath, args: [...chromium.args, '--no-sandbox'], headless: true, timeout: 60_000 });
  } catch (error) {
    failures.push(`@sparticuz/chromium: ${error instanceof Error ? error.message : String(error)}`);
  }
  const debian = '/usr/bin/chromium';
  if (existsSync(debian)) {
    try {
      return await playwright.launch({ executablePath: debian, args: ['--no-sandbox', '--headless=new'], headless: true, timeout: 60_000 });
    } catch (error) {
      failures.push(`${debian}: ${error instanceof Error ? error.message : String(error)}`);
    }
  } else failures.push(`${debian}: not installed`);
  throw new Error(`no Chromium could be started:\n${failures.join('\n')}`);
}

/** Path of a screenshot artifact (creates the directory). */
export function artifact(name: string): string {
  mkdirSync(ARTIFACTS, { recursive: true });
  return path.join(ARTIFACTS, name);
}
