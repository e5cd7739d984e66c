/**
 * The journal and subscription conformance suites against MemoryDurableEventStore. The built-in
 * store checks are skipped here (with their reason): `memory.test.ts` runs them.
 */
import { describe, expect, it } from 'vitest';
import { MemoryDurableEventStore } from '../../src/adapters/memory/memory-store.js';
import { journalConformanceChecks } from '../../src/conformance/checks-journal.js';
import { subscriptionConformanceChecks } from '../../src/conformance/checks-subscription.js';
import { runStoreConformance, storeConformanceChecks } from '../../src/conformance/index.js';
import type { DurableEventStore } from '../../src/core/store.js';

function memoryWithFaults(): { store: MemoryDurableEventStore; arm: () => void } {
  let failNext = false;
  const store = new MemoryDurableEventStore({
    testHooks: {
      beforeCommit: () => {
        if (!failNext) return;
        failNext = false;
        throw new Error('injected commit failure');
      },
    },
  });
  return { store, arm: () => (failNext = true) };
}

const skipBuiltIns = [
  { reason: 'run by test/conformance/memory.test.ts', checks: storeConformanceChecks.map((check) => check.name) },
];
const extraChecks = [...journalConformanceChecks, ...subscriptionConformanceChecks];

/** The memory store without `watch`: subscriptions must fall back to polling. */
function withoutWatch(store: MemoryDurableEventStore): DurableEventStore {
  return {
    append: (sessionId, drafts, options) => store.append(sessionId, drafts, options),
    read: (sessionId, options) => store.read(sessionId, options),
    getHeadSequence: (sessionId, options) => store.getHeadSequence(sessionId, options),
  };
}

describe('journal and subscription conformance against MemoryDurableEventStore', () => {
  it('passes every journal and subscription check', async () => {
    const { store, arm } = memoryWithFaults();
    const result = await runStoreConformance({
      createStore: () => store,
      failNextCommit: () => arm(),
      skip: skipBuiltIns,
      extraChecks,
    });
    expect(result.checks).toEqual(extraChecks.map((check) => check.name));
  });

  it('passes them through a store without watch (polling), skipping only what needs watch or failNextCommit', async () => {
    const store = new MemoryDurableEventStore();
    const result = await runStoreConformance<DurableEventStore>({
      createStore: () => withoutWatch(store),
      skip: skipBuiltIns,
      extraChecks,
    });
    const expectedSkips = extraChecks
      .filter((check) => check.requires?.some((need) => need === 'failNextCommit' || need === 'watch'))
      .map((check) => check.name);
    expect(result.checks).toEqual(extraChecks.map((check) => check.name).filter((name) => !expectedSkips.includes(name)));
  });
});
