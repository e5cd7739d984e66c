/**
 * Builds the {@link ConformanceContext} a check runs with.
 *
 * One context per check: it holds the store the check works on (replaced by `restart()`), hands
 * out session IDs that are unique across the whole run, and turns the run's test controls into
 * methods. A control the options do not provide throws: the runner never calls a check whose
 * `requires` it cannot meet, so reaching that throw is a bug in the check.
 */
import type { DurableEventStore } from '../core/store.js';
import type { DurableEventEnvelope } from '../protocol/events.js';
import { SessionId, type EventSequence } from '../protocol/ids.js';
import { MAX_READ_LIMIT } from '../protocol/limits.js';
import { assertEqual, fail, sleep } from './assertions.js';
import type { ConformanceContext, StoreConformanceOptions } from './types.js';

/** Default TTL of the short leases that expiry checks let lapse. */
export const DEFAULT_SHORT_LEASE_TTL_MS = 60;
/** Extra wall-clock time slept past a TTL so that the lease has surely expired. */
const EXPIRY_MARGIN_MS = 25;

/** Run-wide state shared by every context of one run. */
export interface RunState {
  prefix: string;
  nextSession: number;
}

/** Creates the context of one check. */
export function createContext<S extends DurableEventStore>(
  run: RunState,
  checkName: string,
  options: StoreConformanceOptions<S>,
  initialStore: S,
): ConformanceContext<S> {
  let store = initialStore;
  const now = options.now ?? Date.now;
  const shortLeaseTtlMs = options.leaseTtlMs ?? DEFAULT_SHORT_LEASE_TTL_MS;

  const readAll = async (sessionId: SessionId): Promise<DurableEventEnvelope[]> => {
    const events: DurableEventEnvelope[] = [];
    let after: EventSequence | undefined;
    for (;;) {
      const page = await store.read(sessionId, { after, limit: MAX_READ_LIMIT });
      events.push(...page.events);
      if (!page.hasMore) return events;
      if (page.nextCursor === null || page.nextCursor === after) {
        fail(`readAll: a page with hasMore=true did not advance the cursor (after ${String(after)})`);
      }
      after = page.nextCursor;
    }
  };

  return {
    get store() {
      return store;
    },
    options,
    checkName,
    newSessionId() {
      run.nextSession += 1;
      return SessionId(`${run.prefix}-${checkName}-${run.nextSession}`);
    },
    async restart() {
      if (options.restart === undefined) fail('restart() called without a restart control');
      const reopened = await options.restart(store);
      // Handing back the same object would let an ephemeral store pass as durable.
      if (reopened === store) fail('restart must return a new store object that reopens the namespace');
      store = reopened;
      return store;
    },
    async failNextCommit() {
      if (options.failNextCommit === undefined) fail('failNextCommit() called without a failNextCommit control');
      await options.failNextCommit(store);
    },
    now,
    shortLeaseTtlMs,
    async elapse(ms) {
      if (options.advanceClock !== undefined) await options.advanceClock(store, ms);
      else await sleep(ms + EXPIRY_MARGIN_MS);
    },
    readAll,
    async expectHead(sessionId, expected, what = 'head') {
      assertEqual(await store.getHeadSequence(sessionId), expected, `${what} (getHeadSequence)`);
      const page = await store.read(sessionId, { limit: 1 });
      assertEqual(page.headSequence, expected, `${what} (read().headSequence)`);
    },
  };
}
