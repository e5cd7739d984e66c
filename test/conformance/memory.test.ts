/**
 * The conformance harness against MemoryDurableEventStore (ephemeral: no restart), with commit
 * failures injected through `testHooks.beforeCommit`, on the wall clock and on a manual clock.
 */
import type { DurableCheckpointStore } from '../../src/core/checkpoint/contract.js';
import { describe, expect, it } from 'vitest';
import { MemoryDurableEventStore } from '../../src/adapters/memory/memory-store.js';
import { runStoreConformance, storeConformanceChecks } from '../../src/conformance/index.js';
import type { DurableSessionStore } from '../../src/core/store.js';

/** Every built-in check name but `keep`. */
function builtInNamesExcept(...keep: string[]): string[] {
  return storeConformanceChecks.map((check) => check.name).filter((name) => !keep.includes(name));
}

/** The checks the store-per-check run keeps: an append, a read and a lease check. */
const PER_CHECK_SAMPLE = ['append-to-empty-without-precondition', 'read-after-is-exclusive', 'lease-second-owner-conflicts'];

/** A memory store plus a flag that makes its next commit throw. */
function memoryWithFaults(clock?: () => number): { store: MemoryDurableEventStore; arm: () => void } {
  let failNext = false;
  const store = new MemoryDurableEventStore({
    ...(clock === undefined ? {} : { clock }),
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

describe('runStoreConformance against MemoryDurableEventStore', () => {
  it('passes every applicable check on the wall clock', async () => {
    const { store, arm } = memoryWithFaults();
    const result = await runStoreConformance({
      createStore: () => store,
      failNextCommit: () => arm(),
      leaseTtlMs: 40,
    });
    expect(result.mode).toBe('ephemeral');
    expect(result.checks.length).toBeGreaterThan(40);
    expect(result.checks).toContain('failed-commit-writes-nothing');
    expect(result.checks).toContain('lease-expired-holder-is-lost');
    expect(result.checks).toContain('watch-notifies-after-commit');
    // Only the checks needing a restart control are skipped, each with its reason.
    const restartChecks = storeConformanceChecks
      .filter((check) => check.requires?.includes('restart'))
      .map((check) => check.name);
    expect(result.skipped.map((entry) => entry.check).sort()).toEqual([...restartChecks].sort());
    for (const entry of result.skipped) expect(entry.reason).toMatch(/restart/);
    expect(result.checks.length + result.skipped.length).toBe(storeConformanceChecks.length);
  });

  it('passes with a manual clock advanced by the harness (no sleeping)', async () => {
    let nowMs = Date.UTC(2030, 0, 1);
    const { store, arm } = memoryWithFaults(() => nowMs);
    const result = await runStoreConformance({
      createStore: () => store,
      failNextCommit: () => arm(),
      now: () => nowMs,
      advanceClock: (_store, ms) => {
        nowMs += ms;
      },
      leaseTtlMs: 5_000,
      sessionPrefix: 'manual-clock',
    });
    expect(result.mode).toBe('ephemeral');
    expect(result.checks).toContain('lease-stale-token-after-takeover-is-lost');
  });

  it('creates a fresh store per check when the factory does', async () => {
    let created = 0;
    const result = await runStoreConformance({
      createStore: () => {
        created += 1;
        return new MemoryDurableEventStore();
      },
      // Three checks are enough to count one store per check; the runs above cover every check.
      skip: [
        { reason: 'exercised by the wall-clock run', checks: ['lease-expired-holder-is-lost'] },
        { reason: 'only the store count matters here', checks: builtInNamesExcept(...PER_CHECK_SAMPLE, 'lease-expired-holder-is-lost', 'failed-commit-writes-nothing') },
      ],
      leaseTtlMs: 30,
    });
    expect(result.checks).toEqual(PER_CHECK_SAMPLE);
    expect(created).toBe(result.checks.length);
    expect(result.skipped).toContainEqual({ check: 'lease-expired-holder-is-lost', reason: 'exercised by the wall-clock run' });
    expect(result.skipped.find((entry) => entry.check === 'failed-commit-writes-nothing')?.reason).toMatch(/failNextCommit/);
  });

  it('reports a restart-capable run as durable and runs the restart checks', async () => {
    // The memory store is not durable. A "reopen" that hands out a new facade over the same
    // state models a backend whose reopen sees everything, so the restart checks themselves run.
    const { store, arm } = memoryWithFaults();
    const reopen = (): DurableSessionStore => facade(store);
    const result = await runStoreConformance<DurableSessionStore>({
      createStore: reopen,
      restart: () => reopen(),
      failNextCommit: () => arm(),
      leaseTtlMs: 30,
    });
    expect(result.mode).toBe('durable');
    expect(result.skipped).toEqual([]);
    expect(result.checks).toContain('failed-commit-absent-after-restart');
  });

  it('refuses a restart that returns the same object', async () => {
    const store = new MemoryDurableEventStore();
    await expect(
      runStoreConformance({
        createStore: () => store,
        restart: (current) => current,
        leaseTtlMs: 30,
        skip: [{ reason: 'only the restart check matters here', checks: builtInNamesExcept('restart-preserves-events') }],
      }),
    ).rejects.toThrow(/conformance check "restart-preserves-events" failed: restart must return a new store object/);
  });
});

/** A new object exposing `store`'s methods (bound): same state, different identity. */
function facade(store: MemoryDurableEventStore): DurableSessionStore & DurableCheckpointStore {
  return {
    readCheckpoint: store.readCheckpoint.bind(store),
    writeCheckpoint: store.writeCheckpoint.bind(store),
    append: store.append.bind(store),
    read: store.read.bind(store),
    getHeadSequence: store.getHeadSequence.bind(store),
    watch: store.watch.bind(store),
    acquireExecutionLease: store.acquireExecutionLease.bind(store),
    renewExecutionLease: store.renewExecutionLease.bind(store),
    releaseExecutionLease: store.releaseExecutionLease.bind(store),
    assertExecutionLease: store.assertExecutionLease.bind(store),
    inspectExecutionLease: store.inspectExecutionLease.bind(store),
    requiresExecutionLease: store.requiresExecutionLease.bind(store),
  };
}
