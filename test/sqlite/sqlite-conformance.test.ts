/**
 * The shared conformance harness (store, journal and subscription checks) against
 * SqliteDurableEventStore, run as `durable`: `restart` closes the store and opens a NEW one (a new
 * connection) on the same file, and `failNextCommit` arms `testHooks.beforeCommit`, which throws
 * inside the transaction before any row is written.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { SqliteDurableEventStore } from '../../src/advanced.js';
import type { DurableEventStore, DurableExecutionLeaseStore } from '../../src/core/store.js';
import { journalConformanceChecks } from '../../src/conformance/checks-journal.js';
import { subscriptionConformanceChecks } from '../../src/conformance/checks-subscription.js';
import { leaseHandleConformanceChecks } from '../../src/conformance/checks-lease-handle.js';
import { recoveryConformanceChecks } from '../../src/conformance/checks-recovery.js';
import { runStoreConformance, storeConformanceChecks } from '../../src/conformance/index.js';
import { tempDir } from './helpers.js';

const tmp = tempDir();
const file = tmp.file('conformance.db');
const stores: SqliteDurableEventStore[] = [];
afterAll(() => {
  for (const store of stores) store.close();
  tmp.cleanup();
});

/** One failure switch shared by every store on the file, so an armed failure survives a restart. */
const failSwitch = { armed: false };

function openStore(): SqliteDurableEventStore {
  const store = new SqliteDurableEventStore(file, {
    watchPollIntervalMs: 10,
    testHooks: {
      beforeCommit: () => {
        if (!failSwitch.armed) return;
        failSwitch.armed = false;
        throw new Error('injected commit failure');
      },
    },
  });
  stores.push(store);
  return store;
}

describe('runStoreConformance against SqliteDurableEventStore', () => {
  it('passes every check as a durable store', async () => {
    const result = await runStoreConformance<SqliteDurableEventStore>({
      createStore: openStore,
      restart: (old) => {
        old.close();
        return openStore();
      },
      failNextCommit: () => {
        failSwitch.armed = true;
      },
      // Long enough that a loaded machine does not let a lease lapse between two calls of one check.
      leaseTtlMs: 150,
      extraChecks: [...journalConformanceChecks, ...subscriptionConformanceChecks],
    });
    expect(result.mode).toBe('durable');
    expect(result.skipped).toEqual([]);
    expect(result.checks.length).toBe(
      storeConformanceChecks.length + journalConformanceChecks.length + subscriptionConformanceChecks.length,
    );
  });

  it('passes the lease handle and recovery suites', async () => {
    const extraChecks = [...leaseHandleConformanceChecks, ...recoveryConformanceChecks];
    const result = await runStoreConformance<DurableEventStore>({
      createStore: openStore,
      restart: (old) => {
        (old as SqliteDurableEventStore).close();
        return openStore();
      },
      skip: [{ reason: 'run by the test above', checks: storeConformanceChecks.map((check) => check.name) }],
      extraChecks,
    });
    expect(result.checks).toEqual(extraChecks.map((check) => check.name));
  });

  it('satisfies both store contracts at the type level', () => {
    const store = openStore() satisfies DurableEventStore & DurableExecutionLeaseStore;
    expect(typeof store.watch).toBe('function');
  });
});
