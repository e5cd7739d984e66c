/**
 * Inside workerd: durable tool calls running in the session's object survive the object being
 * thrown away (`abortAllDurableObjects`: in-memory state and pending work are lost, storage
 * stays). Effects are counted in the object's own SQLite storage, with the instance that ran
 * them, so "executed once" is checked against what really persisted.
 */
import { abortAllDurableObjects, runDurableObjectAlarm, runInDurableObject } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import type { DurabilityRecord } from '../../src/core/durability/record-contract.js';
import type { SessionObject } from '../../src/edge/session-object.js';
import { RESUME_CHECK_MS } from '../../src/edge/durability.js';
import {
  deliver,
  freshSession,
  ledger,
  objectOf,
  pause,
  runState,
  shape,
  start,
  TEST_AGENT,
  until,
} from './durability-helpers.js';

function sleepRecord(records: readonly DurabilityRecord[]): DurabilityRecord<'sleep'> | undefined {
  return records.find((record): record is DurabilityRecord<'sleep'> => record.kind === 'sleep');
}

/** Calls the object's alarm handler directly, as a duplicate delivery of the alarm would. */
async function alarmAgain(sessionId: string): Promise<void> {
  await runInDurableObject(objectOf(sessionId).stub, (instance: SessionObject) => instance.alarm());
}

describe('a sleeping tool call across an abort of its object', () => {
  it('is resumed by the alarm: the first effect ran once, the second once, in a new instance', async () => {
    const sessionId = freshSession('sleep-abort');
    const call = { runId: 'run-1', agent: TEST_AGENT, toolName: 'sleepy', toolCallId: 'call-1', input: { sleepMs: 800 } };
    const first = objectOf(sessionId).api;
    expect(await start(first, sessionId, call)).toEqual({ runId: 'run-1', toolCallId: 'call-1', status: 'running' });
    const records = await until(() => ledger(first, sessionId), (r) => sleepRecord(r) !== undefined, 'the sleep record');
    const untilMs = sleepRecord(records)?.untilMs;
    expect(await first.currentAlarm()).toBe(untilMs);

    await abortAllDurableObjects();
    const { stub, api } = objectOf(sessionId);
    // Fired before the deadline: nothing is due, so nothing happens and the alarm is re-armed.
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    expect((await runState(api, sessionId, 'run-1')).toolCalls[0]).toMatchObject({ status: 'running', live: false });
    expect(await api.effects()).toEqual({ first: 1 });
    expect(await api.currentAlarm()).toBe(untilMs);

    // At the deadline the alarm (the runtime's own, or this one) records the fact and replays.
    await pause(Math.max(0, (untilMs ?? 0) - Date.now()));
    await runDurableObjectAlarm(stub);
    const done = await until(() => runState(api, sessionId, 'run-1'), (s) => s.status !== 'running', 'completion');
    expect(done.toolCalls[0]).toMatchObject({
      status: 'completed',
      attempts: 0,
      result: { first: { at: 'first' }, second: { at: 'second' } },
    });
    expect(await api.effects()).toEqual({ first: 1, second: 1 });
    const log = await api.effectLog();
    expect(log.map((entry) => entry.label)).toEqual(['first', 'second']);
    expect(log[0]?.instance).not.toBe(log[1]?.instance);
    const finalLedger = await ledger(api, sessionId);
    expect(shape(finalLedger)).toEqual([
      'step:first',
      'sleep:nap',
      `run_event:sleep-elapsed-${sleepRecord(finalLedger)?.sequence}:completed`,
      'step:second',
      'run_event:run:completed',
    ]);

    // A duplicate alarm delivery changes nothing.
    await alarmAgain(sessionId);
    await alarmAgain(sessionId);
    await pause(50);
    expect(await ledger(api, sessionId)).toEqual(finalLedger);
    expect(await api.effects()).toEqual({ first: 1, second: 1 });
  });

  it('records the elapsed fact once even when two alarm deliveries race', async () => {
    const sessionId = freshSession('sleep-race');
    const api = objectOf(sessionId).api;
    await start(api, sessionId, { runId: 'r', agent: TEST_AGENT, toolName: 'sleepy', toolCallId: 'c', input: { sleepMs: 300 } });
    const untilMs = sleepRecord(await until(() => ledger(api, sessionId), (r) => sleepRecord(r) !== undefined, 'sleep'))?.untilMs ?? 0;
    await abortAllDurableObjects();
    const again = objectOf(sessionId);
    await pause(Math.max(0, untilMs - Date.now()));
    await Promise.all([alarmAgain(sessionId), alarmAgain(sessionId), runDurableObjectAlarm(again.stub)]);
    await until(() => runState(again.api, sessionId, 'r'), (s) => s.status === 'completed', 'completion');
    const records = await ledger(again.api, sessionId);
    expect(records.filter((r) => r.kind === 'run_event' && r.key.startsWith('sleep-elapsed-'))).toHaveLength(1);
    expect(await again.api.effects()).toEqual({ first: 1, second: 1 });
  });

  it('completes in the same instance when nothing evicts it (the local timer wins)', async () => {
    const sessionId = freshSession('sleep-live');
    const { api } = objectOf(sessionId);
    await start(api, sessionId, { runId: 'r', agent: TEST_AGENT, toolName: 'sleepy', toolCallId: 'c', input: { sleepMs: 100 } });
    await until(() => runState(api, sessionId, 'r'), (s) => s.status === 'completed', 'completion');
    const log = await api.effectLog();
    expect(log.map((entry) => entry.label)).toEqual(['first', 'second']);
    expect(new Set(log.map((entry) => entry.instance)).size).toBe(1);
    // Completion removed the call's timers; a late alarm finds nothing to record.
    const before = await ledger(api, sessionId);
    await alarmAgain(sessionId);
    expect(await ledger(api, sessionId)).toEqual(before);
    expect(await api.effects()).toEqual({ first: 1, second: 1 });
  });
});

