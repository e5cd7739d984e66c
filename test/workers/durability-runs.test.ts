/**
 * Inside workerd: what a SessionObject does around durable tool calls — bounded retries of a
 * throwing handler, idempotent starts, the owner's timers sharing the alarm with sleep deadlines,
 * and `durability` frames pushed to the session's WebSocket subscribers.
 */
import { runDurableObjectAlarm, runInDurableObject } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import type { SubscriberDurabilityMessage } from '../../src/adapters/durable-object/durability-rpc.js';
import { unwrapRpcResult } from '../../src/adapters/durable-object/rpc.js';
import type { SessionObject } from '../../src/edge/session-object.js';
import { TEST_RETRY_POLICY } from './fixtures/agent-session-object.js';
import { freshSession, ledger, objectOf, pause, runState, shape, start, TEST_AGENT, until } from './durability-helpers.js';
import { TestSubscriber } from './session-object-helpers.js';

describe('a throwing tool call', () => {
  it('is retried on the alarm a bounded number of times, then recorded failed', async () => {
    const sessionId = freshSession('flaky');
    const { api } = objectOf(sessionId);
    await start(api, sessionId, { runId: 'r', agent: TEST_AGENT, toolName: 'flaky', toolCallId: 'c', input: null });
    const done = await until(() => runState(api, sessionId, 'r'), (s) => s.status !== 'running', 'the final failure');
    expect(done.status).toBe('failed');
    expect(done.toolCalls[0]).toMatchObject({
      status: 'failed',
      attempts: TEST_RETRY_POLICY.maxAttempts,
      error: { name: 'Error', message: 'flaky failure' },
    });
    expect(await api.effects()).toEqual({ attempt: TEST_RETRY_POLICY.maxAttempts });
    expect(shape(await ledger(api, sessionId))).toEqual([
      'run_event:attempt-1:failed',
      'run_event:attempt-2:failed',
      'run_event:run:failed',
    ]);
    // Nothing is left to retry: another alarm runs nothing.
    await runDurableObjectAlarm(objectOf(sessionId).stub);
    await pause(TEST_RETRY_POLICY.retryDelayMs * 3);
    expect(await api.effects()).toEqual({ attempt: TEST_RETRY_POLICY.maxAttempts });
    // Starting it again reports the outcome instead of running it.
    expect(await start(api, sessionId, { runId: 'r', agent: TEST_AGENT, toolName: 'flaky', toolCallId: 'c', input: null })).toMatchObject({
      status: 'failed',
    });
    expect(await api.effects()).toEqual({ attempt: TEST_RETRY_POLICY.maxAttempts });
  });
});

describe('starting tool calls', () => {
  it('is idempotent for the same call and refuses the same id with other input', async () => {
    const sessionId = freshSession('start');
    const { api } = objectOf(sessionId);
    const call = { runId: 'r', agent: TEST_AGENT, toolName: 'loop', toolCallId: 'c', input: { steps: 3 } };
    await start(api, sessionId, call);
    await start(api, sessionId, { ...call, input: { steps: 3 } });
    const done = await until(() => runState(api, sessionId, 'r'), (s) => s.status === 'completed', 'completion');
    expect(done.toolCalls).toHaveLength(1);
    expect(done.toolCalls[0]?.result).toEqual({ steps: 3, sum: 3 });
    expect(shape(await ledger(api, sessionId))).toEqual(['step:s0', 'step:s1', 'step:s2', 'run_event:run:completed']);
    await expect(start(api, sessionId, { ...call, input: { steps: 4 } })).rejects.toMatchObject({ code: 'DURABILITY_CONFLICT' });
  });

  it('refuses unknown tools, invalid ids and inputs that are not lossless JSON', async () => {
    const sessionId = freshSession('refuse');
    const { api } = objectOf(sessionId);
    const call = { runId: 'r', agent: TEST_AGENT, toolName: 'loop', toolCallId: 'c', input: { steps: 1 } };
    await expect(start(api, sessionId, { ...call, toolName: 'nope' })).rejects.toMatchObject({ code: 'DURABILITY_INVALID_INPUT' });
    await expect(start(api, sessionId, { ...call, agent: 'nobody' })).rejects.toMatchObject({ code: 'DURABILITY_INVALID_INPUT' });
    await expect(start(api, sessionId, { ...call, toolCallId: '' })).rejects.toMatchObject({ code: 'DURABILITY_INVALID_INPUT' });
    await expect(start(api, sessionId, { ...call, input: { when: new Date(0) } as never })).rejects.toMatchObject({
      code: 'DURABILITY_INVALID_VALUE',
    });
    expect((await runState(api, sessionId, 'r')).status).toBe('unknown');
  });

  it('runs a call to its end over runToolCall', async () => {
    const sessionId = freshSession('run-to-end');
    const { api } = objectOf(sessionId);
    const state = unwrapRpcResult(
      await (api as unknown as { runToolCall: typeof api.startToolCall }).runToolCall(sessionId, {
        runId: 'r',
        agent: TEST_AGENT,
        toolName: 'loop',
        toolCallId: 'c',
        input: { steps: 5 },
      }),
    );
    expect(state).toMatchObject({ status: 'completed', result: { steps: 5, sum: 10 } });
  });
});

