/**
 * `agent-ledger/advanced`: Node.js storage backends, kept off the root entry point so that
 * importing the package never loads native addons or `node:fs`.
 */
export { JsonlDurableEventStore, MAX_CACHED_SESSIONS } from './adapters/node/jsonl/jsonl-store.js';
export {
  DEFAULT_LOCK_TIMEOUT_MS,
  OPERATION_TIMEOUT_MARGIN_MS,
  type JsonlDurableEventStoreOptions,
} from './adapters/node/jsonl/options.js';
export { SqliteDurableEventStore, type SqliteDurableEventStoreOptions } from './adapters/node/sqlite/sqlite-store.js';
export {
  SqliteSessionFilesStore,
  type SqliteSessionFilesStoreOptions,
} from './adapters/node/sqlite/session-files-store.js';
