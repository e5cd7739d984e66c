/**
 * The shared conformance harness against HttpDurableEventStore, talking to the real Worker and
 * its SessionObjects started locally (see local-worker.ts). It runs as a durable store:
 * `restart` is a brand-new client object, which must see everything the old one committed.
 * `failNextCommit` cannot be injected into another process over HTTP, so those checks are
 * skipped with that reason; `watch` runs over real WebSockets (`ws`, as Node 20 users would).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { HttpDurableEventStore } from '../../src/client.js';
import { journalConformanceChecks } from '../../src/conformance/checks-journal.js';
import { subscriptionConformanceChecks } from '../../src/conformance/checks-subscription.js';
import { leaseHandleConformanceChecks } from '../../src/conformance/checks-lease-handle.js';
import { recoveryConformanceChecks } from '../../src/conformance/checks-recovery.js';
import { runStoreConformance, storeConformanceChecks } from '../../src/conformance/index.js';
import type { DurableEventStore, DurableExecutionLeaseStore } from '../../src/core/store.js';
import { startLocalWorker, type LocalWorker } from './local-worker.js';

let worker: LocalWorker;

beforeAll(async () => {
  worker = await startLocalWorker();
});

afterAll(async () => {
  await worker?.stop();
});

function newStore(): HttpDurableEventStore {
  return new HttpDurableEventStore({ baseUrl: worker.url, token: worker.adminToken, WebSocket });
}

describe('runStoreConformance against HttpDurableEventStore (local Worker)', () => {
  it('passes every check it can run, as a durable store', async () => {
    const failureChecks = storeConformanceChecks
      .filter((check) => check.requires?.includes('failNextCommit'))
      .map((check) => check.name);
    const result = await runStoreConformance<HttpDurableEventStore>({
      createStore: newStore,
      restart: () => newStore(),
      skip: [{ reason: 'faults cannot be injected into the Worker process over HTTP', checks: failureChecks }],
      // Long enough that two HTTP round trips of one check fit in it on a busy machine.
      leaseTtlMs: 1_000,
      // A hang guard per check sized for the largest one over HTTP: read-pages-bounded-by-bytes
      // appends ten events of almost 1 MiB (more than two 4 MiB read budgets) and reads them back
      // twice, about 9 s at a load of 15 on two cores, near the default bound of 20 s.
      checkTimeoutMs: 90_000,
      sessionPrefix: 'http-conformance',
    });
    expect(result.mode).toBe('durable');
    expect(result.checks).toContain('restart-preserves-events');
    expect(result.checks).toContain('watch-notifies-after-commit');
    expect(result.checks).toContain('abort-append-writes-nothing');
    expect(result.skipped.map((entry) => entry.check).sort()).toEqual([...failureChecks].sort());
    expect(result.checks.length + result.skipped.length).toBe(storeConformanceChecks.length);
  }, 300_000); // a hang guard: about 60 checks, each a few HTTP round trips, on a saturated machine

  it('runs the journal and subscription suites unchanged against the edge', async () => {
    const extraChecks = [...journalConformanceChecks, ...subscriptionConformanceChecks];
    const failureChecks = extraChecks
      .filter((check) => check.requires?.includes('failNextCommit'))
      .map((check) => check.name);
    const result = await runStoreConformance<HttpDurableEventStore>({
      createStore: newStore,
      restart: () => newStore(),
      skip: [
        { reason: 'run by the test above', checks: storeConformanceChecks.map((check) => check.name) },
        { reason: 'faults cannot be injected into the Worker process over HTTP', checks: failureChecks },
      ],
      extraChecks,
      sessionPrefix: 'http-journal',
    });
    expect(result.checks).toEqual(extraChecks.map((check) => check.name).filter((name) => !failureChecks.includes(name)));
    expect(result.checks).toContain('subscription-live-by-watch');
  }, 120_000); // a hang guard, as above

  it('runs the lease handle and recovery suites unchanged against the edge', async () => {
    const extraChecks = [...leaseHandleConformanceChecks, ...recoveryConformanceChecks];
    const result = await runStoreConformance<DurableEventStore>({
      createStore: newStore,
      restart: () => newStore(),
      skip: [{ reason: 'run by the first test', checks: storeConformanceChecks.map((check) => check.name) }],
      extraChecks,
      sessionPrefix: 'http-lease-recovery',
      // Each heartbeat is an HTTP round trip to workerd, and must end within what is left of the
      // handle's window. With both cores saturated by other work one took over 600 ms (too much
      // for 2 s handles), and later one over 4 s (too much for 6 s handles, at load 6). 10 s
      // handles (heartbeats every 1.25 s) keep the checks' meaning; the checks wait longer.
      leaseHandleTtlMs: 10_000,
      // The heartbeat check alone waits two TTLs and a heartbeat (21 s), past the default 20 s guard.
      checkTimeoutMs: 90_000,
    });
    expect(result.checks).toEqual(extraChecks.map((check) => check.name));
  }, 240_000); // a hang guard, as above

  it('satisfies both store contracts at the type level', () => {
    const store = newStore() satisfies DurableEventStore & DurableExecutionLeaseStore;
    expect(typeof store.watch).toBe('function');
  });

  it('has no watch when no WebSocket constructor is available (subscriptions then poll)', () => {
    const globalWebSocket = (globalThis as { WebSocket?: unknown }).WebSocket;
    const store = new HttpDurableEventStore({ baseUrl: worker.url, token: worker.adminToken });
    expect(store.watch === undefined).toBe(globalWebSocket === undefined);
  });
});
