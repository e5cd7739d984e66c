import { describe, expect, it } from 'vitest';
import {
  DURABLE_RECOVERY_ACTIONS,
  classifyToolAttempt,
  planDurableRecovery,
  type DurableRecoveryPlan,
} from '../../src/core/projector/index.js';
import { InputId } from '../../src/protocol/ids.js';
import { project } from './helpers.js';
import { JournalBuilder } from './journal-builder.js';

function planOf(b: JournalBuilder): DurableRecoveryPlan {
  return project(b.events).recoveryPlan();
}

function ids(list: readonly { toolAttemptId: string }[]): string[] {
  return list.map((tool) => tool.toolAttemptId);
}

/** Tool lists of a plan, as IDs, for exact comparisons. */
function lists(plan: DurableRecoveryPlan) {
  return {
    retryable: ids(plan.retryableToolAttempts),
    cancelable: ids(plan.cancelableToolAttempts),
    unknown: ids(plan.unknownToolAttempts),
    permissions: plan.pendingPermissions.map((permission) => permission.permissionRequestId),
    activeModel: plan.activeModelAttempt?.modelAttemptId ?? null,
    discarded: plan.discardedUnconfirmedModelResponse,
  };
}

const EMPTY_LISTS = { retryable: [], cancelable: [], unknown: [], permissions: [], activeModel: null, discarded: false };

