/**
 * The signals a Request hands out are created when first read, and reach the same work as before:
 * a tool's `context.signal` is one object on every read and aborts on `abort()`; a durability
 * port used after its tool returned is closed; successive model calls share a signal only until
 * an abort reaches it.
 */
import { describe, expect, it } from 'vitest';
import { createScriptedModel, createSession, defineTool } from '../../src/session.js';
import { deferred, memoryStore, readAll, types } from './helpers.js';

const oneToolThenAnswer = () =>
  createScriptedModel([{ toolCalls: [{ toolCallId: 'c1', toolName: 'probe', input: {} }] }, { text: 'done' }]);

describe('Request signals', () => {
  it("a tool's context.signal is the same object on every read and aborts on abort()", async () => {
    const entered = deferred();
    const seen: AbortSignal[] = [];
    const probe = defineTool({
      sideEffect: 'pure',
      execute: async (_input: unknown, context) => {
        seen.push(context.signal, context.signal);
        entered.resolve();
        await new Promise<void>((_, reject) => context.signal.addEventListener('abort', () => reject(context.signal.reason), { once: true }));
        return null;
      },
    });
    const store = memoryStore();
    const session = await createSession({ sessionId: 's-signal-abort', model: oneToolThenAnswer(), tools: { probe }, durableEventStore: store });
    const handle = await session.send('go');
    await entered.promise;
    expect(seen[0]).toBe(seen[1]);
    expect(seen[0]?.aborted).toBe(false);
    await session.abort();
    expect(seen[0]?.aborted).toBe(true);
    expect((await handle.result).status).toBe('interrupted');
    const events = await readAll(store, 's-signal-abort');
    expect(types(events)).toContain('tool_cancelled');
  });

  it('a durability step called after its tool returned meets a closed port', async () => {
    let later: (() => Promise<unknown>) | undefined;
    const probe = defineTool({
      sideEffect: 'pure',
      execute: (_input: unknown, context) => {
        const step = context.step;
        later = step === undefined ? undefined : () => step('late', () => 1);
        return { ok: true };
      },
    });
    const session = await createSession({ sessionId: 's-port-closed', model: oneToolThenAnswer(), tools: { probe }, durableEventStore: memoryStore() });
    expect((await session.run('go')).status).toBe('completed');
    expect(later).toBeDefined();
    await expect(later?.()).rejects.toMatchObject({ name: 'AbortError' });
  });

  it('successive model calls share a signal until an abort reaches it', async () => {
    const probe = defineTool({ sideEffect: 'pure', execute: () => ({ ok: true }) });
    const model = oneToolThenAnswer();
    const session = await createSession({ sessionId: 's-model-signal', model, tools: { probe }, durableEventStore: memoryStore() });
    expect((await session.run('go')).status).toBe('completed');
    const [first, second] = model.calls.map((call) => call.abortSignal);
    expect(first).toBeDefined();
    expect(second).toBe(first);
    expect(first?.aborted).toBe(false);

    // A `now` steering input aborts the call in flight; the next call gets a fresh signal.
    const steered = createScriptedModel([{ hang: true }, { text: 'after steering' }]);
    const again = await createSession({ sessionId: 's-model-signal-2', model: steered, durableEventStore: memoryStore() });
    const handle = await again.send('go');
    while (steered.calls.length === 0) await new Promise((resolve) => setTimeout(resolve, 1));
    await again.steer('change of plan', { priority: 'now' });
    expect((await handle.result).status).toBe('completed');
    const [hung, next] = steered.calls.map((call) => call.abortSignal);
    expect(hung?.aborted).toBe(true);
    expect(next).not.toBe(hung);
    expect(next?.aborted).toBe(false);
  });
});
