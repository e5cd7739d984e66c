/**
 * Small helpers shared by the check files: seeding a session and waiting for an asynchronous
 * notification without a fixed sleep.
 */
import type { DurableEventStore } from '../core/store.js';
import type { SessionId } from '../protocol/ids.js';
import { fail, sleep } from './assertions.js';
import { markerDrafts } from './fixtures.js';
import type { ConformanceContext } from './types.js';

/** Longest wait for something that must eventually happen (a watch notice), in milliseconds. */
export const EVENTUALLY_TIMEOUT_MS = 5_000;

/** Appends `count` marker events in one unconditioned batch and returns the new head. */
export async function seed(
  ctx: ConformanceContext<DurableEventStore>,
  sessionId: SessionId,
  count: number,
  prefix = 'seed',
): Promise<number> {
  const result = await ctx.store.append(sessionId, markerDrafts(count, prefix));
  return result.lastSequence;
}

/** Polls `condition` until it holds; fails with `what` after {@link EVENTUALLY_TIMEOUT_MS}. */
export async function eventually(condition: () => boolean, what: string, withinMs = EVENTUALLY_TIMEOUT_MS): Promise<void> {
  const deadline = Date.now() + withinMs;
  while (!condition()) {
    if (Date.now() > deadline) fail(`${what}: did not happen within ${withinMs} ms`);
    await sleep(2);
  }
}

/** Lets every queued microtask and one timer turn run. */
export function settle(): Promise<void> {
  return sleep(0);
}
