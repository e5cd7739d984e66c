/**
 * Process-wide `watch` listeners, keyed by session log path.
 *
 * Every JSONL store object in this process that commits to a session notifies every listener
 * registered for that session through any store object on the same root. Listeners run in
 * microtasks after the commit is durable and the session lock is released, so a slow or throwing
 * listener never holds the lock. Appends made by other processes are not pushed: a watcher sees
 * them at its next read (subscriptions poll for them).
 */
import type { DurableAppendListener, DurableAppendNotice } from '../../../core/store.js';

const listeners = new Map<string, Set<DurableAppendListener>>();

/** Registers `listener` for the session log at `key`; returns the unsubscribe function. */
export function addLocalWatcher(key: string, listener: DurableAppendListener): () => void {
  let set = listeners.get(key);
  if (set === undefined) {
    set = new Set();
    listeners.set(key, set);
  }
  set.add(listener);
  return () => {
    const current = listeners.get(key);
    if (current === undefined) return;
    current.delete(listener);
    if (current.size === 0) listeners.delete(key);
  };
}

/** Tells every listener of `key` about a durable append (each in its own microtask). */
export function notifyLocalWatchers(key: string, notice: DurableAppendNotice): void {
  const set = listeners.get(key);
  if (set === undefined) return;
  for (const listener of [...set]) queueMicrotask(() => listener(notice));
}
