import { describe, expect, it } from 'vitest';
import { MemoryDurableEventStore } from '../../src/adapters/memory/memory-store.js';
import { DurableSessionProjector, projectionRuleOf } from '../../src/core/projector/index.js';
import { projectDurableSession } from '../../src/core/checkpoint/index.js';
import { MAX_LAYERS, PersistentKeySet } from '../../src/core/projector/persistent-key-set.js';
import { DurableEventProjectionError } from '../../src/protocol/errors.js';
import type { DurableEventEnvelope } from '../../src/protocol/events.js';
import { isLosslessJson } from '../../src/protocol/json.js';
import { SessionId } from '../../src/protocol/ids.js';
import { caught, expectStaysFailed, project } from './helpers.js';
import { JournalBuilder, draftOf } from './journal-builder.js';

/** A journal that exercises every event type, ending with a Turn awaiting recovery. */
function richJournal(): JournalBuilder {
  const b = new JournalBuilder().createSession().simpleRequest();
  b.acceptRequest().startRequest().applyInput().startTurn().modelStarted();
  b.modelCompleted({ toolCalls: [{ id: 'c1', name: 'read', arguments: { p: 1 } }, { id: 'c2', name: 'rm', arguments: [] }] });
  b.scheduleTool({ toolCallId: 'c1', sideEffect: 'idempotent' }).startTool({ sideEffect: 'idempotent' }).failTool();
  b.scheduleTool({ toolCallId: 'c2', sideEffect: 'non_idempotent' }).requestPermission().resolvePermission();
  b.startTool({ sideEffect: 'non_idempotent' }).toolOutcomeUnknown();
  return b;
}

function pages(events: readonly DurableEventEnvelope[], size: number): DurableEventEnvelope[][] {
  const out: DurableEventEnvelope[][] = [];
  for (let index = 0; index < events.length; index += size) out.push(events.slice(index, index + size));
  return out;
}

