/**
 * `copy` and `fork` of sessions an agent wrote, run through the CLI's `run()` against real stores.
 *
 * Agents link each Request terminal event to the Turn terminal committed with it
 * (`causationEventId`), so these logs exercise the causation map the seeded ones never do:
 * - the crash-matrix agent (`createSession`, run in the test's process: two tool calls, one
 *   through a durable `step`, one that asks permission) on real JSONL and SQLite stores;
 * - the demo agent mounted in the real Worker (wrangler's local runtime), run over HTTP.
 * Each copy is compared with its source event by event, causation links mapped by position.
 * Refused copies (a session the source lacks, a source whose causation names no earlier event)
 * leave the target as it was, with or without `--batch-size 1`.
 */
import { existsSync, mkdirSync, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JsonlDurableEventStore } from '../../src/adapters/node/jsonl/jsonl-store.js';
import { SqliteDurableEventStore } from '../../src/adapters/node/sqlite/sqlite-store.js';
import { HttpDurableEventStore } from '../../src/client.js';
import type { DurableEventStore } from '../../src/core/store.js';
import { DurableEventSubscription } from '../../src/core/subscription/subscription.js';
import type { DurableEventEnvelope } from '../../src/protocol/events.js';
import { EventId, SessionId } from '../../src/protocol/ids.js';
import { readDurabilityRecords } from '../../src/inspector/model/inspection.js';
import { startLocalWorker, type LocalWorker } from '../http/local-worker.js';
import { createSession } from '../../src/session.js';
import { matrixOptions, SESSION_ID as MATRIX_SESSION, USER_INPUT } from '../session/fixtures/matrix-agent.js';
import { runCliInProcess, tempDir, type CliRun } from './helpers.js';

let dir: string;
let worker: LocalWorker;
/** The matrix agent's session on JSONL and on SQLite. */
let matrixJsonl: string;
let matrixSqlite: string;
const EDGE_SESSION = 'edge-agent-copy';

/** Runs the matrix agent to completion on a store in `into`, in this process. */
async function runMatrixAgent(backend: 'jsonl' | 'sqlite', into: string): Promise<void> {
  mkdirSync(into, { recursive: true });
  const store = backend === 'jsonl' ? new JsonlDurableEventStore(path.join(into, 'store')) : new SqliteDurableEventStore(path.join(into, 'store.db'));
  try {
    const session = await createSession({ ...matrixOptions(into), durableEventStore: store });
    expect(await session.run(USER_INPUT), `matrix agent on ${backend}`).toMatchObject({ status: 'completed' });
  } finally {
    await store.close();
  }
}

/** Opens a jsonl: / sqlite: / http store URL in this process. */
function open(url: string): DurableEventStore & { close?: () => unknown } {
  if (url.startsWith('jsonl:')) return new JsonlDurableEventStore(url.slice('jsonl:'.length));
  if (url.startsWith('sqlite:')) return new SqliteDurableEventStore(url.slice('sqlite:'.length));
  return new HttpDurableEventStore({ baseUrl: url, token: worker.adminToken });
}

async function readEvents(url: string, sessionId: string): Promise<DurableEventEnvelope[]> {
  const store = open(url);
  try {
    const events: DurableEventEnvelope[] = [];
    for (;;) {
      const last = events.at(-1);
      const page = await store.read(SessionId(sessionId), { ...(last === undefined ? {} : { after: last.sequence }), limit: 1000 });
      events.push(...page.events);
      if (!page.hasMore) return events;
    }
  } finally {
    await store.close?.();
  }
}

async function ledgerOf(url: string, sessionId: string): Promise<unknown[] | null> {
  const store = open(url);
  try {
    const records = await readDurabilityRecords(store, SessionId(sessionId));
    return records?.map(({ sessionId: _sessionId, recordedAt: _recordedAt, ...record }) => record) ?? null;
  } finally {
    await store.close?.();
  }
}

