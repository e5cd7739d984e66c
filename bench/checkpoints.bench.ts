/**
 * Projection checkpoint benchmark: `node --import tsx bench/checkpoints.bench.ts` (or
 * `npm run bench -- bench checkpoints`). Every figure is a ratio to a baseline measured in the
 * same run:
 * 1. opening a journal (fresh store object, new connection) on a session of BIG events with a
 *    checkpoint at its head vs on a session of 1,000 events (targets <= 2x), on SQLite and JSONL;
 *    also the worst case the default policy allows (the checkpoint lagging max(4096, head/64)
 *    events behind the head). Realistic ~0.5 KB events, generated with raw batch appends
 *    (1,000 events per append), then folded once by a journal to write the checkpoint; both
 *    times are printed.
 * 2. journal commit throughput (one 5-event command per commit) with the default checkpoint
 *    policy vs with checkpoints off, on a session that already holds HISTORY events, on memory,
 *    SQLite and JSONL (target: at most 5% slower). Subject and baseline alternate in 64 slices
 *    (CHECKPOINT_BENCH_SLICES) of 60 commits, each side on a store and database file of its own;
 *    CHECKPOINT_BENCH_AA=1 turns checkpoints off on both sides to show the bench's own noise. The
 *    comparison runs CHECKPOINT_BENCH_ROUNDS (3) times; each round includes the checkpoint writes
 *    it caused, and the median round is the figure.
 * 3. a Durable Object cold start: the first journal commit (`POST .../commands`) after workerd
 *    was restarted on the same storage, on a session of 100,000 events (whose object wrote its
 *    own checkpoint) vs on a fresh session (target <= 2x); median over several restarts.
 * Sizes: CHECKPOINT_BENCH_EVENTS (SQLite, default 1,000,000), CHECKPOINT_BENCH_JSONL_EVENTS (default
 * 1,000,000: a process's first open of a JSONL log trusts the validated-state sidecar saved with the
 * checkpoint and validates only the lines appended since, see `validated-state.ts`),
 * CHECKPOINT_BENCH_EDGE_EVENTS (100,000); CHECKPOINT_BENCH_ONLY=open-sqlite,open-jsonl,tp-memory,
 * tp-sqlite,tp-jsonl,edge picks parts; CHECKPOINT_BENCH_REPEATS (9) opens per side. The full run
 * takes about 15 minutes on a quiet machine (most of it generating and folding the big logs once).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { MemoryDurableEventStore } from '../src/adapters/memory/memory-store.js';
import { JsonlDurableEventStore } from '../src/adapters/node/jsonl/jsonl-store.js';
import { SqliteDurableEventStore } from '../src/adapters/node/sqlite/sqlite-store.js';
import { DurableSessionJournal } from '../src/core/journal/index.js';
import type { DurableEventStore } from '../src/core/store.js';
import { CommandId, SessionId } from '../src/protocol/ids.js';
import { appendCycles, cycleDrafts } from '../test/checkpoint/lifecycle-log.js';
import { ADMIN_TOKEN, startEdgeRuntime } from './checkpoints/edge-runtime.js';

const BIG = Number(process.env['CHECKPOINT_BENCH_EVENTS'] ?? 1_000_000);
const BIG_JSONL = Number(process.env['CHECKPOINT_BENCH_JSONL_EVENTS'] ?? 1_000_000);
const EDGE_EVENTS = Number(process.env['CHECKPOINT_BENCH_EDGE_EVENTS'] ?? 100_000);
const SMALL = 1000;
const OPEN_REPEATS = Number(process.env['CHECKPOINT_BENCH_REPEATS'] ?? 9);
const HISTORY = 100_000;
const COMMIT_SLICES = Number(process.env["CHECKPOINT_BENCH_SLICES"] ?? 64);
const COMMITS_PER_SLICE = 60;
/** Independent on/off comparisons per backend; the median is the figure. */
const TP_ROUNDS = Number(process.env['CHECKPOINT_BENCH_ROUNDS'] ?? 3);
const EDGE_RESTARTS = 5;

const root = mkdtempSync(path.join(os.tmpdir(), 'checkpoint-bench-'));
const results: Array<{ name: string; ratio: number; target: number; detail: string }> = [];

type Closable = DurableEventStore & { close?: () => unknown };
/** `open` is the shared store of the open benches; `fresh(label)` a store of its own (own file). */
type Backend = { name: string; open: () => Closable; fresh: (label: string) => Closable };

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

async function openBench(backend: Backend, events: number): Promise<void> {
  const big = SessionId(`big-${backend.name}`);
  const small = SessionId(`small-${backend.name}`);
  const head = await generate(backend, big, events, true);
  await generate(backend, small, SMALL, false);
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
  // The worst case the default policy allows: the checkpoint lags max(4096, head/64) events.
  const lag = Math.max(4096, Math.ceil(head / 64));
  const store = backend.open();
  await appendCycles(store, big, 10_000_000, Math.ceil(lag / 5), 200);
  store.close?.();
  const lagTimes: number[] = [];
  for (let repeat = 0; repeat < 3; repeat++) lagTimes.push(await openTime(backend, big, true));
  results.push({
    name: `${backend.name}: open with the checkpoint ${lag} events behind (policy worst case) / open ${SMALL} events`,
    ratio: median(lagTimes) / median(smallTimes),
    target: NaN,
    detail: `${median(lagTimes).toFixed(0)} ms / ${median(smallTimes).toFixed(0)} ms (informational)`,
  });
}

