/**
 * Projection checkpoint benchmark: `node --import tsx bench/checkpoints.bench.ts` (or
 * `npm run bench -- bench checkpoints`). Every figure is a ratio to a baseline measured in the
 * same run:
 * 1. opening a journal (fresh store object, new connection) on a session of BIG events with a
 *    checkpoint at its head vs on a session of 1,000 events (targets <= 2x), on SQLite and JSONL;
 *    also the worst case the default policy allows (the checkpoint lagging max(4096, head/64)
 *    events behind the head). Realistic ~0.5 KB events, generated with raw batch appends
 *    (1,000 events per append), then folded once by a journal to write the checkpoint; both
 *    times are printed. Before timing, the bench waits for the kernel to write the new files back
 *    (`sync`) and opens each session 3 times unmeasured (JIT warm-up of both paths).
 * 2. journal commit throughput (one 5-event command per commit) with the default checkpoint
 *    policy vs with checkpoints off, on a session that already holds HISTORY events (half on
 *    memory and HTTP), on memory, SQLite, JSONL, PostgreSQL (a throwaway server, one schema per
 *    store) and the HTTP client (`tp-http`: the local Worker on workerd,
 *    one session and so one object per store; target: at most 5% slower, information on memory). Three sides, each on a
 *    store (and file) of its own: 'with' (default policy), 'off-a' and 'off-b' (none). The run is
 *    cut into periods of 820 commits per side, one checkpoint period of the default policy, so
 *    every 'with' period pays for exactly one checkpoint write, whole (each turn waits for the writes
 *    it caused). Inside a period the sides take turns every 41 commits (about 10 ms on memory),
 *    rotating through all six orders, so the machine's changing load falls on all three alike. A
 *    full garbage collection runs between periods, outside the time, an old-generation collection
 *    inside a turn is taken out of it (its cost is set by all three stores' heaps), and every turn
 *    ends with a young-generation collection of its own garbage, inside its time. Each
 *    period gives a ratio with / off-a and an A/A ratio off-b / off-a, printed side by side with
 *    their quartiles, in wall time (the target) and in process CPU time; the medians are the
 *    figures. A last row sums the writes' own time (the policy's `onWrite` report: capture, encode,
 *    and the store call where it runs on the main thread) over the 'with' side's time: this share
 *    is measured directly, not as a difference of two noisy times. Periods:
 *    CHECKPOINT_BENCH_PERIODS (default 45 on memory, 30 over HTTP, where 9 and 15 periods left the
 *    median 3-5% from the truth, and 15 on SQLite, JSONL and PostgreSQL);
 *    CHECKPOINT_BENCH_POLICY='{"everyEvents":...}' overrides the 'with' policy (to split the cost
 *    of tracking from that of writing); CHECKPOINT_BENCH_AA=1 turns checkpoints off on 'with' too;
 *    CHECKPOINT_BENCH_DUMP=1 prints every period.
 * 3. a Durable Object cold start: the first journal commit (`POST .../commands`) after workerd
 *    was restarted on the same storage, on a session of 100,000 events (whose object wrote its
 *    own checkpoint) vs on a fresh session (target <= 2x); median over several restarts.
 * Sizes: CHECKPOINT_BENCH_EVENTS (SQLite, default 1,000,000), CHECKPOINT_BENCH_JSONL_EVENTS (default
 * 1,000,000: a process's first open of a JSONL log trusts the validated-state sidecar saved with the
 * checkpoint and validates only the lines appended since, see `validated-state.ts`),
 * CHECKPOINT_BENCH_EDGE_EVENTS (100,000); CHECKPOINT_BENCH_ONLY=open-sqlite,open-jsonl,tp-memory,
 * tp-sqlite,tp-jsonl,tp-postgres,tp-http,edge picks parts; CHECKPOINT_BENCH_REPEATS (9) opens per side. The full run
 * takes about 15 minutes on a quiet machine (most of it generating and folding the big logs once);
 * the three throughput parts about 2-3 minutes.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { constants as perfConstants, PerformanceObserver } from 'node:perf_hooks';
import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';
import { MemoryDurableEventStore } from '../src/adapters/memory/memory-store.js';
import { JsonlDurableEventStore } from '../src/adapters/node/jsonl/jsonl-store.js';
import { SqliteDurableEventStore } from '../src/adapters/node/sqlite/sqlite-store.js';
import { DEFAULT_CHECKPOINT_EVERY_EVENTS, DEFAULT_CHECKPOINT_SPACING_DIVISOR, type DurableCheckpointPolicy, type DurableCheckpointWriteInfo } from '../src/core/checkpoint/index.js';
import { keepsCheckpointExtensions } from '../src/core/checkpoint/contract.js';
import { DurableSessionJournal } from '../src/core/journal/index.js';
import type { DurableEventStore } from '../src/core/store.js';
import { CommandId, SessionId } from '../src/protocol/ids.js';
import { appendCycles, cycleDrafts } from '../test/checkpoint/lifecycle-log.js';
import { PostgresDurableEventStore } from '../src/postgres.js';
import { startPostgres, type PostgresServer } from '../test/postgres/server.js';
import { ADMIN_TOKEN, startEdgeRuntime, type EdgeRuntime } from './checkpoints/edge-runtime.js';
import { HttpDurableEventStore } from '../src/adapters/http/http-store.js';

const BIG = Number(process.env['CHECKPOINT_BENCH_EVENTS'] ?? 1_000_000);
const BIG_JSONL = Number(process.env['CHECKPOINT_BENCH_JSONL_EVENTS'] ?? 1_000_000);
const EDGE_EVENTS = Number(process.env['CHECKPOINT_BENCH_EDGE_EVENTS'] ?? 100_000);
const SMALL = 1000;
const OPEN_REPEATS = Number(process.env['CHECKPOINT_BENCH_REPEATS'] ?? 9);
/** Unmeasured open pairs before the timed ones (JIT warm-up of both paths). */
const OPEN_WARMUP = 3;
const HISTORY = 100_000;
/** Measured checkpoint periods of the throughput comparison (CHECKPOINT_BENCH_PERIODS overrides both). */
const TP_PERIODS = { memory: 45, file: 15, http: 30 };
/** Rounds of the throughput comparison: the roles rotate over the three stores. */
const TP_ROUNDS = 3;
/** Unmeasured periods at the start of each round (JIT, first buffers). */
const TP_WARMUP = 1;
const EVENTS_PER_COMMIT = 5;
/** Commits per side and period: one checkpoint period of the default policy. */
const SLICE_COMMITS = Math.ceil(DEFAULT_CHECKPOINT_EVERY_EVENTS / EVENTS_PER_COMMIT);
/** Turns per side and period. */
const SUB_SLICES = 20;
const EDGE_RESTARTS = 5;