describe('a tool call stopped between steps', () => {
  it('has a resume check on the alarm a minute after its last step, dropped while it runs', async () => {
    const sessionId = freshSession('stall');
    const { api, stub } = objectOf(sessionId);
    const before = Date.now();
    await start(api, sessionId, { runId: 'r', agent: TEST_AGENT, toolName: 'stall', toolCallId: 'c', input: null });
    await until(() => ledger(api, sessionId), (r) => r.some((x) => x.kind === 'step'), 'the step');
    const alarm = (await api.currentAlarm()) ?? 0;
    expect(alarm).toBeGreaterThanOrEqual(before + RESUME_CHECK_MS);
    expect(alarm).toBeLessThanOrEqual(Date.now() + RESUME_CHECK_MS);

    // The check comes due while the call still runs here: it is dropped, nothing is replayed.
    await runInDurableObject(stub, async (instance: SessionObject, state) => {
      state.storage.sql.exec("UPDATE timers SET due_ms = 0 WHERE kind = 'durability.resume'");
      await instance.alarm();
      expect(state.storage.sql.exec("SELECT COUNT(*) AS n FROM timers WHERE kind = 'durability.resume'").one()).toEqual({ n: 0 });
    });
    expect((await runState(api, sessionId, 'r')).toolCalls[0]).toMatchObject({ status: 'running', live: true });

    // Thrown away: the new instance resumes it (replay: the recorded step does not run again).
    await abortAllDurableObjects();
    const again = objectOf(sessionId).api;
    await until(() => runState(again, sessionId, 'r'), (s) => s.toolCalls[0]?.live === true, 'a live replay');
    expect(await again.effects()).toEqual({ first: 1 });
    expect(new Set((await again.effectLog()).map((e) => e.instance)).size).toBe(1);
  });
});

