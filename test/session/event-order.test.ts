/**
 * Every event-order rule the Session keeps (issue 11, seed 003 "Model calls", "Recovery
 * Coordinator"), on the in-memory store with the scripted model.
 */
import type { LanguageModelV3 } from '@ai-sdk/provider';
import { describe, expect, it } from 'vitest';
import { DurableSessionRecoveryCoordinator, SessionId, type DurableEventEnvelope } from '../../src/index.js';
import { createScriptedModel, createSession, defineTool, resumeSession, SAFE_RECOVERY_POLICY } from '../../src/session.js';
import { collect, crashAfter, memoryStore, readAll, types } from './helpers.js';

const echo = defineTool({
  sideEffect: 'pure',
  execute: ({ text }: { text: string }) => ({ echoed: text }),
});

function twoTurnModel() {
  return createScriptedModel([
    { text: 'Calling echo.', toolCalls: [{ toolCallId: 'c1', toolName: 'echo', input: { text: 'hi' } }] },
    { text: 'Done: hi.' },
  ]);
}

describe('event order of one Request', () => {
  it('writes the seed order; tool calls streamed before the terminal model event are scheduled first', async () => {
    const store = memoryStore();
    const session = await createSession({ sessionId: 's-order', model: twoTurnModel(), tools: { echo }, durableEventStore: store });
    const result = await session.run('say hi', { maxTurns: 5, context: { tenant: 't1' } });
    expect(result).toMatchObject({ status: 'completed', output: 'Done: hi.' });
    const events = await readAll(store, 's-order');
    expect(types(events)).toEqual([
      'session_created',
      'request_accepted',
      'request_started',
      'input_applied',
      'turn_started',
      'model_request_started',
      'tool_scheduled',
      'model_request_completed',
      'tool_started',
      'tool_completed',
      'turn_completed',
      'turn_started',
      'model_request_started',
      'model_request_completed',
      'turn_completed',
      'request_completed',
    ]);
    const accepted = events[1]!;
    expect(accepted.type === 'request_accepted' && accepted.data).toMatchObject({
      input: 'say hi',
      maxTurns: 5,
      model: { provider: 'scripted', model: 'scripted-model' },
      context: { tenant: 't1' },
      priority: 'next',
    });
    const started = events[5]!;
    expect(started.type === 'model_request_started' && started.data).toEqual({
      model: 'scripted-model',
      modelIdentity: { provider: 'scripted', api: 'ai-sdk.language-model.v3' },
      streaming: true,
    });
    const scheduled = events[6]!;
    expect(scheduled.type === 'tool_scheduled' && started.type === 'model_request_started' && scheduled.modelAttemptId === started.modelAttemptId).toBe(true);
    const terminal = events.at(-1)!;
    expect(terminal.causationEventId).toBe(events.at(-2)!.eventId);
    // Every event of one command carries the same command ID; every command is contiguous.
    expect(new Set(events.map((event) => event.commandId)).size).toBe(events.length);
  });

  it('without streaming, the complete response is committed before its tools are scheduled', async () => {
    const store = memoryStore();
    const session = await createSession({ sessionId: 's-gen', model: twoTurnModel(), tools: { echo }, durableEventStore: store, streaming: false });
    await session.run('say hi');
    const kinds = types(await readAll(store, 's-gen'));
    expect(kinds.indexOf('model_request_completed')).toBeLessThan(kinds.indexOf('tool_scheduled'));
  });

  it('commits model_request_started before the provider is called and tool_started before the side effect', async () => {
    const store = memoryStore();
    const seenAtModelCall: string[] = [];
    const seenAtEffect: string[] = [];
    const inner = twoTurnModel();
    const model: LanguageModelV3 = {
      ...inner,
      doStream: async (options) => {
        seenAtModelCall.push((await readAll(store, 's-before')).at(-1)!.type);
        return inner.doStream(options);
      },
    };
    const effect = defineTool({
      sideEffect: 'non_idempotent',
      execute: async (_input: { text: string }) => {
        seenAtEffect.push((await readAll(store, 's-before')).at(-1)!.type);
        return { done: true };
      },
    });
    const session = await createSession({ sessionId: 's-before', model, tools: { echo: effect }, durableEventStore: store });
    await session.run('go');
    expect(seenAtModelCall).toEqual(['model_request_started', 'model_request_started']);
    expect(seenAtEffect).toEqual(['tool_started']);
  });

  it('keeps token deltas transient: they reach stream() only, the log holds the complete response', async () => {
    const store = memoryStore();
    const model = createScriptedModel([{ text: 'one two three four', deltas: ['one ', 'two ', 'three ', 'four'] }]);
    const session = await createSession({ sessionId: 's-delta', model, durableEventStore: store });
    const { frames, done } = collect(session);
    await session.run('count');
    await session.close();
    await done;
    expect(frames.filter((frame) => frame.type === 'text_delta').map((frame) => (frame.type === 'text_delta' ? frame.delta : ''))).toEqual([
      'one ',
      'two ',
      'three ',
      'four',
    ]);
    const events = await readAll(store, 's-delta');
    const completed = events.find((event) => event.type === 'model_request_completed');
    expect(completed?.type === 'model_request_completed' && completed.data.response.content).toBe('one two three four');
    expect(events).toHaveLength(10);
    // The durable frames are exactly the log after the stream opened, in order.
    const durable = frames.flatMap((frame) => (frame.type === 'durable_event' ? [frame.event.sequence] : []));
    expect(durable).toEqual(events.slice(1).map((event) => event.sequence));
  });

  it('tool_scheduled keeps the provider arguments as modelInput and the repaired input as input', async () => {
    const store = memoryStore();
    const model = createScriptedModel([
      { toolCalls: [{ toolCallId: 'c1', toolName: 'echo', input: { text: '  padded  ' } }] },
      { text: 'ok' },
    ]);
    const repairing = defineTool({
      sideEffect: 'pure',
      repairInput: (input) => ({ text: String((input as { text: string }).text).trim() }),
      execute: ({ text }: { text: string }) => ({ echoed: text }),
    });
    const session = await createSession({ sessionId: 's-repair', model, tools: { echo: repairing }, durableEventStore: store });
    await session.run('x');
    const events = await readAll(store, 's-repair');
    const scheduled = events.find((event) => event.type === 'tool_scheduled');
    expect(scheduled?.type === 'tool_scheduled' && scheduled.data).toMatchObject({ modelInput: { text: '  padded  ' }, input: { text: 'padded' } });
    const completed = events.find((event) => event.type === 'tool_completed');
    expect(completed?.type === 'tool_completed' && completed.data.result).toEqual({ echoed: 'padded' });
  });
});

