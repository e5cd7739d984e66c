/**
 * The chat page across a kill -9 of `wrangler dev`, in Chromium: the conversation finishes by
 * itself, and the page says what happened.
 *
 * The server is the end-to-end fixture Worker under `wrangler dev` (test/e2e/fixtures/
 * wrangler.e2e.toml: the edge test agent, whose sessions with `-auto-` in their ID use
 * `EDGE_AUTO_RECOVERY_POLICY`, as the demo agent of `npm start` does). Its `hang-once` answer
 * streams "Partial " and then hangs on the first call, so the kill lands mid-answer every time.
 * The whole process group is killed with SIGKILL and started again on the same port and storage;
 * nobody touches the page meanwhile. Its client reconnects after its cursor, the object's alarm
 * wakes the session, the cut model call is recorded (`model_request_aborted`, `process_restart`)
 * and the model is called again: the page shows the cut text marked as cut, the recovery note, and
 * the new answer, once.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { launchChromium } from '../inspector/browser.js';
import { freePort, startWranglerDev, type WranglerDev } from '../e2e/wrangler-dev.js';

const ADMIN_TOKEN = 'chat-e2e-admin-token-0123456789abcdef';
const VARS = { ADMIN_TOKEN, TOKEN_SECRET: 'chat-e2e-token-secret-0123456789abcdef' };
const CONFIG = 'test/e2e/fixtures/wrangler.e2e.toml';

let dev: WranglerDev | undefined;
let browser: Browser | undefined;
const dirs: string[] = [];
afterAll(async () => {
  await browser?.close();
  await dev?.kill('SIGTERM');
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
}, 60_000);

describe('the chat page across a kill -9 of wrangler dev', () => {
  it('finishes the answer by itself after the restart and shows the recovery', async () => {
    const persistTo = mkdtempSync(path.join(tmpdir(), 'agent-ledger-chat-e2e-'));
    dirs.push(persistTo);
    const port = await freePort();
    [dev, browser] = await Promise.all([startWranglerDev({ config: CONFIG, persistTo, vars: VARS, port }), launchChromium()]);
    const context = await browser.newContext({ viewport: { width: 1200, height: 900 } });
    // Hang guards, not timings: with both cores saturated the first page load from wrangler dev
    // took over 30 s once.
    context.setDefaultTimeout(90_000);
    context.setDefaultNavigationTimeout(90_000);
    const page = await context.newPage();
    const pageErrors: string[] = [];
    page.on('pageerror', (error) => pageErrors.push(error.message));
    const sessionId = `chat-auto-${Date.now().toString(36)}`;
    await page.goto(`${dev.url}/#${sessionId}`);
    await page.fill('#token', ADMIN_TOKEN);
    await page.click('#sign-in');
    await page.locator('#conn-state', { hasText: 'live' }).waitFor({ timeout: 60_000 });
    expect(await page.locator('#session-title').textContent()).toBe(sessionId);

    await page.fill('#message', 'hang-once');
    await page.click('#send');
    const texts = page.locator('li.assistant .text');
    await expect.poll(() => texts.allTextContents(), { timeout: 30_000 }).toEqual(['Partial ']);

    await dev.kill('SIGKILL');
    dev = undefined;
    await page.locator('#conn-state', { hasText: 'reconnecting' }).waitFor({ timeout: 60_000 });
    dev = await startWranglerDev({ config: CONFIG, persistTo, vars: VARS, port });

    // Nobody touches the page: it reconnects, and the object's alarm finishes the request.
    const answer = page.locator('li.assistant');
    await answer.and(page.locator('.done')).waitFor({ timeout: 60_000 });
    expect(await texts.allTextContents()).toEqual(['Partial ', 'Recovered answer']);
    expect(await texts.first().getAttribute('class')).toContain('cut');
    const notes = await answer.locator('.note.recovery').allTextContents();
    expect(notes).toHaveLength(1);
    expect(notes[0]).toContain('The model call was cut (process_restart');
    expect(await page.locator('li.user').allTextContents()).toEqual(['hang-once']);
    expect(await page.locator('#conn-state').textContent()).toBe('live');
    expect(pageErrors).toEqual([]);
  }, 360_000);
});
