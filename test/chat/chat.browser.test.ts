/**
 * The chat page (`GET /`, src/chat/) in a real Chromium against the real Worker run locally: the
 * default Worker (`wrangler.toml`, the demo agent of `npm start`). Sign in with the admin token,
 * send a message and see the answer stream with the `word_stats` tool call, its progress and its
 * result; send a `note:` whose text is markup, answer the permission prompt with Allow, and see the
 * tool's result and the answer with the markup shown as text (no element made of it); a second
 * `note:` answered with Deny (the tool cancelled as denied, nothing saved); the session list, a
 * second chat, the inspector link; the CSP holds and nothing but the Worker's origin is requested,
 * the token never in a URL.
 *
 * The page on the fixture Worker (its `gated` answer reloaded mid-answer, and its answer cut by a
 * kill -9 of `wrangler dev`) is tested in test/e2e/edge-agent-restart.test.ts, on the `wrangler dev`
 * of that file.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { launchChromium } from '../inspector/browser.js';
import { startLocalWorker, type LocalWorker } from '../http/local-worker.js';
import { expectCleanChatPage, openChatPage, sendChatMessage as send, type WatchedChatPage as Watched } from './page.js';

let demo: LocalWorker | undefined;
let browser: Browser | undefined;

beforeAll(async () => {
  [demo, browser] = await Promise.all([startLocalWorker({ own: true }), launchChromium()]);
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await demo?.stop();
}, 60_000);

async function openPage(worker: LocalWorker): Promise<Watched> {
  if (browser === undefined) throw new Error('setup failed');
  // Contexts stay open until the browser closes: this Chromium runs single-process, and closing
  // a context can take the browser with it.
  const context = await browser.newContext({ viewport: { width: 1200, height: 900 } });
  return openChatPage(context, worker.url.origin, worker.adminToken);
}

function checkClean(watched: Watched, worker: LocalWorker, token: string): void {
  expectCleanChatPage(watched, worker.url.origin, token);
}

describe('the chat page in Chromium', () => {
  it('signs in, streams an answer with a tool call, asks a permission, and shows markup as text', async () => {
    if (demo === undefined) throw new Error('setup failed');
    const watched = await openPage(demo);
    const { page } = watched;
    const sessionId = decodeURIComponent(new URL(page.url()).hash.slice(1));
    expect(sessionId).toMatch(/^chat-[0-9a-f]{12}$/);
    expect(await page.locator('#inspect-link').getAttribute('href')).toBe(`/v1/sessions/${sessionId}/inspect`);

    await send(page, 'count these five words');
    const first = page.locator('li.assistant').nth(0);
    await first.locator('.tool[data-tool-name="word_stats"][data-status="done"]').waitFor({ timeout: 30_000 });
    await page.locator('li.assistant.done').first().waitFor({ timeout: 30_000 });
    expect(await page.locator('li.user').allTextContents()).toEqual(['count these five words']);
    expect(await first.locator('.text').allTextContents()).toEqual([
      'Let me count the words in your message.',
      'Your message has 4 words and 19 letters; the longest word is "count". (This is the deterministic demo model: mount any AI SDK provider instead.)',
    ]);
    expect(JSON.parse((await first.locator('.tool-result').textContent()) ?? '')).toEqual({ words: 4, letters: 19, longest: 'count' });
    expect(await first.locator('.tool-progress').textContent()).toContain('"counted": 4');

    const markup = '<b id="injected">bold</b> <img id="injected-img" src="/x">';
    await send(page, `note: ${markup}`);
    const second = page.locator('li.assistant').nth(1);
    const prompt = second.locator('.permission');
    await prompt.locator('button.allow').waitFor({ timeout: 30_000 });
    expect(await prompt.locator('.permission-message').textContent()).toBe(`Save the note "${markup}"?`);
    expect(await second.locator('.tool[data-tool-name="save_note"]').getAttribute('data-status')).toBe('waiting for you');
    await prompt.locator('button.allow').click();
    await second.locator('.tool[data-tool-name="save_note"][data-status="done"]').waitFor({ timeout: 30_000 });
    await page.locator('li.assistant.done').nth(1).waitFor({ timeout: 30_000 });
    expect(await prompt.getAttribute('data-decision')).toBe('allow');
    expect(JSON.parse((await second.locator('.tool-result').textContent()) ?? '')).toEqual({ saved: markup });
    expect(await second.locator('.text').last().textContent()).toBe(`Saved your note: "${markup}".`);
    expect(await page.locator('#injected, #injected-img, #messages b, #messages img').count()).toBe(0);
    expect(watched.requestedUrls.some((url) => url.endsWith('/x'))).toBe(false);

    // The session list: this chat (titled by its first message), then a new one.
    expect(await page.locator('#sessions li').count()).toBe(1);
    expect(await page.locator('#sessions li a.open').textContent()).toBe('count these five words');
    expect(await page.locator('#sessions li a.inspect').getAttribute('href')).toBe(`/v1/sessions/${sessionId}/inspect`);
    await page.click('#new-session');
    await expect.poll(() => page.locator('#sessions li').count()).toBe(2);
    expect(await page.locator('#messages li').count()).toBe(0);
    await page.locator('#sessions li a.open', { hasText: 'count these five words' }).click();
    await expect.poll(() => page.locator('li.assistant.done').count(), { timeout: 20_000 }).toBe(2);

    checkClean(watched, demo, demo.adminToken);
  }, 120_000);

  it('answers a permission prompt with Deny: the tool is cancelled as denied, nothing is saved, the agent says so', async () => {
    if (demo === undefined) throw new Error('setup failed');
    const watched = await openPage(demo);
    const { page } = watched;
    await send(page, 'note: keep this out');
    const answer = page.locator('li.assistant').nth(0);
    const prompt = answer.locator('.permission');
    await prompt.locator('button.deny').waitFor({ timeout: 30_000 });
    await prompt.locator('button.deny').click();
    await page.locator('li.assistant.done').first().waitFor({ timeout: 30_000 });
    expect(await prompt.getAttribute('data-decision')).toBe('deny');
    expect(await prompt.locator('.permission-status').textContent()).toBe('denied');
    const tool = answer.locator('.tool[data-tool-name="save_note"]');
    expect(await tool.getAttribute('data-status')).toBe('cancelled (permission_denied: permission denied)');
    expect(await tool.locator('.tool-result, .tool-error').count()).toBe(0);
    expect(await answer.locator('.text').last().textContent()).toBe('The note was not saved.');
    checkClean(watched, demo, demo.adminToken);
  }, 120_000);
});
