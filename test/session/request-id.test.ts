/**
 * `SessionSendOptions.requestId` / `inputId`: caller-chosen, validated, idempotent like a
 * `commandId` (the same Request re-sent finds it; anything else with a used ID is a conflict).
 */
import { describe, expect, it } from 'vitest';
import { createScriptedModel, createSession, resumeSession } from '../../src/session.js';
import { crashAfter, memoryStore, readAll, types } from './helpers.js';

const answers = (n: number) => createScriptedModel(Array.from({ length: n }, (_, i) => ({ text: `answer ${i + 1}` })));

describe('send with a caller-chosen requestId', () => {
  it('uses the IDs given', async () => {
    const store = memoryStore();
    const session = await createSession({ sessionId: 's-rid', model: answers(1), durableEventStore: store });
    const handle = await session.send('hello', { requestId: 'req-mine', inputId: 'in-mine' });
    expect(handle).toMatchObject({ requestId: 'req-mine', inputId: 'in-mine' });
    expect(await handle.result).toMatchObject({ requestId: 'req-mine', status: 'completed', output: 'answer 1' });
    const accepted = (await readAll(store, 's-rid')).find((event) => event.type === 'request_accepted');
    expect(accepted).toMatchObject({ requestId: 'req-mine', data: { inputId: 'in-mine' } });
  });

  it('rejects a malformed ID with SessionDurableRecorderError and writes nothing', async () => {
    const store = memoryStore();
    const session = await createSession({ sessionId: 's-rid-bad', model: answers(1), durableEventStore: store });
    for (const requestId of ['', 'a\u0000b', 'x'.repeat(10_000), 42 as unknown as string]) {
      await expect(session.send('hello', { requestId })).rejects.toMatchObject({ code: 'SESSION_DURABLE_RECORDER_INVALID' });
    }
    await expect(session.send('hello', { inputId: '' })).rejects.toMatchObject({ code: 'SESSION_DURABLE_RECORDER_INVALID' });
    expect(types(await readAll(store, 's-rid-bad'))).toEqual(['session_created']);
  });

  it('re-sending the same Request is idempotent: queued, running or finished, one request_accepted', async () => {
    const store = memoryStore();
    const session = await createSession({ sessionId: 's-rid-same', model: answers(2), durableEventStore: store });
    const first = session.send('hello', { requestId: 'req-1', maxTurns: 3 });
    const again = session.send('hello', { requestId: 'req-1', maxTurns: 3 });
    expect(again).toBe(first);
    const handle = await first;
    const running = await session.send('hello', { requestId: 'req-1', maxTurns: 3 });
    const result = await handle.result;
    expect(await running.result).toEqual(result);
    await session.whenIdle();
    const finished = await session.send('hello', { requestId: 'req-1', maxTurns: 3, inputId: handle.inputId });
    expect(finished.inputId).toBe(handle.inputId);
    expect(await finished.result).toMatchObject({ requestId: 'req-1', status: 'completed', output: 'answer 1', usage: result.usage });
    expect(types(await readAll(store, 's-rid-same')).filter((type) => type === 'request_accepted')).toHaveLength(1);
  });

  it('a used ID with another input or options is DurableCommandConflictError; a used inputId too', async () => {
    const store = memoryStore();
    const session = await createSession({ sessionId: 's-rid-conflict', model: answers(2), durableEventStore: store });
    const queued = session.send('hello', { requestId: 'req-1' });
    await expect(session.send('other', { requestId: 'req-1' })).rejects.toMatchObject({ code: 'DURABLE_COMMAND_CONFLICT' });
    const handle = await queued;
    await handle.result;
    await expect(session.send('hello', { requestId: 'req-1', priority: 'later' })).rejects.toMatchObject({ code: 'DURABLE_COMMAND_CONFLICT' });
    await expect(session.send('hello', { requestId: 'req-1', inputId: 'in-other' })).rejects.toMatchObject({ code: 'DURABLE_COMMAND_CONFLICT' });
    await expect(session.send('hello', { requestId: 'req-2', inputId: handle.inputId })).rejects.toMatchObject({ code: 'DURABLE_COMMAND_CONFLICT' });
    expect(types(await readAll(store, 's-rid-conflict')).filter((type) => type === 'request_accepted')).toHaveLength(1);
  });

  it('a resumed Session knows the IDs of its log', async () => {
    const store = memoryStore();
    const first = await createSession({ sessionId: 's-rid-resume', model: answers(1), durableEventStore: store });
    await first.run('hello', { requestId: 'req-1' });
    const session = await resumeSession({ sessionId: 's-rid-resume', model: answers(1), durableEventStore: store });
    const again = await session.send('hello', { requestId: 'req-1' });
    expect(await again.result).toMatchObject({ status: 'completed', output: 'answer 1' });
    await expect(session.send('bye', { requestId: 'req-1' })).rejects.toMatchObject({ code: 'DURABLE_COMMAND_CONFLICT' });
    expect(types(await readAll(store, 's-rid-resume')).filter((type) => type === 'request_accepted')).toHaveLength(1);
  });
});

