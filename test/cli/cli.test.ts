/**
 * The `agent-ledger` CLI against real JSONL and SQLite stores. Most commands run in this process
 * (`runCliInProcess`: the bin's `run()` with buffers); the bin runs as a child where the process is
 * the point: its exit code, `--help` without the native addons, `tail -f` and SIGINT, a terminal's
 * progress bar, a copy killed with SIGKILL.
 */
import { spawn } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync, readFileSync, watch, writeFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { JsonlDurableEventStore } from '../../src/adapters/node/jsonl/jsonl-store.js';
import { sessionPaths } from '../../src/adapters/node/jsonl/session-paths.js';
import { SqliteDurableEventStore } from '../../src/adapters/node/sqlite/sqlite-store.js';
import { DurableSessionJournal } from '../../src/core/journal/index.js';
import { CommandId, SessionId } from '../../src/protocol/ids.js';
import { appendCycles, cycleDrafts } from '../checkpoint/lifecycle-log.js';
import { CLI_SOURCE, linesOf, ROOT, runCli, runCliInProcess, seed, spawnCli, tempDir } from './helpers.js';
import { tsChildArgs } from '../ts-child.js';

let dir: string;
let jsonl: string;

beforeAll(async () => {
  dir = tempDir();
  jsonl = `jsonl:${path.join(dir, 'data')}`;
  await seed(jsonl, 'permission', 'perm');
  await seed(jsonl, 'forkable', 'forkable');
  await seed(jsonl, 'long', 'long', 40);
}, 120_000);

function json<T = Record<string, unknown>>(text: string): T {
  return JSON.parse(text) as T;
}

describe('arguments and errors', () => {
  it('--help works when the native addons cannot load', async () => {
    const preload = path.join(ROOT, 'test/cli/fixtures/deny-native.mjs');
    const run = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      const child = spawn(process.execPath, ['--import', preload, ...tsChildArgs(CLI_SOURCE), '--help'], { cwd: ROOT });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      child.on('close', (code) => resolve({ code, stdout, stderr }));
    });
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    for (const command of ['inspect', 'events', 'tail', 'plan', 'verify', 'checkpoint', 'copy', 'fork', 'serve']) expect(run.stdout).toContain(command);
    // The same preload does break a command that needs the addon: the test can fail.
    const sqlite = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      const child = spawn(process.execPath, ['--import', preload, ...tsChildArgs(CLI_SOURCE), 'inspect', `sqlite:${path.join(dir, 'none.db')}`, 'x'], { cwd: ROOT });
      let stderr = '';
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      child.on('close', (code) => resolve({ code, stderr }));
    });
    expect(sqlite.code).toBe(1);
  });

  it('reports bad input as one line with a non-zero exit, never a stack trace', async () => {
    const cases: [string[], RegExp][] = [
      [['inspect', 'ftp://x', 'perm'], /not recognised/],
      [['inspect', `jsonl:${path.join(dir, 'missing')}`, 'perm'], /no such directory/],
      [['inspect', jsonl, 'nope'], /has no events/],
      [['inspect', jsonl, ''], /session ID/],
      [['events', jsonl, 'perm', '--limit', 'x'], /--limit must be an integer/],
      [['events', jsonl, 'perm', '--type', 'bogus'], /not an event type/],
      [['fork', jsonl, 'forkable', '--at', '99', '--new-session', 'f-x'], /past its head/],
      [['copy', jsonl, 'postgres://user:secret@127.0.0.1:9/db', '--session', 'perm'], /^agent-ledger: store postgres:\/\/user:\*\*\*@127\.0\.0\.1:9\/db: /],
      [['inspect', 'http://127.0.0.1:9', 'perm'], /AGENT_LEDGER_TOKEN/],
      [['inspect', 'http://user:pw@127.0.0.1:9', 'perm'], /not in the URL/],
    ];
    for (const [args, pattern] of cases) {
      const run = await runCliInProcess(args, { AGENT_LEDGER_TOKEN: '' });
      expect(run.code, args.join(' ')).toBe(1);
      expect(run.stderr, args.join(' ')).toMatch(pattern);
      expect(run.stderr.trim().split('\n'), args.join(' ')).toHaveLength(1);
      expect(run.stderr, args.join(' ')).not.toMatch(/\n\s+at /);
      expect(run.stderr).not.toContain('secret');
    }
    const unknown = await runCli(['frobnicate']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/unknown command/);
    // commander's own errors go through the run's streams too (in-process: nothing reaches this process's stderr).
    // A subcommand's own errors and help end the run, never the process (no process.exit).
    const option = await runCliInProcess(['events', jsonl, 'perm', '--bogus']);
    expect(option.code).toBe(1);
    expect(option.stderr).toBe("error: unknown option '--bogus'\n(run with --help for usage)\n");
    expect(option.stdout).toBe('');
    const help = await runCliInProcess(['events', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Usage: agent-ledger events');
  }, 120_000);
});

