/**
 * The chat page (`GET /`) in Chromium, for the tests that drive it: open and sign in with the
 * admin token while recording CSP reports, page errors and every requested URL, then check them.
 */
import { expect } from 'vitest';
import type { BrowserContext, Page } from 'playwright-core';

/** A signed-in chat page and what it did. */
export interface WatchedChatPage {
  page: Page;
  cspViolations: string[];
  requestedUrls: string[];
  pageErrors: string[];
}

/**
 * Opens `origin/` in a new page of `context` (on session `sessionId` when given, else the page's
 * choice), signs in with `token` and waits until the page is live.
 */
export async function openChatPage(context: BrowserContext, origin: string, token: string, sessionId?: string): Promise<WatchedChatPage> {
  const page = await context.newPage();
  const watched: WatchedChatPage = { page, cspViolations: [], requestedUrls: [], pageErrors: [] };
  page.on('console', (message) => {
    if (/Content Security Policy|Refused to/i.test(message.text())) watched.cspViolations.push(message.text());
  });
  page.on('pageerror', (error) => watched.pageErrors.push(error.message));
  page.on('request', (request) => watched.requestedUrls.push(request.url()));
  const response = await page.goto(`${origin}/${sessionId === undefined ? '' : `#${sessionId}`}`);
  expect(response?.status()).toBe(200);
  expect(response?.headers()['content-security-policy']).toContain("script-src 'self'");
  await page.fill('#token', token);
  await page.click('#sign-in');
  await page.locator('#app').waitFor({ state: 'visible', timeout: 20_000 });
  await page.locator('#conn-state', { hasText: 'live' }).waitFor({ timeout: 20_000 });
  return watched;
}

/** Types `text` and sends it. */
export async function sendChatMessage(page: Page, text: string): Promise<void> {
  await page.fill('#message', text);
  await page.click('#send');
}

/** No CSP report, no page error, nothing requested outside `origin`, the token in no URL. */
export function expectCleanChatPage(watched: WatchedChatPage, origin: string, token: string): void {
  expect(watched.cspViolations).toEqual([]);
  expect(watched.pageErrors).toEqual([]);
  expect(watched.requestedUrls.filter((url) => new URL(url).origin !== origin)).toEqual([]);
  expect(watched.requestedUrls.filter((url) => url.includes(token))).toEqual([]);
}