describe('DurableSessionProjector', () => {
  it('projects page by page exactly like one shot', () => {
    const events = richJournal().events;
    const oneShot = project(events);
    for (const size of [1, 2, 3, 7, events.length]) {
      const projector = new DurableSessionProjector();
      for (const page of pages(events, size)) projector.apply(page);
      projector.apply([]);
      expect(projector.snapshot()).toEqual(oneShot.snapshot());
      expect(projector.recoveryPlan()).toEqual(oneShot.recoveryPlan());
      expect(projector.headSequence).toBe(events.length);
    }
    expect(oneShot.recoveryPlan().action).toBe('reconcile_tool_outcomes');
  });

  it('exposes the projection as immutable plain JSON data', () => {
    const b = richJournal();
    const projector = project(b.events);
    const snapshot = projector.snapshot();
    expect(isLosslessJson(JSON.parse(JSON.stringify(snapshot)))).toBe(true);
    expect(JSON.parse(JSON.stringify(snapshot))).toEqual(snapshot);
    const request = snapshot.activeRequest!;
    expect(request).toMatchObject({ status: 'started', lastTurn: 0, appliedInputIds: [b.inputId] });
    expect(Object.isFrozen(snapshot)).toBe(true);
    expect(Object.isFrozen(request.appliedInputIds)).toBe(true);
    const tools = Object.values(request.activeTurn!.toolAttempts);
    expect(Object.isFrozen((tools[0]!.modelInput as object))).toBe(true);
    expect(tools.map((tool) => tool.status)).toEqual(['failed', 'outcome_unknown']);
    expect(tools[1]).toMatchObject({ resumedAfterPermission: true, permissionDecision: 'allow', sideEffect: 'non_idempotent' });
    expect(tools[1]!.eventIds).toHaveLength(5);
  });

  it('detaches stored payloads from the caller', () => {
    const b = JournalBuilder.startedRequest().startTurn().modelStarted();
    const args = { nested: { value: 1 } };
    b.modelCompleted({ toolCalls: [{ id: 'c', name: 'n', arguments: args }] });
    b.scheduleTool({ toolCallId: 'c' });
    const projector = project(b.events);
    args.nested.value = 2;
    const tool = Object.values(projector.snapshot().activeRequest!.activeTurn!.toolAttempts)[0]!;
    expect(tool.modelInput).toEqual({ nested: { value: 1 } });
  });

  it('handles IDs and payload keys that collide with Object.prototype names', () => {
    const b = JournalBuilder.startedRequest().startTurn().modelStarted({ modelAttemptId: 'constructor' });
    const args = JSON.parse('{"__proto__": {"x": 1}, "toString": 2}') as Record<string, unknown>;
    b.modelCompleted({ toolCalls: [{ id: 'c', name: 'n', arguments: args as never }] });
    b.scheduleTool({ toolAttemptId: '__proto__', toolCallId: 'c' }).startTool();
    b.scheduleTool({ toolAttemptId: 'hasOwnProperty', toolCallId: 'd', modelInput: 1 });
    const error = caught(() => project(b.events));
    expect(error).toBeInstanceOf(DurableEventProjectionError);
    b.events.pop();
    const turn = project(b.events).snapshot().activeRequest!.activeTurn!;
    expect(Object.keys(turn.toolAttempts)).toEqual(['__proto__']);
    expect(Object.getPrototypeOf(turn.toolAttempts)).toBe(Object.prototype);
    const tool = Object.values(turn.toolAttempts)[0]!;
    expect(Object.keys(tool.modelInput as object)).toEqual(['__proto__', 'toString']);
    expect(Object.keys(turn.modelAttempts)).toEqual(['constructor']);
    expect(project(b.events).recoveryPlan().retryableToolAttempts.map((t) => t.toolAttemptId)).toEqual(['__proto__']);
  });

  it('keeps clones independent, in both directions', () => {
    const b = JournalBuilder.startedRequest().startTurn().modelStarted();
    const prefix = b.events.slice();
    b.modelCompleted().completeTurn().completeRequest();
    const original = project(prefix);
    const before = original.snapshot();
    const clone = original.clone();
    clone.apply(b.events.slice(prefix.length));
    expect(clone.snapshot().activeRequest).toBeNull();
    expect(original.snapshot()).toBe(before);
    expect(original.recoveryPlan().action).toBe('reconcile_model_outcome');
    // IDs claimed by the clone stay free in the original, and vice versa.
    original.apply(b.events.slice(prefix.length));
    expect(original.snapshot()).toEqual(clone.snapshot());
  });

  it('a failed clone leaves its original intact', () => {
    const b = JournalBuilder.startedRequest();
    const original = project(b.events);
    const clone = original.clone();
    const error = caught(() => clone.apply(new JournalBuilder({ firstSequence: 5 }).createSession().acceptRequest({ requestId: 'req-2' }).events.slice(1)));
    expectStaysFailed(clone, error);
    expect(original.failed).toBe(false);
    b.startTurn();
    original.apply(b.events.slice(4));
    expect(original.recoveryPlan().action).toBe('resume_turn');
  });

  it('a clone used for preview does not leak claimed IDs back', () => {
    const b = new JournalBuilder().createSession();
    const original = project(b.events);
    const preview = original.clone();
    const attempt = new JournalBuilder().createSession().acceptRequest({ requestId: 'r' });
    preview.apply(attempt.events.slice(1));
    // The original can still accept a Request with the same ID (the preview was discarded).
    original.apply(attempt.events.slice(1));
    expect(original.snapshot().activeRequest?.requestId).toBe('r');
  });

  it('fails closed on non-array input and keeps the error', () => {
    const projector = new DurableSessionProjector();
    // SAFETY: deliberately wrong input, as a JavaScript caller could pass.
    const error = caught(() => projector.apply('nope' as unknown as DurableEventEnvelope[]));
    expect(error).toBeInstanceOf(DurableEventProjectionError);
    expectStaysFailed(projector, error);
  });

  it('reports the configured session ID before any event', () => {
    expect(new DurableSessionProjector({ sessionId: SessionId('s') }).snapshot()).toMatchObject({
      sessionId: 's',
      status: 'empty',
      headSequence: null,
      lastEventId: null,
      activeRequest: null,
    });
  });
});

