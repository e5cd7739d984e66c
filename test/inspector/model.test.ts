/**
 * The runtime-neutral parts of the inspector: plan safety classes, timeline pairing, the next
 * deadline, and what a rerun from a fork point repeats. Built from real projector runs over
 * journals made by the projector tests' JournalBuilder.
 */
import { describe, expect, it } from 'vitest';
import type { DurabilityRecord } from '../../src/core/durability/record-contract.js';
import { DurableSessionProjector } from '../../src/core/projector/projector.js';
import { SessionId } from '../../src/protocol/ids.js';
import { rerunRepeats } from '../../src/inspector/model/fork.js';
import { classifyRecoveryPlan } from '../../src/inspector/model/safety.js';
import { buildTimeline, nextDeadline, pendingWaits } from '../../src/inspector/model/timeline.js';
import { JournalBuilder } from '../projector/journal-builder.js';

function planOf(builder: JournalBuilder) {
  const projector = new DurableSessionProjector();
  projector.apply(builder.events);
  return classifyRecoveryPlan(projector.recoveryPlan());
}

function activeTurn(): JournalBuilder {
  const b = JournalBuilder.startedRequest();
  b.startTurn().modelStarted().modelCompleted({
    toolCalls: [
      { id: 'c-read', name: 'read', arguments: {} },
      { id: 'c-pay', name: 'pay', arguments: {} },
    ],
  });
  return b;
}

describe('classifyRecoveryPlan', () => {
  it('marks a pending permission as needing a person', () => {
    const b = activeTurn();
    b.scheduleTool({ toolCallId: 'c-pay', sideEffect: 'non_idempotent' }).requestPermission();
    const plan = planOf(b);
    expect(plan.action).toBe('resolve_permissions');
    expect(plan.items.map((item) => [item.kind, item.safety])).toEqual([['permission', 'needs_person']]);
    expect(plan.safety).toBe('needs_person');
  });

  it('separates a non_idempotent tool that may have run from a retryable one', () => {
    const b = activeTurn();
    b.scheduleTool({ toolAttemptId: 't-read', toolCallId: 'c-read', sideEffect: 'idempotent' }).startTool({ sideEffect: 'idempotent' });
    b.scheduleTool({ toolAttemptId: 't-pay', toolCallId: 'c-pay', sideEffect: 'non_idempotent' }).startTool({ sideEffect: 'non_idempotent' });
    const plan = planOf(b);
    expect(plan.action).toBe('reconcile_tool_outcomes');
    expect(plan.items.map((item) => [item.kind, item.safety, item.toolAttemptId])).toEqual([
      ['tool_unknown', 'needs_reconciliation', 't-pay'],
      ['tool_retry', 'safe_to_retry', 't-read'],
    ]);
  });

  it('asks for the model outcome when an attempt has no terminal event', () => {
    const b = JournalBuilder.startedRequest();
    b.startTurn().modelStarted();
    expect(planOf(b).items).toEqual([expect.objectContaining({ kind: 'model_attempt', safety: 'needs_reconciliation', operation: 'reconcile-model-outcome' })]);
  });

  it('resumes a Turn with nothing unsafe, and has nothing to do for a finished session', () => {
    const b = activeTurn();
    expect(planOf(b).items).toEqual([expect.objectContaining({ kind: 'turn', safety: 'safe_to_retry' })]);
    const done = new JournalBuilder().createSession().simpleRequest();
    expect(planOf(done)).toMatchObject({ action: 'none', items: [], safety: null });
  });
});

describe('timeline', () => {
  it('pairs starts and ends into bars, leaving unfinished ones open', () => {
    const b = activeTurn();
    b.scheduleTool({ toolAttemptId: 't-read', toolCallId: 'c-read' }).startTool().completeTool();
    b.scheduleTool({ toolAttemptId: 't-pay', toolCallId: 'c-pay', sideEffect: 'non_idempotent' }).requestPermission({ permissionRequestId: 'p-1' });
    const { bars } = buildTimeline(b.events);
    const byId = new Map(bars.map((bar) => [`${bar.lane}:${bar.id}`, bar]));
    expect(byId.get('tool:t-read')).toMatchObject({ status: 'tool_completed' });
    expect(byId.get('tool:t-read')?.markMs).toBeDefined();
    expect(byId.get('tool:t-pay')).toMatchObject({ status: 'open', endMs: null });
    expect(byId.get('permission:p-1')).toMatchObject({ status: 'open' });
    expect(bars.filter((bar) => bar.lane === 'model')).toEqual([expect.objectContaining({ status: 'model_request_completed' })]);
    expect(bars.filter((bar) => bar.lane === 'request')).toEqual([expect.objectContaining({ status: 'open' })]);
    for (const bar of bars) if (bar.endMs !== null) expect(bar.endMs).toBeGreaterThanOrEqual(bar.startMs);
  });

  it('pairs durable waits with their delivery or timeout and finds the next deadline', () => {
    const session = SessionId('s');
    const scope = JSON.stringify(['run-1', 'tool', 'call-1']);
    const at = (ms: number): string => new Date(ms).toISOString();
    const records: DurabilityRecord[] = [
      { kind: 'step', scope, key: 'a', result: 1, sequence: 1, sessionId: session, recordedAt: at(1000) },
      { kind: 'sleep', scope, key: 'nap', untilMs: 50_000, sequence: 2, sessionId: session, recordedAt: at(2000) },
      { kind: 'wait', scope, key: 'approval', deadlineMs: 90_000, sequence: 3, sessionId: session, recordedAt: at(3000) },
      { kind: 'wait', scope, key: 'other', deadlineMs: 40_000, sequence: 4, sessionId: session, recordedAt: at(3500) },
      { kind: 'delivery', runId: 'run-1', key: 'other', deliveryId: 'd-1', payload: true, sequence: 5, sessionId: session, recordedAt: at(4000) },
    ];
    const { bars } = buildTimeline([], records);
    expect(bars.find((bar) => bar.id.endsWith('/other'))).toMatchObject({ status: 'delivered', endMs: 4000 });
    expect(bars.find((bar) => bar.id.endsWith('/approval'))).toMatchObject({ status: 'open' });
    expect(nextDeadline(records, 10_000)).toMatchObject({ kind: 'sleep', key: 'nap', atMs: 50_000 });
    expect(nextDeadline(records, 200_000)).toMatchObject({ kind: 'wait', key: 'approval' });
    expect(pendingWaits(records)).toEqual([{ runId: 'run-1', key: 'approval', scope, deadlineMs: 90_000 }]);
  });
});

describe('rerunRepeats', () => {
  it('lists tools started after the fork point and tools unfinished at it, not settled ones', () => {
    const b = activeTurn();
    b.scheduleTool({ toolAttemptId: 't-read', toolCallId: 'c-read', sideEffect: 'idempotent' }).startTool({ sideEffect: 'idempotent' });
    const forkPoint = b.events.length;
    b.completeTool();
    b.scheduleTool({ toolAttemptId: 't-pay', toolCallId: 'c-pay', sideEffect: 'non_idempotent' }).startTool({ sideEffect: 'non_idempotent' }).completeTool();
    const report = rerunRepeats(b.events, forkPoint);
    expect(report.tools.map((tool) => [tool.toolAttemptId, tool.position, tool.sideEffect, tool.sourceOutcome])).toEqual([
      ['t-read', 'unfinished_at_fork_point', 'idempotent', 'tool_completed'],
      ['t-pay', 'after_fork_point', 'non_idempotent', 'tool_completed'],
    ]);
    expect(rerunRepeats(b.events, b.events.length).tools).toEqual([]);
  });
});
