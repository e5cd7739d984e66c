/** The PostgreSQL backend: `PostgresDurableEventStore` and its schema. */
export {
  DEFAULT_POSTGRES_NOTIFY_PROBE_TIMEOUT_MS,
  DEFAULT_POSTGRES_POLL_INTERVAL_MS,
  DEFAULT_POSTGRES_STATEMENT_TIMEOUT_MS,
  MAX_OPTIMISTIC_ATTEMPTS,
  PostgresDurableEventStore,
  type PostgresCommandRange,
  type PostgresConnectionConfig,
  type PostgresPoolLike,
  type PostgresDurableEventStoreOptions,
  type PostgresGlobalEvent,
  type PostgresGlobalPage,
} from './postgres-store.js';
export {
  DEFAULT_POSTGRES_SCHEMA,
  POSTGRES_MIGRATIONS,
  POSTGRES_SCHEMA_VERSION,
  postgresMigrationSql,
  type PostgresMigration,
} from './schema.js';
export type { WatchMode } from './watch-hub.js';
