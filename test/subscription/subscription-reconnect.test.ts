/**
 * Reconnection under concurrent appends (randomized, bounded, fixed seed): a consumer that saves
 * each cursor after processing and reconnects many times, while a writer keeps appending batches,
 * sees every event exactly once and in order; in every connection, replayed events stop at the
 * barrier, exactly one caught_up follows, and later events are live. Run with and without watch.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MemoryDurableEventStore } from '../../src/adapters/memory/memory-store.js';
import { markerDrafts } from '../../src/conformance/fixtures.js';
import type { DurableEventStore } from '../../src/core/store.js';
import { DurableEventSubscription } from '../../src/core/subscription/index.js';
import type { DurableEventCursor } from '../../src/protocol/cursor.js';
import { SessionId } from '../../src/protocol/ids.js';
import { sleepIgnoringSignal, wrapStore } from '../journal/store-wrappers.js';

const sessionId = SessionId('reconnect-session');

async function scenario(
  usesWatch: boolean,
  initial: number,
  batches: number[],
  connections: number[],
  pageSize: number,
): Promise<void> {
  const inner = new MemoryDurableEventStore();
  const store: DurableEventStore = usesWatch ? inner : wrapStore(inner, { watch: false });
  if (initial > 0) await inner.append(sessionId, markerDrafts(initial, 'initial'));
  const total = initial + batches.reduce((sum, size) => sum + size, 0);

  const writer = (async () => {
    for (const [index, size] of batches.entries()) {
      await sleepIgnoringSignal(index % 3);
      await inner.append(sessionId, markerDrafts(size, `batch-${index}`));
    }
  })();

  const seen: number[] = [];
  let saved: DurableEventCursor | null = null;
  const consume = async (take: number): Promise<void> => {
    const subscription = await DurableEventSubscription.open(store, sessionId, { after: saved, pageSize, pollIntervalMs: 1 });
    const barrier = subscription.replayHeadSequence ?? 0;
    let caughtUp = 0;
    let taken = 0;
    while (taken < take && seen.length < total) {
      const result = await subscription.next();
      if (result.done === true) throw new Error('ended early');
      const message = result.value;
      if (message.type === 'caught_up') {
        caughtUp += 1;
        expect(message.headSequence ?? 0).toBe(barrier);
        continue;
      }
      const sequence = message.event.sequence;
      expect(message.live).toBe(sequence > barrier);
      expect(caughtUp).toBe(message.live ? 1 : 0);
      seen.push(sequence); // "process", then save the cursor
      saved = message.cursor;
      taken += 1;
    }
    expect(caughtUp).toBeLessThanOrEqual(1);
    subscription.close();
  };

  for (const take of connections) await consume(take);
  while (seen.length < total) await consume(total);
  await writer;
  expect(seen).toEqual(Array.from({ length: total }, (_, index) => index + 1));
}

describe('DurableEventSubscription: reconnection under concurrent appends', () => {
  for (const usesWatch of [true, false]) {
    it(`loses nothing and duplicates nothing (${usesWatch ? 'watch' : 'polling'})`, async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.integer({ min: 0, max: 6 }),
          fc.array(fc.integer({ min: 1, max: 4 }), { minLength: 1, maxLength: 8 }),
          fc.array(fc.integer({ min: 1, max: 5 }), { minLength: 1, maxLength: 6 }),
          fc.integer({ min: 1, max: 4 }),
          (initial, batches, connections, pageSize) => scenario(usesWatch, initial, batches, connections, pageSize),
        ),
        { numRuns: 30, seed: 20260426 },
      );
    }, 120_000); // correctness does not depend on speed; a generous bound for a loaded machine
  }
});
