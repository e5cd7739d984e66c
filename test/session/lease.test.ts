/**
 * The Session under an execution lease: journal commits carry the fence, ownership is validated
 * before model and tool I/O, and losing the lease closes local execution without writing a false
 * terminal event. The store's clock is injected, so a takeover needs no waiting.
 */
import type { LanguageModelV3 } from '@ai-sdk/provider';
import { describe, expect, it } from 'vitest';
import { DurableExecutionLease, MemoryDurableEventStore, SessionId, WorkerId } from '../../src/index.js';
import { createScriptedModel, createSession, defineTool, resumeSession } from '../../src/session.js';
import { collect, deferred, readAll, types } from './helpers.js';

const TTL_MS = 60_000;

function setup(sessionId: string) {
  let now = Date.UTC(2030, 0, 1);
  const store = new MemoryDurableEventStore({ clock: () => now });
  const takeOver = async (): Promise<DurableExecutionLease> => {
    now += TTL_MS + 1;
    return DurableExecutionLease.acquire(store, SessionId(sessionId), { ownerId: WorkerId('worker-b'), ttlMs: TTL_MS });
  };
  return { store, takeOver };
}

function toolModel(toolName: string) {
  return createScriptedModel([{ toolCalls: [{ toolCallId: 'c1', toolName, input: {} }] }, { text: 'done' }]);
}

describe('execution lease', () => {
  it('journal commits carry the fence; tools see the executionFence', async () => {
    const { store } = setup('s-fence');
    const fences: Array<number | undefined> = [];
    const probe = defineTool({ sideEffect: 'pure', execute: (_input: Record<string, never>, ctx) => (fences.push(ctx.executionFence?.fencingToken), { ok: true }) });
    const session = await createSession({
      sessionId: 's-fence',
      model: toolModel('probe'),
      tools: { probe },
      durableEventStore: store,
      durableExecutionLeaseStore: store,
      executionLease: { ownerId: 'worker-a', ttlMs: TTL_MS },
    });
    expect((await session.run('x')).status).toBe('completed');
    expect(fences).toEqual([1]);
    // An unfenced append is refused once the session has lease state: every Session commit was fenced.
    await expect(store.append(SessionId('s-fence'), [{ type: 'session_closed', data: { reason: 'completed' } }])).rejects.toMatchObject({
      code: 'DURABLE_EXECUTION_LEASE_REQUIRED',
    });
    await session.close();
    expect(await store.inspectExecutionLease(SessionId('s-fence'))).toMatchObject({ released: true });
  });

  it('lease lost mid-tool: the tool finishes, its outcome is refused, nothing terminal is written', async () => {
    const { store, takeOver } = setup('s-mid');
    const entered = deferred();
    const gate = deferred();
    let effects = 0;
    const charge = defineTool({
      sideEffect: 'non_idempotent',
      execute: async () => {
        entered.resolve();
        await gate.promise;
        effects++;
        return { charged: true };
      },
    });
    const session = await createSession({
      sessionId: 's-mid',
      model: toolModel('charge'),
      tools: { charge },
      durableEventStore: store,
      durableExecutionLeaseStore: store,
      executionLease: { ownerId: 'worker-a', ttlMs: TTL_MS },
    });
    const { frames, done } = collect(session);
    const handle = await session.send('charge it');
    await entered.promise;
    const successor = await takeOver();
    expect(successor.fence.fencingToken).toBe(2);
    gate.resolve();
    await expect(handle.result).rejects.toMatchObject({ name: 'ExecutionStopped', reason: 'lease_lost' });
    await done;
    expect(session.state).toBe('stopped');
    expect(frames.at(-1)).toMatchObject({ type: 'execution_stopped', reason: 'lease_lost' });
    const events = await readAll(store, 's-mid');
    expect(types(events).at(-1)).toBe('tool_started');
    for (const terminal of ['tool_completed', 'tool_failed', 'tool_cancelled', 'turn_aborted', 'request_interrupted', 'request_failed', 'session_closed']) {
      expect(types(events)).not.toContain(terminal);
    }
    expect(effects).toBe(1);
    // The successor sees the honest state: a non_idempotent tool without an outcome.
    const resumed = await resumeSession({
      sessionId: 's-mid',
      model: toolModel('charge'),
      tools: { charge },
      durableEventStore: store,
      durableExecutionLeaseStore: store,
      executionLease: successor,
    }).catch((error: unknown) => error);
    expect(resumed).toMatchObject({ code: 'DURABLE_SESSION_RECOVERY_REQUIRED', details: { plan: { action: 'reconcile_tool_outcomes' } } });
    await session.close();
  });

  it('lease lost before the tool: the fenced commit fails and the side effect never runs', async () => {
    const { store, takeOver } = setup('s-before');
    let effects = 0;
    const charge = defineTool({ sideEffect: 'non_idempotent', execute: () => (effects++, { charged: true }) });
    const inner = toolModel('charge');
    const model: LanguageModelV3 = {
      ...inner,
      doStream: async (options) => {
        await takeOver();
        return inner.doStream(options);
      },
    };
    const session = await createSession({
      sessionId: 's-before',
      model,
      tools: { charge },
      durableEventStore: store,
      durableExecutionLeaseStore: store,
      executionLease: { ownerId: 'worker-a', ttlMs: TTL_MS },
    });
    await expect(session.run('charge it')).rejects.toMatchObject({ reason: 'lease_lost' });
    expect(effects).toBe(0);
    expect(types(await readAll(store, 's-before')).at(-1)).toBe('model_request_started');
  });

  it('a lease handle that fails aborts even `block` tools at once and stops the Session', async () => {
    const { store, takeOver } = setup('s-signal');
    const lease = await DurableExecutionLease.acquire(store, SessionId('s-signal'), { ownerId: WorkerId('worker-a'), ttlMs: TTL_MS });
    const entered = deferred();
    const sawAbort = deferred<unknown>();
    const stubborn = defineTool({
      sideEffect: 'idempotent',
      interruptBehavior: 'block',
      execute: (_input: Record<string, never>, ctx) =>
        new Promise<{ ok: true }>((_, reject) => {
          entered.resolve();
          ctx.signal.addEventListener('abort', () => {
            sawAbort.resolve(ctx.signal.reason);
            reject(ctx.signal.reason);
          });
        }),
    });
    const session = await createSession({
      sessionId: 's-signal',
      model: toolModel('stubborn'),
      tools: { stubborn },
      durableEventStore: store,
      durableExecutionLeaseStore: store,
      executionLease: lease,
    });
    const { frames, done } = collect(session);
    const handle = await session.send('x');
    await entered.promise;
    await takeOver();
    await expect(lease.renew()).rejects.toMatchObject({ code: 'DURABLE_EXECUTION_LEASE_LOST' });
    expect(await sawAbort.promise).toMatchObject({ code: 'DURABLE_EXECUTION_LEASE_LOST' });
    await expect(handle.result).rejects.toMatchObject({ reason: 'lease_lost' });
    await done;
    expect(session.state).toBe('stopped');
    expect(frames.at(-1)).toMatchObject({ type: 'execution_stopped', reason: 'lease_lost' });
    expect(types(await readAll(store, 's-signal')).at(-1)).toBe('tool_started');
  });
});