/** An event without what the target store assigns, and its causation as a source position. */
function comparable(event: DurableEventEnvelope, positionOf: ReadonlyMap<string, number>): Record<string, unknown> {
  const { eventId: _eventId, sessionId: _sessionId, recordedAt: _recordedAt, causationEventId, ...rest } = event;
  return { ...rest, causation: causationEventId === undefined ? null : (positionOf.get(causationEventId) ?? `unknown ${causationEventId}`) };
}

/**
 * Asserts that `copy` holds the events of `source` (from `from` on), causation links mapped: a
 * causation names the event at the same position in each log. Returns how many links there were.
 */
function expectSameLog(source: DurableEventEnvelope[], copy: DurableEventEnvelope[], from = 1): number {
  expect(copy).toHaveLength(source.length);
  const sourcePositions = new Map(source.map((event) => [event.eventId as string, event.sequence]));
  const copyPositions = new Map(copy.map((event) => [event.eventId as string, event.sequence]));
  let links = 0;
  for (let index = from - 1; index < source.length; index++) {
    const original = source[index] as DurableEventEnvelope;
    const copied = copy[index] as DurableEventEnvelope;
    expect(comparable(copied, copyPositions), `sequence ${index + 1}`).toEqual(comparable(original, sourcePositions));
    if (original.causationEventId !== undefined) links += 1;
  }
  return links;
}

