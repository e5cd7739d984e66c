/**
 * Steering inputs are durable: `input_applied` carries the steering content, so a Session resumed
 * from the log (a fresh `resumeSession` on the same store after a crash) shows it to the next model
 * call; and a log written before that field existed still projects (the steering content is then
 * absent from the history).
 */
import { describe, expect, it } from 'vitest';
import { DurableEventType, InputId, RequestId, SessionId, TurnId } from '../../src/index.js';
import { createScriptedModel, createSession, defineTool, resumeSession } from '../../src/session.js';
import { crashAfter, memoryStore, readAll, types } from './helpers.js';

function gatedTool() {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const tool = defineTool({ sideEffect: 'pure', execute: async () => (await gate, { ok: true }) });
  return { tool, release };
}

const script = () =>
  createScriptedModel([{ toolCalls: [{ toolCallId: 'c1', toolName: 'waiting', input: {} }] }, { text: 'seen' }]);

describe('steering durability', () => {
  it('a steering input applied before a crash reaches the next model call of the resumed Session', async () => {
    const store = memoryStore();
    const { tool, release } = gatedTool();
    // 11 = the steering input_applied: turn_completed never lands.
    const first = await createSession({ sessionId: 's-steer-crash', model: script(), tools: { waiting: tool }, durableEventStore: crashAfter(store, 11) });
    await first.send('start');
    while (!(await readAll(store, 's-steer-crash')).some((event) => event.type === 'tool_started')) await new Promise((r) => setTimeout(r, 1));
    const steer = await first.steer('also mention the weather');
    release();
    await steer.applied;
    await first.whenIdle();
    const events = await readAll(store, 's-steer-crash');
    expect(types(events).at(-1)).toBe('input_applied');
    const applied = events.at(-1)!;
    expect(applied.type === 'input_applied' && applied.data.input).toBe('also mention the weather');

    const model = createScriptedModel([{ text: 'after restart' }]);
    const { tool: again, release: releaseAgain } = gatedTool();
    releaseAgain();
    const session = await resumeSession({
      sessionId: 's-steer-crash',
      model,
      tools: { waiting: again },
      durableEventStore: store,
      recoveryPolicy: { resumeTurn: 'in_place' },
    });
    expect(session.history().some((message) => message.role === 'user' && message.content === 'also mention the weather')).toBe(true);
    await session.resumedRequest?.result;
    expect(JSON.stringify(model.calls[0]?.prompt)).toContain('also mention the weather');
  });

  it('a log written without input_applied.input still projects; the steering content is absent', async () => {
    const store = memoryStore();
    const sessionId = SessionId('s-old-log');
    const requestId = RequestId('req-old');
    const turnId = TurnId('turn-old');
    await store.append(sessionId, [
      { type: DurableEventType.SESSION_CREATED, data: { source: 'create' } },
      { type: DurableEventType.REQUEST_ACCEPTED, requestId, commandId: 'c-1' as never, data: { inputId: InputId('in-1'), input: 'hello', priority: 'next' } },
      { type: DurableEventType.REQUEST_STARTED, requestId, data: {} },
      { type: DurableEventType.INPUT_APPLIED, requestId, data: { inputId: InputId('in-1'), priority: 'next' } },
      { type: DurableEventType.TURN_STARTED, requestId, turnId, data: { turn: 1 } },
      { type: DurableEventType.INPUT_APPLIED, requestId, turnId, data: { inputId: InputId('in-2'), priority: 'next' } },
      { type: DurableEventType.TURN_COMPLETED, requestId, turnId, data: { turn: 1, hasToolCalls: false } },
      { type: DurableEventType.REQUEST_COMPLETED, requestId, data: {} },
    ]);
    const session = await resumeSession({ sessionId: 's-old-log', model: createScriptedModel([]), durableEventStore: store });
    expect(session.history()).toEqual([{ role: 'user', content: 'hello' }]);
  });

  it('input_applied.input is validated like the request input', async () => {
    const store = memoryStore();
    const sessionId = SessionId('s-bad-input');
    const requestId = RequestId('req-bad');
    await store.append(sessionId, [
      { type: DurableEventType.SESSION_CREATED, data: { source: 'create' } },
      { type: DurableEventType.REQUEST_ACCEPTED, requestId, commandId: 'c-1' as never, data: { inputId: InputId('in-1'), input: 'hello', priority: 'next' } },
      { type: DurableEventType.REQUEST_STARTED, requestId, data: {} },
    ]);
    for (const input of [[], 42, [{ type: 'text' }], [{ type: 'image', mediaType: 'image/png' }]]) {
      await expect(
        // SAFETY: deliberately malformed payloads.
        store.append(sessionId, [{ type: DurableEventType.INPUT_APPLIED, requestId, data: { inputId: InputId('in-2'), priority: 'next', input } as never }]),
      ).rejects.toMatchObject({ code: 'DURABLE_EVENT_INVALID_INPUT' });
    }
  });
});