describe('content-part input', () => {
  it('keeps the parts in request_accepted and hands them to the model as text and file parts', async () => {
    const store = memoryStore();
    const model = createScriptedModel([{ text: 'a red pixel' }]);
    const session = await createSession({ sessionId: 's-parts', model, durableEventStore: store });
    const input = [
      { type: 'text' as const, text: 'What is in this image?' },
      { type: 'image' as const, mediaType: 'image/png', data: 'iVBORw0KGgo=' },
    ];
    expect((await session.run(input)).output).toBe('a red pixel');
    const accepted = (await readAll(store, 's-parts')).find((event) => event.type === 'request_accepted');
    expect(accepted?.type === 'request_accepted' && accepted.data.input).toEqual(input);
    expect(model.calls[0]?.prompt).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'What is in this image?' },
          { type: 'file', mediaType: 'image/png', data: 'iVBORw0KGgo=' },
        ],
      },
    ]);
  });
});

describe('permissions', () => {
  const guarded = defineTool({ sideEffect: 'idempotent', needsPermission: true, execute: () => ({ ran: true }) });
  const model = () =>
    createScriptedModel([{ toolCalls: [{ toolCallId: 'c1', toolName: 'guarded', input: {} }] }, { text: 'after' }]);

  it('allow: permission_requested, permission_resolved, then tool_started as non_idempotent', async () => {
    const store = memoryStore();
    const asked: string[] = [];
    const session = await createSession({
      sessionId: 's-allow',
      model: model(),
      tools: { guarded },
      durableEventStore: store,
      onPermission: (request) => {
        asked.push(request.toolName);
        return { decision: 'allow', message: 'ok' };
      },
    });
    await session.run('x');
    const events = await readAll(store, 's-allow');
    const kinds = types(events);
    expect(kinds.slice(kinds.indexOf('permission_requested'), kinds.indexOf('tool_completed') + 1)).toEqual([
      'permission_requested',
      'permission_resolved',
      'tool_started',
      'tool_completed',
    ]);
    const started = events.find((event) => event.type === 'tool_started');
    expect(started?.type === 'tool_started' && started.data.sideEffect).toBe('non_idempotent');
    expect(asked).toEqual(['guarded']);
  });

  for (const decision of ['deny', 'cancel'] as const) {
    it(`${decision}: permission_resolved and tool_cancelled in one command, the tool never runs`, async () => {
      const store = memoryStore();
      let ran = false;
      const tool = defineTool({ sideEffect: 'pure', needsPermission: true, execute: () => ((ran = true), { ran }) });
      const session = await createSession({ sessionId: `s-${decision}`, model: model(), tools: { guarded: tool }, durableEventStore: store, onPermission: () => decision });
      const result = await session.run('x');
      expect(result.status).toBe('completed');
      const events = await readAll(store, `s-${decision}`);
      const resolved = events.find((event) => event.type === 'permission_resolved')!;
      const cancelled = events.find((event) => event.type === 'tool_cancelled')!;
      expect(cancelled.sequence).toBe(resolved.sequence + 1);
      expect(cancelled.commandId).toBe(resolved.commandId);
      expect(cancelled.type === 'tool_cancelled' && cancelled.data.reason).toBe(decision === 'deny' ? 'permission_denied' : 'permission_cancelled');
      expect(types(events)).not.toContain('tool_started');
      expect(ran).toBe(false);
    });
  }
});

