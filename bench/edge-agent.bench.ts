/**
 * Edge-agent benchmark: `node --import tsx bench/edge-agent.bench.ts` (or `npm run bench -- bench edge-agent`).
 *
 * Runs `bench/edge-agent/worker.ts` (the ledger's SessionObject with a bench agent mounted, plus a
 * bare baseline object) on local workerd through Miniflare, SQLite storage on disk, loopback only,
 * and prints two ratios, each against a baseline measured in the same run:
 * 1. token delta -> receipt at 100 WebSocket subscribers (`ws` clients in this process), p50 over
 *    the sockets: the agent's streaming request releases one delta per trigger (`/bench/tick`),
 *    which the object sends as a `text_delta` frame; baseline: a bare object sending a text of the
 *    same bytes to its 100 hibernating sockets (`/bench/bare-send`). Rounds alternate subject and
 *    baseline; the ratio is the median of the per-round ratios. Target <= 1.3x.
 * 2. one-tool turn with the deterministic model, run inside a warm object (request accepted ->
 *    request_completed: 2 model calls, 1 pure tool), vs a warm object appending the very same
 *    event batches through its own ledger (one append per committed batch); each side runs 10
 *    turns (or their batches) in one RPC timed in the Worker, pairs alternating; ratio of the
 *    totals over all pairs (workerd's clock moves only at I/O: one turn alone reads as whole
 *    milliseconds). Information only: a whole turn against only the writes of its events (a
 *    retired target, docs/performance.md).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Miniflare } from 'miniflare';
import { bundleWorker, compatibilityDate } from './edge/local-runtime.js';
import { SubscriberGroup } from './edge/subscriber-group.js';

const ADMIN = 'bench-admin-token-0123456789abcdef';
const ROOT = fileURLToPath(new URL('../', import.meta.url));
const SUBSCRIBERS = 100;
const WARMUP_ROUNDS = 10;
const ROUNDS = 61;
const TURN_WARMUP_PAIRS = 5;
const TURN_PAIRS = 60;
/** Turns per timed RPC: workerd's clock moves only at I/O, so one turn alone reads as whole milliseconds. */
const TURNS_PER_CALL = 10;

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[mid] ?? 0) : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
}

