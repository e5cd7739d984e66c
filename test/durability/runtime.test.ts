/**
 * The agent runtime: mounting, calling and recovering tools with a built-in port scoped to
 * (runId, toolName, toolCallId), plain mounts without a port, host-owned port factories, and
 * runtime deliveries.
 */
import { describe, expect, it } from 'vitest';
import { MemoryDurableEventStore } from '../../src/adapters/memory/memory-store.js';
import { createDurabilityPort } from '../../src/core/durability/port.js';
import type { DurabilityPortFactoryArgs, RuntimeToolContext } from '../../src/core/runtime/runtime-types.js';
import { createAgentRuntime } from '../../src/core/runtime/agent-runtime.js';
import { toolCallScope } from '../../src/core/durability/scope.js';
import { readAllRecords } from '../../src/conformance/durability-helpers.js';
import { newSessionId, tick } from './helpers.js';

function call(sessionId: string, overrides: Partial<{ runId: string; toolName: string; toolCallId: string; input: unknown }> = {}) {
  return { sessionId, runId: 'run-1', agent: 'agent', toolName: 'tool', toolCallId: 'call-1', input: { n: 1 }, ...overrides };
}

describe('createAgentRuntime', () => {
  it('gives mounted handlers step/sleep/waitFor scoped to (runId, toolName, toolCallId)', async () => {
    const store = new MemoryDurableEventStore();
    const sessionId = newSessionId();
    const runtime = createAgentRuntime({ store, durability: true });
    let bodyRuns = 0;
    const seen: RuntimeToolContext[] = [];
    expect(
      runtime.mountAgent('agent', {
        tools: {
          tool: async (input: { n: number }, ctx) => {
            seen.push(ctx);
            const value = await ctx.step!('double', () => ((bodyRuns += 1), input.n * 2));
            await ctx.sleep!('nap', 0);
            return { value };
          },
        },
      }),
    ).toEqual({ name: 'agent', toolNames: ['tool'] });
    expect(await runtime.callTool(call(sessionId))).toEqual({ value: 2 });
    expect(await runtime.callTool(call(sessionId, { input: { n: 50 } }))).toEqual({ value: 2 }); // same identity: replayed
    expect(await runtime.callTool(call(sessionId, { toolCallId: 'call-2', input: { n: 5 } }))).toEqual({ value: 10 });
    expect(bodyRuns).toBe(2);
    expect(seen[0]).toMatchObject({ sessionId, runId: 'run-1', agent: 'agent', toolName: 'tool', toolCallId: 'call-1' });
    expect(seen[0]?.signal).toBeInstanceOf(AbortSignal);
    const scopes = (await readAllRecords(store, sessionId)).map((r) => ('scope' in r ? r.scope : undefined));
    expect(scopes).toEqual([
      toolCallScope('run-1', 'tool', 'call-1'),
      toolCallScope('run-1', 'tool', 'call-1'),
      toolCallScope('run-1', 'tool', 'call-2'),
      toolCallScope('run-1', 'tool', 'call-2'),
    ]);
    expect(scopes[0]).toBe('["run-1","tool","call-1"]');
  });

  it('leaves step, sleep and waitFor undefined without a port', async () => {
    const runtime = createAgentRuntime({ store: new MemoryDurableEventStore() });
    let ctxSeen: RuntimeToolContext | undefined;
    runtime.mountAgent('agent', { tools: { tool: (_input, ctx) => ((ctxSeen = ctx), 'plain') } });
    expect(await runtime.callTool(call(newSessionId()))).toBe('plain');
    expect(ctxSeen).toMatchObject({ step: undefined, sleep: undefined, waitFor: undefined });
    expect(Object.keys(ctxSeen ?? {})).toEqual(expect.arrayContaining(['step', 'sleep', 'waitFor']));
    // Without a ledger store, a plain runtime still works; durability: true refuses it.
    const plain = createAgentRuntime({ store: {} });
    plain.mountAgent('agent', { tools: { tool: () => 'no store needed' } });
    expect(await plain.callTool(call(newSessionId()))).toBe('no store needed');
    expect(() => createAgentRuntime({ store: {}, durability: true })).toThrow(
      expect.objectContaining({ code: 'DURABILITY_INVALID_INPUT' }),
    );
  });

  it('passes a factory the store, session, run, tool name, tool call id and signal, and never closes its port', async () => {
    const store = new MemoryDurableEventStore();
    const sessionId = newSessionId();
    const received: Array<DurabilityPortFactoryArgs<MemoryDurableEventStore>> = [];
    const hostPorts: Array<ReturnType<typeof createDurabilityPort>> = [];
    const runtime = createAgentRuntime({
      store,
      durability: (args) => {
        received.push(args);
        const port = createDurabilityPort({ store: args.store, sessionId: args.sessionId, runId: args.runId, signal: args.signal });
        hostPorts.push(port);
        return port;
      },
    });
    runtime.mountAgent('agent', { tools: { tool: (_input, ctx) => ctx.step!('k', () => 'from host port') } });
    const controller = new AbortController();
    expect(await runtime.callTool({ ...call(sessionId, { toolCallId: 'call-9' }), signal: controller.signal })).toBe('from host port');
    expect(received).toHaveLength(1);
    expect(received[0]).toEqual({ store, sessionId, runId: 'run-1', toolName: 'tool', toolCallId: 'call-9', signal: controller.signal });
    expect(received[0]?.store).toBe(store);
    // Host-owned: still usable after the call.
    expect(await hostPorts[0]?.step('k', () => 'not run')).toBe('from host port');
    // The host port used the run as its scope (standalone rule).
    expect(await readAllRecords(store, sessionId)).toEqual([expect.objectContaining({ scope: 'run-1' })]);
  });

  it('recovers a call by replay: completed steps return their records, the rest runs', async () => {
    const store = new MemoryDurableEventStore();
    const sessionId = newSessionId();
    const effects: string[] = [];
    let crash = true;
    const mount = (runtime: ReturnType<typeof createAgentRuntime>) =>
      runtime.mountAgent('agent', {
        tools: {
          tool: async (_input, ctx) => {
            const a = await ctx.step!('a', () => (effects.push('a'), 'A'));
            if (crash) throw new Error('executor died');
            const b = await ctx.step!('b', () => (effects.push('b'), 'B'));
            return [a, b];
          },
        },
      });
    const first = createAgentRuntime({ store, durability: true });
    mount(first);
    await expect(first.callTool(call(sessionId))).rejects.toThrow('executor died');
    crash = false;
    const second = createAgentRuntime({ store, durability: true });
    mount(second);
    await expect(second.recover({ ...call(sessionId), decision: 'invent' as 'replay' })).rejects.toMatchObject({
      code: 'DURABILITY_INVALID_INPUT',
    });
    expect(await second.recover({ ...call(sessionId), decision: 'replay' })).toEqual(['A', 'B']);
    expect(effects).toEqual(['a', 'b']);
  });

  it('refuses a second execution of a call identity while it runs in this runtime', async () => {
    const store = new MemoryDurableEventStore();
    const sessionId = newSessionId();
    const runtime = createAgentRuntime({ store, durability: true });
    runtime.mountAgent('agent', {
      tools: { tool: async (_input, ctx) => (await ctx.waitFor!('go')).status },
    });
    const running = runtime.callTool(call(sessionId));
    await tick();
    await expect(runtime.recover({ ...call(sessionId), decision: 'replay' })).rejects.toMatchObject({ code: 'DURABILITY_CONFLICT' });
    await expect(runtime.callTool(call(sessionId))).rejects.toMatchObject({ code: 'DURABILITY_CONFLICT' });
    expect(await runtime.deliver({ sessionId, runId: 'run-1', key: 'go', deliveryId: 'd-1', payload: true })).toEqual({
      deliveryId: 'd-1',
      sequence: 2,
      created: true,
    });
    expect(await running).toBe('delivered');
    expect(await runtime.deliver({ sessionId, runId: 'run-1', key: 'go', deliveryId: 'd-1', payload: true })).toMatchObject({
      created: false,
    });
    await expect(runtime.deliver({ sessionId, runId: 'run-1', key: 'go', deliveryId: 'd-1', payload: false })).rejects.toMatchObject({
      code: 'DURABILITY_CONFLICT',
    });
  });

  it('cancels a waiting handler through the call signal and closes the built-in port', async () => {
    const store = new MemoryDurableEventStore();
    const sessionId = newSessionId();
    const runtime = createAgentRuntime({ store, durability: true });
    runtime.mountAgent('agent', { tools: { tool: async (_input, ctx) => ctx.waitFor!('never') } });
    const controller = new AbortController();
    const running = runtime.callTool({ ...call(sessionId), signal: controller.signal });
    await tick();
    controller.abort();
    await expect(running).rejects.toMatchObject({ name: 'AbortError' });
    expect((await readAllRecords(store, sessionId)).map((r) => r.kind)).toEqual(['wait']);
  });

  it('validates mounts and calls', async () => {
    const runtime = createAgentRuntime({ store: new MemoryDurableEventStore(), durability: true });
    runtime.mountAgent('agent', { tools: { tool: () => 1 } });
    expect(() => runtime.mountAgent('agent', { tools: {} })).toThrow(expect.objectContaining({ code: 'DURABILITY_INVALID_INPUT' }));
    // SAFETY: deliberately not a function.
    expect(() => runtime.mountAgent('other', { tools: { x: 1 as unknown as () => 1 } })).toThrow(
      expect.objectContaining({ code: 'DURABILITY_INVALID_INPUT' }),
    );
    await expect(runtime.callTool(call(newSessionId(), { toolName: 'missing' }))).rejects.toMatchObject({
      code: 'DURABILITY_INVALID_INPUT',
    });
    await expect(runtime.callTool(call(newSessionId(), { toolCallId: '' }))).rejects.toMatchObject({
      code: 'DURABILITY_INVALID_INPUT',
    });
  });
});
