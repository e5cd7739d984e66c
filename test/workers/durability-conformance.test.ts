/**
 * The durability ledger conformance checks inside workerd, against the Durable Object's SQLite:
 * 1. through `DurableObjectEventStore` (RPC to one real SessionObject per session); `restart`
 *    aborts every object, so the restart checks read what the object's storage kept. RPC has no
 *    push channel, so the `watchDurability` check does not apply;
 * 2. inside one object, against the object's own store (`this.store`, the store its mounted
 *    agents use), with the watch check; `restart` opens a second store over the same storage.
 */
import { abortAllDurableObjects, runInDurableObject } from 'cloudflare:test';
import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { DurableObjectEventStore } from '../../src/adapters/durable-object/durable-object-store.js';
import { DurableObjectSqlDriver } from '../../src/adapters/durable-object/storage-sql-driver.js';
import { SqlDurableEventStore } from '../../src/adapters/sql/sql-store.js';
import {
  durabilityConformanceChecks,
  durabilityWatchConformanceChecks,
  type DurabilityConformanceStore,
} from '../../src/conformance/checks-durability.js';
import { runStoreConformance, storeConformanceChecks } from '../../src/conformance/index.js';
import type { DurabilityRecordStore } from '../../src/core/durability/record-contract.js';
import type { DurableEventStore } from '../../src/core/store.js';
import type { SessionObject } from '../../src/edge/session-object.js';
import { freshSession, objectOf } from './durability-helpers.js';

const builtInSkip = {
  reason: 'event checks are covered by test/workers/session-object-conformance.test.ts',
  checks: storeConformanceChecks.map((check) => check.name),
};

describe('durability conformance in workerd', () => {
  it('passes every ledger and port check through DurableObjectEventStore (RPC)', async () => {
    const result = await runStoreConformance<DurabilityConformanceStore>({
      createStore: () => new DurableObjectEventStore(env.SESSIONS),
      restart: async () => {
        await abortAllDurableObjects();
        return new DurableObjectEventStore(env.SESSIONS);
      },
      skip: [builtInSkip],
      extraChecks: durabilityConformanceChecks,
    });
    expect(result.mode).toBe('durable');
    expect(result.checks).toEqual(durabilityConformanceChecks.map((check) => check.name));
  });

  it("passes every ledger, port and watch check against the object's own store", async () => {
    const { stub } = objectOf(freshSession('in-object'));
    const names = await runInDurableObject(stub, async (instance: SessionObject, state) => {
      // SAFETY: `store` is SessionObject's protected extension point; the test reads it as a subclass would.
      const own = (instance as unknown as { store: SqlDurableEventStore }).store;
      const extraChecks = [...durabilityConformanceChecks, ...durabilityWatchConformanceChecks];
      const result = await runStoreConformance<DurabilityConformanceStore>({
        createStore: () => own,
        restart: () => new SqlDurableEventStore(new DurableObjectSqlDriver(state.storage)),
        skip: [builtInSkip],
        extraChecks,
      });
      return { checks: result.checks, expected: extraChecks.map((check) => check.name) };
    });
    expect(names.checks).toEqual(names.expected);
    expect(names.checks).toContain('durability-watch-notifies-after-commit');
  });

  it('satisfies the ledger contract at the type level', () => {
    const store = new DurableObjectEventStore(env.SESSIONS) satisfies DurableEventStore & DurabilityRecordStore;
    expect(typeof store.recordDurability).toBe('function');
  });
});
