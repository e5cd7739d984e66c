/**
 * End to end under `wrangler dev`: a durable tool call sleeping inside the session's Durable
 * Object survives a kill of the whole dev process group and completes after a restart on the same
 * `--persist-to` directory — the object's alarm (persisted with its storage) resumes it by replay.
 *
 * The fixture agent (test/workers/fixtures) does step -> sleep 3 s -> step; its effects are
 * counted in the object's SQLite storage and read through a fixture route, so "each effect ran
 * once" is checked against what survived the kill. Everything is bounded in time, and the dev
 * process group is killed in `finally`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startWranglerDev, type WranglerDev } from './wrangler-dev.js';

const ADMIN_TOKEN = 'e2e-admin-token-0123456789abcdef';
const VARS = { ADMIN_TOKEN, TOKEN_SECRET: 'e2e-token-secret-0123456789abcdef' };
const CONFIG = 'test/e2e/fixtures/wrangler.e2e.toml';
const SLEEP_MS = 3_000;

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

async function api<T>(dev: WranglerDev, method: string, route: string, body?: unknown): Promise<{ status: number; body: T }> {
  const response = await fetch(`${dev.url}${route}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    signal: AbortSignal.timeout(10_000),
  });
  return { status: response.status, body: (await response.json()) as T };
}

async function poll<T>(read: () => Promise<T>, done: (value: T) => boolean, what: string, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last = await read();
  while (!done(last)) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; last: ${JSON.stringify(last).slice(0, 1000)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
    last = await read();
  }
  return last;
}

interface RunState {
  status: string;
  toolCalls: Array<{ status: string; result?: unknown }>;
}
interface Page {
  records: Array<{ kind: string; key: string; status?: string }>;
}

describe('wrangler dev restart', () => {
  it('completes a run that was sleeping when the dev process group was killed', async () => {
    const persistTo = mkdtempSync(path.join(tmpdir(), 'agent-ledger-e2e-'));
    dirs.push(persistTo);
    const session = `e2e-${Date.now()}`;
    let dev: WranglerDev | undefined = await startWranglerDev({ config: CONFIG, persistTo, vars: VARS });
    try {
      const started = await api<{ status: string }>(dev, 'POST', `/v1/sessions/${session}/runs/run-1/tool-calls`, {
        agent: 'test-agent',
        toolName: 'sleepy',
        toolCallId: 'call-1',
        input: { sleepMs: SLEEP_MS },
      });
      expect(started).toEqual({ status: 202, body: { runId: 'run-1', toolCallId: 'call-1', status: 'running' } });
      const current = dev;
      await poll(
        async () => (await api<Page>(current, 'GET', `/v1/sessions/${session}/durability`)).body,
        (page) => page.records.some((record) => record.kind === 'sleep'),
        'the sleep record',
        10_000,
      );
      expect((await api(dev, 'GET', `/v1/sessions/${session}/test/effects`)).body).toEqual({ first: 1 });

      // Kill wrangler and workerd mid-sleep, then start again on the same storage.
      await dev.kill('SIGKILL');
      dev = undefined;
      dev = await startWranglerDev({ config: CONFIG, persistTo, vars: VARS });
      const restarted = dev;
      const state = await poll(
        async () => (await api<RunState>(restarted, 'GET', `/v1/sessions/${session}/runs/run-1`)).body,
        (run) => run.status !== 'running',
        'the run to finish after the restart',
        30_000,
      );
      expect(state.status).toBe('completed');
      expect(state.toolCalls[0]?.result).toEqual({ first: { at: 'first' }, second: { at: 'second' } });
      expect((await api(dev, 'GET', `/v1/sessions/${session}/test/effects`)).body).toEqual({ first: 1, second: 1 });
      const records = (await api<Page>(dev, 'GET', `/v1/sessions/${session}/durability`)).body.records;
      expect(records.map((r) => `${r.kind}:${r.key}`)).toEqual([
        'step:first',
        'sleep:nap',
        'run_event:sleep-elapsed-2',
        'step:second',
        'run_event:run',
      ]);
    } finally {
      await dev?.kill('SIGTERM');
    }
  }, 150_000);
});
