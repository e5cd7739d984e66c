/**
 * The chat page (`GET /`, src/chat/) in a real Chromium against the real Worker run locally.
 *
 * - The default Worker (`wrangler.toml`, the demo agent of `npm start`): sign in with the admin
 *   token, send a message and see the answer stream with the `word_stats` tool call, its progress
 *   and its result; send a `note:` whose text is markup, answer the permission prompt with Allow,
 *   and see the tool's result and the answer with the markup shown as text (no element made of
 *   it); a second `note:` answered with Deny (the tool cancelled as denied, nothing saved); the session list, a second chat, the inspector link; the CSP holds and nothing but the
 *   Worker's origin is requested, the token never in a URL.
 * - The fixture Worker (`test/workers/fixtures/agents-worker.ts`): a `gated` answer held after
 *   "one two " (released by the test route), the page reloaded mid-answer: the conversation is
 *   rebuilt from the log and the answer continues, ending "one two three" exactly (no gap, no
 *   repeat).
 */
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { launchChromium } from '../inspector/browser.js';
import { startLocalWorker, type LocalWorker } from '../http/local-worker.js';

const FIXTURE_CONFIG = fileURLToPath(new URL('../workers/fixtures/wrangler.agents.toml', import.meta.url));

let demo: LocalWorker | undefined;
let fixture: LocalWorker | undefined;
let browser: Browser | undefined;

beforeAll(async () => {
  [demo, fixture, browser] = await Promise.all([startLocalWorker({ own: true }), startLocalWorker({ config: FIXTURE_CONFIG }), launchChromium()]);
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await Promise.all([demo?.stop(), fixture?.stop()]);
}, 60_000);

interface Watched {
  page: Page;
  cspViolations: string[];
  requestedUrls: string[];
  pageErrors: string[];
}

async function openPage(worker: LocalWorker): Promise<Watched> {
  if (browser === undefined) throw new Error('setup failed');
  // Contexts stay open until the browser closes: this Chromium runs single-process, and closing
  // a context can take the browser with it.
  const context = await browser.newContext({ viewport: { width: 1200, height: 900 } });
  const page = await context.newPage();
  const watched: Watched = { page, cspViolations: [], requestedUrls: [], pageErrors: [] };
  page.on('console', (message) => {
    if (/Content Security Policy|Refused to/i.test(message.text())) watched.cspViolations.push(message.text());
  });
  page.on('pageerror', (error) => watched.pageErrors.push(error.message));
  page.on('request', (request) => watched.requestedUrls.push(request.url()));
  const response = await page.goto(worker.href('/'));
  expect(response?.status()).toBe(200);
  expect(response?.headers()['content-security-policy']).toContain("script-src 'self'");
  await page.fill('#token', worker.adminToken);
  await page.click('#sign-in');
  await page.locator('#app').waitFor({ state: 'visible', timeout: 20_000 });
  await page.locator('#conn-state', { hasText: 'live' }).waitFor({ timeout: 20_000 });
  return watched;
}

async function send(page: Page, text: string): Promise<void> {
  await page.fill('#message', text);
  await page.click('#send');
}

function checkClean(watched: Watched, worker: LocalWorker, token: string): void {
  expect(watched.cspViolations).toEqual([]);
  expect(watched.pageErrors).toEqual([]);
  expect(watched.requestedUrls.filter((url) => new URL(url).origin !== worker.url.origin)).toEqual([]);
  expect(watched.requestedUrls.filter((url) => url.includes(token))).toEqual([]);
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

  it('reloaded mid-answer, continues the answer with no gap and no repeat', async () => {
    if (fixture === undefined) throw new Error('setup failed');
    const watched = await openPage(fixture);
    const { page } = watched;
    const sessionId = decodeURIComponent(new URL(page.url()).hash.slice(1));
    await send(page, 'gated');
    const text = page.locator('li.assistant .text');
    await expect.poll(() => text.allTextContents(), { timeout: 30_000 }).toEqual(['one two ']);

    await page.reload();
    await page.locator('#conn-state', { hasText: 'live' }).waitFor({ timeout: 20_000 });
    await expect.poll(() => text.allTextContents(), { timeout: 30_000 }).toEqual(['one two ']);
    expect(await page.locator('li.user').allTextContents()).toEqual(['gated']);
    expect(await page.locator('li.assistant.running').count()).toBe(1);

    const release = await fetch(fixture.href(`/v1/sessions/${sessionId}/test/release-model`), {
      method: 'POST',
      headers: { authorization: `Bearer ${fixture.adminToken}` },
    });
    expect(release.status).toBe(200);
    await page.locator('li.assistant.done').waitFor({ timeout: 30_000 });
    expect(await text.allTextContents()).toEqual(['one two three']);
    expect(await page.locator('li.user').count()).toBe(1);

    checkClean(watched, fixture, fixture.adminToken);
  }, 120_000);
});
