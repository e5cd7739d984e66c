/**
 * The lease handle and recovery conformance suites against DurableObjectEventStore inside workerd
 * (the store checks are in session-object-conformance.test.ts). A file of its own so that it runs
 * beside that one: the lease handle checks mostly wait out real TTLs (the handles' heartbeats run
 * on real timers). `restart` aborts every object of this file's workerd and returns a new store.
 */
import { abortAllDurableObjects } from 'cloudflare:test';
import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { DurableObjectEventStore } from '../../src/adapters/durable-object/durable-object-store.js';
import { leaseHandleConformanceChecks } from '../../src/conformance/checks-lease-handle.js';
import { recoveryConformanceChecks } from '../../src/conformance/checks-recovery.js';
import { runStoreConformance, storeConformanceChecks } from '../../src/conformance/index.js';
import type { DurableEventStore } from '../../src/core/store.js';

describe('runStoreConformance against DurableObjectEventStore (workerd): lease handles and recovery', () => {
  it('passes the lease handle and recovery suites', async () => {
    const extraChecks = [...leaseHandleConformanceChecks, ...recoveryConformanceChecks];
    const result = await runStoreConformance<DurableEventStore>({
      createStore: () => new DurableObjectEventStore(env.SESSIONS),
      restart: async () => {
        await abortAllDurableObjects();
        return new DurableObjectEventStore(env.SESSIONS);
      },
      skip: [{ reason: 'run by session-object-conformance.test.ts', checks: storeConformanceChecks.map((check) => check.name) }],
      extraChecks,
      sessionPrefix: 'do-lease-recovery',
    });
    expect(result.checks).toEqual(extraChecks.map((check) => check.name));
  }, 120_000); // a hang guard: the lease handle checks sleep about 5 TTLs of 2 s, longer on a loaded machine
});
