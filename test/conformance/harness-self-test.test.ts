/**
 * The harness must be able to fail: deliberately broken stores (thin wrappers over the memory
 * store that each break one rule) are rejected, and the rejection names the check that caught
 * the break. Also covers the runner's own rules (skips, extra checks, time bound).
 */
import { describe, expect, it } from 'vitest';
import { MemoryDurableEventStore } from '../../src/adapters/memory/memory-store.js';
import {
  StoreConformanceError,
  assertEqual,
  runStoreConformance,
  storeConformanceChecks,
  type ConformanceCheck,
  type StoreConformanceOptions,
} from '../../src/conformance/index.js';
import type { DurableEventStore, DurableSessionStore } from '../../src/core/store.js';
import { DurableEventStoreError } from '../../src/protocol/errors.js';
import type { DurableEventEnvelope } from '../../src/protocol/events.js';

/** Every method of `inner`, bound, with `overrides` replacing some. */
function wrap(inner: MemoryDurableEventStore, overrides: Partial<DurableSessionStore> = {}): DurableSessionStore {
  return {
    append: inner.append.bind(inner),
    read: inner.read.bind(inner),
    getHeadSequence: inner.getHeadSequence.bind(inner),
    watch: inner.watch.bind(inner),
    acquireExecutionLease: inner.acquireExecutionLease.bind(inner),
    renewExecutionLease: inner.renewExecutionLease.bind(inner),
    releaseExecutionLease: inner.releaseExecutionLease.bind(inner),
    assertExecutionLease: inner.assertExecutionLease.bind(inner),
    inspectExecutionLease: inner.inspectExecutionLease.bind(inner),
    requiresExecutionLease: inner.requiresExecutionLease.bind(inner),
    ...overrides,
  };
}

/**
 * The byte-budget check appends ten events of almost 1 MiB: two thirds of a memory store's run.
 * The broken stores below break other rules, and memory.test.ts runs it on the memory store, so
 * the self-tests leave it out.
 */
const BULKY: StoreConformanceOptions<DurableEventStore>['skip'] = [
  { reason: 'ten 1 MiB events; run by memory.test.ts', checks: ['read-pages-bounded-by-bytes'] },
];

/** Options running on a manual clock (no real sleeping) with the given store (without {@link BULKY}). */
function manualClockOptions<S extends DurableEventStore>(
  build: (clock: () => number) => S,
  extra: Partial<StoreConformanceOptions<S>> = {},
): StoreConformanceOptions<S> {
  let nowMs = Date.UTC(2031, 5, 1);
  const clock = (): number => nowMs;
  const store = build(clock);
  return {
    createStore: () => store,
    now: clock,
    advanceClock: (_store, ms) => {
      nowMs += ms;
    },
    skip: BULKY,
    ...extra,
  };
}

async function failureOf(options: StoreConformanceOptions<DurableSessionStore>): Promise<StoreConformanceError> {
  const error = await runStoreConformance(options).then(
    () => undefined,
    (reason: unknown) => reason,
  );
  expect(error).toBeInstanceOf(StoreConformanceError);
  return error as StoreConformanceError;
}

/** Every built-in check name but `keep`. */
function builtInNamesExcept(...keep: string[]): string[] {
  return storeConformanceChecks.map((check) => check.name).filter((name) => !keep.includes(name));
}

const failedChecks = (error: StoreConformanceError): string[] => error.failures.map((failure) => failure.check);

