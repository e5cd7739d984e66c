/**
 * JSONL durability benchmark: `node --import tsx bench/jsonl-durability.bench.ts`.
 *
 * One durable `step` through the durability port (`createDurabilityPort` over
 * `JsonlDurableEventStore`: the port's catch-up read, the body, `recordDurability` with its lock,
 * identity lookup, write and fsync) against one durable single-event `append` of about the same
 * number of bytes to the same session, on the same disk, in the same run. Target: a step costs
 * at most 1.3x an append.
 * After a warm-up (JIT, both files open), the two sides alternate in many short slices (4 steps,
 * 4 appends, the order flipping every slice) and the summed times are compared, so a noisy
 * shared disk affects both alike. Prints both figures, the line sizes, the ratio and PASS/MISS.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { JsonlDurableEventStore } from '../src/advanced.js';
import { createDurabilityPort } from '../src/core/durability/port.js';
import type { DurableEventDraft } from '../src/protocol/events.js';
import { RequestId, SessionId } from '../src/protocol/ids.js';

const WARM_UP_OPS = 2000;
const SLICES = 250;
const OPS_PER_SLICE = 4;
const TARGET_RATIO = 1.3;

const root = mkdtempSync(path.join(os.tmpdir(), 'jsonl-durability-bench-'));

/** The step's result: about the same JSON as the event's payload, so the lines are of similar size. */
function stepResult(i: number): { output: { summary: string; checks: string[]; index: number } } {
  return { output: { summary: 'deployment checks passed', checks: ['lint', 'unit', 'e2e'], index: i } };
}

function draft(i: number): DurableEventDraft {
  return { type: 'request_completed', requestId: RequestId(`request-${i}`), data: stepResult(i) };
}

async function timed(run: () => Promise<void>): Promise<number> {
  const start = performance.now();
  await run();
  return performance.now() - start;
}

function lastLineBytes(file: string): number {
  const lines = readFileSync(file, 'utf8').split('\n');
  return Buffer.byteLength(lines[lines.length - 2] ?? '') + 1;
}

const fmt = (n: number, digits = 0): string => n.toLocaleString('en-US', { maximumFractionDigits: digits });

async function main(): Promise<void> {
  console.log(`JSONL durability benchmark (${os.platform()} ${os.arch()}, node ${process.version}, dir ${root})`);
  const store = new JsonlDurableEventStore(root);
  const sessionId = SessionId('durability-bench');
  const port = createDurabilityPort({ store, sessionId, runId: 'bench' });
  let stepKey = 0;
  let appendIndex = 0;
  const steps = async (count: number): Promise<void> => {
    for (let i = 0; i < count; i++) {
      const index = stepKey++;
      await port.step(`step-${index}`, () => stepResult(index));
    }
  };
  const appends = async (count: number): Promise<void> => {
    for (let i = 0; i < count; i++) await store.append(sessionId, [draft(appendIndex++)]);
  };
  try {
    await steps(WARM_UP_OPS);
    await appends(WARM_UP_OPS);
    const paths = store.pathsOf(sessionId);
    const stepBytes = lastLineBytes(paths.durability);
    const appendBytes = lastLineBytes(paths.log);

    let stepMs = 0;
    let appendMs = 0;
    for (let slice = 0; slice < SLICES; slice++) {
      if (slice % 2 === 0) {
        stepMs += await timed(() => steps(OPS_PER_SLICE));
        appendMs += await timed(() => appends(OPS_PER_SLICE));
      } else {
        appendMs += await timed(() => appends(OPS_PER_SLICE));
        stepMs += await timed(() => steps(OPS_PER_SLICE));
      }
    }
    const count = SLICES * OPS_PER_SLICE;
    const stepUs = (stepMs / count) * 1000;
    const appendUs = (appendMs / count) * 1000;
    const ratio = stepMs / appendMs;
    console.log('');
    console.log(`one JSONL step (port.step)      ${fmt(stepUs)} µs  (${fmt(count / (stepMs / 1000))} steps/s, durability line ${stepBytes} B)`);
    console.log(`one durable JSONL append        ${fmt(appendUs)} µs  (${fmt(count / (appendMs / 1000))} appends/s, log line ${appendBytes} B)`);
    console.log(`ratio step / append             ${ratio.toFixed(2)}x  target <= ${TARGET_RATIO}x  ${ratio <= TARGET_RATIO ? 'PASS' : 'MISS'}`);
  } finally {
    port.close();
    await store.close();
    rmSync(root, { recursive: true, force: true });
  }
}

await main();