describe('a waiting tool call across an abort of its object', () => {
  it('is resumed by a delivery: replayed, answered, first effect once', async () => {
    const sessionId = freshSession('wait-abort');
    const api = objectOf(sessionId).api;
    // A long timeout: only the delivery can resume it within the test.
    await start(api, sessionId, { runId: 'r', agent: TEST_AGENT, toolName: 'waiter', toolCallId: 'c', input: { timeoutMs: 600_000 } });
    await until(() => ledger(api, sessionId), (r) => r.some((x) => x.kind === 'wait'), 'the wait record');
    await abortAllDurableObjects();

    const again = objectOf(sessionId).api;
    expect((await runState(again, sessionId, 'r')).toolCalls[0]).toMatchObject({ status: 'running', live: false });
    const receipt = await deliver(again, sessionId, { runId: 'r', key: 'approval', deliveryId: 'd-1', payload: { ok: true } });
    expect(receipt).toMatchObject({ deliveryId: 'd-1', created: true, resumed: ['c'] });
    const done = await until(() => runState(again, sessionId, 'r'), (s) => s.status === 'completed', 'completion');
    expect(done.toolCalls[0]?.result).toEqual({ first: { at: 'first' }, reply: { ok: true }, second: { at: 'second' } });
    expect(await again.effects()).toEqual({ first: 1, second: 1 });

    // Delivering the same id again is idempotent and resumes nothing.
    const repeat = await deliver(again, sessionId, { runId: 'r', key: 'approval', deliveryId: 'd-1', payload: { ok: true } });
    expect(repeat).toMatchObject({ created: false, resumed: [], sequence: receipt.sequence });
  });

  it('wakes a live waiter directly (no replay)', async () => {
    const sessionId = freshSession('wait-live');
    const { api } = objectOf(sessionId);
    await start(api, sessionId, { runId: 'r', agent: TEST_AGENT, toolName: 'waiter', toolCallId: 'c', input: {} });
    await until(() => ledger(api, sessionId), (r) => r.some((x) => x.kind === 'wait'), 'the wait record');
    const receipt = await deliver(api, sessionId, { runId: 'r', key: 'approval', deliveryId: 'd', payload: 'yes' });
    expect(receipt.resumed).toEqual([]);
    const done = await until(() => runState(api, sessionId, 'r'), (s) => s.status === 'completed', 'completion');
    expect(done.toolCalls[0]?.result).toMatchObject({ reply: 'yes' });
    expect(new Set((await api.effectLog()).map((entry) => entry.instance)).size).toBe(1);
  });

  it('times out through the alarm after an abort, and replays the timeout', async () => {
    const sessionId = freshSession('wait-timeout');
    const api = objectOf(sessionId).api;
    await start(api, sessionId, { runId: 'r', agent: TEST_AGENT, toolName: 'waiter', toolCallId: 'c', input: { timeoutMs: 300 } });
    await until(() => ledger(api, sessionId), (r) => r.some((x) => x.kind === 'wait'), 'the wait record');
    await abortAllDurableObjects();
    const again = objectOf(sessionId);
    const done = await until(
      async () => (await runDurableObjectAlarm(again.stub), runState(again.api, sessionId, 'r')),
      (s) => s.status === 'completed',
      'completion',
    );
    expect(done.toolCalls[0]?.result).toMatchObject({ reply: 'timed_out' });
    expect(shape(await ledger(again.api, sessionId))).toEqual([
      'step:first',
      'wait:approval',
      'wait_timeout:approval',
      'step:second',
      'run_event:run:completed',
    ]);
    // A delivery after the recorded timeout does not change the decision (or resume anything).
    const late = await deliver(again.api, sessionId, { runId: 'r', key: 'approval', deliveryId: 'late', payload: 1 });
    expect(late.resumed).toEqual([]);
    expect(await again.api.effects()).toEqual({ first: 1, second: 1 });
  });

  it('resumes on wake-up a call that no deadline would resume (waiting without timeout)', async () => {
    const sessionId = freshSession('wake');
    const api = objectOf(sessionId).api;
    await start(api, sessionId, { runId: 'r', agent: TEST_AGENT, toolName: 'waiter', toolCallId: 'c', input: {} });
    await until(() => ledger(api, sessionId), (r) => r.some((x) => x.kind === 'wait'), 'the wait record');
    await abortAllDurableObjects();
    const again = objectOf(sessionId).api;
    // Any request wakes the new instance, which replays the call: it is live again, waiting.
    await until(() => runState(again, sessionId, 'r'), (s) => s.toolCalls[0]?.live === true, 'a live replay');
    expect(await again.effects()).toEqual({ first: 1 });
    const receipt = await deliver(again, sessionId, { runId: 'r', key: 'approval', deliveryId: 'd', payload: 2 });
    expect(receipt.resumed).toEqual([]);
    await until(() => runState(again, sessionId, 'r'), (s) => s.status === 'completed', 'completion');
    expect(await again.effects()).toEqual({ first: 1, second: 1 });
  });
});