describe("the owner's timers", () => {
  it('share the alarm with sleep deadlines: both fire, neither replaces the other', async () => {
    const sessionId = freshSession('timers');
    const { api, stub } = objectOf(sessionId);
    // The object runs on a manual clock an hour ahead of the real one: the runtime's alarm (real
    // time) never fires by itself here; the test moves the clock and fires the alarm.
    const t = Date.now() + 3_600_000;
    await api.useManualTime(t);
    await api.scheduleTimer('early', t + 150, { n: 1 });
    await api.scheduleTimer('late', t + 700, { n: 2 });
    expect(await api.currentAlarm()).toBe(t + 150);
    await start(api, sessionId, { runId: 'r', agent: TEST_AGENT, toolName: 'sleepy', toolCallId: 'c', input: { sleepMs: 400 } });
    const records = await until(() => ledger(api, sessionId), (r) => r.some((x) => x.kind === 'sleep'), 'sleep');
    expect(records.find((record) => record.kind === 'sleep')).toMatchObject({ kind: 'sleep', untilMs: t + 400 });
    // The sleep deadline is later than the owner's first timer: the alarm stays where it was.
    expect(await api.timerState()).toEqual({ alarm: t + 150, pending: ['early', 'late'], fired: [] });

    await api.advanceTime(150);
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    expect(await api.timerState()).toEqual({ alarm: t + 400, pending: ['late'], fired: ['early'] });

    // The tool's own wait ends at the deadline; the sleep's alarm finds nothing left to wake.
    await api.advanceTime(250);
    const done = await until(() => runState(api, sessionId, 'r'), (s) => s.status === 'completed', 'completion');
    expect(done.toolCalls[0]?.status).toBe('completed');
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    expect(await api.timerState()).toEqual({ alarm: t + 700, pending: ['late'], fired: ['early'] });

    await api.advanceTime(300);
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    expect(await api.timerFirings()).toEqual([
      { key: 'early', payload: '{"n":1}' },
      { key: 'late', payload: '{"n":2}' },
    ]);
    expect(await api.timerState()).toEqual({ alarm: null, pending: [], fired: ['early', 'late'] });
  });

  it('are moved, cancelled, and retried later when onTimer throws', async () => {
    const sessionId = freshSession('timers-edit');
    const { api, stub } = objectOf(sessionId);
    const now = Date.now();
    await api.scheduleTimer('moved', now + 60_000, 'a');
    await api.scheduleTimer('moved', now + 120_000, 'b');
    expect(await api.listTimers()).toEqual([{ key: 'moved', dueMs: now + 120_000, payload: 'b' }]);
    expect(await api.cancelTimer('moved')).toBe(true);
    expect(await api.cancelTimer('moved')).toBe(false);
    // Called inside the object (as a subclass would): a bad key or time is refused.
    await runInDurableObject(stub, async (instance: SessionObject) => {
      await expect(instance.scheduleTimer('', now)).rejects.toMatchObject({ code: 'DURABILITY_INVALID_INPUT' });
      await expect(instance.scheduleTimer('k', 1.5)).rejects.toMatchObject({ code: 'DURABILITY_INVALID_INPUT' });
    });

    await api.scheduleTimer('flaky', now, 'throw-once');
    await until(() => api.timerFirings(), (f) => f.length >= 1, 'the failing firing');
    await runDurableObjectAlarm(stub);
    const [timer] = await api.listTimers();
    expect(timer?.key).toBe('flaky');
    expect(timer?.dueMs ?? 0).toBeGreaterThan(Date.now() + 1_000);
    expect(await api.timerFirings()).toEqual([{ key: 'flaky', payload: 'threw' }]);
  });
});

describe('progress frames', () => {
  it('pushes every ledger record of a run to the session subscribers as durability frames', async () => {
    const sessionId = freshSession('frames');
    const { api } = objectOf(sessionId);
    const subscriber = await TestSubscriber.open(sessionId, { sessionId });
    try {
      await subscriber.until((s) => s.messages.some((m) => m.type === 'caught_up'), 'caught_up');
      await start(api, sessionId, { runId: 'r', agent: TEST_AGENT, toolName: 'sleepy', toolCallId: 'c', input: { sleepMs: 50 } });
      const durabilityFrames = (): SubscriberDurabilityMessage[] =>
        (subscriber.frames as unknown[]).filter(
          (frame): frame is SubscriberDurabilityMessage =>
            typeof frame === 'object' && frame !== null && (frame as { type?: unknown }).type === 'durability',
        );
      await subscriber.until(
        () => durabilityFrames().some((f) => f.record.kind === 'run_event' && f.record.key === 'run'),
        'the run outcome frame',
      );
      const records = await ledger(api, sessionId);
      // Every record, in ledger order, exactly once (no polling: pushed after each commit).
      expect(durabilityFrames().map((frame) => frame.record)).toEqual(records);
      expect(shape(records).filter((entry) => !entry.includes('sleep-elapsed'))).toEqual([
        'step:first',
        'sleep:nap',
        'step:second',
        'run_event:run:completed',
      ]);
    } finally {
      subscriber.close();
    }
  });
});
