/**
 * Exactly-once side effects of the Session, in one process (memory store):
 * - two Sessions resume the same session in place at once (no lease) and race to start the same
 *   `non_idempotent` tool, or the same model call, with identical IDs and `occurredAt` (injected
 *   ID generator and clock); a view of the store holds the racing appends until both arrived.
 *   Only the Session whose own append committed the start runs the handler or the model; the
 *   other stops with `ExecutionStopped` (`superseded`) and writes nothing;
 * - a pure tool retried in place after a crash leaves a trace per execution;
 * - the original Request sent again after a rollover points to the continuation that finished it.
 */
import { describe, expect, it } from 'vitest';
import { projectDurableSession, SessionId, type DurableEventDraft, type DurableEventEnvelope, type DurableEventStore } from '../../src/index.js';
import {
  createScriptedModel,
  createSession,
  defineTool,
  resumeSession,
  SAFE_RECOVERY_POLICY,
  type Session,
  type SessionIdKind,
  type SessionRequestResult,
} from '../../src/session.js';
import { crashAfter, memoryStore, readAll, types } from './helpers.js';
import { sized } from '../deep.js';

const FIXED_NOW = Date.parse('2025-01-01T00:00:00.000Z');
const clock = (): number => FIXED_NOW;

/** The same IDs in every Session built with a fresh generator from `start` (what two processes would produce). */
function ids(start = 0): (kind: SessionIdKind) => string {
  let next = start;
  return (kind) => `${kind}-${++next}`;
}

