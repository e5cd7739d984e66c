/**
 * WebSocket subscribers survive the session object's hibernation, end to end under `wrangler dev`
 * (real workerd). This replaces the in-pool test that discarded the instance with
 * `evictDurableObject`, which @cloudflare/vitest-pool-workers 0.15.1 (the last release whose
 * wrangler runs on Node 20) does not have; `ctx.abort()` is no substitute, it breaks the object's
 * output gate and its sockets with it.
 *
 * workerd evicts an idle object whose only connections are hibernatable WebSockets: the instance
 * and its memory are discarded, the runtime keeps the sockets, and the next event (here an HTTP
 * append) starts a new instance, which must find each socket's cursor in its attachment and keep
 * pushing. Proof that an eviction really happened: the object's instance ID (a random UUID chosen in
 * its constructor, read through a fixture route) changes. The test waits idle for eviction in rounds
 * and only then checks; it never asserts how long eviction took. Two evictions in a row show the
 * cursor in the attachment moves with the pushed events.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import WebSocket from 'ws';
import { afterAll, describe, expect, it } from 'vitest';
import { LEDGER_SUBPROTOCOL } from '../../src/adapters/http/websocket-watch.js';
import { startWranglerDev, type WranglerDev } from './wrangler-dev.js';

const ADMIN_TOKEN = 'e2e-admin-token-0123456789abcdef';
const VARS = { ADMIN_TOKEN, TOKEN_SECRET: 'e2e-token-secret-0123456789abcdef' };
const CONFIG = 'test/e2e/fixtures/hibernation/wrangler.toml';
/** Idle time per round before looking whether the object was evicted (workerd's idle timeout is ~10 s). */
const IDLE_ROUND_MS = 12_000;
const MAX_ROUNDS = 8;

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

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

describe('hibernating WebSocket subscribers (wrangler dev)', () => {
  it('keep their sockets and cursors across two evictions of the session object', async () => {
    const persistTo = mkdtempSync(path.join(tmpdir(), 'agent-ledger-hibernation-'));
    dirs.push(persistTo);
    const session = `hibernation-${Date.now()}`;
    const base = `/v1/sessions/${session}`;
    const dev = await startWranglerDev({ config: CONFIG, persistTo, vars: VARS });
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
      await dev.kill('SIGKILL');
    }
  }, 300_000);
});
