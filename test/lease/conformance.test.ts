/**
 * The lease handle conformance checks (`leaseHandleConformanceChecks`) through the harness, on the
 * memory store with a manual clock and on the JSONL store with the wall clock. The store's own
 * checks are skipped here, with that reason: test/conformance and test/jsonl run them.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { JsonlDurableEventStore } from '../../src/advanced.js';
import { MemoryDurableEventStore } from '../../src/adapters/memory/memory-store.js';
import { leaseHandleConformanceChecks } from '../../src/conformance/checks-lease-handle.js';
import { runStoreConformance, storeConformanceChecks } from '../../src/conformance/index.js';
import type { DurableEventStore } from '../../src/core/store.js';

const root = mkdtempSync(path.join(os.tmpdir(), 'lease-conformance-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const storeChecksElsewhere = [
  {
    reason: 'store contract checks run in test/conformance and test/jsonl; this file runs the lease handle checks',
    checks: storeConformanceChecks.map((check) => check.name),
  },
];
const handleCheckNames = leaseHandleConformanceChecks.map((check) => check.name);

describe.concurrent('lease handle conformance', () => {
  it('passes on the memory store with a manual clock', async () => {
    let offsetMs = 0;
    const store = new MemoryDurableEventStore({ clock: () => Date.now() + offsetMs });
    const result = await runStoreConformance<DurableEventStore>({
      createStore: () => store,
      now: () => Date.now() + offsetMs,
      advanceClock: (_store, ms) => {
        offsetMs += ms;
      },
      skip: storeChecksElsewhere,
      extraChecks: leaseHandleConformanceChecks,
    });
    expect(result.checks).toEqual(handleCheckNames);
  });

  it('passes on the JSONL store', async () => {
    const store = new JsonlDurableEventStore(root);
    const result = await runStoreConformance<DurableEventStore>({
      createStore: () => store,
      skip: storeChecksElsewhere,
      extraChecks: leaseHandleConformanceChecks,
    });
    expect(result.checks).toEqual(handleCheckNames);
    await store.close();
  });
});