const root = mkdtempSync(path.join(os.tmpdir(), 'checkpoint-bench-'));
const results: Array<{ name: string; ratio: number; target: number; detail: string }> = [];

type Closable = DurableEventStore & { close?: () => unknown };
/** `open` is the shared store of the open benches; `fresh(label)` a store of its own (own file). */
type Backend = {
  name: string;
  open: () => Closable;
  fresh: (label: string) => Closable | Promise<Closable>;
  /** The session each throughput store uses (default: one name; stores sharing one server need their own). */
  session?: (label: string) => SessionId;
};

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? NaN;
};
const seconds = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;

async function timed<T>(run: () => Promise<T>): Promise<[number, T]> {
  const start = performance.now();
  const value = await run();
  return [performance.now() - start, value];
}

function commandOf(index: number, prefix: string) {
  return {
    commandId: CommandId(`${prefix}-${index}`),
    events: cycleDrafts(index, prefix).map(({ commandId: _c, ...rest }) => rest) as never,
  };
}

/** Generates a session of about `events` events and writes a checkpoint at its head. */
async function generate(backend: Backend, sessionId: SessionId, events: number, checkpoint: boolean): Promise<number> {
  const store = backend.open();
  const cycles = Math.ceil((events - 1) / 5);
  const [appendMs, head] = await timed(() => appendCycles(store, sessionId, 0, cycles, 200));
  let foldMs = 0;
  if (checkpoint) {
    [foldMs] = await timed(async () => {
      const journal = await DurableSessionJournal.open(store, sessionId, { pageSize: 1000, storeTimeoutMs: 300_000, checkpoints: { read: false } });
      await journal.writeCheckpoint();
      await journal.flushCheckpoints();
    });
  }
  store.close?.();
  console.log(
    `  ${backend.name}: generated ${head} events in ${seconds(appendMs)} (batch appends)${checkpoint ? `, folded + checkpointed in ${seconds(foldMs)}` : ''}`,
  );
  return head;
}