beforeAll(async () => {
  dir = tempDir('agent-ledger-copy-agent-');
  await Promise.all([runMatrixAgent('jsonl', path.join(dir, 'agent-jsonl')), runMatrixAgent('sqlite', path.join(dir, 'agent-sqlite'))]);
  matrixJsonl = `jsonl:${path.join(dir, 'agent-jsonl', 'store')}`;
  matrixSqlite = `sqlite:${path.join(dir, 'agent-sqlite', 'store.db')}`;
  worker = await startLocalWorker();
  // The demo agent of the Worker: one Request, two Turns, a pure tool call.
  const response = await fetch(worker.href(`/v1/sessions/${EDGE_SESSION}/requests`), {
    method: 'POST',
    headers: { authorization: `Bearer ${worker.adminToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ commandId: 'copy-test-1', input: 'How many words are in this sentence?' }),
  });
  expect(response.status, await response.text()).toBeLessThan(300);
  const subscription = await DurableEventSubscription.open(open(worker.url.href), SessionId(EDGE_SESSION), { after: null });
  for await (const message of subscription) {
    if (message.type === 'event' && ['request_completed', 'request_failed', 'request_interrupted'].includes(message.event.type)) {
      expect(message.event.type).toBe('request_completed');
      break;
    }
  }
}, 180_000);

afterAll(async () => {
  await worker?.stop();
});

function report(run: CliRun): { appendedEvents: number; verifiedEvents: number; headSequence: number; durability: unknown } {
  expect(run.stderr).toBe('');
  expect(run.code).toBe(0);
  return (JSON.parse(run.stdout) as { sessions: ReturnType<typeof report>[] }).sessions[0] as ReturnType<typeof report>;
}

describe('copy of agent-written sessions', () => {
  it('copies the Session runtime session (tool calls, a durable step, a permission) between JSONL, SQLite and HTTP, causation mapped', async () => {
    const env = { AGENT_LEDGER_TOKEN: worker.adminToken };
    const source = await readEvents(matrixJsonl, MATRIX_SESSION);
    expect(source.map((event) => event.type)).toEqual(expect.arrayContaining(['permission_resolved', 'tool_completed', 'request_completed']));
    const sourceLedger = await ledgerOf(matrixJsonl, MATRIX_SESSION);
    expect(sourceLedger).toEqual([expect.objectContaining({ kind: 'step', key: 'lookup' })]);
    const edge = `${worker.url.href}`;
    // `again`: run the copy a second time; it must verify every event (reading the target's own
    // causation links back) and append nothing.
    const cases: { from: string; to: string; as?: string; batch?: string; again?: boolean }[] = [
      { from: matrixJsonl, to: `sqlite:${path.join(dir, 'm1.db')}`, again: true },
      { from: matrixJsonl, to: `jsonl:${path.join(dir, 'm2')}` },
      { from: matrixJsonl, to: `jsonl:${path.join(dir, 'm3')}`, batch: '1', again: true },
      { from: matrixSqlite, to: `jsonl:${path.join(dir, 'm4')}`, batch: '1' },
      { from: matrixJsonl, to: edge, as: 'matrix-at-edge', again: true },
      { from: edge, to: `jsonl:${path.join(dir, 'm5')}` },
    ];
    for (const { from, to, as, batch, again } of cases) {
      const label = `${from} -> ${to}${batch === undefined ? '' : ` --batch-size ${batch}`}`;
      const fromId = from === edge ? 'matrix-at-edge' : MATRIX_SESSION;
      const targetId = as ?? fromId;
      const args = ['copy', from, to, '--session', fromId, ...(as === undefined ? [] : ['--as', as]), ...(batch === undefined ? [] : ['--batch-size', batch]), '--json'];
      const first = await runCliInProcess(args, env);
      const original = await readEvents(from, fromId);
      expect(report(first), label).toMatchObject({ appendedEvents: original.length, verifiedEvents: 0, headSequence: original.length });
      const copied = await readEvents(to, targetId);
      expect(expectSameLog(original, copied), label).toBeGreaterThan(0);
      if (!to.startsWith('http') && !from.startsWith('http')) expect(await ledgerOf(to, targetId), label).toEqual(await ledgerOf(from, fromId));
      if (again === true) expect(report(await runCliInProcess(args, env)), label).toMatchObject({ appendedEvents: 0, verifiedEvents: original.length });
    }
  }, 240_000);

  it('copies the edge agent session from the Worker into JSONL and SQLite, and forks it with --to', async () => {
    const env = { AGENT_LEDGER_TOKEN: worker.adminToken };
    const edge = worker.url.href;
    const source = await readEvents(edge, EDGE_SESSION);
    expect(source.map((event) => event.type)).toEqual(expect.arrayContaining(['tool_completed', 'request_completed']));
    for (const [to, batch] of [[`jsonl:${path.join(dir, 'e1')}`, '500'], [`sqlite:${path.join(dir, 'e2.db')}`, '1']] as const) {
      expect(report(await runCliInProcess(['copy', edge, to, '--session', EDGE_SESSION, '--batch-size', batch, '--json'], env))).toMatchObject({ appendedEvents: source.length });
      expect(expectSameLog(source, await readEvents(to, EDGE_SESSION))).toBeGreaterThan(0);
    }
    // Forks of the whole log, from the Worker and from a local copy into another kind of store.
    for (const [from, to, name] of [
      [edge, `jsonl:${path.join(dir, 'f1')}`, 'edge-fork-1'],
      [`jsonl:${path.join(dir, 'e1')}`, `sqlite:${path.join(dir, 'f2.db')}`, 'edge-fork-2'],
    ] as const) {
      const run = await runCliInProcess(['fork', from, EDGE_SESSION, '--at', String(source.length), '--new-session', name, '--to', to, '--json'], env);
      expect(run.stderr).toBe('');
      expect(JSON.parse(run.stdout)).toMatchObject({ appended: source.length });
      const forked = await readEvents(to, name);
      expect(forked[0]).toMatchObject({ type: 'session_created', data: { source: 'fork', parentSessionId: EDGE_SESSION } });
      expect(expectSameLog(source, forked, 2)).toBeGreaterThan(0);
    }
  }, 120_000);

  it('forks the Session runtime session at N into another store, causation mapped', async () => {
    const source = await readEvents(matrixJsonl, MATRIX_SESSION);
    const at = source.length;
    const to = `sqlite:${path.join(dir, 'matrix-fork.db')}`;
    const run = await runCliInProcess(['fork', matrixJsonl, MATRIX_SESSION, '--at', String(at), '--new-session', 'matrix-fork', '--to', to, '--json']);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const forked = await readEvents(to, 'matrix-fork');
    expect(expectSameLog(source, forked, 2)).toBeGreaterThan(0);
    const again = await runCliInProcess(['fork', matrixJsonl, MATRIX_SESSION, '--at', String(at), '--new-session', 'matrix-fork', '--to', to, '--json']);
    expect(JSON.parse(again.stdout)).toMatchObject({ appended: 0, verified: at });
  }, 120_000);
});

describe('refused copies leave the target as it was', () => {
  it('refuses a session the source does not have, creating nothing', async () => {
    for (const to of [`sqlite:${path.join(dir, 'typo.db')}`, `jsonl:${path.join(dir, 'typo')}`]) {
      const run = await runCliInProcess(['copy', matrixJsonl, to, '--session', 'matrix-sesion']);
      expect(run.code, to).toBe(1);
      expect(run.stderr, to).toMatch(/^agent-ledger: .*no session matrix-sesion/);
      expect(run.stdout, to).toBe('');
      expect(existsSync(to.slice(to.indexOf(':') + 1)), to).toBe(false);
    }
    // Named beside a session it has: nothing is copied at all.
    const target = `jsonl:${path.join(dir, 'typo-mixed')}`;
    const mixed = await runCliInProcess(['copy', matrixJsonl, target, '--session', MATRIX_SESSION, 'matrix-sesion']);
    expect(mixed.code).toBe(1);
    expect(existsSync(path.join(dir, 'typo-mixed'))).toBe(false);
    const fork = await runCliInProcess(['fork', matrixJsonl, MATRIX_SESSION, '--at', '999', '--new-session', 'nope', '--to', `sqlite:${path.join(dir, 'fork-typo.db')}`]);
    expect(fork.code).toBe(1);
    expect(fork.stderr).toMatch(/past its head/);
    expect(existsSync(path.join(dir, 'fork-typo.db'))).toBe(false);
  }, 120_000);

  it('refuses a source whose causation names no earlier event before writing anything, even with --batch-size 1', async () => {
    const root = path.join(dir, 'bad-causation');
    const store = new JsonlDurableEventStore(root);
    const sessionId = SessionId('bad-causation');
    await store.append(sessionId, [{ type: 'session_created', data: { source: 'create' } }]);
    await store.append(sessionId, [{ type: 'session_closed', data: { reason: 'completed' }, causationEventId: EventId('0b9d4c7e-0000-4000-8000-000000000000') }]);
    await store.close();
    // A new store, and an existing one holding another session.
    const existing = path.join(dir, 'existing.db');
    expect(report(await runCliInProcess(['copy', matrixJsonl, `sqlite:${existing}`, '--session', MATRIX_SESSION, '--json']))).toMatchObject({ appendedEvents: 21 });
    const before = readFileSync(existing);
    for (const to of [`sqlite:${path.join(dir, 'bad.db')}`, `jsonl:${path.join(dir, 'bad')}`, `sqlite:${existing}`]) {
      const run = await runCliInProcess(['copy', `jsonl:${root}`, to, '--session', 'bad-causation', '--batch-size', '1']);
      expect(run.code, to).toBe(1);
      expect(run.stderr, to).toMatch(/event 2 names causation 0b9d4c7e-.*not an earlier event.*\(DURABLE_EVENT_CORRUPT_LOG\)/);
    }
    expect(existsSync(path.join(dir, 'bad.db'))).toBe(false);
    expect(existsSync(path.join(dir, 'bad'))).toBe(false);
    expect(readFileSync(existing).equals(before)).toBe(true);
    expect(readdirSync(dir).filter((name) => name.startsWith('existing.db'))).toEqual(['existing.db']);
  }, 120_000);
});
