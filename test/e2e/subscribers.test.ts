/**
 * WebSocket subscribers under `wrangler dev` (real workerd, real sockets): two tests one after the
 * other on one server (side by side, the memory test's push of its log to 30 sockets can close a
 * hibernating socket 1006 during the other test's second eviction). The server runs the fixture Worker
 * (test/e2e/fixtures/hibernation/wrangler.toml: the ledger's own app and SessionObject subclass of
 * wrangler.e2e.toml plus a test route group, in its own directory so its `.wrangler/tmp` bundles
 * never mix with those of the kill -9 test, which may run at the same time). Each test works on its
 * own sessions; the sessions of one are idle objects to the other.
 *
 * Hibernation. Subscribers survive the session object's hibernation. workerd evicts an idle object
 * whose only connections are hibernatable WebSockets: the instance and its memory are discarded,
 * the runtime keeps the sockets, and the next event (here an HTTP append) starts a new instance,
 * which must find each socket's cursor in its attachment and keep pushing. Proof that an eviction
 * really happened: the object's instance ID (a random UUID chosen in its constructor, read through
 * a fixture route) changes. The test waits idle for eviction in rounds and only then checks; it
 * never asserts how long eviction took. Two evictions in a row show the cursor in the attachment
 * moves with the pushed events. (@cloudflare/vitest-pool-workers 0.15.1, the last release whose
 * wrangler runs on Node 20, has no `evictDurableObject`, and `ctx.abort()` is no substitute: it
 * breaks the object's output gate and its sockets with it.)
 *
 * Pacing, issue 13 "Replay without backpressure": 30 subscribers that never read (15 old clients
 * without `?ack=1`, 15 that announce acks and never send one) connect from the start of a ~24 MB
 * log (~48 MB in `npm run test:deep`). Before flow control a 48 MB log pushed workerd from about
 * 1.1 GB to 2.3 GB and an append to an unrelated session took 18.5 s. Measured: the resident
 * memory of the dev process group's workerd before and after, and one append to an unrelated
 * session while the 30 sockets are open. The bounds are generous so a loaded 2-core machine does
 * not flake: RSS growth under 200 MB (400 MB at 48 MB; 30 windows of 1 MiB is ~30 MB; before it
 * was about 25 times the log), the unrelated append completes within 20 s, and an acking client
 * still reads the whole log afterwards. The figures are printed for the README.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { HttpDurableEventStore } from '../../src/adapters/http/http-store.js';
import { LEDGER_SUBPROTOCOL } from '../../src/adapters/http/websocket-watch.js';
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
const CONFIG = 'test/e2e/fixtures/hibernation/wrangler.toml';
/** Idle time per round before looking whether the object was evicted (workerd's idle timeout is ~10 s). */
const IDLE_ROUND_MS = 12_000;
const MAX_ROUNDS = 8;
const EVENT_BYTES = 400_000;
// ~24 MB (~48 MB deep): without flow control every socket holds the whole log (1.2 GB growth at
// 48 MB, about 25 times the log), so ~600 MB here, three times the bound below; with it ~30 MB.
const EVENTS = sized(60, 120);
/** RSS growth allowed with the 30 sockets open: far below the ~25 times the log without flow control. */
const GROWTH_BOUND = sized(200, 400) * 1024 * 1024;
const SUBSCRIBERS = 30;
const MB = 1024 * 1024;

