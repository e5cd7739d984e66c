/**
 * Short-lived opens of a long JSONL log written without a checkpoint (by another tool, restored
 * from a backup, or older than checkpoints): `node --import tsx bench/short-lived-open.bench.ts`
 * (or `npm run bench -- bench short-lived`). Each open runs in a child process of its own that
 * closes its store and exits right after the open (`short-lived-open/open-once.ts`), as a CLI
 * call, a serverless invocation or a cron job does. Figures are ratios to the open of a 1,001-event
 * log (no checkpoint) measured in the same run:
 * 1. the first open of the long log folds all of it and writes a checkpoint at the head before it
 *    returns (informational: it must fold once);
 * 2. every later open stands on that checkpoint (target <= 2x).
 * Times are the open's own (`DurableSessionJournal.open`), measured in the child; the medians of
 * SHORT_OPEN_BENCH_REPEATS (default 5) alternating pairs. Size: SHORT_OPEN_BENCH_EVENTS (default
 * 110,001). The run takes about a minute on a quiet machine, most of it generating the log.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { JsonlDurableEventStore } from '../src/adapters/node/jsonl/jsonl-store.js';
import type { DurableCheckpointOutcome, DurableCheckpointWriteInfo } from '../src/core/checkpoint/index.js';
import { SessionId } from '../src/protocol/ids.js';
import { appendCycles } from '../test/checkpoint/lifecycle-log.js';

const EVENTS = Number(process.env['SHORT_OPEN_BENCH_EVENTS'] ?? 110_001);
const SMALL = 1001;
const REPEATS = Number(process.env['SHORT_OPEN_BENCH_REPEATS'] ?? 5);
const here = path.dirname(fileURLToPath(import.meta.url));
const repoRoot = path.resolve(here, '..');
const root = mkdtempSync(path.join(os.tmpdir(), 'short-lived-open-bench-'));

type Opened = { ms: number; head: number; outcome: DurableCheckpointOutcome; writes: DurableCheckpointWriteInfo[] };

function openOnce(session: string): Opened {
  const child = spawnSync(process.execPath, ['--import', 'tsx', path.join(here, 'short-lived-open', 'open-once.ts'), root, session], {
    cwd: repoRoot,
    encoding: 'utf8',
  });
  if (child.status !== 0) throw new Error(`the open of ${session} failed (${String(child.status)}): ${child.stderr}`);
  return JSON.parse(child.stdout) as Opened;
}

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? NaN;

try {
  const store = new JsonlDurableEventStore(root);
  const long = SessionId('long');
  const small = SessionId('small');
  const generateStart = performance.now();
  const head = await appendCycles(store, long, 0, Math.ceil((EVENTS - 1) / 5), 200);
  await appendCycles(store, small, 0, Math.ceil((SMALL - 1) / 5), 200);
  await store.close();
  console.log(`generated ${head} and ${SMALL} events in ${((performance.now() - generateStart) / 1000).toFixed(1)} s (raw appends, no checkpoint)`);
  // Let the kernel write the new files back before anything is timed.
  if (process.platform !== 'win32') spawnSync('sync', { stdio: 'ignore' });
  openOnce(small); // unmeasured: the small log's pages in the page cache, like the long one's below

  const first = openOnce(long);
  if (first.outcome.status !== 'none') throw new Error(`the first open found a checkpoint: ${JSON.stringify(first.outcome)}`);
  const write = first.writes.at(-1);
  if (write?.sequence !== head) throw new Error(`the first open wrote no checkpoint at the head: ${JSON.stringify(first.writes)}`);
  const smallTimes: number[] = [];
  const laterTimes: number[] = [];
  for (let repeat = 0; repeat < REPEATS; repeat++) {
    smallTimes.push(openOnce(small).ms);
    const later = openOnce(long);
    if (later.outcome.status !== 'used' || later.outcome.sequence !== head) throw new Error(`a later open did not stand on the head: ${JSON.stringify(later.outcome)}`);
    laterTimes.push(later.ms);
  }
  const base = median(smallTimes);
  const rows = [
    {
      name: `first open of ${head} events without a checkpoint (folds all, writes one) / open ${SMALL} events`,
      ratio: first.ms / base,
      target: NaN,
      detail: `${first.ms.toFixed(0)} ms / ${base.toFixed(0)} ms; of which the checkpoint write ${(write.captureMs + write.encodeMs + write.storeMs).toFixed(0)} ms (${(write.bytes / 1024).toFixed(0)} KB) (informational)`,
    },
    {
      name: `later open of ${head} events, a process of its own / open ${SMALL} events`,
      ratio: median(laterTimes) / base,
      target: 2,
      detail: `${median(laterTimes).toFixed(0)} ms / ${base.toFixed(0)} ms (medians of ${REPEATS})`,
    },
  ];
  console.log('\n| measurement | ratio | target | detail |\n|---|---|---|---|');
  for (const r of rows) console.log(`| ${r.name} | ${r.ratio.toFixed(2)} | ${Number.isNaN(r.target) ? '-' : `<= ${r.target}`} | ${r.detail} |`);
  for (const r of rows) {
    if (!Number.isNaN(r.target)) console.log(`${r.ratio <= r.target ? 'PASS' : 'MISS'} ${r.name}: ${r.ratio.toFixed(2)} (target <= ${r.target})`);
  }
} finally {
  rmSync(root, { recursive: true, force: true });
}