describe('reading', () => {
  it('inspect and plan classify the pending permission', async () => {
    const inspect = await runCliInProcess(['inspect', jsonl, 'perm']);
    expect(inspect.code).toBe(0);
    expect(inspect.stdout).toContain('head      12');
    expect(inspect.stdout).toContain('[needs a person] permission for deploy');
    expect(inspect.stdout).toMatch(/next\s+sleep backoff at/);
    expect(inspect.stdout).toContain('checkpoint none stored');
    const plan = json<{ action: string; safety: string; items: { kind: string; safety: string; toolName?: string }[] }>(
      (await runCliInProcess(['plan', jsonl, 'perm', '--json'])).stdout,
    );
    expect(plan.action).toBe('resolve_permissions');
    expect(plan.safety).toBe('needs_person');
    expect(plan.items).toEqual([expect.objectContaining({ kind: 'permission', safety: 'needs_person', toolName: 'deploy' })]);
    const done = json<{ action: string; items: unknown[] }>((await runCliInProcess(['plan', jsonl, 'long', '--json'])).stdout);
    expect(done).toMatchObject({ action: 'none', items: [] });
  }, 60_000);

  it('events pages with a cursor and filters, and prints nothing extra when piped', async () => {
    const first = await runCliInProcess(['events', jsonl, 'long', '--limit', '100', '--json']);
    const page1 = json<{ events: { sequence: number }[]; nextCursor: string | null; hasMore: boolean }>(first.stdout);
    expect(first.stderr).toBe('');
    expect(page1.events.map((event) => event.sequence)).toEqual(Array.from({ length: 100 }, (_, index) => index + 1));
    expect(page1.hasMore).toBe(true);
    const second = json<{ events: { sequence: number }[] }>((await runCliInProcess(['events', jsonl, 'long', '--after', page1.nextCursor ?? '', '--limit', '5', '--json'])).stdout);
    expect(second.events.map((event) => event.sequence)).toEqual([101, 102, 103, 104, 105]);
    const bySequence = json<{ events: { sequence: number }[] }>((await runCliInProcess(['events', jsonl, 'long', '--after', '318', '--json'])).stdout);
    expect(bySequence.events.map((event) => event.sequence)).toEqual([319, 320, 321]);
    const typed = json<{ events: { type: string }[] }>((await runCliInProcess(['events', jsonl, 'long', '--type', 'request_completed', '--all', '--json'])).stdout);
    expect(typed.events).toHaveLength(40);
    expect(new Set(typed.events.map((event) => event.type))).toEqual(new Set(['request_completed']));
    const human = await runCliInProcess(['events', jsonl, 'perm', '--tool-attempt', 'tool-deploy']);
    expect(human.stdout.trim().split('\n').map((line) => line.trim().split(/\s+/)[2])).toEqual(['tool_scheduled', 'permission_requested']);
  }, 60_000);

  it('tail -f follows new events through the subscription and ends when the session closes', async () => {
    const child = spawnCli(['tail', jsonl, 'long', '-f', '-n', '2', '--json']);
    const output = linesOf(child);
    await output.waitFor(2);
    const store = new JsonlDurableEventStore(path.join(dir, 'data'));
    await store.append(SessionId('long'), [{ type: 'session_closed', data: { reason: 'completed' } }]);
    await store.close();
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    const lines = output.lines().map((line) => json<{ sequence: number; type: string }>(line));
    expect(code).toBe(0);
    expect(lines.map((event) => event.sequence)).toEqual([320, 321, 322]);
    expect(lines.at(-1)?.type).toBe('session_closed');
  }, 60_000);
});

