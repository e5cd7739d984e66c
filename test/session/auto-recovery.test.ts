/**
 * AUTO_RECOVERY_POLICY / recallModelOnUnknownOutcome: a real child process runs the crash-matrix
 * agent and SIGKILLs itself inside a model call (right after `model_request_started`, or mid
 * stream after a streamed tool call was scheduled). Resuming with the policy needs no person: the
 * cut-off attempt is recorded (`model_request_aborted`, `process_restart`), the model is called
 * again as a new attempt, and the run finishes with the right answer. A started non_idempotent
 * tool with an unknown outcome still parks (`reconcile_tool_outcomes`), and so does a Turn whose
 * model call was cut off `MAX_MODEL_RECALLS_PER_TURN` times.
 */
import { spawn } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { SqliteDurableEventStore } from '../../src/advanced.js';
import { projectDurableSession, SessionId, type DurableEventEnvelope, type DurableEventStore } from '../../src/index.js';
import {
  AUTO_RECOVERY_POLICY,
  MAX_MODEL_RECALLS_PER_TURN,
  recallModelOnUnknownOutcome,
  recoveryPlanOf,
  resumeSession,
  SAFE_RECOVERY_POLICY,
} from '../../src/session.js';
import { effectRuns, matrixOptions, resetAgentFiles, SESSION_ID } from './fixtures/matrix-agent.js';
import { tsChildArgs } from '../ts-child.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const repoRoot = path.resolve(here, '../..');
const CHILD = path.join(here, 'fixtures', 'matrix-child.ts');
const ANSWER = 'pure=42 effect=1';

const root = mkdtempSync(path.join(tmpdir(), 'session-auto-recovery-'));
const opened: Array<{ close(): unknown }> = [];
afterAll(async () => {
  for (const store of opened) await store.close();
  rmSync(root, { recursive: true, force: true });
});

function runChild(dir: string, killAt: number): Promise<{ signal: NodeJS.Signals | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...tsChildArgs(CHILD), 'sqlite', dir, String(killAt)], { cwd: repoRoot, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (_code, signal) => resolve({ signal, stderr }));
  });
}

async function readAll(store: DurableEventStore): Promise<DurableEventEnvelope[]> {
  return (await store.read(SessionId(SESSION_ID), { limit: 1000 })).events;
}

/** The directory a child left when killed at `killAt`, never opened: one kill per boundary, copied for each resume. */
const killedDirs = new Map<number, Promise<string>>();
function killedDir(killAt: number): Promise<string> {
  let killed = killedDirs.get(killAt);
  if (killed === undefined) {
    killed = (async () => {
      const dir = path.join(root, `killed-${killAt}`);
      mkdirSync(dir, { recursive: true });
      resetAgentFiles(dir);
      const child = await runChild(dir, killAt);
      expect(child.signal, child.stderr).toBe('SIGKILL');
      return dir;
    })();
    killedDirs.set(killAt, killed);
  }
  return killed;
}

/** A copy of the store (and effect files) the child left when killed at `killAt`, opened. */
async function killedAt(name: string, killAt: number): Promise<{ dir: string; store: DurableEventStore; killed: DurableEventEnvelope[] }> {
  const dir = path.join(root, name);
  cpSync(await killedDir(killAt), dir, { recursive: true });
  const store = new SqliteDurableEventStore(path.join(dir, 'store.db'));
  opened.push(store);
  const killed = await readAll(store);
  expect((await projectDurableSession(store, SessionId(SESSION_ID))).recoveryPlan.action).toBe('reconcile_model_outcome');
  return { dir, store, killed };
}

