/**
 * `agent-ledger verify` on a JSONL directory reads through the store's own reader, read-only:
 * real files with torn tails, a corrupt line and no lock sidecars are left byte for byte as they
 * were (no lock sidecar, validated-state sidecar or directory is created, no torn tail cut), and
 * the logs it lists are the files the store's naming rule names, not every `*.jsonl`.
 */
import { appendFileSync, copyFileSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { sessionPaths } from '../../src/adapters/node/jsonl/session-paths.js';
import { SessionId } from '../../src/protocol/ids.js';
import { runCliInProcess, seed, tempDir } from './helpers.js';

/** Every file under `root` with its bytes, by relative path. */
function snapshot(root: string): Map<string, string> {
  const files = new Map<string, string>();
  const walk = (directory: string): void => {
    for (const name of readdirSync(directory).sort()) {
      const file = path.join(directory, name);
      if (statSync(file).isDirectory()) walk(file);
      else files.set(path.relative(root, file), readFileSync(file).toString('base64'));
    }
  };
  walk(root);
  return files;
}

interface Report {
  ok: boolean;
  sessions: { sessionId: string; events: number; lines?: number; durabilityRecords: number | null; defects: { where: string; offset?: number; message: string }[]; notes: string[] }[];
}

let root: string;

beforeAll(async () => {
  root = path.join(tempDir('agent-ledger-verify-ro-'), 'data');
  await seed(`jsonl:${root}`, 'permission', 'perm');
  await seed(`jsonl:${root}`, 'long', 'broken', 3);
}, 120_000);

describe('verify reads a JSONL store read-only', () => {
  it('leaves torn tails, a corrupt line and missing lock sidecars exactly as they were', async () => {
    const perm = sessionPaths(root, SessionId('perm'));
    const broken = sessionPaths(root, SessionId('broken'));
    // No lock sidecars (a copied or restored directory), torn tails on both files of `perm`.
    for (const files of [perm, broken]) rmSync(files.lock, { force: true });
    const logBytes = statSync(perm.log).size;
    const ledgerBytes = statSync(perm.durability).size;
    appendFileSync(perm.log, '[{"sessionId":"perm","seq');
    appendFileSync(perm.durability, '{"kind":"st');
    // `broken`: its second line is not a batch, and a torn tail after the last line.
    const lines = readFileSync(broken.log, 'utf8').split('\n');
    lines.splice(1, 0, '{"not":"an array"}');
    writeFileSync(broken.log, `${lines.join('\n')}[{"torn`);
    const before = snapshot(root);

    const all = await runCliInProcess(['verify', `jsonl:${root}`, '--json']);
    expect(all.code).toBe(2);
    const report = JSON.parse(all.stdout) as Report;
    const ok = report.sessions.find((session) => session.sessionId === 'perm');
    // Pass 2 ran on `perm` (through a read-only store): the whole log and ledger, not the tails.
    expect(ok).toMatchObject({ events: 12, durabilityRecords: 3, defects: [] });
    expect(ok?.notes).toEqual(
      expect.arrayContaining([
        `log line at byte ${logBytes} has no newline: a torn tail from an interrupted write (readers ignore it; the next append truncates it)`,
        `durability line at byte ${ledgerBytes} has no newline: a torn tail from an interrupted write`,
      ]),
    );
    const bad = report.sessions.find((session) => session.sessionId === 'broken');
    expect(bad?.defects).toEqual([
      { where: `log line at byte ${Buffer.byteLength(lines[0] ?? '') + 1}`, offset: Buffer.byteLength(lines[0] ?? '') + 1, message: 'not a non-empty JSON array of events' },
    ]);
    expect(bad?.notes[0]).toMatch(/^log line at byte \d+ has no newline/);
    const single = await runCliInProcess(['verify', `jsonl:${root}`, 'perm']);
    expect(single.code).toBe(0);
    expect(single.stdout).toContain('ok      perm: 12 events, 3 durability records');

    expect(snapshot(root)).toEqual(before);
  }, 60_000);

  it('lists the logs the naming rule names: a stray copy of a log is reported, not verified twice', async () => {
    const other = path.join(tempDir('agent-ledger-verify-names-'), 'data');
    await seed(`jsonl:${other}`, 'permission', 'perm');
    const long = 'l'.repeat(200);
    await seed(`jsonl:${other}`, 'long', long, 1);
    const files = sessionPaths(other, SessionId('perm'));
    copyFileSync(files.log, path.join(files.directory, 'backup.jsonl'));
    const run = await runCliInProcess(['verify', `jsonl:${other}`, '--json']);
    expect(run.code).toBe(2);
    const report = JSON.parse(run.stdout) as Report;
    expect(report.sessions.map((session) => session.sessionId).sort()).toEqual(['(file backup.jsonl)', long, 'perm']);
    expect(report.sessions.find((session) => session.sessionId === '(file backup.jsonl)')?.defects).toEqual([
      { where: 'file backup.jsonl', message: `its first line names session perm, whose log is ${path.basename(files.log)}` },
    ]);
    expect(report.sessions.filter((session) => session.defects.length === 0).map((session) => session.sessionId).sort()).toEqual([long, 'perm']);
  }, 60_000);
});
