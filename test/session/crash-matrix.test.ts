/**
 * The crash matrix: a real child process runs the matrix agent (two Turns, a pure tool, a
 * non_idempotent tool counting its effect in a file outside the store, a permission round trip)
 * on JSONL and on SQLite, and SIGKILLs itself right after the commit that reaches sequence k, for
 * every event boundary k of the run. This process then resumes the session with the documented
 * safe policy (SAFE_RECOVERY_POLICY) plus the human reconciliation callbacks the seed demands
 * (a model or non_idempotent tool with an unknown outcome, ambiguous inputs, a missing Request
 * outcome), and checks for every k:
 * - the recovery plan of the killed log is the one the seed prescribes for that boundary;
 * - the non_idempotent effect ran exactly once overall, and only after a recorded allow decision;
 * - no event is duplicated; the final log projects cleanly with nothing left to recover;
 * - the final answer is right; a human step happened exactly where the seed demands one.
 * The matrix is printed as a table (also in docs/session.md).
 *
 * `npm test` kills once at each distinct boundary: the first k of every (event type, plan, human
 * step). A later k with the same three (the second streamed `tool_scheduled`, the second
 * `tool_completed`, Turn 2's `turn_started`, `model_request_started`, `model_request_completed`)
 * recovers through the same path; `npm run test:deep` kills at every k.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { JsonlDurableEventStore, SqliteDurableEventStore } from '../../src/advanced.js';
import {
  projectDurableSession,
  SessionId,
  type DurableEventEnvelope,
  type DurableEventStore,
  type DurableRecoveryAction,
} from '../../src/index.js';
import { resumeSession, SAFE_RECOVERY_POLICY, type SessionRecoveryPolicy } from '../../src/session.js';
import { decisions, effectRuns, matrixOptions, resetAgentFiles, SESSION_ID, USER_INPUT } from './fixtures/matrix-agent.js';
import { tsChildArgs } from '../ts-child.js';
import { DEEP } from '../deep.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const repoRoot = path.resolve(here, '../..');
const CHILD = path.join(here, 'fixtures', 'matrix-child.ts');
const ANSWER = 'pure=42 effect=1';

/** The run's boundaries, the plan the seed prescribes after each, and whether a human must decide. */
const BOUNDARIES: ReadonlyArray<{ type: string; plan: DurableRecoveryAction; human: string | null }> = [
  { type: 'session_created', plan: 'none', human: null },
  { type: 'request_accepted', plan: 'resume_request', human: null },
  { type: 'request_started', plan: 'reconcile_request_inputs', human: 'inputs' },
  { type: 'input_applied', plan: 'rollover_request', human: null },
  { type: 'turn_started', plan: 'resume_turn', human: null },
  { type: 'model_request_started', plan: 'reconcile_model_outcome', human: 'model' },
  { type: 'tool_scheduled', plan: 'reconcile_model_outcome', human: 'model' },
  { type: 'tool_scheduled', plan: 'reconcile_model_outcome', human: 'model' },
  { type: 'model_request_completed', plan: 'resume_turn', human: null },
  { type: 'tool_started', plan: 'resume_turn', human: null },
  { type: 'tool_completed', plan: 'resume_turn', human: null },
  { type: 'permission_requested', plan: 'resolve_permissions', human: null },
  { type: 'permission_resolved', plan: 'resume_turn', human: null },
  { type: 'tool_started', plan: 'reconcile_tool_outcomes', human: 'tool' },
  { type: 'tool_completed', plan: 'resume_turn', human: null },
  { type: 'turn_completed', plan: 'reconcile_request_outcome', human: null },
  { type: 'turn_started', plan: 'resume_turn', human: null },
  { type: 'model_request_started', plan: 'reconcile_model_outcome', human: 'model' },
  { type: 'model_request_completed', plan: 'resume_turn', human: null },
  { type: 'turn_completed', plan: 'reconcile_request_outcome', human: 'outcome' },
  { type: 'request_completed', plan: 'none', human: null },
];

/** The kill points of this run: every k in test:deep, else the first k of each distinct boundary. */
const KILL_POINTS: readonly number[] = BOUNDARIES.flatMap((boundary, index) =>
  DEEP || BOUNDARIES.findIndex((other) => other.type === boundary.type && other.plan === boundary.plan && other.human === boundary.human) === index ? [index + 1] : [],
);

