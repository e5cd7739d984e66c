/** Shared helpers of the PostgreSQL tests: the server URL, fresh schemas, whole-log reads. */
import pg from 'pg';
import { inject } from 'vitest';
import type { DurableEventStore } from '../../src/core/store.js';
import type { DurableEventEnvelope } from '../../src/protocol/events.js';
import type { EventSequence, SessionId } from '../../src/protocol/ids.js';

/** The server of this run (DATABASE_URL, or the one test/postgres/server.ts started). */
export function postgresUrl(): string {
  return inject('postgresUrl');
}

/** A schema name no other test file uses. */
export function freshSchema(label: string): string {
  return `t_${label}_${process.pid}_${Math.random().toString(36).slice(2, 8)}`.toLowerCase().replace(/[^a-z0-9_]/g, '_');
}

/** Drops `schema` and everything in it. */
export async function dropSchema(url: string, schema: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  client.on('error', () => undefined);
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  } finally {
    await client.end();
  }
}

/** Every event of a session, page by page. */
export async function readAll(store: DurableEventStore, sessionId: SessionId): Promise<DurableEventEnvelope[]> {
  const events: DurableEventEnvelope[] = [];
  let after: EventSequence | undefined;
  for (;;) {
    const page = await store.read(sessionId, { after, limit: 1000 });
    events.push(...page.events);
    if (!page.hasMore) return events;
    after = page.nextCursor ?? undefined;
  }
}