describe('the harness catches broken stores', () => {
  it('rejects a store that ignores expectedLastSequence', async () => {
    const error = await failureOf(
      manualClockOptions((clock) => {
        const inner = new MemoryDurableEventStore({ clock });
        return wrap(inner, {
          append: (sessionId, drafts, options) =>
            inner.append(sessionId, drafts, { ...options, expectedLastSequence: undefined }),
        });
      }),
    );
    expect(error.check).toBe('append-conflict-sequence-on-empty');
    expect(error.message).toMatch(/^conformance check "append-conflict-sequence-on-empty" failed: /);
    expect(error.cause).toBeInstanceOf(Error);
    expect(failedChecks(error)).toEqual(
      expect.arrayContaining([
        'append-conflict-null-on-non-empty',
        'append-conflict-stale-sequence',
        'append-conflict-sequence-ahead-of-head',
        'concurrent-conditional-appends-one-winner',
      ]),
    );
    expect(failedChecks(error)).not.toContain('read-after-is-exclusive');
  });

  it('rejects a store whose read ignores after', async () => {
    const error = await failureOf(
      manualClockOptions((clock) => {
        const inner = new MemoryDurableEventStore({ clock });
        return wrap(inner, { read: (sessionId, options) => inner.read(sessionId, { ...options, after: undefined }) });
      }),
    );
    expect(failedChecks(error)).toContain('read-after-is-exclusive');
    expect(failedChecks(error)).toContain('read-pages-walk-whole-log');
    expect(failedChecks(error)).not.toContain('append-conflict-null-on-non-empty');
  });

  it('rejects a store that hands out shared event objects', async () => {
    const error = await failureOf(
      manualClockOptions((clock) => {
        const inner = new MemoryDurableEventStore({ clock });
        const cache = new Map<string, DurableEventEnvelope>();
        return wrap(inner, {
          read: async (sessionId, options) => {
            const page = await inner.read(sessionId, options);
            const events = page.events.map((event) => {
              const cached = cache.get(event.eventId) ?? event;
              cache.set(event.eventId, cached);
              return cached;
            });
            return { ...page, events };
          },
        });
      }),
    );
    expect(failedChecks(error)).toEqual(['read-returns-detached-copies']);
  });

  it('rejects a store that ignores an aborted signal', async () => {
    const error = await failureOf(
      manualClockOptions((clock) => {
        const inner = new MemoryDurableEventStore({ clock });
        return wrap(inner, {
          append: (sessionId, drafts, options) => inner.append(sessionId, drafts, { ...options, signal: undefined }),
        });
      }),
    );
    expect(failedChecks(error)).toEqual(['abort-append-writes-nothing', 'abort-rejects-with-signal-reason']);
  });

  it('rejects a store that reports an abort reason other than an AbortError as its own failure', async () => {
    // What a store does that classifies errors by name: an abort whose reason is a TimeoutError
    // or an Error is reported as a failed write.
    const rewrap = (signal: AbortSignal | undefined) => (error: unknown): never => {
      if (signal?.aborted !== true || error !== signal.reason || (error instanceof Error && error.name === 'AbortError')) throw error;
      throw new DurableEventStoreError('DURABLE_EVENT_WRITE_FAILED', `append failed: ${String(error)}`, { cause: error });
    };
    const error = await failureOf(
      manualClockOptions((clock) => {
        const inner = new MemoryDurableEventStore({ clock });
        return wrap(inner, { append: (sessionId, drafts, options) => inner.append(sessionId, drafts, options).catch(rewrap(options?.signal)) });
      }),
    );
    expect(failedChecks(error)).toEqual(['abort-rejects-with-signal-reason']);
  });

  it('rejects a lease store that forgets its lease state', async () => {
    const error = await failureOf(
      manualClockOptions((clock) => {
        const inner = new MemoryDurableEventStore({ clock });
        return wrap(inner, { requiresExecutionLease: async () => false });
      }),
    );
    expect(failedChecks(error)).toContain('lease-acquire-issues-token-one');
    expect(failedChecks(error)).toContain('lease-fencing-sticky-after-release');
  });

  it('rejects a store whose expired leases never expire', async () => {
    const error = await failureOf(
      manualClockOptions((clock) => {
        // The store's clock is frozen while the harness believes time passes.
        const frozen = clock();
        return wrap(new MemoryDurableEventStore({ clock: () => frozen }));
      }),
    );
    expect(failedChecks(error)).toEqual(
      expect.arrayContaining(['lease-stale-token-after-takeover-is-lost', 'lease-expired-holder-is-lost']),
    );
  });

  it('rejects a store whose failed commit still writes', async () => {
    let failNext = false;
    const error = await failureOf(
      manualClockOptions(
        (clock) => {
          const inner = new MemoryDurableEventStore({ clock });
          return wrap(inner, {
            append: async (sessionId, drafts, options) => {
              const result = await inner.append(sessionId, drafts, options);
              if (failNext) {
                failNext = false;
                throw new DurableEventStoreError('DURABLE_EVENT_WRITE_FAILED', 'lost acknowledgement');
              }
              return result;
            },
          });
        },
        { failNextCommit: () => void (failNext = true) },
      ),
    );
    expect(failedChecks(error)).toEqual(['failed-commit-writes-nothing', 'failed-commit-then-retry-with-same-precondition']);
  });

  it('rejects a restart that loses data', async () => {
    const error = await failureOf(
      manualClockOptions((clock) => wrap(new MemoryDurableEventStore({ clock })), {
        restart: () => wrap(new MemoryDurableEventStore()),
      }),
    );
    expect(failedChecks(error)).toEqual(
      expect.arrayContaining(['restart-preserves-events', 'restart-continues-sequences', 'restart-preserves-lease-state']),
    );
  });

  it('bounds a check that hangs', async () => {
    const inner = new MemoryDurableEventStore();
    const hanging = wrap(inner, { getHeadSequence: () => new Promise(() => undefined) });
    const error = await failureOf({
      createStore: () => hanging,
      checkTimeoutMs: 50,
      skip: [{ reason: 'keep the self-test short', checks: builtInNamesExcept('read-empty-stream') }],
    });
    expect(error.check).toBe('read-empty-stream');
    expect(error.message).toBe('conformance check "read-empty-stream" failed: did not finish within 50 ms');
  });
});

