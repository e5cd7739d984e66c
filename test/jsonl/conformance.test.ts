/**
 * The shared conformance harness against JsonlDurableEventStore, run as `durable`: `restart`
 * opens a NEW store object on the same root (a fresh cache that must revalidate the files) and
 * `failNextCommit` arms `testHooks.beforeCommit`. The durability ledger checks (with
 * `watchDurability`), the journal and the subscription suites run as extra checks (the lease
 * handle and recovery suites run on JSONL in test/lease and test/recovery).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { JsonlDurableEventStore } from '../../src/advanced.js';
import type { DurabilityRecordStore } from '../../src/core/durability/record-contract.js';
import type { DurableEventStore, DurableExecutionLeaseStore } from '../../src/core/store.js';
import { journalConformanceChecks } from '../../src/conformance/checks-journal.js';
import { subscriptionConformanceChecks } from '../../src/conformance/checks-subscription.js';
import {
  durabilityConformanceChecks,
  durabilityWatchConformanceChecks,
  runStoreConformance,
  storeConformanceChecks,
  type DurabilityConformanceStore,
} from '../../src/conformance/index.js';
import { tempRoot } from './helpers.js';

const { root, cleanup } = tempRoot();
afterAll(cleanup);

/** Stores share one failure switch per root so the armed failure survives a restart. */
const failSwitch = { armed: false };

function openStore(): JsonlDurableEventStore {
  return new JsonlDurableEventStore(root, {
    testHooks: {
      beforeCommit: () => {
        if (!failSwitch.armed) return;
        failSwitch.armed = false;
        throw new Error('injected commit failure');
      },
    },
  });
}

describe('runStoreConformance against JsonlDurableEventStore', () => {
  it('passes every check as a durable store', async () => {
    const stores: JsonlDurableEventStore[] = [];
    const result = await runStoreConformance<DurabilityConformanceStore>({
      createStore: () => {
        const store = openStore();
        stores.push(store);
        return store;
      },
      restart: () => {
        const store = openStore();
        stores.push(store);
        return store;
      },
      failNextCommit: () => {
        failSwitch.armed = true;
      },
      leaseTtlMs: 60,
      extraChecks: [
        ...durabilityConformanceChecks,
        ...durabilityWatchConformanceChecks,
        ...journalConformanceChecks,
        ...subscriptionConformanceChecks,
      ],
    });
    expect(result.mode).toBe('durable');
    expect(result.skipped).toEqual([]);
    expect(result.checks.length).toBe(
      storeConformanceChecks.length +
        durabilityConformanceChecks.length +
        durabilityWatchConformanceChecks.length +
        journalConformanceChecks.length +
        subscriptionConformanceChecks.length,
    );
    expect(result.checks).toContain('journal-fences-unknown-outcome');
    expect(result.checks).toContain('subscription-live-by-watch');
    await Promise.all(stores.map((store) => store.close()));
  });

  it('satisfies the store, lease and ledger contracts at the type level', () => {
    const store = openStore() satisfies DurableEventStore & DurableExecutionLeaseStore & DurabilityRecordStore;
    expect(typeof store.watch).toBe('function');
    expect(typeof store.watchDurability).toBe('function');
  });
});
