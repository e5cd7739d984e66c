/**
 * Helpers of the durability tests: store wrappers that count or corrupt ledger reads, a store
 * view without `watchDurability`, deferred promises, and small ID helpers.
 */
import type { MemoryDurableEventStore } from '../../src/adapters/memory/memory-store.js';
import type {
  DurabilityRecordStore,
  DurabilityReadOptions,
  DurabilityReadResult,
} from '../../src/core/durability/record-contract.js';
import { SessionId } from '../../src/protocol/ids.js';

let nextSession = 0;
/** A session ID unique within the test file. */
export function newSessionId(label = 'durability'): SessionId {
  nextSession += 1;
  return SessionId(`${label}-${nextSession}`);
}

/** A promise with its resolve/reject exposed. */
export interface Deferred<T> {
  promise: Promise<T>;
  resolve: (value: T) => void;
  reject: (error: unknown) => void;
}

export function deferred<T = void>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** Lets queued microtasks and one timer turn run. */
export function tick(ms = 0): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * A new store object over `inner`'s ledger WITHOUT `watchDurability` (so only a host `subscribe`
 * or a local delivery can wake its waiters), recording the `after` of every read.
 */
export function durabilityView(inner: MemoryDurableEventStore): DurabilityRecordStore & { reads: Array<number | undefined> } {
  const reads: Array<number | undefined> = [];
  return {
    reads,
    recordDurability: (sessionId, draft, options) => inner.recordDurability(sessionId, draft, options),
    readDurability: (sessionId, options?: DurabilityReadOptions) => {
      reads.push(options?.after);
      return inner.readDurability(sessionId, options);
    },
  };
}

/** A store object over `inner` whose reads pass through `tamper` (to fake a corrupt backend). */
export function tamperedStore(
  inner: MemoryDurableEventStore,
  tamper: (page: DurabilityReadResult) => unknown,
): DurabilityRecordStore {
  return {
    recordDurability: (sessionId, draft, options) => inner.recordDurability(sessionId, draft, options),
    readDurability: async (sessionId, options) => {
      const page = await inner.readDurability(sessionId, options);
      // SAFETY: deliberately malformed pages; the port must refuse them at run time.
      return tamper(page) as DurabilityReadResult;
    },
  };
}
