/**
 * Store wrappers for journal and subscription tests: a real memory store underneath, with one
 * behaviour changed per wrapper (faults, delays, counters). Nothing here replaces the component
 * under test; the wrappers only shape what the store does.
 */
import type { MemoryDurableEventStore } from '../../src/adapters/memory/memory-store.js';
import type {
  DurableAppendOptions,
  DurableAppendResult,
  DurableEventStore,
  DurableReadOptions,
  DurableReadResult,
} from '../../src/core/store.js';
import type { DurableEventDraft } from '../../src/protocol/events.js';
import { CommandId, type SessionId } from '../../src/protocol/ids.js';
import type { DurableCommandEventDraft } from '../../src/core/journal/index.js';

type AppendFn = (sessionId: SessionId, drafts: readonly DurableEventDraft[], options?: DurableAppendOptions) => Promise<DurableAppendResult>;
type ReadFn = (sessionId: SessionId, options?: DurableReadOptions) => Promise<DurableReadResult>;

/** Overrides for {@link wrapStore}; each receives the inner store's method. */
export interface StoreOverrides {
  append?: (inner: AppendFn, ...args: Parameters<AppendFn>) => Promise<DurableAppendResult>;
  read?: (inner: ReadFn, ...args: Parameters<ReadFn>) => Promise<DurableReadResult>;
  /** `false` removes `watch` (a store that can only be polled). */
  watch?: false;
}

/** A store delegating to `inner`, with some methods replaced. */
export function wrapStore(inner: MemoryDurableEventStore, overrides: StoreOverrides = {}): DurableEventStore {
  const append: AppendFn = (sessionId, drafts, options) => inner.append(sessionId, drafts, options);
  const read: ReadFn = (sessionId, options) => inner.read(sessionId, options);
  const appendOverride = overrides.append;
  const readOverride = overrides.read;
  const store: DurableEventStore = {
    append: appendOverride === undefined ? append : (...args) => appendOverride(append, ...args),
    read: readOverride === undefined ? read : (...args) => readOverride(read, ...args),
    getHeadSequence: (sessionId, options) => inner.getHeadSequence(sessionId, options),
  };
  if (overrides.watch !== false) store.watch = (sessionId, listener) => inner.watch(sessionId, listener);
  return store;
}

/** Resolves after `ms` milliseconds, ignoring any signal (a store that does not cooperate). */
export function sleepIgnoringSignal(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** A promise with its resolver exposed. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

/** A command draft with its `commandId` set, as a plain store draft (for writers that bypass the journal). */
export function withCommand(draft: DurableCommandEventDraft, commandId: string): DurableEventDraft {
  // SAFETY: with `commandId` present, a command draft is exactly a store draft of the same type.
  return { ...draft, commandId: CommandId(commandId) } as DurableEventDraft;
}
