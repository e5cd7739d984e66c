/**
 * The recovery conformance suite (`src/conformance/checks-recovery.ts`) against the memory store
 * and the durable JSONL store (with restart). The built-in store checks are skipped here, with
 * their reason: other test files run them.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { MemoryDurableEventStore } from '../../src/adapters/memory/memory-store.js';
import { JsonlDurableEventStore } from '../../src/advanced.js';
import { recoveryConformanceChecks } from '../../src/conformance/checks-recovery.js';
import { runStoreConformance, storeConformanceChecks } from '../../src/conformance/index.js';
import type { DurableEventStore } from '../../src/core/store.js';

const skip = [{ reason: 'run by the store conformance tests', checks: storeConformanceChecks.map((check) => check.name) }];
const root = mkdtempSync(path.join(os.tmpdir(), 'recovery-conformance-'));
const opened: JsonlDurableEventStore[] = [];
afterAll(async () => {
  for (const store of opened) await store.close();
  rmSync(root, { recursive: true, force: true });
});

describe('recovery conformance', () => {
  it('passes on MemoryDurableEventStore (no restart: that check is skipped)', async () => {
    const store = new MemoryDurableEventStore();
    const result = await runStoreConformance({ createStore: () => store, skip, extraChecks: recoveryConformanceChecks });
    expect(result.checks).toEqual(
      recoveryConformanceChecks.filter((check) => !check.requires?.includes('restart')).map((check) => check.name),
    );
  });

  it('passes on JsonlDurableEventStore, across a restart', async () => {
    const open = (): JsonlDurableEventStore => {
      const store = new JsonlDurableEventStore(root);
      opened.push(store);
      return store;
    };
    let current = open();
    const result = await runStoreConformance<DurableEventStore>({
      createStore: () => current,
      restart: async () => {
        await current.close();
        current = open();
        return current;
      },
      skip,
      extraChecks: recoveryConformanceChecks,
    });
    expect(result.mode).toBe('durable');
    expect(result.checks).toEqual(recoveryConformanceChecks.map((check) => check.name));
  });
});