async function openTime(backend: Backend, sessionId: SessionId, expectUsed: boolean): Promise<number> {
  const store = backend.open();
  try {
    const [ms, journal] = await timed(() => DurableSessionJournal.open(store, sessionId, { pageSize: 1000, storeTimeoutMs: 300_000, checkpoints: { write: false } }));
    const outcome = journal.getCheckpointOutcome().status;
    if (expectUsed && outcome !== 'used') throw new Error(`${backend.name}: the checkpoint was not used (${outcome})`);
    return ms;
  } finally {
    store.close?.();
  }
}

/**
 * Waits until the kernel has written back the files just generated (`sync`): a freshly written
 * 500 MB log is still being flushed for seconds, and opens timed meanwhile measured the disk's
 * write-back (3.9x in a run that opened right after generating, 1.4x once it was done).
 */
function settleDisk(): void {
  if (process.platform !== 'win32') spawnSync('sync', { stdio: 'ignore' });
}

async function openBench(backend: Backend, events: number): Promise<void> {
  const big = SessionId(`big-${backend.name}`);
  const small = SessionId(`small-${backend.name}`);
  const head = await generate(backend, big, events, true);
  await generate(backend, small, SMALL, false);
  settleDisk();
  // Unmeasured pairs first: both paths reach optimized code before either is timed.
  for (let repeat = 0; repeat < OPEN_WARMUP; repeat++) {
    await openTime(backend, small, false);
    await openTime(backend, big, true);
  }
  const bigTimes: number[] = [];
  const smallTimes: number[] = [];
  for (let repeat = 0; repeat < OPEN_REPEATS; repeat++) {
    smallTimes.push(await openTime(backend, small, false));
    bigTimes.push(await openTime(backend, big, true));
  }
  results.push({
    name: `${backend.name}: open ${head} events with a checkpoint at the head / open ${SMALL} events`,
    ratio: median(bigTimes) / median(smallTimes),
    target: 2,
    detail: `${median(bigTimes).toFixed(0)} ms / ${median(smallTimes).toFixed(0)} ms`,
  });
  // The worst case the default policy allows: the checkpoint lags everyEvents (4096) events on a
  // store that keeps extensions (JSONL, SQLite), max(4096, head / 64) on one that rewrites records.
  const store = backend.open();
  const spaced = !keepsCheckpointExtensions(store);
  const lag = spaced ? Math.max(DEFAULT_CHECKPOINT_EVERY_EVENTS, Math.ceil(head / DEFAULT_CHECKPOINT_SPACING_DIVISOR)) : DEFAULT_CHECKPOINT_EVERY_EVENTS;
  await appendCycles(store, big, 10_000_000, Math.ceil(lag / 5), 200);
  store.close?.();
  settleDisk();
  const lagTimes: number[] = [];
  for (let repeat = 0; repeat < 3; repeat++) lagTimes.push(await openTime(backend, big, true));
  results.push({
    name: `${backend.name}: open with the checkpoint ${lag} events behind (policy worst case) / open ${SMALL} events`,
    ratio: median(lagTimes) / median(smallTimes),
    target: NaN,
    detail: `${median(lagTimes).toFixed(0)} ms / ${median(smallTimes).toFixed(0)} ms (informational)`,
  });
}

/** Per-slice measurements of one side of the throughput comparison. */
type Side = { label: string; journal: DurableSessionJournal | null; wall: number[]; cpu: number[] };

/** The six orders of three sides: every side runs first, second and third equally often. */
const ORDERS = [
  [0, 1, 2],
  [1, 2, 0],
  [2, 0, 1],
  [0, 2, 1],
  [2, 1, 0],
  [1, 0, 2],
] as const;

/**
 * A full garbage collection, run between periods outside their time, so that each period starts
 * from the same heap rather than inheriting the previous one's collection debt.
 */
const gc: (options?: { type: 'minor' | 'major' }) => void = (() => {
  v8.setFlagsFromString('--expose-gc');
  // SAFETY: `--expose-gc` (set just above) makes `gc` a global function in new contexts.
  return runInNewContext('gc') as (options?: { type: 'minor' | 'major' }) => void;
})();
const collectGarbage = (): void => gc();
/** A young-generation collection (a scavenge). */
const collectYoung = (): void => gc({ type: 'minor' });

