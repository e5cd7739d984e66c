/**
 * The conformance runner.
 *
 * 1. Collects the built-in checks ({@link storeConformanceChecks}) and the caller's `extraChecks`,
 *    and refuses duplicate names and `skip` entries naming no check (a typo must not silently
 *    disable nothing).
 * 2. Probes the store once for optional capabilities (`watch`, the lease contract).
 * 3. Runs the checks one after another, each with a fresh context and a time bound. A check whose
 *    `requires` cannot be met, or that the caller skipped, is recorded with its reason.
 * 4. Returns `{ mode, checks, skipped }`, or throws a {@link StoreConformanceError} naming the
 *    first failing check (and listing every other one that failed).
 */
import { isExecutionLeaseStore, type DurableEventStore } from '../core/store.js';
import { isCheckpointStore } from '../core/checkpoint/contract.js';
import { storeConformanceChecks } from './checks.js';
import { createContext, type RunState } from './context.js';
import type {
  ConformanceCheck,
  ConformanceFailure,
  ConformanceRequirement,
  StoreConformanceOptions,
  StoreConformanceResult,
} from './types.js';

/** Default upper bound of one check, in milliseconds. */
export const DEFAULT_CHECK_TIMEOUT_MS = 20_000;

/** A run found at least one broken rule. `check` names the first failing check. */
export class StoreConformanceError extends Error {
  /** Name of the first failing check. */
  readonly check: string;
  /** Every failing check, in run order. */
  readonly failures: ConformanceFailure[];

  constructor(failures: [ConformanceFailure, ...ConformanceFailure[]]) {
    const [first, ...rest] = failures;
    const reason = first.error instanceof Error ? first.error.message : String(first.error);
    const more = rest.length === 0 ? '' : ` (${rest.length} more failed: ${rest.map((f) => `"${f.check}"`).join(', ')})`;
    super(`conformance check "${first.check}" failed: ${reason}${more}`, { cause: first.error });
    this.name = 'StoreConformanceError';
    this.check = first.check;
    this.failures = failures;
  }
}

function randomPrefix(): string {
  return `conformance-${Math.random().toString(36).slice(2, 10)}`;
}

function describeMissing(requirement: ConformanceRequirement): string {
  switch (requirement) {
    case 'restart':
      return 'needs a restart control (the store is run as ephemeral)';
    case 'failNextCommit':
      return 'needs a failNextCommit control';
    case 'lease':
      return 'the store does not implement DurableExecutionLeaseStore';
    case 'watch':
      return 'the store has no watch()';
    case 'checkpoint':
      return 'the store does not implement DurableCheckpointStore (projection checkpoints are optional)';
  }
}

async function withTimeout(run: () => Promise<void>, timeoutMs: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`did not finish within ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    await Promise.race([run(), timeout]);
  } finally {
    if (timer !== undefined) clearTimeout(timer);
  }
}

function collectChecks<S extends DurableEventStore>(options: StoreConformanceOptions<S>): ConformanceCheck<S>[] {
  // SAFETY: built-in checks use only the DurableEventStore surface (and narrow to the lease
  // contract with a run-time guard), so they accept any S.
  const builtIn = storeConformanceChecks as unknown as ConformanceCheck<S>[];
  const checks = [...builtIn, ...(options.extraChecks ?? [])];
  const names = new Set<string>();
  for (const check of checks) {
    if (names.has(check.name)) throw new Error(`conformance: two checks are named "${check.name}"`);
    names.add(check.name);
  }
  for (const group of options.skip ?? []) {
    for (const name of group.checks) {
      if (!names.has(name)) throw new Error(`conformance: skip names an unknown check "${name}"`);
    }
  }
  return checks;
}

/**
 * Runs every conformance check against a store.
 *
 * @example
 * const result = await runStoreConformance({
 *   createStore: () => new MemoryDurableEventStore(),
 * });
 * // result.mode === 'ephemeral'; result.checks lists what passed; result.skipped says what did not run and why.
 */
export async function runStoreConformance<S extends DurableEventStore>(
  options: StoreConformanceOptions<S>,
): Promise<StoreConformanceResult> {
  const checks = collectChecks(options);
  const skipReasons = new Map<string, string>();
  for (const group of options.skip ?? []) {
    for (const name of group.checks) skipReasons.set(name, group.reason);
  }
  const timeoutMs = options.checkTimeoutMs ?? DEFAULT_CHECK_TIMEOUT_MS;
  const run: RunState = { prefix: options.sessionPrefix ?? randomPrefix(), nextSession: 0 };

  let probe: S | undefined = await options.createStore();
  const available: Record<ConformanceRequirement, boolean> = {
    restart: options.restart !== undefined,
    failNextCommit: options.failNextCommit !== undefined,
    lease: isExecutionLeaseStore(probe),
    watch: typeof probe.watch === 'function',
    checkpoint: isCheckpointStore(probe),
  };

  const passed: string[] = [];
  const skipped: StoreConformanceResult['skipped'] = [];
  const failures: ConformanceFailure[] = [];
  for (const check of checks) {
    const skipReason = skipReasons.get(check.name);
    if (skipReason !== undefined) {
      skipped.push({ check: check.name, reason: skipReason });
      continue;
    }
    const missing = (check.requires ?? []).find((requirement) => !available[requirement]);
    if (missing !== undefined) {
      skipped.push({ check: check.name, reason: describeMissing(missing) });
      continue;
    }
    try {
      const store = probe ?? (await options.createStore());
      probe = undefined;
      const ctx = createContext(run, check.name, options, store);
      await withTimeout(() => check.run(ctx), timeoutMs);
      passed.push(check.name);
    } catch (error) {
      failures.push({ check: check.name, error });
    }
  }

  const [first, ...rest] = failures;
  if (first !== undefined) throw new StoreConformanceError([first, ...rest]);
  return { mode: options.restart === undefined ? 'ephemeral' : 'durable', checks: passed, skipped };
}
