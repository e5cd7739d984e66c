/**
 * `agent-ledger verify` sees every kind of edit of stored events up to the checkpoint on
 * PostgreSQL rows (the edits and the session of `test/cli/verify-edits.ts`): the real binary
 * against the run's server, exiting 2 and naming the place. The rows are rewritten the way a
 * careful hand would: sequences contiguous, `command_id` and the session's `head` kept in step.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresDurableEventStore } from '../../src/postgres.js';
import type { DurableEventEnvelope } from '../../src/protocol/events.js';
import { SessionId } from '../../src/protocol/ids.js';
import { runCli } from '../cli/helpers.js';
import { EDITABLE_EVENTS, LOG_EDITS, seedEditable, type LogEdit } from '../cli/verify-edits.js';
import { dropSchema, freshSchema, postgresUrl } from './helpers.js';

const schema = freshSchema('verify_edits');
let admin: pg.Client;
let store: PostgresDurableEventStore;
let url: string;

/** Seeds `sessionId` and rewrites its event rows after `edit`, in one transaction. */
async function seededAndEdited(sessionId: SessionId, edit: LogEdit['apply']): Promise<void> {
  await seedEditable(store, sessionId);
  const rows = await admin.query<{ body: string }>(`SELECT body::text AS body FROM "${schema}".events WHERE session_id = $1 ORDER BY sequence`, [sessionId]);
  const events = edit(rows.rows.map((row) => JSON.parse(row.body) as DurableEventEnvelope));
  await admin.query('BEGIN');
  try {
    await admin.query(`DELETE FROM "${schema}".events WHERE session_id = $1`, [sessionId]);
    for (const event of events) {
      await admin.query(`INSERT INTO "${schema}".events (session_id, sequence, command_id, body) VALUES ($1, $2, $3, $4)`, [
        sessionId,
        event.sequence,
        event.commandId ?? null,
        JSON.stringify(event),
      ]);
    }
    await admin.query(`UPDATE "${schema}".sessions SET head = $2 WHERE session_id = $1`, [sessionId, events.length]);
    await admin.query('COMMIT');
  } catch (error) {
    await admin.query('ROLLBACK');
    throw error;
  }
}

describe('verify sees every edit of stored events on PostgreSQL rows', () => {
  beforeAll(async () => {
    const base = postgresUrl();
    store = await PostgresDurableEventStore.open({ connectionString: base, schema, notify: false });
    admin = new pg.Client({ connectionString: base });
    await admin.connect();
    const withSchema = new URL(base);
    withSchema.searchParams.set('schema', schema);
    url = withSchema.toString();
  }, 60_000);

  afterAll(async () => {
    await store.close();
    await admin.end();
    await dropSchema(postgresUrl(), schema);
  });

  it('rows rewritten unchanged: verify passes and the checkpoint matches', async () => {
    const sessionId = SessionId('unchanged');
    await seededAndEdited(sessionId, (events) => events);
    const result = await runCli(['verify', url, sessionId]);
    expect(result.code, result.stdout + result.stderr).toBe(0);
    expect(result.stdout).toContain(`ok      ${sessionId}: ${EDITABLE_EVENTS} events`);
    expect(result.stdout).toContain(`checkpoint at sequence ${EDITABLE_EVENTS} matches the log`);
  }, 60_000);

  for (const [index, edit] of LOG_EDITS.entries()) {
    it(`${edit.name}: exit 2, naming the place`, async () => {
      const sessionId = SessionId(`edit-${index}`);
      await seededAndEdited(sessionId, edit.apply);
      const result = await runCli(['verify', url, sessionId]);
      expect(result.code, result.stdout + result.stderr).toBe(2);
      expect(result.stdout).toMatch(edit.place);
    }, 60_000);
  }
});
