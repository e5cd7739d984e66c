/**
 * The durability ledger conformance checks against the memory store: once as an ephemeral store,
 * and once through a "restart" that hands out a new store object over the same state (so the
 * restart checks and the cross-object port checks run too).
 */
import { describe, expect, it } from 'vitest';
import { MemoryDurableEventStore } from '../../src/adapters/memory/memory-store.js';
import {
  durabilityConformanceChecks,
  durabilityWatchConformanceChecks,
  type DurabilityConformanceStore,
} from '../../src/conformance/checks-durability.js';
import { runStoreConformance, storeConformanceChecks } from '../../src/conformance/index.js';

/** The built-in event checks are covered by test/conformance/memory.test.ts. */
const skipBuiltIn = [{ reason: 'covered by test/conformance/memory.test.ts', checks: storeConformanceChecks.map((c) => c.name) }];

/** A new object over `store`'s state: same ledger, different identity (no shared in-flight work). */
function facade(store: MemoryDurableEventStore): DurabilityConformanceStore {
  return {
    append: store.append.bind(store),
    read: store.read.bind(store),
    getHeadSequence: store.getHeadSequence.bind(store),
    recordDurability: store.recordDurability.bind(store),
    readDurability: store.readDurability.bind(store),
    watchDurability: store.watchDurability.bind(store),
  };
}

describe('durability conformance against MemoryDurableEventStore', () => {
  it('passes every ledger, port and watch check (ephemeral)', async () => {
    const store = new MemoryDurableEventStore();
    const result = await runStoreConformance<DurabilityConformanceStore>({
      createStore: () => store,
      skip: skipBuiltIn,
      extraChecks: [...durabilityConformanceChecks, ...durabilityWatchConformanceChecks],
    });
    const expected = [...durabilityConformanceChecks, ...durabilityWatchConformanceChecks]
      .filter((check) => !check.requires?.includes('restart'))
      .map((check) => check.name);
    expect(result.checks).toEqual(expected);
    expect(result.checks).toContain('durability-concurrent-records-one-winner');
  });

  it('runs the restart checks through a reopened store object', async () => {
    const store = new MemoryDurableEventStore();
    const result = await runStoreConformance<DurabilityConformanceStore>({
      createStore: () => facade(store),
      restart: () => facade(store),
      skip: skipBuiltIn,
      extraChecks: durabilityConformanceChecks,
    });
    expect(result.checks).toContain('durability-survives-restart');
    expect(result.checks).toContain('durability-port-step-replays-after-restart');
  });

  it('fails a store that breaks first-writer-wins', async () => {
    const store = new MemoryDurableEventStore();
    let counter = 0;
    const broken: DurabilityConformanceStore = {
      ...facade(store),
      // Makes every step identity unique: the store never deduplicates.
      recordDurability: (sessionId, draft, options) =>
        store.recordDurability(sessionId, draft.kind === 'step' ? { ...draft, key: `${draft.key}-${++counter}` } : draft, options),
    };
    await expect(
      runStoreConformance<DurabilityConformanceStore>({
        createStore: () => broken,
        skip: skipBuiltIn,
        extraChecks: durabilityConformanceChecks,
      }),
    ).rejects.toThrow(/durability-/);
  });
});
