/**
 * Inspector on a long session: `node --import tsx bench/inspector-long.bench.ts` (or
 * `npm run bench -- bench inspector-long`).
 *
 * A memory-store session of 1,000,001 events (INSPECTOR_BENCH_LONG_CYCLES lifecycle cycles of 5
 * events, default 200,000) whose journal wrote a projection checkpoint at the head, then 1,000
 * events more. `loadInspection` as the inspector page loads it (opened from the checkpoint: the
 * session is over the page's 50,000-event limit) against the same call folding the whole log
 * (`?full=1`), alternating, 2 runs each: wall time and the heap's peak growth over a collected
 * heap (sampled every 5 ms and after every page). Prints both, and the ratios. No target: the
 * figures stand behind the inspector's paragraph in the README.
 */
import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';
import { MemoryDurableEventStore } from '../src/adapters/memory/memory-store.js';
import { DurableSessionJournal } from '../src/core/journal/index.js';
import { DEFAULT_PAGE_FULL_FOLD_LIMIT, loadInspection } from '../src/inspector/model/inspection.js';
import { SessionId } from '../src/protocol/ids.js';
import { appendCycles } from '../test/checkpoint/lifecycle-log.js';

const CYCLES = Number(process.env['INSPECTOR_BENCH_LONG_CYCLES'] ?? 200_000);
const RUNS = 2;

const gc: () => void = (() => {
  v8.setFlagsFromString('--expose-gc');
  // SAFETY: `--expose-gc` (set just above) makes `gc` a global function in new contexts.
  return runInNewContext('gc') as () => void;
})();

const sessionId = SessionId('long');
const store = new MemoryDurableEventStore();
await appendCycles(store, sessionId, 0, CYCLES);
if (!(await (await DurableSessionJournal.open(store, sessionId)).writeCheckpoint())) throw new Error('no checkpoint written');
const head = await appendCycles(store, sessionId, CYCLES, 200);

async function measure(fullFoldLimit: number): Promise<{ ms: number; peakMb: number; openedFrom: string }> {
  gc();
  const base = process.memoryUsage().heapUsed;
  let peak = base;
  const sample = (): void => {
    peak = Math.max(peak, process.memoryUsage().heapUsed);
  };
  const timer = setInterval(sample, 5);
  const started = performance.now();
  const inspection = await loadInspection(store, sessionId, { fullFoldLimit, onProgress: sample });
  const ms = performance.now() - started;
  clearInterval(timer);
  sample();
  return { ms, peakMb: (peak - base) / 1e6, openedFrom: inspection.openedFrom };
}

const fast: { ms: number; peakMb: number }[] = [];
const whole: { ms: number; peakMb: number }[] = [];
for (let run = 0; run < RUNS; run++) {
  const a = await measure(DEFAULT_PAGE_FULL_FOLD_LIMIT);
  if (a.openedFrom !== 'checkpoint') throw new Error('the long session did not open from its checkpoint');
  fast.push(a);
  const b = await measure(Number.POSITIVE_INFINITY);
  if (b.openedFrom !== 'log') throw new Error('the whole-log inspection did not fold the log');
  whole.push(b);
}
const list = (rows: { ms: number; peakMb: number }[], key: 'ms' | 'peakMb'): string => rows.map((row) => row[key].toFixed(key === 'ms' ? 0 : 1)).join(', ');
const mean = (rows: { ms: number; peakMb: number }[], key: 'ms' | 'peakMb'): number => rows.reduce((sum, row) => sum + row[key], 0) / rows.length;
console.log(`inspection of a ${head.toLocaleString('en-US')}-event memory-store session (checkpoint at ${(head - 1000).toLocaleString('en-US')})`);
console.log(`opened from the checkpoint   ${list(fast, 'ms')} ms   peak heap +${list(fast, 'peakMb')} MB`);
console.log(`whole log folded (baseline)  ${list(whole, 'ms')} ms   peak heap +${list(whole, 'peakMb')} MB`);
console.log(`ratio: time ${(mean(fast, 'ms') / mean(whole, 'ms')).toFixed(3)}x, peak heap ${(mean(fast, 'peakMb') / mean(whole, 'peakMb')).toFixed(3)}x`);