describe('failures, limits and interruptions', () => {
  it('a failed model call: model_request_failed (cancelling streamed tools), then turn_aborted + request_failed', async () => {
    const store = memoryStore();
    const model = createScriptedModel([
      { toolCalls: [{ toolCallId: 'c1', toolName: 'echo', input: { text: 'x' } }], error: 'upstream 500', errorAfterOutput: true },
    ]);
    const session = await createSession({ sessionId: 's-fail', model, tools: { echo }, durableEventStore: store });
    const result = await session.run('x');
    expect(result).toMatchObject({ status: 'failed', error: { code: 'MODEL_CALL_FAILED', message: 'upstream 500' } });
    const events = await readAll(store, 's-fail');
    expect(types(events).slice(5)).toEqual([
      'model_request_started',
      'tool_scheduled',
      'model_request_failed',
      'tool_cancelled',
      'turn_aborted',
      'request_failed',
    ]);
    await session.whenIdle();
    expect(session.state).toBe('idle');
  });

  it('maxTurns: request_interrupted with max_turns once the limit is reached', async () => {
    const store = memoryStore();
    const model = createScriptedModel(({ callIndex }) => ({ toolCalls: [{ toolCallId: `c${callIndex}`, toolName: 'echo', input: { text: 'again' } }] }));
    const session = await createSession({ sessionId: 's-max', model, tools: { echo }, durableEventStore: store });
    const result = await session.run('loop', { maxTurns: 2 });
    expect(result).toMatchObject({ status: 'interrupted', reason: 'max_turns' });
    const events = await readAll(store, 's-max');
    expect(events.filter((event) => event.type === 'turn_completed')).toHaveLength(2);
    expect(events.at(-1)?.type).toBe('request_interrupted');
  });

  it('abort() during a model call: model_request_aborted, turn_aborted, request_interrupted (user_abort)', async () => {
    const store = memoryStore();
    const model = createScriptedModel([{ hang: true }]);
    const session = await createSession({ sessionId: 's-abort', model, durableEventStore: store });
    const { frames, done } = collect(session);
    const handle = await session.send('wait forever');
    while (!frames.some((frame) => frame.type === 'durable_event' && frame.event.type === 'model_request_started')) await new Promise((r) => setTimeout(r, 1));
    await session.abort();
    expect(await handle.result).toMatchObject({ status: 'interrupted', reason: 'user_abort' });
    const events = await readAll(store, 's-abort');
    expect(types(events).slice(-3)).toEqual(['model_request_aborted', 'turn_aborted', 'request_interrupted']);
    const aborted = events.at(-3)!;
    expect(aborted.type === 'model_request_aborted' && aborted.data.reason).toBe('user_abort');
    await session.close();
    await done;
  });

  it('abort() during a tool: the tool sees its signal, tool_cancelled, then the Turn and Request end', async () => {
    const store = memoryStore();
    let started!: () => void;
    const toolStarted = new Promise<void>((resolve) => (started = resolve));
    const slow = defineTool({
      sideEffect: 'idempotent',
      execute: (_input: Record<string, never>, ctx) =>
        new Promise<{ never: true }>((_, reject) => {
          started();
          ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason), { once: true });
        }),
    });
    const model = createScriptedModel([{ toolCalls: [{ toolCallId: 'c1', toolName: 'slow', input: {} }] }]);
    const session = await createSession({ sessionId: 's-abort-tool', model, tools: { slow }, durableEventStore: store });
    const handle = await session.send('x');
    await toolStarted;
    await session.abort();
    expect((await handle.result).status).toBe('interrupted');
    expect(types(await readAll(store, 's-abort-tool')).slice(-4)).toEqual(['tool_started', 'tool_cancelled', 'turn_aborted', 'request_interrupted']);
  });

  it('abort() while the host decides a permission: cancel decision and tool_cancelled, then the Turn and Request end', async () => {
    const store = memoryStore();
    let asked!: () => void;
    const waiting = new Promise<void>((resolve) => (asked = resolve));
    const guarded = defineTool({ sideEffect: 'pure', needsPermission: true, execute: () => ({ ran: true }) });
    const model = createScriptedModel([{ toolCalls: [{ toolCallId: 'c1', toolName: 'guarded', input: {} }] }]);
    const session = await createSession({
      sessionId: 's-abort-permission',
      model,
      tools: { guarded },
      durableEventStore: store,
      onPermission: () => (asked(), new Promise(() => undefined)),
    });
    const handle = await session.send('x');
    await waiting;
    await session.abort();
    expect(await handle.result).toMatchObject({ status: 'interrupted', reason: 'user_abort' });
    const events = await readAll(store, 's-abort-permission');
    expect(types(events).slice(-5)).toEqual(['permission_requested', 'permission_resolved', 'tool_cancelled', 'turn_aborted', 'request_interrupted']);
    const resolved = events.at(-4)!;
    expect(resolved.type === 'permission_resolved' && resolved.data.decision).toBe('cancel');
  });

  it('a `now` Request interrupts the running one (request_interrupted superseded, byInputId) and runs next', async () => {
    const store = memoryStore();
    const model = createScriptedModel([{ hang: true }, { text: 'second answer' }]);
    const session = await createSession({ sessionId: 's-now', model, durableEventStore: store });
    const first = await session.send('first');
    while (model.calls.length === 0) await new Promise((r) => setTimeout(r, 1));
    const second = await session.send('second', { priority: 'now' });
    expect(await first.result).toMatchObject({ status: 'interrupted', reason: 'superseded' });
    expect(await second.result).toMatchObject({ status: 'completed', output: 'second answer' });
    const events = await readAll(store, 's-now');
    const interrupted = events.find((event) => event.type === 'request_interrupted');
    expect(interrupted?.type === 'request_interrupted' && interrupted.data).toEqual({ reason: 'superseded', byInputId: second.inputId });
  });

  it('close() commits session_closed; a closed Session admits nothing', async () => {
    const store = memoryStore();
    const session = await createSession({ sessionId: 's-close', model: createScriptedModel([]), durableEventStore: store });
    await session.close();
    expect(types(await readAll(store, 's-close'))).toEqual(['session_created', 'session_closed']);
    await expect(session.send('late')).rejects.toMatchObject({ code: 'SESSION_DURABLE_RECORDER_INVALID' });
  });
});

