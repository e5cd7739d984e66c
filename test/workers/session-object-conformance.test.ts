/**
 * The shared conformance harness (store, journal and subscription checks) against
 * DurableObjectEventStore inside workerd: real SessionObjects with real SQLite storage, reached
 * over RPC through the `SESSIONS` binding.
 * `restart` aborts every object (in-memory state is lost, storage stays) and returns a new store;
 * `failNextCommit` arms SessionObject's test hook, which throws inside the commit transaction.
 * The lease handle and recovery suites are in session-object-lease-recovery.test.ts: a file of
 * their own runs beside this one (their checks mostly wait out real lease TTLs).
 */
import { abortAllDurableObjects } from 'cloudflare:test';
import { env } from 'cloudflare:workers';
import { afterEach, describe, expect, it } from 'vitest';
import { DurableObjectEventStore } from '../../src/adapters/durable-object/durable-object-store.js';
import { journalConformanceChecks } from '../../src/conformance/checks-journal.js';
import { subscriptionConformanceChecks } from '../../src/conformance/checks-subscription.js';
import { runStoreConformance, storeConformanceChecks } from '../../src/conformance/index.js';
import type { DurableEventStore, DurableExecutionLeaseStore } from '../../src/core/store.js';
import { SessionObject } from '../../src/edge/session-object.js';

const failSwitch = { armed: false };

afterEach(() => {
  SessionObject.testHooks = undefined;
});

describe('runStoreConformance against DurableObjectEventStore (workerd)', () => {
  it('passes every check as a durable store', async () => {
    SessionObject.testHooks = {
      beforeCommit: () => {
        if (!failSwitch.armed) return;
        failSwitch.armed = false;
        throw new Error('injected commit failure');
      },
    };
    const result = await runStoreConformance<DurableObjectEventStore>({
      createStore: () => new DurableObjectEventStore(env.SESSIONS),
      restart: async () => {
        await abortAllDurableObjects();
        return new DurableObjectEventStore(env.SESSIONS);
      },
      failNextCommit: () => {
        failSwitch.armed = true;
      },
      // Long enough that a loaded machine does not let a lease lapse between two calls of one check.
      leaseTtlMs: 1_000,
      extraChecks: [...journalConformanceChecks, ...subscriptionConformanceChecks],
    });
    expect(result.mode).toBe('durable');
    // The RPC store has no push channel of its own: subscriptions poll it (or use WebSockets).
    const all = [...storeConformanceChecks, ...journalConformanceChecks, ...subscriptionConformanceChecks];
    const watchChecks = all.filter((c) => c.requires?.includes('watch')).map((c) => c.name);
    expect(result.skipped.map((s) => s.check).sort()).toEqual([...watchChecks].sort());
    expect(result.checks.length + result.skipped.length).toBe(all.length);
    expect(result.checks).toEqual(expect.arrayContaining(journalConformanceChecks.map((c) => c.name)));
  }, 120_000); // a hang guard: about 90 checks over RPC took over 30 s with both cores saturated

  it('satisfies both store contracts at the type level', () => {
    const store = new DurableObjectEventStore(env.SESSIONS) satisfies DurableEventStore & DurableExecutionLeaseStore;
    expect(store).toBeInstanceOf(DurableObjectEventStore);
  });
});
