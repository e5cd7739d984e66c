/**
 * Every conformance suite against PostgresDurableEventStore, as a durable store: store (with
 * restart and fail-next-commit), journal, subscription, lease, lease handle, recovery, and the
 * durability ledger with its port and watch checks. `restart` closes the store (its pool) and
 * opens a NEW one on the same schema; `failNextCommit` arms `testHooks.beforeCommit`, which
 * throws before the write statement is sent. Lease expiry uses an injectable clock shared by the
 * stores of one run (`advanceClock`), so no check waits on the wall clock.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresDurableEventStore } from '../../src/postgres.js';
import {
  durabilityConformanceChecks,
  durabilityWatchConformanceChecks,
  journalConformanceChecks,
  leaseHandleConformanceChecks,
  recoveryConformanceChecks,
  runStoreConformance,
  storeConformanceChecks,
  subscriptionConformanceChecks,
  type DurabilityConformanceStore,
} from '../../src/conformance/index.js';
import type { DurableEventStore, DurableExecutionLeaseStore } from '../../src/core/store.js';
import type { DurabilityRecordStore } from '../../src/core/durability/record-contract.js';
import { dropSchema, freshSchema, postgresUrl } from './helpers.js';

const url = postgresUrl();
const schema = freshSchema('conformance');
const opened: PostgresDurableEventStore[] = [];
/** One failure switch for every store of the schema, so an armed failure survives a restart. */
const failSwitch = { armed: false };
/** The stores' clock: wall time plus what the checks advanced. */
let offsetMs = 0;
const now = (): number => Date.now() + offsetMs;

async function open(): Promise<PostgresDurableEventStore> {
  const store = await PostgresDurableEventStore.open({
    connectionString: url,
    schema,
    poolSize: 4,
    pollIntervalMs: 50,
    clock: now,
    testHooks: {
      beforeCommit: () => {
        if (!failSwitch.armed) return;
        failSwitch.armed = false;
        throw new Error('injected commit failure');
      },
    },
  });
  opened.push(store);
  return store;
}

let shared: PostgresDurableEventStore;
beforeAll(async () => {
  shared = await open();
});
afterAll(async () => {
  for (const store of opened) await store.close();
  await dropSchema(url, schema);
});

const common = {
  restart: async (old: DurableEventStore) => {
    await (old as PostgresDurableEventStore).close();
    shared = await open();
    return shared;
  },
  now,
  advanceClock: (_store: DurableEventStore, ms: number) => {
    offsetMs += ms;
  },
  leaseTtlMs: 1000,
};

describe('conformance against PostgresDurableEventStore', () => {
  it('passes the store, journal and subscription suites as a durable store', async () => {
    const extraChecks = [...journalConformanceChecks, ...subscriptionConformanceChecks];
    const result = await runStoreConformance<DurableEventStore>({
      ...common,
      createStore: () => shared,
      failNextCommit: () => {
        failSwitch.armed = true;
      },
      extraChecks,
    });
    expect(result.mode).toBe('durable');
    expect(result.skipped).toEqual([]);
    expect(result.checks.length).toBe(storeConformanceChecks.length + extraChecks.length);
  });

  const storeChecksElsewhere = [{ reason: 'run by the first test of this file', checks: storeConformanceChecks.map((c) => c.name) }];

  it('passes the lease handle and recovery suites', async () => {
    const extraChecks = [...leaseHandleConformanceChecks, ...recoveryConformanceChecks];
    const result = await runStoreConformance<DurableEventStore>({
      ...common,
      createStore: () => shared,
      skip: storeChecksElsewhere,
      extraChecks,
    });
    expect(result.checks).toEqual(extraChecks.map((check) => check.name));
  });

  it('passes the durability ledger, port and watch suites', async () => {
    const extraChecks = [...durabilityConformanceChecks, ...durabilityWatchConformanceChecks];
    const result = await runStoreConformance<DurabilityConformanceStore>({
      ...common,
      restart: async (old) => {
        await (old as PostgresDurableEventStore).close();
        shared = await open();
        return shared;
      },
      advanceClock: (_store, ms) => {
        offsetMs += ms;
      },
      createStore: () => shared,
      skip: storeChecksElsewhere,
      extraChecks,
    });
    expect(result.checks).toEqual(extraChecks.map((check) => check.name));
    expect(result.checks).toContain('durability-survives-restart');
  });

  it('satisfies the store, lease and ledger contracts at the type level', () => {
    const store = shared satisfies DurableEventStore & DurableExecutionLeaseStore & DurabilityRecordStore;
    expect(typeof store.watch).toBe('function');
    expect(typeof store.watchDurability).toBe('function');
  });
});