describe('the runner', () => {
  const quick = (): StoreConformanceOptions<MemoryDurableEventStore> => {
    const store = new MemoryDurableEventStore();
    return {
      createStore: () => store,
      skip: [{ reason: 'only the extra checks matter here', checks: builtInNamesExcept() }],
    };
  };

  it('runs extra checks and reports their failures by name', async () => {
    const seen: string[] = [];
    const passing: ConformanceCheck<MemoryDurableEventStore> = {
      name: 'extra-passing',
      async run(ctx) {
        seen.push(ctx.checkName);
        const sessionId = ctx.newSessionId();
        assertEqual(await ctx.store.getHeadSequence(sessionId), null, 'fresh session');
      },
    };
    const result = await runStoreConformance({ ...quick(), extraChecks: [passing] });
    expect(result.checks).toEqual(['extra-passing']);
    expect(result.skipped).toHaveLength(storeConformanceChecks.length);
    expect(seen).toEqual(['extra-passing']);

    const failing: ConformanceCheck<MemoryDurableEventStore> = {
      name: 'extra-failing',
      async run() {
        throw new Error('journal replay returned committed');
      },
    };
    await expect(runStoreConformance({ ...quick(), extraChecks: [failing] })).rejects.toThrow(
      'conformance check "extra-failing" failed: journal replay returned committed',
    );
  });

  it('skips an extra check whose requirement is missing, with the reason', async () => {
    const needsRestart: ConformanceCheck<MemoryDurableEventStore> = {
      name: 'extra-needs-restart',
      requires: ['restart'],
      async run() {
        throw new Error('must not run');
      },
    };
    const result = await runStoreConformance({ ...quick(), extraChecks: [needsRestart] });
    expect(result.skipped).toContainEqual({
      check: 'extra-needs-restart',
      reason: 'needs a restart control (the store is run as ephemeral)',
    });
  });

  it('refuses unknown skip names and duplicate check names', async () => {
    await expect(
      runStoreConformance({ ...quick(), skip: [{ reason: 'typo', checks: ['append-to-empty-withut-precondition'] }] }),
    ).rejects.toThrow('unknown check "append-to-empty-withut-precondition"');
    await expect(
      runStoreConformance({
        ...quick(),
        extraChecks: [{ name: 'read-empty-stream', run: async () => undefined }],
      }),
    ).rejects.toThrow('two checks are named "read-empty-stream"');
  });

  it('skips lease and watch checks for a store without them', async () => {
    const inner = new MemoryDurableEventStore();
    const plain: DurableEventStore = {
      append: inner.append.bind(inner),
      read: inner.read.bind(inner),
      getHeadSequence: inner.getHeadSequence.bind(inner),
    };
    const result = await runStoreConformance({ createStore: () => plain, skip: BULKY });
    const reasons = new Map(result.skipped.map((entry) => [entry.check, entry.reason]));
    expect(reasons.get('lease-acquire-issues-token-one')).toMatch(/DurableExecutionLeaseStore/);
    expect(reasons.get('watch-notifies-after-commit')).toMatch(/watch/);
    expect(result.checks).toContain('append-rejects-invalid-drafts');
  });
});
