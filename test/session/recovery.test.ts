/**
 * Resume paths in one process (memory store): a handoff during a permission wait leaves the
 * permission pending for the successor; the policy's permission modes; an in-place retry of a
 * started pure tool replays its durable steps; the fail-closed answer for a non_idempotent tool.
 */
import { describe, expect, it } from 'vitest';
import { DurableSessionJournal, SessionId } from '../../src/index.js';
import { createScriptedModel, createSession, defineTool, recoveryPlanOf, resumeSession, type SessionPermissionRequest } from '../../src/session.js';
import { crashAfter, deferred, memoryStore, readAll, types } from './helpers.js';

function model() {
  return createScriptedModel(({ prompt }) =>
    prompt.some((message) => message.role === 'tool')
      ? { text: 'finished' }
      : { toolCalls: [{ toolCallId: `c-${prompt.length}`, toolName: 'guarded', input: { n: 1 } }] },
  );
}

describe('recovery paths', () => {
  it('a handoff while the host decides a permission leaves it pending; the successor asks again and runs the tool in place', async () => {
    const store = memoryStore();
    const asked = deferred<SessionPermissionRequest>();
    let runs = 0;
    const guarded = defineTool({ sideEffect: 'idempotent', needsPermission: true, execute: () => (runs++, { ok: true }) });
    const source = await createSession({
      sessionId: 's-perm-handoff',
      model: model(),
      tools: { guarded },
      durableEventStore: store,
      onPermission: (request) => {
        asked.resolve(request);
        return new Promise(() => undefined); // the host never answers in this worker
      },
    });
    const handle = await source.send('go');
    expect((await asked.promise).restored).toBe(false);
    const handoff = await source.suspendForHandoff();
    await expect(handle.result).rejects.toMatchObject({ reason: 'handoff' });
    expect(handoff.recoveryPlan.action).toBe('resolve_permissions');
    expect(types(await readAll(store, 's-perm-handoff')).at(-1)).toBe('permission_requested');

    const restored: boolean[] = [];
    const successor = await resumeSession({
      sessionId: 's-perm-handoff',
      model: model(),
      tools: { guarded },
      durableEventStore: store,
      onPermission: (request) => (restored.push(request.restored), 'allow'),
      recoveryPolicy: { resolvePermissions: 'ask', resumeTurn: 'in_place' },
    });
    expect(await successor.resumedRequest!.result).toMatchObject({ status: 'completed', output: 'finished' });
    expect(restored).toEqual([true]);
    expect(runs).toBe(1);
    const events = await readAll(store, 's-perm-handoff');
    const started = events.find((event) => event.type === 'tool_started');
    expect(started?.type === 'tool_started' && started.data.sideEffect).toBe('non_idempotent');
  });

  it('resolvePermissions: deny cancels the pending tool in the decision command, then the Turn rolls over', async () => {
    const store = memoryStore();
    const guarded = defineTool({ sideEffect: 'pure', needsPermission: true, execute: () => ({ ok: true }) });
    const first = await createSession({ sessionId: 's-deny', model: model(), tools: { guarded }, durableEventStore: crashAfter(store, 9), onPermission: () => new Promise(() => undefined) });
    await first.send('go');
    while ((await readAll(store, 's-deny')).length < 9) await new Promise((r) => setTimeout(r, 1));
    const session = await resumeSession({
      sessionId: 's-deny',
      model: model(),
      tools: { guarded },
      durableEventStore: store,
      recoveryPolicy: { resolvePermissions: 'deny', resumeTurn: 'rollover' },
      onPermission: () => 'deny',
    });
    const events = await readAll(store, 's-deny');
    const resolved = events.find((event) => event.type === 'permission_resolved')!;
    const cancelled = events.find((event) => event.type === 'tool_cancelled')!;
    expect(resolved.type === 'permission_resolved' && resolved.data.decision).toBe('deny');
    expect(cancelled.commandId).toBe(resolved.commandId);
    expect(events.some((event) => event.type === 'request_accepted' && event.data.recovery !== undefined)).toBe(true);
    await session.resumedRequest?.result;
  });

  it('in place, a started pure tool runs again after a mark of the retry, and its recorded steps are replayed, not executed', async () => {
    const store = memoryStore();
    let bodies = 0;
    let executions = 0;
    const lookup = defineTool({
      sideEffect: 'pure',
      execute: async (_input: Record<string, never>, ctx) => {
        executions++;
        return ctx.step!('fetch', () => (bodies++, { value: 7 }));
      },
    });
    const script = () =>
      createScriptedModel(({ prompt }) =>
        prompt.some((message) => message.role === 'tool') ? { text: 'value 7' } : { toolCalls: [{ toolCallId: 'c1', toolName: 'lookup', input: {} }] },
      );
    // The log stops at tool_started (k = 9): the handler still ran here, its outcome was never recorded.
    const first = await createSession({ sessionId: 's-replay', model: script(), tools: { lookup }, durableEventStore: crashAfter(store, 9) });
    await first.send('go');
    await first.whenIdle();
    expect(types(await readAll(store, 's-replay')).at(-1)).toBe('tool_started');
    const session = await resumeSession({ sessionId: 's-replay', model: script(), tools: { lookup }, durableEventStore: store, recoveryPolicy: { resumeTurn: 'in_place' } });
    expect(await session.resumedRequest!.result).toMatchObject({ status: 'completed', output: 'value 7' });
    expect(executions).toBe(2);
    expect(bodies).toBe(1);
    // Each execution has its trace: tool_started for the first, the retry's tool_outcome_unknown mark for the second.
    const kinds = types(await readAll(store, 's-replay'));
    expect(kinds.filter((kind) => kind === 'tool_started')).toHaveLength(1);
    expect(kinds.slice(kinds.indexOf('tool_started'), kinds.indexOf('tool_started') + 3)).toEqual(['tool_started', 'tool_outcome_unknown', 'tool_completed']);
  });

  it('a started non_idempotent tool is never run again: without a reconcileToolOutcome decision resume fails closed', async () => {
    const store = memoryStore();
    let effects = 0;
    const charge = defineTool({ sideEffect: 'non_idempotent', execute: () => (effects++, { charged: true }) });
    const script = () =>
      createScriptedModel(({ prompt }) =>
        prompt.some((message) => message.role === 'tool') ? { text: 'charged' } : { toolCalls: [{ toolCallId: 'c1', toolName: 'charge', input: {} }] },
      );
    const first = await createSession({ sessionId: 's-unknown', model: script(), tools: { charge }, durableEventStore: crashAfter(store, 9) });
    await first.send('go');
    await first.whenIdle();
    expect(effects).toBe(1);
    const error = await resumeSession({
      sessionId: 's-unknown',
      model: script(),
      tools: { charge },
      durableEventStore: store,
      recoveryPolicy: { resumeTurn: 'in_place', rolloverRequest: true, continueAfterToolTurn: true, resolvePermissions: 'ask' },
    }).catch((e: unknown) => e);
    expect(recoveryPlanOf(error)?.action).toBe('reconcile_tool_outcomes');
    expect(effects).toBe(1);
    const session = await resumeSession({
      sessionId: 's-unknown',
      model: script(),
      tools: { charge },
      durableEventStore: store,
      recoveryPolicy: { resumeTurn: 'in_place', reconcileToolOutcome: () => ({ status: 'completed', result: { charged: true } }) },
    });
    expect(await session.resumedRequest!.result).toMatchObject({ status: 'completed', output: 'charged' });
    expect(effects).toBe(1);
  });

  it('resuming from a projection checkpoint still restores the whole message history', async () => {
    const store = memoryStore();
    const script = () => createScriptedModel(({ callIndex }) => ({ text: `answer ${callIndex}` }));
    const first = await createSession({ sessionId: 's-checkpoint', model: script(), durableEventStore: store });
    for (const question of ['one', 'two', 'three']) await first.run(question);
    const journal = await DurableSessionJournal.open(store, SessionId('s-checkpoint'));
    expect(await journal.writeCheckpoint()).toBe(true);
    const reopened = await DurableSessionJournal.open(store, SessionId('s-checkpoint'));
    expect(reopened.getCheckpointOutcome().status).toBe('used');
    const session = await resumeSession({ sessionId: 's-checkpoint', model: script(), durableEventStore: store });
    expect(session.history().filter((message) => message.role === 'user').map((message) => message.content)).toEqual(['one', 'two', 'three']);
    const model = script();
    const next = await resumeSession({ sessionId: 's-checkpoint', model, durableEventStore: store });
    await next.run('four');
    expect(model.calls[0]?.prompt.filter((message) => message.role === 'user')).toHaveLength(4);
  });
});