describe('steering input', () => {
  it('`next`: input_applied (with the Turn) before the model is called again; the model sees it', async () => {
    const store = memoryStore();
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const waiting = defineTool({ sideEffect: 'pure', execute: async () => (await gate, { ok: true }) });
    const model = createScriptedModel([{ toolCalls: [{ toolCallId: 'c1', toolName: 'waiting', input: {} }] }, { text: 'seen' }]);
    const session = await createSession({ sessionId: 's-steer', model, tools: { waiting }, durableEventStore: store });
    const handle = await session.send('start');
    while (!(await readAll(store, 's-steer')).some((event) => event.type === 'tool_started')) await new Promise((r) => setTimeout(r, 1));
    const steer = await session.steer('also mention the weather');
    release();
    await steer.applied;
    await handle.result;
    const events = await readAll(store, 's-steer');
    const applied = events.filter((event) => event.type === 'input_applied');
    expect(applied).toHaveLength(2);
    const steering = applied[1]!;
    expect(steering.type === 'input_applied' && steering.data.inputId).toBe(steer.inputId);
    expect(steering.turnId).toBe(events.find((event) => event.type === 'turn_started')?.turnId);
    expect(types(events).indexOf('turn_completed')).toBeGreaterThan(steering.sequence - 1);
    expect(JSON.stringify(model.calls[1]?.prompt)).toContain('also mention the weather');
  });

  it('`now`: the model call in flight is aborted (superseded) and called again in the same Turn with the input', async () => {
    const store = memoryStore();
    const model = createScriptedModel([{ hang: true }, { text: 'redirected' }]);
    const session = await createSession({ sessionId: 's-steer-now', model, durableEventStore: store });
    const handle = await session.send('start');
    while (model.calls.length === 0) await new Promise((r) => setTimeout(r, 1));
    await session.steer('change of plan', { priority: 'now' });
    expect(await handle.result).toMatchObject({ status: 'completed', output: 'redirected' });
    const kinds = types(await readAll(store, 's-steer-now'));
    expect(kinds.slice(4)).toEqual([
      'turn_started',
      'model_request_started',
      'model_request_aborted',
      'input_applied',
      'model_request_started',
      'model_request_completed',
      'turn_completed',
      'request_completed',
    ]);
    expect(JSON.stringify(model.calls[1]?.prompt)).toContain('change of plan');
  });
});