/** A view of `store` whose first `count` appends of a command holding an event of `type` wait until all of them arrived. */
function holdUntil<S extends DurableEventStore>(store: S, type: string, count: number): S {
  const waiting: Array<() => void> = [];
  let arrived = 0;
  return new Proxy(store, {
    get(target, property) {
      if (property === 'append') {
        return async (...args: Parameters<DurableEventStore['append']>) => {
          if (arrived < count && args[1].some((draft) => draft.type === type)) {
            arrived++;
            await new Promise<void>((resolve) => {
              waiting.push(resolve);
              if (waiting.length >= count) for (const release of waiting.splice(0)) release();
            });
          }
          return target.append(...args);
        };
      }
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}

/** Appends the log of `from` to the empty session `to`, command by command, as the store's drafts. */
async function copyLog(store: DurableEventStore, from: string, to: string): Promise<void> {
  let batch: DurableEventDraft[] = [];
  let commandId: string | undefined;
  const flush = async (): Promise<void> => {
    if (batch.length > 0) await store.append(SessionId(to), batch);
    batch = [];
  };
  for (const event of await readAll(store, from)) {
    const { eventId: _e, sequence: _s, sessionId: _i, recordedAt: _r, schemaVersion: _v, ...draft } = event;
    if (event.commandId !== commandId) await flush();
    commandId = event.commandId;
    // SAFETY: an envelope without its store-assigned fields is the draft the store was given.
    batch.push(draft as unknown as DurableEventDraft);
  }
  await flush();
}

function toolModel(toolName: string) {
  return createScriptedModel(({ prompt }) =>
    prompt.some((message) => message.role === 'tool') ? { text: 'done' } : { toolCalls: [{ toolCallId: 'c1', toolName, input: {} }] },
  );
}

type Outcome = { ok: SessionRequestResult } | { error: unknown };

async function outcomeOf(session: Session): Promise<Outcome> {
  const request = session.resumedRequest;
  if (request === null) throw new Error('nothing resumed');
  return request.result.then(
    (ok) => ({ ok }),
    (error: unknown) => ({ error }),
  );
}

/** One winner that completed, one loser stopped as `superseded`. */
function expectOneWinner(outcomes: Outcome[]): void {
  const winners = outcomes.filter((outcome) => 'ok' in outcome);
  const losers = outcomes.filter((outcome) => 'error' in outcome);
  expect(winners).toHaveLength(1);
  expect(winners[0]).toMatchObject({ ok: { status: 'completed', output: 'done' } });
  expect(losers).toHaveLength(1);
  expect(losers[0]).toMatchObject({ error: { name: 'ExecutionStopped', reason: 'superseded' } });
}

/** The log projects with nothing left to recover and no duplicated event. */
async function expectSettled(store: DurableEventStore, sessionId: string): Promise<DurableEventEnvelope[]> {
  const projected = await projectDurableSession(store, SessionId(sessionId), { checkpoints: false });
  expect(projected.recoveryPlan.action).toBe('none');
  const events = await readAll(store, sessionId);
  expect(new Set(events.map((event) => event.eventId)).size).toBe(events.length);
  return events;
}

/**
 * Tool races: every round is the same race (a fresh copy of one log, the same IDs and clock, both
 * appends released together in one process); test:deep runs 200 in case an ordering varies.
 */
const TOOL_RACE_ROUNDS = sized(20, 200);

describe('exactly-once side effects', () => {
  it(`two Sessions racing to start the same non_idempotent tool: it runs once, ${TOOL_RACE_ROUNDS} rounds`, { timeout: 60_000 }, async () => {
    const started = Date.now();
    let doubles = 0;
    const store = memoryStore(clock);
    let effects = 0;
    const charge = defineTool({ sideEffect: 'non_idempotent', execute: () => (effects++, { charged: true }) });
    // The log stops after model_request_completed (k = 8): the tool is scheduled, not started.
    // Each round races on a copy of it.
    const first = await createSession({ sessionId: 'race-tool', model: toolModel('charge'), tools: { charge }, durableEventStore: crashAfter(store, 8), clock, generateId: ids() });
    await first.send('charge once');
    await first.whenIdle();
    expect(types(await readAll(store, 'race-tool')).at(-1)).toBe('model_request_completed');
    for (let round = 0; round < TOOL_RACE_ROUNDS; round++) {
      const sessionId = `race-tool-${round}`;
      await copyLog(store, 'race-tool', sessionId);
      effects = 0;

      const held = holdUntil(store, 'tool_started', 2);
      const open = () =>
        resumeSession({ sessionId, model: toolModel('charge'), tools: { charge }, durableEventStore: held, clock, generateId: ids(100), recoveryPolicy: { resumeTurn: 'in_place' } });
      const sessions = await Promise.all([open(), open()]);
      const outcomes = await Promise.all(sessions.map(outcomeOf));
      if (effects !== 1) doubles++;
      expect(effects).toBe(1);
      expectOneWinner(outcomes);
      const events = await expectSettled(store, sessionId);
      expect(types(events).filter((type) => type === 'tool_started')).toHaveLength(1);
    }
    expect(doubles).toBe(0);
    // Reported by the test run (200 took well under 10 s on two busy cores).
    console.log(`${TOOL_RACE_ROUNDS} in-process tool races in ${Date.now() - started} ms`);
  });

  it('two Sessions racing to start the same model call: the provider is called once', async () => {
    for (let round = 0; round < 20; round++) {
      const sessionId = `race-model-${round}`;
      const store = memoryStore(clock);
      const lookup = defineTool({ sideEffect: 'pure', execute: () => ({ value: 1 }) });
      // The log stops after turn_started (k = 5): the Turn's model call has not started.
      const first = await createSession({ sessionId, model: toolModel('lookup'), tools: { lookup }, durableEventStore: crashAfter(store, 5), clock, generateId: ids() });
      await first.send('look it up');
      await first.whenIdle();
      expect(types(await readAll(store, sessionId)).at(-1)).toBe('turn_started');

      const held = holdUntil(store, 'model_request_started', 2);
      const models = [toolModel('lookup'), toolModel('lookup')];
      const sessions = await Promise.all(
        models.map((model) =>
          resumeSession({ sessionId, model, tools: { lookup }, durableEventStore: held, clock, generateId: ids(100), recoveryPolicy: { resumeTurn: 'in_place' } }),
        ),
      );
      const outcomes = await Promise.all(sessions.map(outcomeOf));
      expectOneWinner(outcomes);
      // The winner calls the model twice (tool call, then the answer); the loser never.
      expect(models.map((model) => model.calls.length).sort()).toEqual([0, 2]);
      const events = await expectSettled(store, sessionId);
      expect(types(events).filter((type) => type === 'model_request_started')).toHaveLength(2);
    }
  });

  it('a pure tool retried in place leaves a trace per execution; a second cut-off is not run again under that attempt', async () => {
    const store = memoryStore(clock);
    let executions = 0;
    const lookup = defineTool({ sideEffect: 'pure', execute: () => (executions++, { value: 7 }) });
    const script = () =>
      createScriptedModel(({ prompt }) =>
        prompt.some((message) => message.role === 'tool') ? { text: 'value 7' } : { toolCalls: [{ toolCallId: 'c1', toolName: 'lookup', input: {} }] },
      );
    const options = { sessionId: 's-trace', tools: { lookup }, clock, recoveryPolicy: { resumeTurn: 'in_place' as const } };
    // Execution 1: the log stops at its tool_started (k = 9).
    const first = await createSession({ ...options, model: script(), durableEventStore: crashAfter(store, 9) });
    await first.send('go');
    await first.whenIdle();
    expect(executions).toBe(1);
    // Execution 2: its mark (tool_outcome_unknown) is committed, then the process dies before the outcome (k = 10).
    const second = await resumeSession({ ...options, model: script(), durableEventStore: crashAfter(store, 10) });
    await second.resumedRequest?.result.catch(() => undefined);
    await second.whenIdle();
    expect(executions).toBe(2);
    expect(types(await readAll(store, 's-trace')).slice(-2)).toEqual(['tool_started', 'tool_outcome_unknown']);
    // No third execution under the attempt: it fails with TOOL_OUTCOME_UNKNOWN and the model answers.
    const third = await resumeSession({ ...options, model: script(), durableEventStore: store });
    expect(await third.resumedRequest!.result).toMatchObject({ status: 'completed', output: 'value 7' });
    expect(executions).toBe(2);
    const events = await expectSettled(store, 's-trace');
    const traces = events.filter((event) => event.type === 'tool_started' || (event.type === 'tool_outcome_unknown' && event.data.reason === 'process_restart'));
    expect(traces).toHaveLength(executions);
    const failed = events.find((event) => event.type === 'tool_failed');
    expect(failed?.type === 'tool_failed' && failed.data.error.code).toBe('TOOL_OUTCOME_UNKNOWN');
  });

  it('the original Request sent again after a rollover answers interrupted with the continuation and its outcome', async () => {
    const store = memoryStore(clock);
    const model = () => createScriptedModel([{ text: 'answer' }]);
    const sendOptions = { requestId: 'req-original', inputId: 'in-original' };
    // The log stops at turn_started (k = 5): SAFE_RECOVERY_POLICY rolls the Turn over.
    const first = await createSession({ sessionId: 's-pointer', model: model(), durableEventStore: crashAfter(store, 5) });
    await first.send('hello', sendOptions);
    await first.whenIdle();
    const resumed = await resumeSession({ sessionId: 's-pointer', model: model(), durableEventStore: store, recoveryPolicy: SAFE_RECOVERY_POLICY });
    const continuation = resumed.resumedRequest!;
    expect(continuation.requestId).not.toBe('req-original');
    // Sent again while the continuation runs in this Session: the answer waits for its outcome.
    const whileRunning = await resumed.send('hello', sendOptions);
    const expected = {
      requestId: 'req-original',
      status: 'interrupted',
      reason: 'process_restart',
      continuation: { requestId: continuation.requestId, result: { requestId: continuation.requestId, status: 'completed', output: 'answer' } },
    };
    expect(await whileRunning.result).toMatchObject(expected);
    // Sent again later, to this Session and to a fresh one that only knows the log.
    expect(await (await resumed.send('hello', sendOptions)).result).toMatchObject(expected);
    const fresh = await resumeSession({ sessionId: 's-pointer', model: model(), durableEventStore: store });
    expect(await (await fresh.send('hello', sendOptions)).result).toMatchObject(expected);
    // Nothing new was accepted.
    expect(types(await readAll(store, 's-pointer')).filter((type) => type === 'request_accepted')).toHaveLength(2);
  });
});