async function throughputBench(backend: Backend, history: number): Promise<void> {
  // Each side has a store (and, for SQLite, a database file) of its own, built the same way: in
  // one shared database the session whose key sorts first takes b-tree inserts in the middle of
  // the index while the other appends at its right edge, a bias of up to 10% in an A/A run.
  const withId = SessionId(`tp-${backend.name}`);
  const withoutId = SessionId(`tp-${backend.name}`);
  const withStore = backend.fresh('with');
  const withoutStore = backend.fresh('without');
  await appendCycles(withStore, withId, 0, Math.ceil(history / 5), 200);
  await appendCycles(withoutStore, withoutId, 0, Math.ceil(history / 5), 200);
  // CHECKPOINT_BENCH_AA=1 turns checkpoints off on both sides: the ratio then shows the bench's own noise.
  const aa = process.env['CHECKPOINT_BENCH_AA'] === '1';
  const withJournal = await DurableSessionJournal.open(withStore, withId, { pageSize: 1000, ...(aa ? { checkpoints: false } : {}) });
  const withoutJournal = await DurableSessionJournal.open(withoutStore, withoutId, { pageSize: 1000, checkpoints: false });
  await withJournal.flushCheckpoints();
  const store = withStore;
  const writesBefore = (await (store as unknown as { readCheckpoint(id: SessionId): Promise<{ sequence: number } | null> }).readCheckpoint(withId))?.sequence ?? 0;
  let next = 1_000_000;
  const slice = async (journal: DurableSessionJournal, prefix: string): Promise<number> => {
    const start = performance.now();
    for (let index = 0; index < COMMITS_PER_SLICE; index++) await journal.commit(commandOf(next++, prefix));
    return performance.now() - start;
  };
  // Independent rounds, each a full alternation ending with the checkpoint writes it caused; the
  // median round is reported (every round pays its own checkpoints, so none is left out).
  const rounds: Array<{ withMs: number; withoutMs: number; flushMs: number }> = [];
  for (let round = 0; round < TP_ROUNDS; round++) {
    let withMs = 0;
    let withoutMs = 0;
    for (let index = 0; index < COMMIT_SLICES; index++) {
      if (index % 2 === 0) {
        withoutMs += await slice(withoutJournal, 'without');
        withMs += await slice(withJournal, 'with');
      } else {
        withMs += await slice(withJournal, 'with');
        withoutMs += await slice(withoutJournal, 'without');
      }
    }
    // Checkpoint writes run after commits return; their cost lands in the measured loop only through
    // the event loop. Waiting for the last one here keeps the comparison honest about the work done.
    const [flushMs] = await timed(() => withJournal.flushCheckpoints());
    rounds.push({ withMs: withMs + flushMs, withoutMs, flushMs });
  }
  const writesAfter = (await (store as unknown as { readCheckpoint(id: SessionId): Promise<{ sequence: number } | null> }).readCheckpoint(withId))?.sequence ?? 0;
  withStore.close?.();
  withoutStore.close?.();
  const ratios = rounds.map((r) => r.withMs / r.withoutMs);
  const middle = rounds[ratios.indexOf(median(ratios))] ?? rounds[0];
  const events = COMMIT_SLICES * COMMITS_PER_SLICE * 5;
  results.push({
    name: `${backend.name}: commit throughput, checkpoints on / off (history ${history}, ${events} events each, median of ${TP_ROUNDS} rounds)`,
    ratio: median(ratios),
    target: 1.05,
    detail: `rounds ${ratios.map((r) => r.toFixed(2)).join(' / ')}; median round ${((events / (middle?.withMs ?? NaN)) * 1000).toFixed(0)} vs ${((events / (middle?.withoutMs ?? NaN)) * 1000).toFixed(0)} events/s, its checkpoint writes ${middle?.flushMs.toFixed(0)} ms; checkpoint moved ${writesBefore} -> ${writesAfter}`,
  });
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
  if (want('edge')) {
    console.log('edge cold start benchmark...');
    await edgeBench();
  }
} finally {
  rmSync(root, { recursive: true, force: true });
}

console.log('\n| measurement | ratio | target | detail |\n|---|---|---|---|');
for (const r of results) {
  console.log(`| ${r.name} | ${r.ratio.toFixed(2)} | ${Number.isNaN(r.target) ? '-' : `<= ${r.target}`} | ${r.detail} |`);
}
for (const r of results) {
  if (!Number.isNaN(r.target)) console.log(`${r.ratio <= r.target ? 'PASS' : 'MISS'} ${r.name}: ${r.ratio.toFixed(2)} (target <= ${r.target})`);
}