describe('resume', () => {
  it('request_accepted carries the complete snapshot: planResume says resume_accepted_request and resumeSession runs the same requestId', async () => {
    const store = memoryStore();
    const first = await createSession({ sessionId: 's-resume', model: twoTurnModel(), tools: { echo }, durableEventStore: crashAfter(store, 2) });
    const accepted = await first.send('say hi', { maxTurns: 3, context: { a: 1 } });
    await first.whenIdle();
    expect(first.state).toBe('stopped');
    await expect(accepted.result).rejects.toMatchObject({ name: 'ExecutionStopped' });
    const coordinator = await DurableSessionRecoveryCoordinator.open(store, SessionId('s-resume'));
    const decision = coordinator.planResume();
    expect(decision.action).toBe('resume_accepted_request');

    const session = await resumeSession({ sessionId: 's-resume', model: twoTurnModel(), tools: { echo }, durableEventStore: store });
    expect(session.resumedRequest?.requestId).toBe(accepted.requestId);
    expect(await session.resumedRequest!.result).toMatchObject({ status: 'completed', output: 'Done: hi.' });
  });

  it('raises DurableSessionRecoveryRequiredError carrying the plan when no policy maps the action', async () => {
    const store = memoryStore();
    const first = await createSession({ sessionId: 's-required', model: twoTurnModel(), tools: { echo }, durableEventStore: crashAfter(store, 5) });
    await first.send('say hi');
    await first.whenIdle();
    const error = await resumeSession({ sessionId: 's-required', model: twoTurnModel(), tools: { echo }, durableEventStore: store }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'DURABLE_SESSION_RECOVERY_REQUIRED', details: { plan: { action: 'resume_turn' } } });
  });

  it('restored history omits tool calls without a paired result; the continuation prompt has no dangling call', async () => {
    const store = memoryStore();
    // Crash right after model_request_completed (the echo call has no result yet).
    const first = await createSession({ sessionId: 's-history', model: twoTurnModel(), tools: { echo }, durableEventStore: crashAfter(store, 8) });
    await first.send('say hi');
    await first.whenIdle();
    const model = createScriptedModel([
      { toolCalls: [{ toolCallId: 'c2', toolName: 'echo', input: { text: 'hi' } }] },
      { text: 'Done again.' },
    ]);
    const session = await resumeSession({ sessionId: 's-history', model, tools: { echo }, durableEventStore: store, recoveryPolicy: SAFE_RECOVERY_POLICY });
    const restored = session.history();
    expect(restored.filter((message) => message.role === 'assistant').every((message) => message.role === 'assistant' && message.toolCalls.length === 0)).toBe(true);
    expect(await session.resumedRequest!.result).toMatchObject({ status: 'completed', output: 'Done again.' });
    for (const call of model.calls) {
      const calls = call.prompt.flatMap((message) => (message.role === 'assistant' ? message.content.filter((part) => part.type === 'tool-call') : []));
      const results = new Set(call.prompt.flatMap((message) => (message.role === 'tool' ? message.content.map((part) => (part.type === 'tool-result' ? part.toolCallId : '')) : [])));
      for (const part of calls) expect(part.type === 'tool-call' && results.has(part.toolCallId)).toBe(true);
    }
    const events: DurableEventEnvelope[] = await readAll(store, 's-history');
    expect(events.some((event) => event.type === 'request_accepted' && event.data.recovery !== undefined)).toBe(true);
  });
});

