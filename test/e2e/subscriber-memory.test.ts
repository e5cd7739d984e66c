/**
 * Issue 13 "Replay without backpressure", under `wrangler dev` with real sockets: 30 subscribers
 * that never read (15 old clients without `?ack=1`, 15 that announce acks and never send one)
 * connect from the start of a ~24 MB log (~48 MB in `npm run test:deep`). Before flow control a
 * 48 MB log pushed workerd from about 1.1 GB to 2.3 GB and an append to an unrelated session took
 * 18.5 s.
 *
 * Measured: the resident memory of the dev process group's workerd before and after, and one
 * append to an unrelated session while the 30 sockets are open. The bounds are generous so a loaded
 * 2-core machine does not flake: RSS growth under 200 MB (400 MB at 48 MB; 30 windows of 1 MiB is
 * ~30 MB; before it was about 25 times the log), the unrelated append completes within 20 s, and an
 * acking client still reads the whole log afterwards. The figures are printed for the README.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { HttpDurableEventStore } from '../../src/adapters/http/http-store.js';
import {
  SUBSCRIBER_SLOW_CLOSE_CODE,
  encodeSubscriberAck,
  frameByteLength,
  parseSubscriptionFrame,
} from '../../src/protocol/frames.js';
import { RequestId, SessionId } from '../../src/protocol/ids.js';
import { sized } from '../deep.js';
import { startWranglerDev, type WranglerDev } from './wrangler-dev.js';

const ADMIN_TOKEN = 'e2e-admin-token-0123456789abcdef';
const VARS = { ADMIN_TOKEN, TOKEN_SECRET: 'e2e-token-secret-0123456789abcdef' };
const EVENT_BYTES = 400_000;
// ~24 MB (~48 MB deep): without flow control every socket holds the whole log (1.2 GB growth at
// 48 MB, about 25 times the log), so ~600 MB here, three times the bound below; with it ~30 MB.
const EVENTS = sized(60, 120);
/** RSS growth allowed with the 30 sockets open: far below the ~25 times the log without flow control. */
const GROWTH_BOUND = sized(200, 400) * 1024 * 1024;
const SUBSCRIBERS = 30;

const dirs: string[] = [];
let dev: WranglerDev | undefined;
afterAll(async () => {
  await dev?.kill();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** Resident memory (bytes) of the workerd processes in a process group. */
function workerdRss(pgid: number): number {
  let total = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^[0-9]+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const afterName = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      if (Number(afterName[2]) !== pgid || !name.includes('workerd')) continue;
      const rss = /VmRSS:\s+([0-9]+) kB/.exec(readFileSync(`/proc/${entry}/status`, 'utf8'));
      if (rss?.[1] !== undefined) total += Number(rss[1]) * 1024;
    } catch {
      // The process went away meanwhile.
    }
  }
  return total;
}

const MB = 1024 * 1024;

describe(`30 subscribers that never read, on a ~${(EVENTS * EVENT_BYTES) / 1e6} MB log (wrangler dev)`, () => {
  it('keep workerd memory bounded and leave other sessions responsive', { timeout: 300_000 }, async () => {
    const persistTo = mkdtempSync(path.join(tmpdir(), 'agent-ledger-pacing-'));
    dirs.push(persistTo);
    dev = await startWranglerDev({ config: 'wrangler.toml', persistTo, vars: VARS, readyTimeoutMs: 120_000 });
    const store = new HttpDurableEventStore({ baseUrl: dev.url, token: ADMIN_TOKEN, WebSocket, timeoutMs: 60_000 });
    const big = SessionId(`pacing-big-${Date.now()}`);
    const other = SessionId(`pacing-other-${Date.now()}`);
    const filler = 'x'.repeat(EVENT_BYTES);
    for (let index = 0; index < EVENTS; index += 2) {
      await store.append(big, [0, 1].map((offset) => ({
        type: 'request_completed' as const,
        requestId: RequestId('pacing'),
        data: { output: `${index + offset}:${filler}` },
      })));
    }
    await store.append(other, [{ type: 'request_completed', requestId: RequestId('other'), data: { output: 'warm' } }]);
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    const before = workerdRss(dev.pgid);
    expect(before).toBeGreaterThan(0);

    // 30 sockets that never read: paused right after the upgrade.
    const sockets: WebSocket[] = [];
    const closes: number[] = [];
    for (let index = 0; index < SUBSCRIBERS; index += 1) {
      const ack = index % 2 === 1 ? '&ack=1' : '';
      const ws = new WebSocket(`${dev.url.replace('http', 'ws')}/v1/sessions/${big}/subscribe?access_token=${ADMIN_TOKEN}${ack}`, [
        'agent-ledger.v1',
      ]);
      ws.on('close', (code) => closes.push(code));
      ws.on('error', () => undefined);
      await new Promise<void>((resolve, reject) => {
        ws.once('open', () => resolve());
        ws.once('error', reject);
      });
      ws.pause();
      sockets.push(ws);
    }
    await new Promise((resolve) => setTimeout(resolve, 5_000));
    const during = workerdRss(dev.pgid);

    const started = performance.now();
    await store.append(other, [{ type: 'request_completed', requestId: RequestId('other'), data: { output: 'during' } }]);
    const appendMs = performance.now() - started;
    const health = await fetch(`${dev.url}/healthz`, { signal: AbortSignal.timeout(20_000) });
    expect(health.ok).toBe(true);
    const after = workerdRss(dev.pgid);

    console.log(
      `[pacing] workerd RSS before ${(before / MB).toFixed(0)} MB, with ${SUBSCRIBERS} non-reading subscribers ` +
        `${(during / MB).toFixed(0)} MB, after ${(after / MB).toFixed(0)} MB (growth ${((Math.max(during, after) - before) / MB).toFixed(0)} MB); ` +
        `unrelated append ${appendMs.toFixed(0)} ms`,
    );
    expect(Math.max(during, after) - before).toBeLessThan(GROWTH_BOUND);
    expect(appendMs).toBeLessThan(20_000);

    for (const ws of sockets) ws.terminate();

    // An acking client still reads the whole log, in order.
    const reader = new WebSocket(`${dev.url.replace('http', 'ws')}/v1/sessions/${big}/subscribe?access_token=${ADMIN_TOKEN}&ack=1`, [
      'agent-ledger.v1',
    ]);
    const sequences: number[] = [];
    let received = 0;
    let readerClose: number | undefined;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`reader got ${sequences.length} events`)), 120_000);
      reader.on('message', (data) => {
        const text = data.toString();
        if (text === 'pong') return;
        received += frameByteLength(text);
        const frame = parseSubscriptionFrame(text);
        if (frame?.type === 'event') sequences.push(frame.event.sequence);
        reader.send(encodeSubscriberAck(received));
        if (frame?.type === 'caught_up') {
          clearTimeout(timer);
          resolve();
        }
      });
      reader.on('close', (code) => {
        readerClose = code;
        clearTimeout(timer);
        reject(new Error(`reader closed with ${code} after ${sequences.length} events`));
      });
    });
    reader.close();
    expect(readerClose).toBeUndefined();
    expect(sequences).toEqual(Array.from({ length: EVENTS }, (_, index) => index + 1));
    expect(closes.every((code) => code === SUBSCRIBER_SLOW_CLOSE_CODE || code === 1006 || code === 1005)).toBe(true);
  });
});