describe('re-sending after a crash', () => {
  it('a Request accepted before the crash and resumed is found by its ID, not accepted twice', async () => {
    const store = memoryStore();
    const first = await createSession({ sessionId: 's-rid-crash', model: answers(1), durableEventStore: crashAfter(store, 2) });
    await first.send('hello', { requestId: 'req-1', inputId: 'in-1' });
    await first.whenIdle();
    const session = await resumeSession({ sessionId: 's-rid-crash', model: answers(1), durableEventStore: store });
    expect(session.resumedRequest?.requestId).toBe('req-1');
    const again = await session.send('hello', { requestId: 'req-1', inputId: 'in-1' });
    expect(again.result).toBe(session.resumedRequest?.result);
    expect(await again.result).toMatchObject({ status: 'completed', output: 'answer 1' });
    expect(types(await readAll(store, 's-rid-crash')).filter((type) => type === 'request_accepted')).toHaveLength(1);
  });
});

describe('steer with a caller-chosen inputId', () => {
  it('is idempotent while waiting and once applied; another content, a used ID or a malformed one fails', async () => {
    const store = memoryStore();
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const { defineTool } = await import('../../src/session.js');
    const waiting = defineTool({ sideEffect: 'pure', execute: async () => (await gate, { ok: true }) });
    const model = createScriptedModel([{ toolCalls: [{ toolCallId: 'c1', toolName: 'waiting', input: {} }] }, { text: 'seen' }]);
    const session = await createSession({ sessionId: 's-steer-id', model, tools: { waiting }, durableEventStore: store });
    const handle = await session.send('start', { requestId: 'req-1', inputId: 'in-1' });
    while (!(await readAll(store, 's-steer-id')).some((event) => event.type === 'tool_started')) await new Promise((r) => setTimeout(r, 1));
    const steer = await session.steer('more', { inputId: 'in-steer' });
    expect(steer.inputId).toBe('in-steer');
    const again = await session.steer('more', { inputId: 'in-steer' });
    expect(again.applied).toBe(steer.applied);
    await expect(session.steer('other', { inputId: 'in-steer' })).rejects.toMatchObject({ code: 'DURABLE_COMMAND_CONFLICT' });
    await expect(session.steer('more', { inputId: 'in-1' })).rejects.toMatchObject({ code: 'DURABLE_COMMAND_CONFLICT' });
    await expect(session.steer('more', { inputId: '' })).rejects.toMatchObject({ code: 'SESSION_DURABLE_RECORDER_INVALID' });
    release();
    await steer.applied;
    // Applied: a re-steer before the Request ends resolves at once (nothing new is applied).
    const applied = (await readAll(store, 's-steer-id')).filter((event) => event.type === 'input_applied');
    expect(applied.map((event) => event.type === 'input_applied' && event.data.inputId)).toEqual(['in-1', 'in-steer']);
    await handle.result;
  });
});
