/**
 * Inspector benchmark: `node --import tsx bench/inspector.bench.ts` (or `npm run bench inspector`).
 *
 * First render of the inspector page for a session of 10,000 events (plus 300 durability
 * records) on a JSONL store, served by the same node:http + Hono path as `agent-ledger serve`:
 * 1. server: `GET /v1/sessions/{id}/inspect` answered in full (read the whole log, project,
 *    audit the stored projection checkpoint a journal wrote at the head, classify, build the
 *    timeline, render the HTML), median of several runs;
 * 2. browser: Chromium (`@sparticuz/chromium`) navigating to the page until `load` with the page
 *    script's deferred execution done, median of several runs.
 * Baselines in the same run: the same HTML bytes served as a static string by the same server
 * (what the browser alone costs for this page), and the page of a 100-event session.
 * 3. server: the page of a session of 205,001 events (over the page's 50,000-event limit, so it
 *    opens from the projection checkpoint written at 200,001 and reads the latest 4,000 events)
 *    against the 10,001-event page (which folds its whole log), median of several runs.
 * Target: browser first render under 1 s. Prints a table, then PASS/MISS.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import chromium from '@sparticuz/chromium';
import { chromium as playwright } from 'playwright-core';
import { JsonlDurableEventStore } from '../src/adapters/node/jsonl/jsonl-store.js';
import { DurableSessionJournal } from '../src/core/journal/index.js';
import { sendResponse, toRequest } from '../src/cli/serve.js';
import { ALL_INSPECTOR_SCOPES } from '../src/inspector/backend.js';
import { createInspectorApp, INSPECTOR_COOKIE } from '../src/inspector/app.js';
import { SessionId } from '../src/protocol/ids.js';
import { seedLong } from '../test/cli/fixtures/seed.js';
import { appendCycles } from '../test/checkpoint/lifecycle-log.js';

const BIG_REQUESTS = 1250; // 8 events each + session_created = 10,001 events
const SMALL_REQUESTS = 12; // 97 events
const HUGE_CYCLES = 40_000; // 5 events each + session_created = 200,001 events, then 1,000 more cycles
const LEDGER_RECORDS = 300;
const SERVER_RUNS = 7;
const BROWSER_RUNS = 5;
const TARGET_MS = 1000;
const TOKEN = 'inspector-bench-token-0123456789';

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
};

const root = mkdtempSync(path.join(os.tmpdir(), 'inspector-bench-'));
const store = new JsonlDurableEventStore(root);
const big = SessionId('bench-big');
const small = SessionId('bench-small');
const huge = SessionId('bench-huge');
await seedLong(store, big, BIG_REQUESTS);
await seedLong(store, small, SMALL_REQUESTS);
for (let index = 0; index < LEDGER_RECORDS; index++) {
  await store.recordDurability(big, { kind: 'step', scope: `run-${index % 10}`, key: `step-${index}`, result: { index } });
}
// A session written through a journal carries a projection checkpoint; the page audits it.
if (!(await (await DurableSessionJournal.open(store, big)).writeCheckpoint())) throw new Error('no checkpoint written');
await appendCycles(store, huge, 0, HUGE_CYCLES);
if (!(await (await DurableSessionJournal.open(store, huge)).writeCheckpoint())) throw new Error('no checkpoint written');
await appendCycles(store, huge, HUGE_CYCLES, 1000);

const app = createInspectorApp<Record<string, never>>({
  store: () => store,
  authorize: async (_env, token) => (token === TOKEN ? ALL_INSPECTOR_SCOPES : null),
});
let staticHtml = '';
const server = createServer((req, res) => {
  if (req.url === '/static') {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(staticHtml);
    return;
  }
  const origin = `http://${req.headers.host ?? '127.0.0.1'}`;
  void Promise.resolve(app.fetch(toRequest(req, origin), {})).then((response) => sendResponse(response, res));
});
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
const pageUrl = (id: string): string => `${base}/v1/sessions/${id}/inspect`;

async function serverRender(id: string): Promise<{ ms: number; html: string }> {
  const started = performance.now();
  const response = await fetch(pageUrl(id), { headers: { cookie: `${INSPECTOR_COOKIE}=${TOKEN}` } });
  const html = await response.text();
  if (response.status !== 200) throw new Error(`page answered ${response.status}`);
  return { ms: performance.now() - started, html };
}

// Warm up (JIT, file caches), then measure.
if (!(await serverRender(big.toString())).html.includes('data-status="matches"')) throw new Error('the page does not show the audited checkpoint');
if (!(await serverRender(huge.toString())).html.includes('data-status="used"')) throw new Error('the long session did not open from its checkpoint');
const serverBig: number[] = [];
const serverSmall: number[] = [];
const serverHuge: number[] = [];
for (let run = 0; run < SERVER_RUNS; run++) {
  serverBig.push((await serverRender(big)).ms);
  serverSmall.push((await serverRender(small)).ms);
  serverHuge.push((await serverRender(huge)).ms);
}
staticHtml = (await serverRender(big)).html;

const browser = await playwright.launch({ executablePath: await chromium.executablePath(), args: [...chromium.args, '--no-sandbox'], headless: true });
const context = await browser.newContext();
await context.addCookies([
  { name: INSPECTOR_COOKIE, value: TOKEN, url: base },
]);
const page = await context.newPage();
async function browserRender(url: string): Promise<number> {
  const started = performance.now();
  await page.goto(url, { waitUntil: 'load' });
  await page.locator('#events tbody tr').first().waitFor();
  return performance.now() - started;
}
await browserRender(pageUrl(big));
const browserBig: number[] = [];
const browserStatic: number[] = [];
const browserSmall: number[] = [];
for (let run = 0; run < BROWSER_RUNS; run++) {
  browserBig.push(await browserRender(pageUrl(big)));
  browserStatic.push(await browserRender(`${base}/static`));
  browserSmall.push(await browserRender(pageUrl(small)));
}
await browser.close();
server.closeAllConnections();
server.close();
await store.close();
rmSync(root, { recursive: true, force: true });

const bigMs = median(browserBig);
const rows: [string, number, string][] = [
  ['server render, 10,001 events', median(serverBig), `${(median(serverBig) / median(serverSmall)).toFixed(1)}x the 97-event page`],
  ['server render, 97 events (baseline)', median(serverSmall), ''],
  ['server render, 205,001 events', median(serverHuge), `${(median(serverHuge) / median(serverBig)).toFixed(2)}x the 10,001-event page (opened from its checkpoint)`],
  ['browser first render, 10,001 events', bigMs, `${(bigMs / median(browserStatic)).toFixed(2)}x the same HTML served static`],
  ['browser, same HTML static (baseline)', median(browserStatic), ''],
  ['browser first render, 97 events', median(browserSmall), ''],
];
console.log(`page size for 10,001 events: ${(Buffer.byteLength(staticHtml) / 1024).toFixed(0)} KiB (100 event rows, up to 400 timeline bars)`);
for (const [label, ms, note] of rows) console.log(`${label.padEnd(40)} ${ms.toFixed(1).padStart(8)} ms  ${note}`);
console.log(`${bigMs < TARGET_MS ? 'PASS' : 'MISS'} first render of a 10,000-event session under ${TARGET_MS} ms (${bigMs.toFixed(0)} ms)`);
