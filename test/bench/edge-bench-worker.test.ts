/**
 * The edge benchmark's Worker (`bench/edge/worker/`) does what the benchmark claims it measures,
 * so a refactor cannot quietly turn a timed loop into a no-op. No timing is asserted.
 * - every loop kind (subject, subject-json, bare, bare-broadcast, each profile stage) runs and
 *   reports its iteration count; the subject loops really append (the head moves);
 * - the bare Worker->object fetch inserts one row; the bare broadcast reaches a hibernating
 *   WebSocket with exactly the inserted row;
 * - an unknown loop kind is refused.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { BENCH_ADMIN_TOKEN, startBenchRuntime, type BenchRuntime } from '../../bench/edge/local-runtime.js';
import { PROFILE_STAGES } from '../../bench/edge/profile-stages.js';

let runtime: BenchRuntime;

beforeAll(async () => {
  runtime = await startBenchRuntime();
}, 60_000);

afterAll(async () => {
  await runtime?.stop();
});

const href = (path: string): string => new URL(path, runtime.url).href;

async function loop(kind: string, object: string, iterations: number, batch: number): Promise<Response> {
  return fetch(href('/bench/rpc'), {
    method: 'POST',
    body: JSON.stringify({ kind, object, iterations, batch, rowBody: '{"row":"body"}' }),
  });
}

async function head(sessionId: string): Promise<number | null> {
  const response = await fetch(href(`/v1/sessions/${sessionId}/head`), {
    headers: { authorization: `Bearer ${BENCH_ADMIN_TOKEN}` },
  });
  expect(response.status).toBe(200);
  return ((await response.json()) as { headSequence: number | null }).headSequence;
}

describe('edge bench Worker', () => {
  it('runs the subject loops as real appends through SessionObject', async () => {
    for (const kind of ['subject', 'subject-json']) {
      const session = `bench-test-${kind}`;
      const response = await loop(kind, session, 2, 3);
      expect(response.status, kind).toBe(200);
      expect(await response.json()).toMatchObject({ iterations: 2, batch: 3 });
      expect(await head(session), kind).toBe(6);
    }
  });

  it('runs the bare and profile loops', async () => {
    const kinds = [
      { kind: 'bare', batch: 1 },
      { kind: 'bare', batch: 3 },
      { kind: 'bare-broadcast', batch: 1 },
      ...PROFILE_STAGES.map((stage) => ({ kind: `profile:${stage}`, batch: 3 })),
    ];
    for (const { kind, batch } of kinds) {
      const response = await loop(kind, `bench-test-${kind}-${batch}`, 2, batch);
      expect(response.status, `${kind} x${batch}: ${await response.clone().text()}`).toBe(200);
      expect(await response.json()).toMatchObject({ iterations: 2, batch });
    }
  });

  it('refuses an unknown loop kind', async () => {
    const response = await loop('nothing', 'x', 1, 1);
    expect(response.status).toBe(400);
  });

  it('inserts one row per bare Worker->object fetch', async () => {
    const response = await fetch(href('/bench/bare/bench-test-fetch'), { method: 'POST', body: 'a row' });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ rowsWritten: 1 });
  });

  it('broadcasts the inserted row to a bare WebSocket subscriber', async () => {
    const ws = new WebSocket(href('/bench/bare/bench-test-ws').replace(/^http/, 'ws'));
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    const frame = new Promise<string>((resolve) => ws.once('message', (data) => resolve(data.toString())));
    const response = await loop('bare-broadcast', 'bench-test-ws', 1, 1);
    expect(response.status).toBe(200);
    expect(await frame).toBe('{"row":"body"}');
    ws.close(1000);
  });
});