let dev: WranglerDev | undefined;
const dirs: string[] = [];
beforeAll(async () => {
  const persistTo = mkdtempSync(path.join(tmpdir(), 'agent-ledger-subscribers-'));
  dirs.push(persistTo);
  dev = await startWranglerDev({ config: CONFIG, persistTo, vars: VARS, readyTimeoutMs: 120_000 });
}, 150_000);
afterAll(async () => {
  await dev?.kill();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function server(): WranglerDev {
  if (dev === undefined) throw new Error('wrangler dev did not start');
  return dev;
}

type Frame =
  | { type: 'event'; event: { sequence: number; data: { output?: unknown } }; cursor: string }
  | { type: 'caught_up'; headSequence: number | null }
  | { type: 'error'; code: string; message: string };

async function api<T>(dev: WranglerDev, method: string, route: string, body?: unknown): Promise<T> {
  const response = await fetch(`${dev.url}${route}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    signal: AbortSignal.timeout(15_000),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${route}: ${response.status} ${text}`);
  return JSON.parse(text) as T;
}

function markers(count: number, label: string): unknown[] {
  return Array.from({ length: count }, (_, index) => ({
    type: 'request_completed',
    requestId: 'hibernation-request',
    data: { output: `${label}-${index}` },
  }));
}

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

describe('WebSocket subscribers under wrangler dev', () => {
  it('hibernating: keep their sockets and cursors across two evictions of the session object', async () => {
    const dev = server();
    const session = `hibernation-${Date.now()}`;
    const base = `/v1/sessions/${session}`;
    let socket: WebSocket | undefined;
    try {
      await api(dev, 'POST', `${base}/events`, { events: [{ type: 'session_created', data: {} }], expectedLastSequence: null });
      await api(dev, 'POST', `${base}/events`, { events: markers(2, 'before') });

      const frames: Frame[] = [];
      let closed: number | null = null;
      const url = `${dev.url.replace('http:', 'ws:')}${base}/subscribe`;
      const ws = new WebSocket(url, [LEDGER_SUBPROTOCOL, `bearer.${ADMIN_TOKEN}`]);
      socket = ws;
      ws.on('message', (data) => frames.push(JSON.parse(String(data)) as Frame));
      ws.on('close', (code) => (closed = code));
      await new Promise<void>((resolve, reject) => {
        ws.once('open', () => resolve());
        ws.once('error', reject);
      });
      const until = async (predicate: () => boolean, what: string): Promise<void> => {
        const deadline = Date.now() + 20_000;
        while (!predicate()) {
          if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; frames: ${JSON.stringify(frames).slice(0, 2000)}`);
          await sleep(50);
        }
      };
      const sequences = (): number[] => frames.flatMap((frame) => (frame.type === 'event' ? [frame.event.sequence] : []));
      await until(() => frames.some((frame) => frame.type === 'caught_up'), 'caught_up');
      expect(sequences()).toEqual([1, 2, 3]);

      /** Waits idle until the object has been evicted; returns the new instance (woken by the check). */
      const waitForEviction = async (before: string): Promise<string> => {
        for (let round = 0; round < MAX_ROUNDS; round += 1) {
          await sleep(IDLE_ROUND_MS);
          const { instance } = await api<{ instance: string }>(dev, 'GET', `${base}/test/instance`);
          if (instance !== before) return instance;
        }
        throw new Error(`the object was not evicted after ${MAX_ROUNDS} idle rounds of ${IDLE_ROUND_MS} ms`);
      };

      const first = (await api<{ instance: string }>(dev, 'GET', `${base}/test/instance`)).instance;
      // Without idling the instance stays the same: a changed ID below means a real eviction.
      expect((await api<{ instance: string }>(dev, 'GET', `${base}/test/instance`)).instance).toBe(first);
      const second = await waitForEviction(first);
      expect(closed).toBeNull();
      await api(dev, 'POST', `${base}/events`, { events: markers(2, 'after') });
      await until(() => sequences().length === 5, 'events after the first wake');
      expect(sequences()).toEqual([1, 2, 3, 4, 5]);

      const third = await waitForEviction(second);
      expect(new Set([first, second, third]).size).toBe(3);
      await api(dev, 'POST', `${base}/events`, { events: markers(1, 'again') });
      await until(() => sequences().length === 6, 'the event after the second wake');
      expect(sequences()).toEqual([1, 2, 3, 4, 5, 6]);
      const outputs = frames.flatMap((frame) => (frame.type === 'event' ? [frame.event.data.output] : []));
      expect(outputs.slice(1)).toEqual(['before-0', 'before-1', 'after-0', 'after-1', 'again-0']);
      expect(frames.filter((frame) => frame.type === 'caught_up')).toHaveLength(1);
      expect(closed).toBeNull();
    } finally {
      socket?.terminate();
    }
  }, 300_000);

  it(`${SUBSCRIBERS} that never read, on a ~${(EVENTS * EVENT_BYTES) / 1e6} MB log: keep workerd memory bounded and leave other sessions responsive`, { timeout: 300_000 }, async () => {
    const dev = server();
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