type Backend = 'jsonl' | 'sqlite';
const root = mkdtempSync(path.join(tmpdir(), 'session-matrix-'));
const opened: Array<{ close(): unknown }> = [];
afterAll(async () => {
  for (const store of opened) await store.close();
  rmSync(root, { recursive: true, force: true });
});

function openStore(backend: Backend, dir: string): DurableEventStore {
  const store = backend === 'jsonl' ? new JsonlDurableEventStore(path.join(dir, 'store')) : new SqliteDurableEventStore(path.join(dir, 'store.db'));
  opened.push(store);
  return store;
}

function runChild(backend: Backend, dir: string, killAt: number): Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...tsChildArgs(CHILD), backend, dir, String(killAt)], { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

async function readAll(store: DurableEventStore): Promise<DurableEventEnvelope[]> {
  const events: DurableEventEnvelope[] = [];
  let after: number | undefined;
  for (;;) {
    // SAFETY: `after` is a sequence the store returned.
    const page = await store.read(SessionId(SESSION_ID), { after: after as never, limit: 1000 });
    events.push(...page.events);
    if (!page.hasMore || page.nextCursor === null) return events;
    after = page.nextCursor;
  }
}

/** Identity of an event for the duplicate check: its type and every ID it carries. */
function identity(event: DurableEventEnvelope): string {
  const data = event.data as Record<string, unknown>;
  const ids = event as Partial<Record<'requestId' | 'turnId' | 'modelAttemptId' | 'toolAttemptId', string>>;
  return JSON.stringify([event.type, ids.requestId, ids.turnId, ids.modelAttemptId, ids.toolAttemptId, data['inputId'], data['permissionRequestId']]);
}

/** Names the recovery-coordinator operations the resume committed (commands `recovery:*`). */
function recoveryOperations(events: readonly DurableEventEnvelope[]): string[] {
  const byCommand = new Map<string, DurableEventEnvelope[]>();
  for (const event of events) {
    if (event.commandId?.startsWith('recovery:') !== true) continue;
    byCommand.set(event.commandId, [...(byCommand.get(event.commandId) ?? []), event]);
  }
  return [...byCommand.values()].map((command) => {
    const types = command.map((event) => event.type);
    if (types.includes('request_accepted')) return types.includes('tool_cancelled') || !types.includes('request_started') && types[0] !== 'turn_started' ? 'prepareTurnRecovery' : 'prepareRequestRecovery';
    if (types[0] === 'permission_resolved') return 'resolvePermission';
    if (types[0]?.startsWith('model_request_')) return 'reconcileModelOutcome';
    if (types[0]?.startsWith('tool_')) return 'reconcileToolOutcome';
    return 'reconcileRequestOutcome';
  });
}

interface Row {
  backend: Backend;
  k: number;
  event: string;
  plan: string;
  recovery: string;
  human: string;
  effects: number;
  decisions: number;
  events: number;
  answer: string;
}

const rows: Row[] = [];

async function killAndResume(backend: Backend, k: number): Promise<Row> {
  const dir = path.join(root, `${backend}-${k}`);
  mkdirSync(dir, { recursive: true });
  resetAgentFiles(dir);
  const child = await runChild(backend, dir, k);
  expect(child.signal, child.stderr).toBe('SIGKILL');

  const store = openStore(backend, dir);
  const killed = await readAll(store);
  expect(killed.length).toBe(k);
  const expected = BOUNDARIES[k - 1]!;
  expect(killed[k - 1]?.type).toBe(expected.type);
  const before = await projectDurableSession(store, SessionId(SESSION_ID));
  expect(before.recoveryPlan.action).toBe(expected.plan);

  const human: string[] = [];
  const policy: SessionRecoveryPolicy = {
    ...SAFE_RECOVERY_POLICY,
    reconcileModelOutcome: () => {
      human.push('model');
      // The provider's records show no completed response for the killed call.
      return { status: 'aborted', reason: 'process_restart' };
    },
    reconcileToolOutcome: (tool) => {
      human.push('tool');
      // The external record (the effects file) says whether this attempt's effect happened.
      const ran = effectRuns(dir).includes(tool.toolAttemptId);
      return ran
        ? { status: 'completed', result: { applied: effectRuns(dir).length } }
        : { status: 'failed', error: { code: 'NOT_APPLIED', message: 'the effect record has no entry for this attempt' } };
    },
    reconcileRequestInputs: (request) => {
      human.push('inputs');
      // input_applied is committed before any preparation: none ran, the input is the original one.
      return request.input;
    },
    reconcileRequestOutcome: (_request, context) => {
      human.push('outcome');
      const content = context.lastResponse?.content;
      return { status: 'completed', output: typeof content === 'string' ? content : '' };
    },
  };
  const session = await resumeSession({ ...matrixOptions(dir), sessionId: SESSION_ID, durableEventStore: store, recoveryPolicy: policy });
  let answer: string | undefined;
  if (session.resumedRequest !== null) {
    answer = (await session.resumedRequest.result).output;
  } else {
    const log = await readAll(store);
    const done = log.filter((event) => event.type === 'request_completed').at(-1);
    if (done !== undefined && done.type === 'request_completed') answer = String(done.data.output);
    else answer = (await session.run(USER_INPUT)).output; // the host re-sends a Request that was never accepted
  }
  await session.whenIdle();

  const final = await readAll(store);
  const projected = await projectDurableSession(store, SessionId(SESSION_ID));
  expect(projected.recoveryPlan.action).toBe('none');
  expect(final.map((event) => event.sequence)).toEqual(final.map((_, index) => index + 1));
  const identities = final.map(identity);
  expect(new Set(identities).size).toBe(identities.length);
  expect(final.slice(0, k).map((event) => event.eventId)).toEqual(killed.map((event) => event.eventId));

  // The non_idempotent effect: exactly once, and only for an attempt whose allow decision is in the log before it started.
  const runs = effectRuns(dir);
  expect(runs.length).toBe(1);
  for (const attempt of runs) {
    const allowed = final.findIndex((event) => event.type === 'permission_resolved' && event.toolAttemptId === attempt && event.data.decision === 'allow');
    const started = final.findIndex((event) => event.type === 'tool_started' && event.toolAttemptId === attempt);
    expect(allowed).toBeGreaterThan(-1);
    expect(started).toBeGreaterThan(allowed);
    expect(decisions(dir).some((line) => line.startsWith(`${attempt} allow`))).toBe(true);
  }
  expect(answer).toBe(ANSWER);
  expect(human.length > 0 ? human.join('+') : null).toBe(expected.human);
  await session.close();
  const row: Row = {
    backend,
    k,
    event: expected.type,
    plan: before.recoveryPlan.action,
    recovery:
      [
        ...recoveryOperations(final),
        ...(session.resumedRequest === null
          ? []
          : [session.resumedRequest.requestId === before.recoveryPlan.requestId && expected.plan !== 'resume_request' ? 'continue in place' : 'resume Request']),
      ].join(', ') || '-',
    human: human.join('+') || '-',
    effects: runs.length,
    decisions: decisions(dir).length,
    events: final.length,
    answer: answer ?? '',
  };
  rows.push(row);
  return row;
}

function printTable(): void {
  const header = '| backend | k | killed after | plan | recovery | human | effect runs | decisions | final events | answer |';
  const lines = [header, '|---|---|---|---|---|---|---|---|---|---|'];
  for (const row of [...rows].sort((a, b) => a.backend.localeCompare(b.backend) || a.k - b.k)) {
    lines.push(`| ${row.backend} | ${row.k} | ${row.event} | ${row.plan} | ${row.recovery} | ${row.human} | ${row.effects} | ${row.decisions} | ${row.events} | ${row.answer} |`);
  }
  console.log(`\nSession crash matrix\n${lines.join('\n')}\n`);
}

describe('crash matrix: SIGKILL after every distinct committed boundary, then resumeSession', () => {
  afterAll(printTable);
  for (const backend of ['jsonl', 'sqlite'] as const) {
    it(`${backend}: every boundary recovers with the prescribed plan, one effect, the right answer`, { timeout: 240_000 }, async () => {
      // Two kill points at a time (CI has 2 cores): each child is one real process.
      for (let index = 0; index < KILL_POINTS.length; index += 2) {
        await Promise.all(KILL_POINTS.slice(index, index + 2).map((k) => killAndResume(backend, k)));
      }
      expect(rows.filter((row) => row.backend === backend)).toHaveLength(KILL_POINTS.length);
    });
  }
});
