/**
 * The store's schema on open: apply every missing migration in one transaction under an
 * advisory lock (`migrate: true`, the default), or check that the schema is current
 * (`migrate: false`). A schema newer than this release is refused either way.
 */
import { DurableError, DurableEventStoreError } from '../../protocol/errors.js';
import type { PostgresConnection } from './connection.js';
import { isConnectionLoss } from './driver.js';
import {
  POSTGRES_MIGRATIONS,
  POSTGRES_SCHEMA_VERSION,
  bootstrapStatements,
  checkSchemaName,
  migrationLockKey,
  migrationStatements,
} from './schema.js';

function tooNew(schema: string, found: number): DurableEventStoreError {
  return new DurableEventStoreError(
    'DURABLE_EVENT_UNAVAILABLE',
    `schema ${schema} has version ${found}; this release understands up to ${POSTGRES_SCHEMA_VERSION}`,
    { details: { found, supported: POSTGRES_SCHEMA_VERSION } },
  );
}

/** Applies every missing migration in one transaction; returns how many ran. */
export async function migrateSchema(connection: PostgresConnection, schema: string): Promise<number> {
  const client = await connection.connect();
  let broken = false;
  try {
    await client.query('BEGIN');
    try {
      await client.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [migrationLockKey(schema)]);
      for (const statement of bootstrapStatements(schema)) await client.query(statement);
      const quoted = checkSchemaName(schema);
      const found = await client.query<{ version: number | null }>(`SELECT max(version) AS version FROM ${quoted}.schema_migrations`);
      const from = found.rows[0]?.version ?? 0;
      if (from > POSTGRES_SCHEMA_VERSION) throw tooNew(schema, from);
      for (let index = from; index < POSTGRES_SCHEMA_VERSION; index++) {
        for (const statement of migrationStatements(index, schema)) await client.query(statement);
        await client.query(`INSERT INTO ${quoted}.schema_migrations (version, description) VALUES ($1, $2)`, [
          index + 1,
          (POSTGRES_MIGRATIONS[index] as { description: string }).description,
        ]);
      }
      await client.query('COMMIT');
      return POSTGRES_SCHEMA_VERSION - from;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    }
  } catch (error) {
    broken = isConnectionLoss(error);
    if (error instanceof DurableError) throw error;
    throw new DurableEventStoreError('DURABLE_EVENT_UNAVAILABLE', `PostgreSQL migration failed: ${String(error)}`, { cause: error });
  } finally {
    client.release(broken);
  }
}

/** Throws `DURABLE_EVENT_UNAVAILABLE` unless the schema is exactly this release's version. */
export async function checkSchemaVersion(connection: PostgresConnection, schema: string): Promise<void> {
  const quoted = checkSchemaName(schema);
  let version: number;
  try {
    const rows = await connection.query<{ version: number | null }>(`SELECT max(version) AS version FROM ${quoted}.schema_migrations`, []);
    version = rows[0]?.version ?? 0;
  } catch (error) {
    throw new DurableEventStoreError('DURABLE_EVENT_UNAVAILABLE', `cannot read ${schema}.schema_migrations: ${String(error)}`, {
      cause: error,
    });
  }
  if (version > POSTGRES_SCHEMA_VERSION) throw tooNew(schema, version);
  if (version < POSTGRES_SCHEMA_VERSION) {
    throw new DurableEventStoreError(
      'DURABLE_EVENT_UNAVAILABLE',
      `schema ${schema} has version ${version}; apply postgresMigrationSql({ from: ${version} }) or open with migrate: true`,
      { details: { found: version, supported: POSTGRES_SCHEMA_VERSION } },
    );
  }
}