async function start(): Promise<{ url: URL; stop(): Promise<void> }> {
  process.env['CLOUDFLARE_CF_FETCH_ENABLED'] = 'false';
  process.env['WRANGLER_SEND_METRICS'] = 'false';
  const dir = mkdtempSync(path.join(os.tmpdir(), 'edge-agent-bench-'));
  const outfile = path.join(dir, 'worker.js');
  await bundleWorker(path.join(ROOT, 'bench/edge-agent/worker.ts'), outfile);
  const { Miniflare: MiniflareClass } = await import('miniflare');
  const mf: Miniflare = new MiniflareClass({
    host: '127.0.0.1',
    port: 0,
    modules: true,
    scriptPath: outfile,
    modulesRoot: dir,
    compatibilityDate: compatibilityDate(),
    bindings: { ADMIN_TOKEN: ADMIN, TOKEN_SECRET: 'bench-token-secret-0123456789abcdef' },
    durableObjects: {
      SESSIONS: { className: 'SessionObject', useSQLite: true },
      BARE: { className: 'BareObject', useSQLite: true },
    },
    durableObjectsPersist: path.join(dir, 'do'),
  });
  const url = await mf.ready;
  return {
    url,
    async stop() {
      await mf.dispose();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function call<T>(base: URL, method: string, route: string, body?: unknown): Promise<T> {
  const response = await fetch(new URL(route, base), {
    method,
    headers: { authorization: `Bearer ${ADMIN}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
  });
  if (!response.ok) throw new Error(`${method} ${route}: ${response.status} ${await response.text()}`);
  return (await response.json()) as T;
}

interface Envelope {
  type: string;
  requestId?: string;
  turnId?: string;
  modelAttemptId?: string;
}

async function benchDeltas(base: URL): Promise<{ subject: number; baseline: number; ratio: number; bytes: number }> {
  const name = `stream-${Date.now().toString(36)}`;
  await call(base, 'POST', `/v1/sessions/${name}/requests`, { commandId: 'stream', input: 'stream' });
  let started: Envelope | undefined;
  for (let attempt = 0; attempt < 200 && started === undefined; attempt++) {
    const page = await call<{ events: Envelope[] }>(base, 'GET', `/v1/sessions/${name}/events`);
    started = page.events.find((event) => event.type === 'model_request_started');
    if (started === undefined) await new Promise((resolve) => setTimeout(resolve, 25));
  }
  if (started === undefined) throw new Error('the streaming request did not start');
  // The baseline sends a text of the same bytes as a subject delta frame.
  const bareText = JSON.stringify({
    type: 'text_delta',
    requestId: started.requestId,
    turnId: started.turnId,
    modelAttemptId: started.modelAttemptId,
    delta: 'tok ',
    offset: 100,
  });
  const wsBase = base.href.replace(/^http/, 'ws');
  const subject = await SubscriberGroup.open(`${wsBase}v1/sessions/${name}/subscribe`, { authorization: `Bearer ${ADMIN}` }, SUBSCRIBERS, {
    ready: (frame) => frame.startsWith('{"type":"partial_response"'),
    isEvent: (frame) => frame.startsWith('{"type":"text_delta"'),
  });
  const bareName = `bare-${name}`;
  const bare = await SubscriberGroup.open(`${wsBase}bench/bare/${bareName}`, {}, SUBSCRIBERS, {
    ready: (frame) => frame === '',
    isEvent: (frame) => frame === bareText,
  });
  const measure = async (side: 'subject' | 'baseline'): Promise<number> => {
    let sentAt = 0;
    const group = side === 'subject' ? subject : bare;
    const receipts = await group.next(async () => {
      sentAt = performance.now();
      if (side === 'subject') await call(base, 'POST', `/bench/tick/${name}`);
      else await call(base, 'POST', `/bench/bare-send/${bareName}`, bareText);
    });
    return median(receipts.map((at) => at - sentAt));
  };
  try {
    for (let round = 0; round < WARMUP_ROUNDS; round++) {
      await measure('baseline');
      await measure('subject');
    }
    const subjects: number[] = [];
    const baselines: number[] = [];
    const ratios: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const first = round % 2 === 0 ? 'subject' : 'baseline';
      const a = await measure(first);
      const b = await measure(first === 'subject' ? 'baseline' : 'subject');
      const s = first === 'subject' ? a : b;
      const r = first === 'subject' ? b : a;
      subjects.push(s);
      baselines.push(r);
      ratios.push(s / r);
    }
    return { subject: median(subjects), baseline: median(baselines), ratio: median(ratios), bytes: Buffer.byteLength(bareText) };
  } finally {
    subject.close();
    bare.close();
  }
}

async function benchTurns(
  base: URL,
): Promise<{ subject: number; baseline: number; baselineMean: number; direct: number; journal: number; ratio: number; events: number; batches: number }> {
  await call(base, 'GET', `/bench/turns?pairs=${TURN_WARMUP_PAIRS}&per=${TURNS_PER_CALL}`);
  const result = await call<{ subject: number[]; baseline: number[]; direct: number[]; journal: number[]; events: number; batches: number }>(
    base,
    'GET',
    `/bench/turns?pairs=${TURN_PAIRS}&per=${TURNS_PER_CALL}`,
  );
  // Inside workerd the clock only moves at I/O, so each side runs TURNS_PER_CALL turns (or their
  // batches) per timed RPC, and the ratio is taken over the totals of all pairs (per-turn medians
  // are printed for reference).
  const total = (values: readonly number[]): number => values.reduce((sum, value) => sum + value, 0);
  return {
    subject: median(result.subject),
    baseline: median(result.baseline),
    direct: total(result.direct) / result.direct.length,
    journal: total(result.journal) / result.journal.length,
    baselineMean: total(result.baseline) / result.baseline.length,
    ratio: total(result.subject) / Math.max(total(result.baseline), 1),
    events: result.events,
    batches: result.batches,
  };
}

const runtime = await start();
let failed = false;
try {
  console.log(`edge-agent bench on ${os.cpus()[0]?.model ?? 'unknown CPU'} (${os.cpus().length} cores), Node ${process.version}`);
  const deltas = await benchDeltas(runtime.url);
  const turns = await benchTurns(runtime.url);
  const rows = [
    [
      `token delta -> receipt p50 at ${SUBSCRIBERS} WebSockets vs bare broadcast of ${deltas.bytes} bytes`,
      `${deltas.subject.toFixed(3)} ms`,
      `${deltas.baseline.toFixed(3)} ms`,
      deltas.ratio,
      1.3,
    ],
    [
      `one-tool turn in the object (${turns.events} events, ${turns.batches} commits) vs the object's own appends of them`,
      `${turns.subject.toFixed(3)} ms`,
      `${turns.baseline.toFixed(3)} ms`,
      turns.ratio,
      // A whole turn against only the writes of its events: information (a retired target,
      // docs/performance.md).
      NaN,
    ],
  ] as const;
  for (const [name, subject, baseline, ratio, target] of rows) {
    if (Number.isNaN(target)) {
      console.log(`${name}\n  subject ${subject}  baseline ${baseline}  ratio ${ratio.toFixed(2)}x  information`);
      continue;
    }
    const pass = ratio <= target;
    failed ||= !pass;
    console.log(`${name}\n  subject ${subject}  baseline ${baseline}  ratio ${ratio.toFixed(2)}x  target <= ${target}x  ${pass ? 'PASS' : 'MISS'}`);
  }
  console.log(
    `information: the same turn through a Session created directly over the object's store (no host, lease or stream wrappers): ` +
      `${turns.direct.toFixed(3)} ms mean (${(turns.direct / turns.baselineMean).toFixed(2)}x the appends' mean)`,
  );
  console.log(
    `information: the same ${turns.batches} commands through a bare DurableSessionJournal on the object's store (no Session, model or tool): ` +
      `${turns.journal.toFixed(3)} ms mean (${(turns.journal / turns.baselineMean).toFixed(2)}x the appends' mean)`,
  );
} finally {
  await runtime.stop();
}
process.exitCode = failed ? 1 : 0;