describe('projectDurableSession', () => {
  async function storeWith(events: readonly DurableEventEnvelope[], sessionId: SessionId): Promise<MemoryDurableEventStore> {
    const store = new MemoryDurableEventStore();
    await store.append(sessionId, events.map(draftOf), { expectedLastSequence: null });
    return store;
  }

  it('reads every page and matches the in-memory projection', async () => {
    const b = richJournal();
    const store = await storeWith(b.events, b.sessionId);
    for (const pageSize of [1, 4, 1000]) {
      const result = await projectDurableSession(store, b.sessionId, { pageSize });
      expect(result.headSequence).toBe(b.events.length);
      expect(result.recoveryPlan.action).toBe('reconcile_tool_outcomes');
      expect(result.recoveryPlan.unknownToolAttempts.map((tool) => tool.toolName)).toEqual(['rm']);
      expect(result.projection.activeRequest?.appliedInputIds).toEqual([b.inputId]);
      expect(result.projector.headSequence).toBe(result.headSequence);
    }
  });

  it('projects an empty session', async () => {
    const result = await projectDurableSession(new MemoryDurableEventStore(), SessionId('nothing'));
    expect(result.headSequence).toBeNull();
    expect(result.projection).toMatchObject({ status: 'empty', sessionId: 'nothing' });
    expect(result.recoveryPlan.action).toBe('none');
  });

  it('fails closed on an invalid stored journal', async () => {
    const b = JournalBuilder.startedRequest().startTurn({ turn: 2 });
    const store = await storeWith(b.events, b.sessionId);
    const error = await projectDurableSession(store, b.sessionId, { pageSize: 2 }).catch((e: unknown) => e);
    expect(projectionRuleOf(error)).toBe('turn_number');
  });

  it('honours an aborted signal', async () => {
    const b = JournalBuilder.startedRequest();
    const store = await storeWith(b.events, b.sessionId);
    const controller = new AbortController();
    controller.abort();
    const error = await projectDurableSession(store, b.sessionId, { signal: controller.signal }).catch((e: unknown) => e);
    expect((error as Error).name).toBe('AbortError');
  });
});

describe('PersistentKeySet', () => {
  it('forks are independent, and forking adds at most one layer to the original', () => {
    const set = PersistentKeySet.empty();
    const forks: PersistentKeySet[] = [];
    for (let index = 0; index < 5000; index++) {
      set.add(`k${index}`);
      if (index % 3 === 0) forks.push(set.fork());
    }
    expect(set.size).toBe(5000);
    // The first fork sealed the original's sets (one key) into a layer; later forks view the
    // original's maps, to which it keeps adding, so it never deepens further.
    expect(set.layerCount).toBe(1);
    expect(forks[0]?.layerCount).toBe(1);
    expect(forks.slice(1).every((fork) => fork.layerCount === 2)).toBe(true);
    const fork = forks[10]!;
    expect(fork.has('k30')).toBe(true);
    expect(fork.has('k31')).toBe(false);
    expect(fork.add('k31')).toBe(true);
    expect(fork.add('k31')).toBe(false);
    expect(set.has('k31')).toBe(true);
    expect(fork.add('fork-only')).toBe(true);
    expect(set.has('fork-only')).toBe(false);
    expect(forks[9]!.has('fork-only')).toBe(false);
    expect(set.add('set-only')).toBe(true);
    expect(fork.has('set-only')).toBe(false);
    expect(set.has('k4999')).toBe(true);
  });

  it('a chain of forks of forks (a session resumed again and again) stays at most MAX_LAYERS deep', () => {
    let set = PersistentKeySet.empty();
    const expected: string[] = [];
    for (let generation = 0; generation < 200; generation++) {
      for (let index = 0; index < 1 + (generation % 7) * 5; index++) {
        const key = `g${generation}-${index}`;
        expect(set.add(key)).toBe(true);
        expected.push(key);
      }
      set = set.fork();
      expect(set.layerCount).toBeLessThanOrEqual(MAX_LAYERS);
    }
    expect(set.size).toBe(expected.length);
    expect([...set.exactKeys()].sort()).toEqual(expected.sort());
    for (const key of expected) expect(set.has(key)).toBe(true);
    expect(set.has('g200-0')).toBe(false);
  });
});
