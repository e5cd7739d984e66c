/**
 * The durability ledger conformance checks against SqliteDurableEventStore, as a durable store:
 * `restart` closes the connection and opens a new store object on the same file, so the restart
 * checks and the port-replay-after-restart checks run against what SQLite really persisted.
 * The built-in event checks are covered by sqlite-conformance.test.ts and skipped here.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { SqliteDurableEventStore } from '../../src/advanced.js';
import {
  durabilityConformanceChecks,
  durabilityWatchConformanceChecks,
  type DurabilityConformanceStore,
} from '../../src/conformance/checks-durability.js';
import { runStoreConformance, storeConformanceChecks } from '../../src/conformance/index.js';
import type { DurabilityRecordStore } from '../../src/core/durability/record-contract.js';
import type { DurableEventStore } from '../../src/core/store.js';
import { tempDir } from './helpers.js';

const tmp = tempDir('agent-ledger-sqlite-durability-');
const file = tmp.file('durability-conformance.db');
const stores: SqliteDurableEventStore[] = [];
afterAll(() => {
  for (const store of stores) store.close();
  tmp.cleanup();
});

function openStore(): SqliteDurableEventStore {
  const store = new SqliteDurableEventStore(file, { watchPollIntervalMs: 10 });
  stores.push(store);
  return store;
}

describe('durability conformance against SqliteDurableEventStore', () => {
  it('passes every ledger, port and watch check as a durable store', async () => {
    const extraChecks = [...durabilityConformanceChecks, ...durabilityWatchConformanceChecks];
    const result = await runStoreConformance<DurabilityConformanceStore>({
      createStore: openStore,
      restart: (old) => {
        // SAFETY: every store this run creates comes from openStore().
        (old as SqliteDurableEventStore).close();
        return openStore();
      },
      skip: [{ reason: 'covered by test/sqlite/sqlite-conformance.test.ts', checks: storeConformanceChecks.map((c) => c.name) }],
      extraChecks,
    });
    expect(result.mode).toBe('durable');
    expect(result.checks).toEqual(extraChecks.map((check) => check.name));
    expect(result.checks).toContain('durability-survives-restart');
    expect(result.checks).toContain('durability-watch-notifies-after-commit');
  });

  it('satisfies the ledger contract at the type level', () => {
    const store = openStore() satisfies DurableEventStore & DurabilityRecordStore;
    expect(typeof store.watchDurability).toBe('function');
  });
});