describe('AUTO_RECOVERY_POLICY: a crash inside a model call continues without a person', () => {
  // k = 6: right after `model_request_started` of Turn 1; k = 7: mid stream, a streamed tool call scheduled.
  for (const k of [6, 7]) {
    it(`killed at event ${k}: the cut-off attempt is aborted (process_restart), the model is called again, the run completes`, { timeout: 60_000 }, async () => {
      const { dir, store, killed } = await killedAt(`auto-${k}`, k);
      const cut = killed.filter((event) => event.type === 'model_request_started').at(-1)?.modelAttemptId;
      const session = await resumeSession({ ...matrixOptions(dir), sessionId: SESSION_ID, durableEventStore: store, recoveryPolicy: AUTO_RECOVERY_POLICY });
      expect(session.resumedRequest).not.toBeNull();
      expect((await session.resumedRequest!.result).output).toBe(ANSWER);
      await session.whenIdle();
      await session.close();

      const final = await readAll(store);
      expect(final.slice(0, k).map((event) => event.eventId)).toEqual(killed.map((event) => event.eventId));
      const aborted = final.filter((event) => event.type === 'model_request_aborted');
      expect(aborted.map((event) => [event.modelAttemptId, event.data])).toEqual([[cut, { reason: 'process_restart' }]]);
      const started = final.filter((event) => event.type === 'model_request_started').map((event) => event.modelAttemptId);
      // The cut attempt, then a new attempt for the same Turn's work, then Turn 2's.
      expect(started[0]).toBe(cut);
      expect(started.length).toBe(3);
      expect(new Set(started).size).toBe(started.length);
      expect(effectRuns(dir)).toHaveLength(1);
      expect((await projectDurableSession(store, SessionId(SESSION_ID))).recoveryPlan.action).toBe('none');
    });
  }

  it('in place (resumeTurn in_place): the new attempt runs in the same Request and Turn as the cut one', { timeout: 60_000 }, async () => {
    const { dir, store, killed } = await killedAt('auto-in-place', 7);
    const cutStart = killed.filter((event) => event.type === 'model_request_started').at(-1)!;
    const session = await resumeSession({
      ...matrixOptions(dir),
      sessionId: SESSION_ID,
      durableEventStore: store,
      recoveryPolicy: { ...AUTO_RECOVERY_POLICY, resumeTurn: 'in_place' },
    });
    expect(session.resumedRequest?.requestId).toBe(cutStart.requestId);
    expect((await session.resumedRequest!.result).output).toBe(ANSWER);
    await session.close();
    const final = await readAll(store);
    const second = final.filter((event) => event.type === 'model_request_started')[1]!;
    expect([second.requestId, second.turnId]).toEqual([cutStart.requestId, cutStart.turnId]);
    // The tool call streamed by the cut attempt is void: cancelled, never started.
    expect(final.filter((event) => event.type === 'tool_cancelled').map((event) => event.data['reason'])).toContain('recovery');
    expect(final.filter((event) => event.type === 'request_accepted')).toHaveLength(1);
  });

  it('the default policy still parks the same log (reconcile_model_outcome)', { timeout: 60_000 }, async () => {
    const { dir, store } = await killedAt('safe-6', 6);
    const error = await resumeSession({ ...matrixOptions(dir), sessionId: SESSION_ID, durableEventStore: store, recoveryPolicy: SAFE_RECOVERY_POLICY }).then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(recoveryPlanOf(error)?.action).toBe('reconcile_model_outcome');
  });

  it('a started non_idempotent tool with an unknown outcome still parks (reconcile_tool_outcomes)', { timeout: 60_000 }, async () => {
    const dir = path.join(root, 'auto-tool');
    mkdirSync(dir, { recursive: true });
    resetAgentFiles(dir);
    // k = 14: right after `tool_started` of the non_idempotent `apply`.
    expect((await runChild(dir, 14)).signal).toBe('SIGKILL');
    const store = new SqliteDurableEventStore(path.join(dir, 'store.db'));
    opened.push(store);
    const error = await resumeSession({ ...matrixOptions(dir), sessionId: SESSION_ID, durableEventStore: store, recoveryPolicy: AUTO_RECOVERY_POLICY }).then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(recoveryPlanOf(error)?.action).toBe('reconcile_tool_outcomes');
    // Killed between `tool_started` and the effect: the resume does not run it.
    expect(effectRuns(dir)).toHaveLength(0);
  });

  it(`answers no outcome once a Turn has ${MAX_MODEL_RECALLS_PER_TURN} attempts cut off by a restart`, () => {
    const attempt = (n: number) => ({ modelAttemptId: `ma-${n}`, status: 'aborted', reason: 'process_restart' });
    const contextWith = (count: number) => {
      const modelAttempts = Object.fromEntries(Array.from({ length: count }, (_, n) => [`ma-${n}`, attempt(n)]));
      // SAFETY: the callback reads only `request.activeTurn.modelAttempts` of the context.
      return { request: { activeTurn: { modelAttempts } } } as never;
    };
    const started = { modelAttemptId: 'ma-x', status: 'started' } as never;
    expect(recallModelOnUnknownOutcome(started, contextWith(MAX_MODEL_RECALLS_PER_TURN - 1))).toEqual({ status: 'aborted', reason: 'process_restart' });
    expect(recallModelOnUnknownOutcome(started, contextWith(MAX_MODEL_RECALLS_PER_TURN))).toBeUndefined();
  });
});