describe('recoveryPlan actions', () => {
  it('none: no active Request (empty, finished, or closed session)', () => {
    expect(new JournalBuilder().events).toHaveLength(0);
    expect(project([]).recoveryPlan()).toMatchObject({ action: 'none', headSequence: null, lastTurn: 0 });
    const finished = new JournalBuilder().createSession().simpleRequest();
    expect(planOf(finished)).toMatchObject({ action: 'none', appliedInputIds: [], lastTurn: 0 });
    expect(lists(planOf(finished.closeSession()))).toEqual(EMPTY_LISTS);
    expect(planOf(finished).reason).toBe('the session is closed');
  });

  it('resume_request: accepted, never started, no input applied', () => {
    const b = new JournalBuilder().createSession().acceptRequest({ requestId: 'r1' });
    const plan = planOf(b);
    expect(plan).toMatchObject({ action: 'resume_request', requestId: 'r1', requestStatus: 'accepted', appliedInputIds: [] });
    expect(plan.turnId).toBeUndefined();
    expect(lists(plan)).toEqual(EMPTY_LISTS);
  });

  it('rollover_request: started, no Turn, exactly the initial input applied', () => {
    const b = JournalBuilder.startedRequest();
    expect(planOf(b)).toMatchObject({ action: 'rollover_request', appliedInputIds: [b.inputId], lastTurn: 0 });
  });

  it('reconcile_request_inputs: the pre-Turn input set is not exactly the initial input', () => {
    const missing = new JournalBuilder().createSession().acceptRequest().startRequest();
    expect(planOf(missing)).toMatchObject({ action: 'reconcile_request_inputs', appliedInputIds: [] });
    const extra = JournalBuilder.startedRequest().applyInput({ inputId: 'steer-1' });
    expect(planOf(extra)).toMatchObject({
      action: 'reconcile_request_inputs',
      appliedInputIds: [extra.inputId, InputId('steer-1')],
    });
    const other = new JournalBuilder().createSession().acceptRequest().startRequest().applyInput({ inputId: 'other' });
    expect(planOf(other).action).toBe('reconcile_request_inputs');
    const beforeStart = new JournalBuilder().createSession().acceptRequest().applyInput();
    expect(planOf(beforeStart)).toMatchObject({ action: 'reconcile_request_inputs', requestStatus: 'accepted' });
  });

  it('reconcile_request_inputs: an input applied after the last Turn ended', () => {
    const b = JournalBuilder.startedRequest().startTurn().modelStarted().modelCompleted().completeTurn();
    const turnEnd = b.last.eventId;
    b.applyInput({ inputId: 'steer-1' });
    expect(planOf(b)).toMatchObject({ action: 'reconcile_request_inputs', lastTurn: 1, lastTurnEventId: turnEnd });
  });

  it('reconcile_request_outcome: a Turn ended without a Request terminal event', () => {
    const b = JournalBuilder.startedRequest().startTurn().modelStarted().modelCompleted().completeTurn();
    const plan = planOf(b);
    expect(plan).toMatchObject({ action: 'reconcile_request_outcome', lastTurn: 1, lastTurnEventId: b.last.eventId });
    expect(plan.turnId).toBeUndefined();
    // An input applied during the next Turn does not make the Request ambiguous after it ends.
    b.startTurn().applyInput({ inputId: 'steer', turnId: b.turnId! }).modelStarted().modelCompleted().abortTurn();
    expect(planOf(b)).toMatchObject({ action: 'reconcile_request_outcome', lastTurn: 2, lastTurnEventId: b.last.eventId });
  });

  it('resume_turn: a Turn without model call', () => {
    const b = JournalBuilder.startedRequest().startTurn({ turnId: 't1' });
    expect(planOf(b)).toMatchObject({ action: 'resume_turn', turnId: 't1', lastTurn: 0 });
    expect(lists(planOf(b))).toEqual(EMPTY_LISTS);
  });

  it('resume_turn: confirmed response, retry-safe started tools and not-started tools', () => {
    const b = JournalBuilder.startedRequest().startTurn().modelStarted({ modelAttemptId: 'm1' });
    b.modelCompleted({
      toolCalls: ['c1', 'c2', 'c3', 'c4', 'c5'].map((id) => ({ id, name: 'tool', arguments: { id } })),
    });
    b.scheduleTool({ toolAttemptId: 'pure-started', toolCallId: 'c1', sideEffect: 'pure' }).startTool();
    b.scheduleTool({ toolAttemptId: 'idem-unknown', toolCallId: 'c2', sideEffect: 'idempotent' });
    b.startTool({ sideEffect: 'idempotent' }).toolOutcomeUnknown();
    b.scheduleTool({ toolAttemptId: 'scheduled', toolCallId: 'c3', sideEffect: 'non_idempotent' });
    b.scheduleTool({ toolAttemptId: 'done', toolCallId: 'c4' }).startTool().completeTool();
    b.scheduleTool({ toolAttemptId: 'allowed', toolCallId: 'c5' }).requestPermission().resolvePermission();
    const plan = planOf(b);
    expect(plan.action).toBe('resume_turn');
    expect(lists(plan)).toEqual({
      ...EMPTY_LISTS,
      retryable: ['pure-started', 'idem-unknown'],
      cancelable: ['scheduled', 'allowed'],
    });
  });

  it('resolve_permissions: a pending permission request', () => {
    const b = JournalBuilder.startedRequest().startTurn().modelStarted();
    b.modelCompleted({ toolCalls: [{ id: 'c1', name: 'deploy', arguments: {} }, { id: 'c2', name: 'read', arguments: {} }] });
    b.scheduleTool({ toolAttemptId: 'deploy', toolCallId: 'c1' }).requestPermission({ permissionRequestId: 'p1', input: { env: 'prod' } });
    b.scheduleTool({ toolAttemptId: 'read', toolCallId: 'c2' });
    const plan = planOf(b);
    expect(plan.action).toBe('resolve_permissions');
    expect(lists(plan)).toEqual({ ...EMPTY_LISTS, permissions: ['p1'], cancelable: ['read'] });
    expect(plan.pendingPermissions[0]).toMatchObject({ toolAttemptId: 'deploy', toolName: 'deploy', input: { env: 'prod' } });
    // A denied permission leaves a tool that may only be cancelled.
    b.resolvePermission({ decision: 'deny' });
    expect(lists(planOf(b))).toEqual({ ...EMPTY_LISTS, cancelable: ['deploy', 'read'] });
    expect(planOf(b).action).toBe('resume_turn');
  });

  it('reconcile_tool_outcomes: a non_idempotent tool started without a trusted outcome', () => {
    const b = JournalBuilder.startedRequest().startTurn().modelStarted();
    b.modelCompleted({ toolCalls: ['c1', 'c2', 'c3'].map((id) => ({ id, name: 'tool', arguments: null })) });
    b.scheduleTool({ toolAttemptId: 'write', toolCallId: 'c1', sideEffect: 'non_idempotent' });
    b.startTool({ sideEffect: 'non_idempotent' });
    b.scheduleTool({ toolAttemptId: 'upgraded', toolCallId: 'c2', sideEffect: 'pure' }).requestPermission().resolvePermission();
    b.startTool({ sideEffect: 'non_idempotent' }).toolOutcomeUnknown();
    b.scheduleTool({ toolAttemptId: 'read', toolCallId: 'c3' }).startTool();
    const plan = planOf(b);
    expect(plan.action).toBe('reconcile_tool_outcomes');
    expect(lists(plan)).toEqual({ ...EMPTY_LISTS, unknown: ['write', 'upgraded'], retryable: ['read'] });
  });

  it('reconcile_model_outcome: a started model attempt takes precedence', () => {
    const b = JournalBuilder.startedRequest().startTurn().modelStarted({ modelAttemptId: 'm1' });
    b.modelCompleted({ toolCalls: [{ id: 'c1', name: 'w', arguments: 1 }, { id: 'c2', name: 'p', arguments: 2 }] });
    b.scheduleTool({ toolAttemptId: 'unknown', toolCallId: 'c1', sideEffect: 'non_idempotent' }).startTool({ sideEffect: 'non_idempotent' });
    b.scheduleTool({ toolAttemptId: 'asking', toolCallId: 'c2' }).requestPermission({ permissionRequestId: 'p1' });
    b.modelStarted({ modelAttemptId: 'm2' });
    b.scheduleTool({ toolAttemptId: 'streamed', sideEffect: 'idempotent' }).startTool({ sideEffect: 'idempotent' });
    const plan = planOf(b);
    expect(plan.action).toBe('reconcile_model_outcome');
    expect(plan.activeModelAttempt).toMatchObject({ modelAttemptId: 'm2', status: 'started', model: 'test-model' });
    expect(lists(plan)).toEqual({
      retryable: [],
      cancelable: ['streamed'],
      unknown: ['unknown'],
      permissions: ['p1'],
      activeModel: 'm2',
      discarded: true,
    });
  });

  it('after the model terminal event the next action surfaces', () => {
    const b = JournalBuilder.startedRequest().startTurn().modelStarted();
    b.scheduleTool({ toolAttemptId: 'streamed', sideEffect: 'idempotent' }).startTool({ sideEffect: 'idempotent' });
    expect(lists(planOf(b))).toMatchObject({ cancelable: ['streamed'], retryable: [], discarded: true });
    b.modelCompleted();
    expect(planOf(b).action).toBe('resume_turn');
    expect(lists(planOf(b))).toEqual({ ...EMPTY_LISTS, retryable: ['streamed'] });
  });

  it('marks retry-safe tools of a failed model attempt as cancelable and discarded', () => {
    const b = JournalBuilder.startedRequest().startTurn().modelStarted();
    b.scheduleTool({ toolAttemptId: 'streamed' }).startTool().modelFailed();
    const plan = planOf(b);
    expect(plan.action).toBe('resume_turn');
    expect(lists(plan)).toEqual({ ...EMPTY_LISTS, cancelable: ['streamed'], discarded: true });
  });

  it('exposes rollover provenance on the new Request', () => {
    const pre = JournalBuilder.startedRequest().applyInput({ inputId: 'steer' }).rolloverPreTurn({ requestId: 'r2' });
    expect(planOf(pre)).toMatchObject({ action: 'resume_request', requestId: 'r2', recoveryKind: 'pre_turn_request' });
    const turn = JournalBuilder.startedRequest().startTurn().modelStarted().modelCompleted();
    const sourceTurnId = turn.turnId;
    turn.rolloverActiveTurn();
    expect(planOf(turn)).toMatchObject({ action: 'resume_request', recoveryKind: 'active_turn' });
    const request = project(turn.events).snapshot().activeRequest!;
    expect(request.recovery).toEqual({ requestId: 'req-1', turnId: sourceTurnId, turn: 1 });
  });

  it('covers all nine actions', () => {
    expect(DURABLE_RECOVERY_ACTIONS).toHaveLength(9);
  });
});

describe('classification helpers', () => {
  it('classifyToolAttempt and planDurableRecovery agree with the projector', () => {
    const b = JournalBuilder.startedRequest().startTurn().modelStarted().modelCompleted({ toolCalls: [{ id: 'c', name: 'n', arguments: null }] });
    b.scheduleTool({ toolCallId: 'c' }).startTool();
    const projector = project(b.events);
    const snapshot = projector.snapshot();
    const turn = snapshot.activeRequest!.activeTurn!;
    expect(Object.values(turn.toolAttempts).map((tool) => classifyToolAttempt(tool, turn))).toEqual(['retryable']);
    expect(planDurableRecovery(snapshot)).toEqual(projector.recoveryPlan());
  });
});