/** The `q` quantile (0..1) of `values`, by the nearest rank. */
function quantile(values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.round(q * (sorted.length - 1))))] ?? NaN;
}
const spread = (values: number[]): string => `${quantile(values, 0.25).toFixed(3)}-${quantile(values, 0.75).toFixed(3)}`;

async function throughputBench(backend: Backend, history: number): Promise<void> {
  const periods = Number(process.env['CHECKPOINT_BENCH_PERIODS'] ?? (backend.name === 'memory' ? TP_PERIODS.memory : backend.name === 'http' ? TP_PERIODS.http : TP_PERIODS.file));
  // Three stores (and, for SQLite and JSONL, files) built the same way, and three roles: 'with'
  // writes checkpoints by the default policy, 'off-a' and 'off-b' write none. Identical stores are
  // not equally fast: A/A runs showed one file or heap 10% faster than its twin for a whole run, in
  // either direction. So the roles rotate over the stores in TP_ROUNDS rounds (a Latin square: every
  // store plays every role once), each round on journals opened afresh. (In one shared database
  // the session whose key sorts first takes b-tree inserts in the middle of the index while the
  // other appends at its right edge, a bias of up to 10% in an A/A run: hence a store each.)
  // CHECKPOINT_BENCH_AA=1 turns checkpoints off on 'with' too: every row is then an A/A row.
  const aa = process.env['CHECKPOINT_BENCH_AA'] === '1';
  const writes: DurableCheckpointWriteInfo[] = [];
  let counting = false;
  const labels = ['a', 'b', 'c'];
  const sessionOf = (label: string): SessionId => backend.session?.(label) ?? SessionId(`tp-${backend.name}`);
  const stores: Closable[] = [];
  for (const label of labels) {
    const store = await backend.fresh(label);
    await appendCycles(store, sessionOf(label), 0, Math.ceil(history / 5), 200);
    stores.push(store);
  }
  const withPolicy: DurableCheckpointPolicy = {
    ...(JSON.parse(process.env['CHECKPOINT_BENCH_POLICY'] ?? '{}') as DurableCheckpointPolicy),
    onWrite: (write) => {
      if (counting) writes.push(write);
    },
    onWriteError: (error) => console.error(error),
  };
  const sides: Side[] = ['with', 'off-a', 'off-b'].map((label) => ({ label, journal: null, wall: [], cpu: [] }));
  let next = 1_000_000;
  // Old-generation collections: their cost is set by the live heap of all three stores, and each
  // lands whole (tens of milliseconds) in whichever slice triggers it, so they are timed and taken
  // out of that slice. Young-generation collections stay in the slices that made the garbage.
  const majorGcs: Array<{ start: number; end: number }> = [];
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      // A GC entry carries `detail.kind` (Node's docs); @types/node declares `detail` only on marks and measures.
      const kind = (entry as { detail?: { kind?: number } }).detail?.kind;
      if (kind === perfConstants.NODE_PERFORMANCE_GC_MAJOR) majorGcs.push({ start: entry.startTime, end: entry.startTime + entry.duration });
    }
  });
  observer.observe({ entryTypes: ['gc'] });
  const slices: Array<{ side: number; period: number; start: number; end: number }> = [];
  const slice = async (side: Side, commits: number): Promise<[number, number, number, number]> => {
    const cpuStart = process.cpuUsage();
    const start = performance.now();
    const journal = side.journal as DurableSessionJournal;
    for (let index = 0; index < commits; index++) await journal.commit(commandOf(next++, side.label));
    // A write this slice made due runs before the slice ends: no slice pays for another side's.
    await journal.flushCheckpoints();
    // So does the young-generation collection of the garbage it made (the young generation then
    // holds only this turn's objects, so a collection inside the turn is its own too): left to
    // chance, these land in whichever side's turn fills the nursery, a noise of about 10% per period.
    collectYoung();
    const end = performance.now();
    const cpu = process.cpuUsage(cpuStart);
    return [end - start, (cpu.user + cpu.system) / 1000, start, end];
  };
  // One period is SLICE_COMMITS commits per side: exactly one checkpoint of the default policy (every
  // store here keeps extensions, so writes are not spaced by head / 64). Within a period the three sides take
  // turns every SLICE_COMMITS / SUB_SLICES commits (about 10 ms on memory), rotating through all
  // six orders, so the machine's load, which changes over hundreds of milliseconds, weighs on all
  // three alike. Each side's period total, which includes its checkpoint write whole, gives one
  // ratio per period; the median over periods is the figure.
  let turn = 0;
  let measured = 0;
  for (let round = 0; round < TP_ROUNDS; round++) {
    counting = false;
    for (const [role, side] of sides.entries()) {
      const storeIndex = (round + role) % stores.length;
      const store = stores[storeIndex] as Closable;
      const checkpoints = role === 0 && !aa ? withPolicy : false;
      side.journal = await DurableSessionJournal.open(store, sessionOf(labels[storeIndex] as string), { pageSize: 1000, checkpoints });
      // The first checkpoint of a 'with' journal covers the whole log it just folded: not measured.
      await side.journal.flushCheckpoints();
    }
    const roundPeriods = Math.round(((round + 1) * periods) / TP_ROUNDS) - Math.round((round * periods) / TP_ROUNDS);
    for (let period = -TP_WARMUP; period < roundPeriods; period++) {
      collectGarbage();
      const wall = [0, 0, 0];
      const cpu = [0, 0, 0];
      counting = period >= 0;
      for (let sub = 0; sub < SUB_SLICES; sub++) {
        const commits = Math.floor(((sub + 1) * SLICE_COMMITS) / SUB_SLICES) - Math.floor((sub * SLICE_COMMITS) / SUB_SLICES);
        for (const index of ORDERS[turn++ % ORDERS.length] ?? ORDERS[0]) {
          const [w, c, start, end] = await slice(sides[index] as Side, commits);
          if (counting) slices.push({ side: index, period: measured, start, end });
          wall[index] = (wall[index] ?? 0) + w;
          cpu[index] = (cpu[index] ?? 0) + c;
        }
      }
      if (!counting) continue;
      measured++;
      sides.forEach((side, index) => {
        side.wall.push(wall[index] ?? NaN);
        side.cpu.push(cpu[index] ?? NaN);
      });
    }
  }
  await new Promise((resolve) => setTimeout(resolve, 10)); // let the observer deliver the last entries
  observer.disconnect();
  let gcMs = 0;
  for (const gc of majorGcs) {
    const hit = slices.find((s) => s.start <= gc.start && gc.start < s.end);
    if (hit === undefined) continue;
    const ms = Math.min(gc.end, hit.end) - gc.start;
    gcMs += ms;
    const side = sides[hit.side] as Side;
    side.wall[hit.period] = (side.wall[hit.period] ?? NaN) - ms;
    side.cpu[hit.period] = (side.cpu[hit.period] ?? NaN) - ms;
  }
  console.log(`  ${backend.name}: ${majorGcs.length} old-generation collections, ${gcMs.toFixed(0)} ms of them inside slices (taken out)`);
  const [withSide, offA, offB] = sides as [Side, Side, Side];
  if (process.env['CHECKPOINT_BENCH_DUMP'] === '1') {
    for (const side of sides) console.log(`  ${side.label} wall ${side.wall.map((ms) => ms.toFixed(0)).join(' ')}`);
    for (const side of sides) console.log(`  ${side.label} cpu  ${side.cpu.map((ms) => ms.toFixed(0)).join(' ')}`);
  }
  const head = Math.max(...sides.map((side) => side.journal?.getHeadSequence() ?? 0));
  const spaced = !keepsCheckpointExtensions(stores[0]);
  for (const store of stores) await store.close?.();
  if (!aa && spaced && Math.ceil(head / DEFAULT_CHECKPOINT_SPACING_DIVISOR) > DEFAULT_CHECKPOINT_EVERY_EVENTS) {
    console.warn(`  ${backend.name}: the head grew past the spacing limit; periods no longer hold one checkpoint each`);
  }
  const ratios = (a: number[], b: number[]): number[] => a.map((value, index) => value / (b[index] ?? NaN));
  const events = SLICE_COMMITS * EVENTS_PER_COMMIT;
  const what = `history ${history}, ${periods} periods of ${events} events per side`;
  const perSecond = (ms: number[]): string => ((events / median(ms)) * 1000).toFixed(0);
  const withWall = ratios(withSide.wall, offA.wall);
  const aaWall = ratios(offB.wall, offA.wall);
  const withCpu = ratios(withSide.cpu, offA.cpu);
  const aaCpu = ratios(offB.cpu, offA.cpu);
  results.push({
    name: `${backend.name}: commit throughput, checkpoints on / off, wall time (${what})`,
    ratio: median(withWall),
    // The memory store keeps nothing across a restart: its checkpoint cost is information only.
    target: backend.name === 'memory' ? NaN : 1.05,
    detail: `median of per-period ratios, quartiles ${spread(withWall)}; median period ${perSecond(withSide.wall)} vs ${perSecond(offA.wall)} events/s`,
  });
  results.push({
    name: `${backend.name}: A/A in the same run, off / off, wall time`,
    ratio: median(aaWall),
    target: NaN,
    detail: `the bench's own noise: quartiles ${spread(aaWall)} (informational)`,
  });
  results.push({
    name: `${backend.name}: the same, process CPU time (all threads), checkpoints on / off`,
    ratio: median(withCpu),
    target: NaN,
    detail: `quartiles ${spread(withCpu)}; A/A off / off ${median(aaCpu).toFixed(3)}, quartiles ${spread(aaCpu)} (informational)`,
  });
  if (!aa) {
    const total = (pick: (write: DurableCheckpointWriteInfo) => number): number => writes.reduce((sum, write) => sum + pick(write), 0);
    const withMs = withSide.wall.reduce((sum, ms) => sum + ms, 0);
    // On memory and SQLite the store call is synchronous main-thread work (a copy, an insert); on
    // JSONL it is mostly waiting for a temp file's write and fsync in the thread pool.
    const mainThread = total((w) => w.captureMs + w.encodeMs) + (backend.name === 'jsonl' ? 0 : total((w) => w.storeMs));
    const perWrite = (pick: (write: DurableCheckpointWriteInfo) => number): string => (total(pick) / Math.max(1, writes.length)).toFixed(2);
    results.push({
      name: `${backend.name}: time in checkpoint writes / time of the 'with' slices, as a slowdown (1 + share of the rest)`,
      ratio: withMs / (withMs - mainThread),
      target: NaN,
      detail:
        `${writes.length} writes of ${(total((w) => w.bytes) / Math.max(1, writes.length) / 1024).toFixed(0)} KB (${perWrite((w) => w.addedKeys)} new of ${writes.at(-1)?.keys ?? 0} keys); ` +
        `per write: capture ${perWrite((w) => w.captureMs)} ms, encode ${perWrite((w) => w.encodeMs)} ms, store call ${perWrite((w) => w.storeMs)} ms` +
        `${backend.name === 'jsonl' ? ' (not counted: off the main thread)' : ''}; ${mainThread.toFixed(0)} of ${withMs.toFixed(0)} ms (informational)`,
    });
  }
}

