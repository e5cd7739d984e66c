/** SQLite on Node (better-sqlite3): the SQL store over a local file. */
export { BetterSqlite3Driver } from './better-sqlite3-driver.js';
export {
  DEFAULT_SQLITE_BUSY_TIMEOUT_MS,
  DEFAULT_SQLITE_WATCH_POLL_MS,
  SqliteDurableEventStore,
  type SqliteDurableEventStoreOptions,
} from './sqlite-store.js';
export {
  DEFAULT_MAX_OPEN_SESSION_FILES,
  SqliteSessionFilesStore,
  type SqliteSessionFilesStoreOptions,
} from './session-files-store.js';