describe('options', () => {
  it('runs in memory without a store, with an injected clock and ID generator', async () => {
    let n = 0;
    const session = await createSession({
      model: twoTurnModel(),
      tools: { echo },
      clock: () => Date.UTC(2030, 0, 1),
      generateId: (kind) => `${kind}-${++n}`,
    });
    expect(session.sessionId).toBe('session-1');
    const { frames, done } = collect(session);
    const result = await session.run('hi');
    expect(result.requestId).toBe('request-2');
    await session.close();
    await done;
    const events = frames.flatMap((frame) => (frame.type === 'durable_event' ? [frame.event] : []));
    expect(events.every((event) => event.occurredAt === '2030-01-01T00:00:00.000Z')).toBe(true);
    expect(events.find((event) => event.type === 'turn_started')?.turnId).toMatch(/^turn-\d+$/);
  });

  it('durableStoreTimeoutMs bounds store calls: a hanging append stops the Session without a terminal event', async () => {
    const store = memoryStore();
    let hang = false;
    const hanging = new Proxy(store, {
      get(target, property) {
        if (property === 'append') {
          return (...args: Parameters<typeof store.append>) => (hang ? new Promise(() => undefined) : target.append(...args));
        }
        const value: unknown = Reflect.get(target, property, target);
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
    const session = await createSession({ sessionId: 's-timeout', model: twoTurnModel(), tools: { echo }, durableEventStore: hanging, durableStoreTimeoutMs: 20 });
    const { frames, done } = collect(session);
    hang = true;
    await expect(session.run('x')).rejects.toMatchObject({ name: 'ExecutionStopped', reason: 'outcome_unknown' });
    await done;
    expect(session.state).toBe('stopped');
    expect(frames.at(-1)).toMatchObject({ type: 'execution_stopped', reason: 'outcome_unknown' });
    expect(types(await readAll(store, 's-timeout'))).toEqual(['session_created']);
  });
});