describe('progress', () => {
  it('draws a progress bar on a terminal only; stdout is the same either way', async () => {
    const run = (preload: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> =>
      new Promise((resolve) => {
        const child = spawn(process.execPath, [...preload, ...tsChildArgs(CLI_SOURCE), 'verify', jsonl, 'perm'], { cwd: ROOT });
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
        child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
        child.on('close', (code) => resolve({ code, stdout, stderr }));
      });
    const terminal = await run(['--import', path.join(ROOT, 'test/cli/fixtures/fake-tty.mjs')]);
    const piped = await run([]);
    expect(terminal.code).toBe(0);
    expect(terminal.stderr).toContain('verify perm [');
    expect(piped.stderr).toBe('');
    expect(terminal.stdout).toBe(piped.stdout);
    const json = await runCliInProcess(['verify', jsonl, 'perm', '--json']);
    expect(json.stderr).toBe('');
  }, 60_000);
});

describe('verify', () => {
  it('passes a healthy store and names the line of each corrupt one', async () => {
    const ok = await runCliInProcess(['verify', jsonl, '--json']);
    expect(ok.code).toBe(0);
    expect(json<{ ok: boolean }>(ok.stdout).ok).toBe(true);

    const root = path.join(dir, 'corrupt');
    await seed(`jsonl:${root}`, 'long', 'broken', 3);
    const files = sessionPaths(root, SessionId('broken'));
    const lines = readFileSync(files.log, 'utf8').split('\n');
    lines[0] = lines[0]?.replace('"sequence":2', '"sequence":7') ?? '';
    lines.splice(1, 0, '{"not":"an array"}');
    writeFileSync(files.log, lines.join('\n'));
    appendFileSync(files.durability, '{"kind":"sleep"}\n');
    const bad = await runCli(['verify', `jsonl:${root}`, 'broken']);
    expect(bad.code).toBe(2);
    expect(bad.stdout).toContain('DEFECT  broken');
    expect(bad.stdout).toMatch(/log line at byte 0: sequence 7 where 2 was expected/);
    expect(bad.stdout).toContain(`log line at byte ${Buffer.byteLength(lines[0] ?? '') + 1}: not a non-empty JSON array`);
    expect(bad.stdout).toMatch(/durability line at byte 0: /);
    expect(bad.stderr).toMatch(/verify found \d+ defect/);
  }, 60_000);

  it('names the sequence that breaks the projector, on JSONL and SQLite', async () => {
    for (const kind of ['jsonl', 'sqlite'] as const) {
      const location = kind === 'jsonl' ? path.join(dir, 'lifecycle') : path.join(dir, 'lifecycle.db');
      await seed(`${kind}:${location}`, 'long', 'lifecycle', 1);
      const store = kind === 'jsonl' ? new JsonlDurableEventStore(location) : new SqliteDurableEventStore(location);
      // Valid envelope, impossible lifecycle: a turn of a Request that does not exist.
      await store.append(SessionId('lifecycle'), [
        { type: 'turn_started', requestId: 'ghost' as never, turnId: 'ghost-turn' as never, data: { turn: 1 } },
      ]);
      await store.close();
      const run = await runCliInProcess(['verify', `${kind}:${location}`, 'lifecycle', '--json']);
      expect(run.code, kind).toBe(2);
      const report = json<{ sessions: { defects: { where: string; sequence?: number }[] }[] }>(run.stdout);
      expect(report.sessions[0]?.defects[0]).toMatchObject({ where: 'sequence 10', sequence: 10 });
    }
    // The exit code is the run's own: an in-process run leaves the process's untouched.
    expect(process.exitCode ?? 0).toBe(0);
  }, 60_000);
});

describe('verify: the stored checkpoint', () => {
  it('matches a fresh fold, and a prefix rewritten behind an unchanged checkpoint event is a defect (real JSONL files)', async () => {
    const root = path.join(dir, 'audited');
    const sessionId = SessionId('audited');
    const store = new JsonlDurableEventStore(root);
    await appendCycles(store, sessionId, 0, 0);
    const journal = await DurableSessionJournal.open(store, sessionId, { checkpoints: { everyEvents: 1_000_000 } });
    for (let index = 0; index < 6; index++) {
      const outcome = await journal.commit({ commandId: CommandId(`cycle-${index}`), events: cycleDrafts(index).map(({ commandId: _c, ...draft }) => draft) });
      expect(outcome.status).toBe('committed');
      if (index === 3) expect(await journal.writeCheckpoint()).toBe(true);
    }
    await store.close();

    const healthy = await runCliInProcess(['verify', `jsonl:${root}`, 'audited', '--json']);
    expect(healthy.code).toBe(0);
    const ok = json<{ sessions: { checkpoint?: { sequence: number; status: string }; notes: string[] }[] }>(healthy.stdout).sessions[0];
    // session_created, then 4 commands of 5 events before the checkpoint.
    expect(ok?.checkpoint).toEqual({ sequence: 21, status: 'matches' });

    // Rewrite the commit time of event 2 (one line per commit) to that of event 1: still a valid
    // log, the checkpoint's own event is untouched, so an open would still trust the checkpoint.
    const files = sessionPaths(root, sessionId);
    const lines = readFileSync(files.log, 'utf8').split('\n');
    const first = (JSON.parse(lines[0] ?? '') as { recordedAt: string }[])[0]?.recordedAt ?? '';
    const second = (JSON.parse(lines[1] ?? '') as { recordedAt: string }[])[0]?.recordedAt ?? '';
    expect(first < second || first === second).toBe(true);
    const earlier = first === second ? new Date(Date.parse(first) - 1).toISOString() : first;
    lines[1] = (lines[1] ?? '').replace(`"recordedAt":"${second}"`, `"recordedAt":"${earlier}"`);
    writeFileSync(files.log, lines.join('\n'));

    const rewritten = await runCliInProcess(['verify', `jsonl:${root}`, 'audited', '--json']);
    expect(rewritten.code).toBe(2);
    const report = json<{ sessions: { checkpoint?: { status: string }; defects: { where: string; message: string }[] }[] }>(rewritten.stdout).sessions[0];
    expect(report?.checkpoint?.status).toBe('wrong');
    expect(report?.defects).toEqual([{ where: 'checkpoint at sequence 21', sequence: 21, message: expect.stringMatching(/digest mismatch/) }]);
    // `inspect` folds the whole log too, and audits the checkpoint on the way.
    const inspectWrong = await runCliInProcess(['inspect', `jsonl:${root}`, 'audited']);
    expect(inspectWrong.stdout).toMatch(/checkpoint at sequence 21, 10 event\(s\) behind the head, \d+ bytes: WRONG: .*digest mismatch.*--rebuild/);
    expect(json((await runCliInProcess(['inspect', `jsonl:${root}`, 'audited', '--json'])).stdout)).toMatchObject({ checkpoint: { sequence: 21, behind: 10, status: 'wrong' } });
    // Opened from the checkpoint, `inspect` cannot see that: it says the view was not audited.
    const fast = await runCliInProcess(['inspect', `jsonl:${root}`, 'audited', '--from-checkpoint']);
    expect(fast.stdout).toMatch(/checkpoint at sequence 21, 10 event\(s\) behind the head, \d+ bytes: this view opened from it and folded the 10 event\(s\) after it; not audited/);
    expect(json((await runCliInProcess(['inspect', `jsonl:${root}`, 'audited', '--from-checkpoint', '--json'])).stdout)).toMatchObject({ openedFrom: 'checkpoint', checkpoint: { sequence: 21, status: 'used' } });

    // `checkpoint` shows that an open still trusts it; `--rebuild` replaces it from the whole log.
    const shown = await runCliInProcess(['checkpoint', `jsonl:${root}`, 'audited', '--json']);
    expect(shown.code).toBe(0);
    expect(json(shown.stdout)).toMatchObject({ head: 31, stored: { sequence: 21 }, outcome: { status: 'used', sequence: 21 } });
    const text = await runCliInProcess(['checkpoint', `jsonl:${root}`, 'audited']);
    expect(text.stdout).toContain('checkpoint at sequence 21 of 31');
    expect(text.stdout).toContain('folds 10 later event(s)');
    const rebuilt = await runCliInProcess(['checkpoint', `jsonl:${root}`, 'audited', '--rebuild', '--json']);
    expect(rebuilt.code).toBe(0);
    expect(json(rebuilt.stdout)).toMatchObject({ head: 31, rebuilt: { sequence: 31 } });
    const after = await runCliInProcess(['verify', `jsonl:${root}`, 'audited', '--json']);
    expect(after.code).toBe(0);
    expect(json<{ sessions: { checkpoint?: unknown }[] }>(after.stdout).sessions[0]?.checkpoint).toEqual({ sequence: 31, status: 'matches' });
    const inspected = await runCliInProcess(['inspect', `jsonl:${root}`, 'audited']);
    expect(inspected.stdout).toMatch(/checkpoint at sequence 31, 0 event\(s\) behind the head, \d+ bytes: matches a fold of the whole log/);
    expect(json((await runCliInProcess(['inspect', `jsonl:${root}`, 'audited', '--json'])).stdout)).toMatchObject({ checkpoint: { sequence: 31, behind: 0, status: 'matches' } });
    const none = await runCliInProcess(['checkpoint', `jsonl:${root}`, 'nobody']);
    expect(none.stdout).toContain('no checkpoint stored');
  }, 60_000);
});

describe('copy and fork', () => {
  it('copies between JSONL and SQLite, idempotently, with the ledger', async () => {
    const target = `sqlite:${path.join(dir, 'copy.db')}`;
    const first = json<{ sessions: { appendedEvents: number; durability: { appended: number } }[] }>(
      (await runCliInProcess(['copy', jsonl, target, '--session', 'perm', '--json'])).stdout,
    );
    expect(first.sessions[0]).toMatchObject({ appendedEvents: 12, durability: { appended: 3 } });
    const again = json<{ sessions: unknown[] }>((await runCliInProcess(['copy', jsonl, target, '--session', 'perm', '--json'])).stdout);
    expect(again.sessions[0]).toMatchObject({ appendedEvents: 0, verifiedEvents: 12, durability: { appended: 0, verified: 3 } });
    const back = await runCliInProcess(['copy', target, `jsonl:${path.join(dir, 'back')}`, '--session', 'perm']);
    expect(back.code).toBe(0);
    const source = json<{ events: { type: string; occurredAt: string; data: unknown }[] }>((await runCliInProcess(['events', jsonl, 'perm', '--all', '--json'])).stdout);
    const copied = json<{ events: { type: string; occurredAt: string; data: unknown }[] }>(
      (await runCliInProcess(['events', `jsonl:${path.join(dir, 'back')}`, 'perm', '--all', '--json'])).stdout,
    );
    expect(copied.events.map(({ type, occurredAt, data }) => ({ type, occurredAt, data }))).toEqual(
      source.events.map(({ type, occurredAt, data }) => ({ type, occurredAt, data })),
    );
    // A target that holds other events is refused, not overwritten.
    const clash = await runCliInProcess(['copy', jsonl, target, '--session', 'forkable', '--as', 'perm']);
    expect(clash.code).toBe(1);
    expect(clash.stderr).toMatch(/differs from the source at sequence/);
  }, 120_000);

  it('resumes a copy killed with SIGKILL, verifying what landed', async () => {
    await seed(jsonl, 'long', 'big', 600);
    // A directory of its own: its change events are the copy's writes to the database and its WAL.
    const folder = path.join(dir, 'killed');
    mkdirSync(folder);
    const file = path.join(folder, 'killed.db');
    const child = spawnCli(['copy', jsonl, `sqlite:${file}`, '--session', 'big', '--batch-size', '10']);
    const exited = new Promise<NodeJS.Signals | null>((resolve) => child.once('exit', (_code, signal) => resolve(signal)));
    // Kill once the first batch has landed: the head is read again on each change in the folder.
    let watching: SqliteDurableEventStore | undefined;
    const headNow = async (): Promise<number> => {
      if (!existsSync(file)) return 0;
      try {
        watching ??= new SqliteDurableEventStore(file);
        return (await watching.getHeadSequence(SessionId('big'))) ?? 0;
      } catch {
        // The schema is not there yet (or is being created): read again on the next change.
        watching?.close();
        watching = undefined;
        return 0;
      }
    };
    await new Promise<void>((resolve, reject) => {
      let busy = false;
      let pending = false;
      const check = async (): Promise<void> => {
        if (busy) {
          pending = true;
          return;
        }
        busy = true;
        do {
          pending = false;
          if ((await headNow()) > 0) {
            watcher.close();
            resolve();
            return;
          }
        } while (pending);
        busy = false;
      };
      const watcher = watch(folder, () => void check());
      child.once('exit', () => {
        watcher.close();
        reject(new Error('the copy exited before a batch landed'));
      });
      void check();
    });
    child.kill('SIGKILL');
    watching?.close();
    expect(await exited).toBe('SIGKILL');
    const probe = new SqliteDurableEventStore(file);
    const landed = (await probe.getHeadSequence(SessionId('big'))) ?? 0;
    probe.close();
    expect(landed).toBeGreaterThan(0);
    expect(landed).toBeLessThan(4801);
    const resumed = json<{ sessions: { verifiedEvents: number; appendedEvents: number; headSequence: number }[] }>(
      (await runCliInProcess(['copy', jsonl, `sqlite:${file}`, '--session', 'big', '--json'])).stdout,
    );
    expect(resumed.sessions[0]).toEqual(expect.objectContaining({ verifiedEvents: landed, appendedEvents: 4801 - landed, headSequence: 4801 }));
    const verify = await runCliInProcess(['verify', `sqlite:${file}`, 'big']);
    expect(verify.code).toBe(0);
  }, 180_000);

  it("forks at N with session_created { source: 'fork' } and lists the tool calls a rerun repeats", async () => {
    const run = await runCliInProcess(['fork', jsonl, 'forkable', '--at', '9', '--new-session', 'forked', '--json']);
    expect(run.code).toBe(0);
    const result = json<{ appended: number; rerun: { tools: { toolName: string; sideEffect: string; position: string }[] } }>(run.stdout);
    expect(result.appended).toBe(9);
    expect(result.rerun.tools).toEqual([
      expect.objectContaining({ toolName: 'read_file', sideEffect: 'idempotent', position: 'unfinished_at_fork_point' }),
      expect.objectContaining({ toolName: 'charge_card', sideEffect: 'non_idempotent', position: 'after_fork_point' }),
    ]);
    const first = json<{ events: { type: string; data: unknown }[] }>((await runCliInProcess(['events', jsonl, 'forked', '--limit', '1', '--json'])).stdout);
    expect(first.events[0]).toMatchObject({ type: 'session_created', data: { source: 'fork', parentSessionId: 'forkable' } });
    const human = await runCliInProcess(['fork', jsonl, 'forkable', '--at', '9', '--new-session', 'forked']);
    expect(human.stdout).toContain('(0 appended, 9 already there)');
    expect(human.stdout).toMatch(/charge_card\s+call-pay\s+non_idempotent .*not safe to repeat/);
    const plan = json<{ items: { kind: string; safety: string }[] }>((await runCliInProcess(['plan', jsonl, 'forked', '--json'])).stdout);
    expect(plan.items).toEqual(expect.arrayContaining([expect.objectContaining({ kind: 'tool_retry', safety: 'safe_to_retry' })]));
  }, 60_000);
});
