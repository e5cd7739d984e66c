/**
 * Shared helpers of the lease tests: a memory store on a manual clock whose store side can jump
 * ahead (to expire a lease at the store without waiting), polling without fixed sleeps, marker drafts carrying the writer's
 * token, and error-code extraction.
 */
import { MemoryDurableEventStore } from '../../src/adapters/memory/memory-store.js';
import type { DurableEventDraft, DurableEventEnvelope } from '../../src/protocol/events.js';
import { RequestId } from '../../src/protocol/ids.js';
import { ManualTimeSource } from '../../src/core/time.js';

/** TTL of in-process test leases. */
export const TTL_MS = 400;
/** Heartbeat period of in-process test leases. */
export const HEARTBEAT_MS = 100;

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Polls `condition` every few ms until it holds; throws after `timeoutMs`. */
export async function waitUntil(condition: () => boolean | Promise<boolean>, what: string, timeoutMs = 5_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!(await condition())) {
    if (performance.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await sleep(5);
  }
}

/**
 * A memory store and a lease handle sharing one manual clock. `time` drives the handle's timers
 * (pass it as the lease's `time`); `jump` moves only the store's clock ahead (to expire a lease at
 * the store without the handle noticing until its next call).
 */
export function manualClockStore(): { time: ManualTimeSource; store: MemoryDurableEventStore; jump: (ms: number) => void } {
  const time = new ManualTimeSource();
  let offsetMs = 0;
  const store = new MemoryDurableEventStore({ clock: () => time.wallNow() + offsetMs });
  return { time, store, jump: (ms) => (offsetMs += ms) };
}

/** What a test writer puts in an event: its tag, owner and the fencing token it used. */
export interface WriteTag {
  tag: string;
  owner: string;
  token: number;
}

/** A marker draft carrying `tag` (its `data.output`). */
export function tagged(tag: WriteTag): DurableEventDraft<'request_completed'> {
  return { type: 'request_completed', requestId: RequestId('lease-test'), data: { output: { ...tag } } };
}

/** The tag a {@link tagged} event carries. */
export function tagOf(event: DurableEventEnvelope): WriteTag {
  if (event.type !== 'request_completed') throw new Error(`unexpected event type ${event.type}`);
  // SAFETY: every event these tests write is built by `tagged`.
  return (event.data as unknown as { output: WriteTag }).output;
}

/** The `code` of a rejection (or `undefined`). */
export async function rejectionCode(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return (error as { code?: unknown } | null)?.code;
  }
  throw new Error('expected a rejection');
}

/** The code of an abort reason. */
export function codeOf(value: unknown): unknown {
  return (value as { code?: unknown } | null | undefined)?.code;
}

/**
 * Blocks the event loop for at least `ms` of real time (a stand-in for a GC pause or a stopped
 * process: no timer runs). It sleeps the thread in `Atomics.wait` rather than spinning, so a stall
 * does not itself load a busy machine; the loop re-checks the monotonic clock, so the stall is
 * never shorter than asked.
 */
export function blockEventLoop(ms: number): void {
  const cell = new Int32Array(new SharedArrayBuffer(4));
  const until = performance.now() + ms;
  for (let left = ms; left > 0; left = until - performance.now()) {
    Atomics.wait(cell, 0, 0, Math.ceil(left));
  }
}
