/**
 * State shared by every port that uses the same store object, and only by them.
 *
 * Both tables hang off a `WeakMap` keyed by the store object itself, so two store objects never
 * share anything (even when they point at the same files), and a store that is garbage collected
 * takes its entries with it:
 * 1. in-flight steps: `(sessionId, scope, key)` -> the promise of the record being produced, so
 *    two concurrent `step` calls with one key on one store run the body once;
 * 2. local waiters: `sessionId` -> wake functions, so a delivery written through this store
 *    object wakes this process's waiters at once, whether or not the store has `watchDurability`.
 */
import type { DurabilityRecord } from './record-contract.js';

interface StoreLocalState {
  inFlight: Map<string, Promise<DurabilityRecord>>;
  waiters: Map<string, Set<() => void>>;
}

const byStore = new WeakMap<object, StoreLocalState>();

function stateOf(store: object): StoreLocalState {
  let state = byStore.get(store);
  if (state === undefined) {
    state = { inFlight: new Map(), waiters: new Map() };
    byStore.set(store, state);
  }
  return state;
}

/** Key of an in-flight step. */
export function inFlightKey(sessionId: string, scope: string, key: string): string {
  return JSON.stringify([sessionId, scope, key]);
}

/** The in-flight work for `flightKey` on `store`, if any. */
export function findInFlight(store: object, flightKey: string): Promise<DurabilityRecord> | undefined {
  return byStore.get(store)?.inFlight.get(flightKey);
}

/**
 * Registers `work` as the in-flight step `flightKey` on `store` until it settles. The caller must
 * have checked {@link findInFlight} in the same synchronous turn.
 */
export function trackInFlight(store: object, flightKey: string, work: Promise<DurabilityRecord>): void {
  const table = stateOf(store).inFlight;
  table.set(flightKey, work);
  const clear = (): void => {
    if (table.get(flightKey) === work) table.delete(flightKey);
  };
  work.then(clear, clear);
}

/** Registers a local waiter of `sessionId` on `store`; returns its removal. */
export function addLocalWaiter(store: object, sessionId: string, wake: () => void): () => void {
  const waiters = stateOf(store).waiters;
  let set = waiters.get(sessionId);
  if (set === undefined) {
    set = new Set();
    waiters.set(sessionId, set);
  }
  const mine = set;
  mine.add(wake);
  return () => {
    mine.delete(wake);
    if (mine.size === 0 && waiters.get(sessionId) === mine) waiters.delete(sessionId);
  };
}

/** Wakes every local waiter of `sessionId` on `store` (after a delivery through that store). */
export function wakeLocalWaiters(store: object, sessionId: string): void {
  const set = byStore.get(store)?.waiters.get(sessionId);
  if (set === undefined) return;
  for (const wake of [...set]) {
    try {
      wake();
    } catch {
      // A wake is a hint; a failing one must not stop the others.
    }
  }
}
