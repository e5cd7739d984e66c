/**
 * The SQL backend: one store implementation over any synchronous SQLite driver
 * (a Durable Object's `ctx.storage.sql`, better-sqlite3, ...).
 */
export type { SqlDriver, SqlValue } from './driver.js';
export { SQL_MIGRATIONS, SQL_SCHEMA_VERSION, migrateSqlSchema, readSchemaVersion } from './schema.js';
export { SqlDurability, type SqlDurabilityOptions, type SqlDurabilityWithin } from './sql-durability.js';
export { SqlEventLog, type SqlCommit, type SqlEventLogOptions, type SqlStoreTestHooks } from './sql-event-log.js';
export { SqlDurableEventStore, type SqlDurableEventStoreOptions } from './sql-store.js';
export { MAX_ROWS_PER_INSERT, MAX_SEQUENCE, MAX_SESSION_KEY } from './event-rows.js';