async function http(base: URL, method: string, pathname: string, body?: unknown): Promise<unknown> {
  const response = await fetch(new URL(pathname, base), {
    method,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${pathname}: ${response.status} ${text.slice(0, 300)}`);
  return JSON.parse(text) as unknown;
}

async function edgeBench(): Promise<void> {
  const runtime = await startEdgeRuntime();
  try {
    const big = 'edge-big';
    const fresh = 'edge-fresh';
    const [genMs] = await timed(async () => {
      await http(runtime.url(), 'POST', `/v1/sessions/${big}/events`, { events: [{ type: 'session_created', data: {} }] });
      for (let start = 0; start * 5 < EDGE_EVENTS; start += 150) {
        const events = [];
        for (let index = start; index < start + 150; index++) events.push(...cycleDrafts(index));
        await http(runtime.url(), 'POST', `/v1/sessions/${big}/events`, { events });
      }
      await http(runtime.url(), 'POST', `/v1/sessions/${fresh}/events`, { events: [{ type: 'session_created', data: {} }] });
    });
    // The object writes its checkpoint itself once appends pause: wait for it (bounded).
    let checkpointAt = 0;
    for (let attempt = 0; attempt < 600 && checkpointAt < EDGE_EVENTS; attempt++) {
      const answer = (await http(runtime.url(), 'GET', `/v1/sessions/${big}/checkpoint`)) as { checkpoint: { sequence: number } | null };
      checkpointAt = answer.checkpoint?.sequence ?? 0;
      if (checkpointAt < EDGE_EVENTS) await new Promise((resolve) => setTimeout(resolve, 200));
    }
    console.log(`  edge: generated ${EDGE_EVENTS} events over HTTP in ${seconds(genMs)}; the object's checkpoint stands at ${checkpointAt}`);
    const bigTimes: number[] = [];
    const freshTimes: number[] = [];
    for (let restart = 0; restart < EDGE_RESTARTS; restart++) {
      for (const [session, times] of (restart % 2 === 0 ? [[fresh, freshTimes], [big, bigTimes]] : [[big, bigTimes], [fresh, freshTimes]]) as Array<[string, number[]]>) {
        await runtime.evict();
        const index = 5_000_000 + restart;
        const prefix = `cold-${session}`;
        const [ms] = await timed(() =>
          http(runtime.url(), 'POST', `/v1/sessions/${session}/commands`, {
            commandId: `${prefix}-${index}`,
            events: cycleDrafts(index, prefix).map(({ commandId: _c, ...rest }) => rest),
          }),
        );
        times.push(ms);
      }
    }
    results.push({
      name: `edge: first commit after a cold start, ${EDGE_EVENTS}-event session / fresh session`,
      ratio: median(bigTimes) / median(freshTimes),
      target: 2,
      detail: `${median(bigTimes).toFixed(0)} ms / ${median(freshTimes).toFixed(0)} ms (median of ${EDGE_RESTARTS} restarts)`,
    });
  } finally {
    await runtime.stop();
  }
}

const sqlite: Backend = {
  name: 'sqlite',
  open: () => new SqliteDurableEventStore(path.join(root, 'bench.sqlite')),
  fresh: (label) => new SqliteDurableEventStore(path.join(root, `tp-${label}.sqlite`)),
};
const jsonl: Backend = {
  name: 'jsonl',
  open: () => new JsonlDurableEventStore(path.join(root, 'jsonl')),
  fresh: (label) => new JsonlDurableEventStore(path.join(root, `tp-${label}`)),
};
/** A throwaway PostgreSQL server (started on first use), one schema per throughput store. */
let pgServer: PostgresServer | undefined;
const postgres: Backend = {
  name: 'postgres',
  open: () => {
    throw new Error('the open benches do not run on PostgreSQL');
  },
  fresh: async (label) => {
    pgServer ??= await startPostgres();
    return PostgresDurableEventStore.open({ connectionString: pgServer.url, schema: `tp_${label}` });
  },
};
/** The local Worker (started on first use) behind the HTTP client's throughput stores. */
let edgeRuntime: EdgeRuntime | undefined;
const httpBackend: Backend = {
  name: 'http',
  open: () => {
    throw new Error('the open benches do not run over HTTP');
  },
  fresh: async () => {
    edgeRuntime ??= await startEdgeRuntime();
    return new HttpDurableEventStore({ baseUrl: edgeRuntime.url(), token: ADMIN_TOKEN });
  },
  // One Worker serves the three stores: each gets a session (an object, a database) of its own.
  session: (label) => SessionId(`tp-http-${label}`),
};
const memoryStore = new MemoryDurableEventStore();
const memory: Backend = { name: 'memory', open: () => memoryStore, fresh: () => new MemoryDurableEventStore() };

try {
  const only = process.env['CHECKPOINT_BENCH_ONLY'];
  const want = (part: string): boolean => only === undefined || only.split(',').includes(part);
  console.log(`open benchmark (${BIG} events)...`);
  if (want('open-sqlite')) await openBench(sqlite, BIG);
  if (want('open-jsonl')) await openBench(jsonl, BIG_JSONL);
  console.log('append throughput benchmark...');
  if (want('tp-memory')) await throughputBench(memory, HISTORY / 2);
  if (want('tp-sqlite')) await throughputBench(sqlite, HISTORY);
  if (want('tp-jsonl')) await throughputBench(jsonl, HISTORY);
  if (want('tp-postgres')) await throughputBench(postgres, HISTORY);
  if (want('tp-http')) await throughputBench(httpBackend, HISTORY / 2);
  if (want('edge')) {
    console.log('edge cold start benchmark...');
    await edgeBench();
  }
} finally {
  rmSync(root, { recursive: true, force: true });
  await pgServer?.stop();
  await edgeRuntime?.stop();
}

console.log('\n| measurement | ratio | target | detail |\n|---|---|---|---|');
for (const r of results) {
  console.log(`| ${r.name} | ${r.ratio.toFixed(2)} | ${Number.isNaN(r.target) ? '-' : `<= ${r.target}`} | ${r.detail} |`);
}
for (const r of results) {
  if (!Number.isNaN(r.target)) console.log(`${r.ratio <= r.target ? 'PASS' : 'MISS'} ${r.name}: ${r.ratio.toFixed(2)} (target <= ${r.target})`);
}
