/**
 * The inspector page in a real Chromium against `agent-ledger serve` on a real JSONL store.
 *
 * A session waits for a permission (`deploy`, non_idempotent). An "agent" (this test process,
 * with its own store object on the same directory, as a separate worker would) waits for the
 * decision and starts the tool through the recovery coordinator. The browser signs in, sees the
 * plan item marked "needs a person", clicks Allow, and sees `tool_started` arrive in the live tail
 * (SSE from the serve process, which hears the agent's append across processes). Screenshots of
 * the sign-in, the page and the state after the click go to test-artifacts/inspector/.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { JsonlDurableEventStore } from '../../src/adapters/node/jsonl/jsonl-store.js';
import { DurableSessionRecoveryCoordinator } from '../../src/core/recovery/coordinator.js';
import { DurableEventSubscription } from '../../src/core/subscription/subscription.js';
import { CommandId, SessionId, ToolAttemptId } from '../../src/protocol/ids.js';
import { seed, startServe, tempDir, type ServeHandle } from '../cli/helpers.js';
import { artifact, launchChromium } from './browser.js';

const SESSION = SessionId('inspect-permission');

describe('inspector page in Chromium', () => {
  let dir: string;
  let serve: ServeHandle | undefined;
  let browser: Browser | undefined;
  let agentStore: JsonlDurableEventStore | undefined;
  const agentAbort = new AbortController();
  let agentDone: Promise<string> = Promise.resolve('not started');

  beforeAll(async () => {
    dir = tempDir('agent-ledger-inspector-');
    await seed(`jsonl:${dir}`, 'permission', SESSION);
    serve = await startServe(`jsonl:${dir}`);
    browser = await launchChromium();
    agentStore = new JsonlDurableEventStore(dir, { watchPollIntervalMs: 50 });
    const store = agentStore;
    // The agent: follow the log; once the permission is allowed, cross the execution boundary.
    agentDone = (async () => {
      const subscription = await DurableEventSubscription.open(store, SESSION, { signal: agentAbort.signal, pollIntervalMs: 50 });
      for await (const message of subscription) {
        if (message.type !== 'event' || message.event.type !== 'permission_resolved') continue;
        if (message.event.data.decision !== 'allow') return 'denied';
        const coordinator = await DurableSessionRecoveryCoordinator.open(store, SESSION);
        const started = await coordinator.startToolAttempt({ commandId: CommandId('agent-start-deploy'), toolAttemptId: ToolAttemptId('tool-deploy') });
        return started.status;
      }
      return 'ended';
    })();
  }, 120_000);

  afterAll(async () => {
    agentAbort.abort();
    await agentDone.catch(() => undefined);
    await browser?.close();
    await serve?.stop();
    await agentStore?.close();
  });

  it('signs in, shows the plan item, allows it, and sees the tool start in the live tail', async () => {
    if (serve === undefined || browser === undefined) throw new Error('setup failed');
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page: Page = await context.newPage();
    const cspViolations: string[] = [];
    const requestedUrls: string[] = [];
    page.on('console', (message) => {
      if (/Content Security Policy|Refused to/i.test(message.text())) cspViolations.push(message.text());
    });
    page.on('request', (request) => requestedUrls.push(request.url()));

    const pageUrl = `${serve.url}/v1/sessions/${SESSION}/inspect`;
    const login = await page.goto(pageUrl);
    expect(login?.status()).toBe(401);
    await page.screenshot({ path: artifact('1-sign-in.png'), fullPage: true });
    await page.fill('#token', serve.token);
    await Promise.all([page.waitForURL(pageUrl), page.click('#sign-in')]);

    const item = page.locator('.plan-item[data-kind="permission"]');
    await expect.poll(() => item.count()).toBe(1);
    expect(await item.textContent()).toContain('deploy');
    expect(await item.locator('.badge').textContent()).toBe('needs a person');
    expect(await page.locator('#status').textContent()).toBe('open');
    expect(await page.locator('#head').textContent()).toBe('12');
    expect(await page.locator('#next-alarm').textContent()).toContain('sleep backoff');
    expect(await page.locator('#timeline rect.bar.tool').count()).toBe(2);
    expect(await page.locator('#events tbody tr').count()).toBe(12);
    await page.locator('#tail-state', { hasText: 'live' }).waitFor({ timeout: 20_000 });
    await page.screenshot({ path: artifact('2-pending-permission.png'), fullPage: true });

    await page.click('.plan-item[data-kind="permission"] button.allow');
    await page.locator('#action-status.ok').waitFor({ timeout: 20_000 });
    expect(await page.locator('#action-status').textContent()).toContain('resolve-permission: committed');
    const resolvedRow = page.locator('#tail tr.event.permission_resolved');
    await resolvedRow.waitFor({ timeout: 20_000 });
    const startedRow = page.locator('#tail tr.event.tool_started');
    await startedRow.waitFor({ timeout: 30_000 });
    expect(await startedRow.locator('td.ids').textContent()).toContain('tool-deploy');
    await startedRow.locator('summary').click();
    expect(await startedRow.locator('pre').textContent()).toContain('"sideEffect": "non_idempotent"');
    await page.screenshot({ path: artifact('3-tool-started.png'), fullPage: true });
    expect(await agentDone).toBe('committed');

    // Deliver the event the deploy run is waiting for, through the page's form.
    const waitForm = page.locator('#waits form[data-action="deliver"]');
    await waitForm.locator('textarea').fill('{"approvedBy":"operator"}');
    await waitForm.locator('button').click();
    await page.locator('#action-status.ok', { hasText: 'delivered approval to run-1' }).waitFor({ timeout: 20_000 });
    await page.reload();
    expect(await page.locator('#waits').count()).toBe(0);
    await page.screenshot({ path: artifact('4-delivered.png'), fullPage: true });

    // The token never appears in a URL the browser requested, and the page ran under its CSP.
    expect(requestedUrls.length).toBeGreaterThan(3);
    expect(requestedUrls.filter((url) => url.includes(serve?.token ?? '\u0000'))).toEqual([]);
    expect(cspViolations).toEqual([]);
    await context.close();
  }, 180_000);
});
