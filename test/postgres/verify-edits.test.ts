/**
 * `agent-ledger verify` sees every kind of edit of stored events up to the checkpoint on
 * PostgreSQL rows (the edits and the session of `test/cli/verify-edits.ts`): the CLI's `run()`
 * against the run's server, exiting 2 and naming the place. The rows are rewritten the way a
 * careful hand would: sequences contiguous, `command_id` and the session's `head` kept in step.
 * An edit of one row's body after the latest checkpoint (or in a session without one) is seen
 * through the row's stored per-event digest.
 *
 * `npm test` runs one edit of each check here (`editRunsOnEveryBackend`, `rowEditSessions` in
 * test/cli/verify-edits.ts): the others reach the same check through the same reads of these rows
 * and run in `npm run test:deep`; every edit runs in `npm test` on JSONL lines
 * (test/cli/verify-edits.test.ts).
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresDurableEventStore } from '../../src/postgres.js';
import type { DurableEventEnvelope } from '../../src/protocol/events.js';
import { SessionId } from '../../src/protocol/ids.js';
import { runCliInProcess } from '../cli/helpers.js';
import {
  EARLY_CHECKPOINT,
  EDITABLE_EVENTS,
  editRunsOnEveryBackend,
  LOG_EDITS,
  ROW_EDITS,
  rowEditSessions,
  seedEditable,
  seedPastCheckpoint,
  type LogEdit,
} from '../cli/verify-edits.js';
import { DEEP } from '../deep.js';
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
    const result = await runCliInProcess(['verify', url, sessionId]);
    expect(result.code, result.stdout + result.stderr).toBe(0);
    expect(result.stdout).toContain(`ok      ${sessionId}: ${EDITABLE_EVENTS} events`);
    expect(result.stdout).toContain(`checkpoint at sequence ${EDITABLE_EVENTS} matches the log`);
  }, 60_000);

  for (const [index, edit] of LOG_EDITS.entries()) {
    if (!editRunsOnEveryBackend(edit, DEEP)) continue;
    it(`${edit.name}: exit 2, naming the place`, async () => {
      const sessionId = SessionId(`edit-${index}`);
      await seededAndEdited(sessionId, edit.apply);
      const result = await runCliInProcess(['verify', url, sessionId]);
      expect(result.code, result.stdout + result.stderr).toBe(2);
      expect(result.stdout).toMatch(edit.place);
    }, 60_000);
  }

  for (const checkpoint of [true, false]) {
    const label = checkpoint ? `after the checkpoint at ${EARLY_CHECKPOINT}` : 'without a checkpoint';
    it(`rows ${label}, unedited: verify passes and the per-event digests match`, async () => {
      const sessionId = SessionId(`rows-${String(checkpoint)}`);
      await seedPastCheckpoint(store, sessionId, checkpoint);
      const result = await runCliInProcess(['verify', url, sessionId]);
      expect(result.code, result.stdout + result.stderr).toBe(0);
      expect(result.stdout).toContain(`per-event digests match for events 1-${EDITABLE_EVENTS}`);
    }, 60_000);

    for (const [index, edit] of ROW_EDITS.entries()) {
      if (!rowEditSessions(index, DEEP).includes(checkpoint)) continue;
      it(`${edit.name}, ${label}: exit 2 naming the sequence`, async () => {
        const sessionId = SessionId(`row-${index}-${String(checkpoint)}`);
        await seedPastCheckpoint(store, sessionId, checkpoint);
        const row = await admin.query<{ body: string }>(`SELECT body::text AS body FROM "${schema}".events WHERE session_id = $1 AND sequence = $2`, [sessionId, edit.sequence]);
        const body = JSON.stringify(edit.apply(JSON.parse(row.rows[0]?.body ?? '') as DurableEventEnvelope));
        const updated = await admin.query(`UPDATE "${schema}".events SET body = $3 WHERE session_id = $1 AND sequence = $2`, [sessionId, edit.sequence, body]);
        expect(updated.rowCount).toBe(1);
        const result = await runCliInProcess(['verify', url, sessionId]);
        expect(result.code, result.stdout + result.stderr).toBe(2);
        expect(result.stdout).toMatch(edit.place);
      }, 60_000);
    }
  }

  it('rows written before migration 5 (NULL digests) are a note, not a defect', async () => {
    const sessionId = SessionId('rows-null');
    await seedPastCheckpoint(store, sessionId, false);
    await admin.query(`UPDATE "${schema}".events SET digest = NULL WHERE session_id = $1`, [sessionId]);
    const result = await runCliInProcess(['verify', url, sessionId]);
    expect(result.code, result.stdout + result.stderr).toBe(0);
    expect(result.stdout).toContain(`events 1-${EDITABLE_EVENTS} have no stored per-event digest`);
  }, 60_000);
});
