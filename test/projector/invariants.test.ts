import { describe, expect, it } from 'vitest';
import { DurableSessionProjector, projectionRuleOf } from '../../src/core/projector/index.js';
import { CommandId, EventId, InputId, PermissionRequestId, RequestId, SessionId, ToolAttemptId, TurnId } from '../../src/protocol/ids.js';
import { caught, edit, editData, expectLastRejected, expectStaysFailed, project } from './helpers.js';
import { JournalBuilder } from './journal-builder.js';

/** A started Request inside an active Turn with one running model attempt. */
function inTurn(): JournalBuilder {
  return JournalBuilder.startedRequest().startTurn().modelStarted();
}

describe('envelope invariants', () => {
  it('rejects an envelope that fails the strict schema', () => {
    const b = new JournalBuilder().createSession();
    b.events.push(edit(b.events[0]!, { sequence: 2, eventId: 'evt-2', unexpected: true }));
    expectLastRejected(b.events, 'schema');
    const wrongVersion = new JournalBuilder().createSession();
    wrongVersion.events[0] = edit(wrongVersion.events[0]!, { schemaVersion: 3 });
    expectLastRejected(wrongVersion.events, 'schema');
  });

  it('requires sequences to start at 1 and grow by one, across pages', () => {
    const startsAt2 = new JournalBuilder({ firstSequence: 2 }).createSession();
    expectLastRejected(startsAt2.events, 'sequence');
    const b = new JournalBuilder().createSession().acceptRequest();
    b.events[1] = edit(b.events[1]!, { sequence: 3 });
    expectLastRejected(b.events, 'sequence');
    const pages = JournalBuilder.startedRequest();
    const projector = new DurableSessionProjector();
    projector.apply(pages.events.slice(0, 2));
    const error = caught(() => projector.apply(pages.events.slice(3)));
    expect(projectionRuleOf(error)).toBe('sequence');
    expectStaysFailed(projector, error);
  });

  it('rejects an event of another session', () => {
    const b = new JournalBuilder().createSession().acceptRequest();
    b.events[1] = edit(b.events[1]!, { sessionId: 'other-session' });
    expectLastRejected(b.events, 'session_mismatch');
    const configured = new DurableSessionProjector({ sessionId: SessionId('expected') });
    const error = caught(() => configured.apply(new JournalBuilder().createSession().events));
    expect(projectionRuleOf(error)).toBe('session_mismatch');
  });

  it('rejects a repeated event ID', () => {
    const b = new JournalBuilder().createSession().acceptRequest();
    b.events[1] = edit(b.events[1]!, { eventId: 'evt-1' });
    expectLastRejected(b.events, 'duplicate_event_id');
  });

  it('requires causationEventId to name an earlier event', () => {
    const ahead = new JournalBuilder().createSession().acceptRequest({ causationEventId: EventId('evt-9') });
    expectLastRejected(ahead.events, 'causation_unknown');
    const self = new JournalBuilder().createSession().acceptRequest({ causationEventId: EventId('evt-2') });
    expectLastRejected(self.events, 'causation_unknown');
    const ok = new JournalBuilder().createSession().acceptRequest({ causationEventId: EventId('evt-1') });
    expect(project(ok.events).headSequence).toBe(2);
  });

  it('keeps one command to one contiguous range', () => {
    const b = new JournalBuilder().createSession();
    b.command('cmd-a', () => b.acceptRequest().startRequest());
    b.command('cmd-b', () => b.applyInput());
    b.command('cmd-a', () => b.startTurn());
    expectLastRejected(b.events, 'command_range');
    const gap = new JournalBuilder().createSession();
    gap.command('cmd-a', () => gap.acceptRequest());
    gap.startRequest();
    gap.command('cmd-a', () => gap.applyInput());
    expectLastRejected(gap.events, 'command_range');
  });
});

describe('session and Request lifecycle', () => {
  it('requires session_created first and only once', () => {
    const first = new JournalBuilder().acceptRequest();
    expectLastRejected(first.events, 'session_lifecycle');
    expectLastRejected(new JournalBuilder().createSession().createSession().events, 'session_lifecycle');
  });

  it('allows nothing after session_closed and no closure with an active Request', () => {
    expectLastRejected(new JournalBuilder().createSession().closeSession().acceptRequest().events, 'session_lifecycle');
    expectLastRejected(JournalBuilder.startedRequest().closeSession().events, 'session_lifecycle');
  });

  it('allows one active Request at a time', () => {
    expectLastRejected(new JournalBuilder().createSession().acceptRequest().acceptRequest().events, 'request_lifecycle');
  });

  it('starts a Request once, only from accepted', () => {
    expectLastRejected(JournalBuilder.startedRequest().startRequest().events, 'request_lifecycle');
    const none = new JournalBuilder().createSession();
    none.push({ type: 'request_started', requestId: RequestId('ghost'), data: {} });
    expectLastRejected(none.events, 'request_lifecycle');
  });

  it('ends a Request only without an active Turn', () => {
    expectLastRejected(JournalBuilder.startedRequest().startTurn().completeRequest().events, 'request_lifecycle');
  });

  it('binds a Request terminal causation to the latest boundary', () => {
    const stale = JournalBuilder.startedRequest().startTurn().modelStarted().modelCompleted().completeTurn();
    stale.completeRequest({ causationEventId: EventId('evt-4') });
    expectLastRejected(stale.events, 'request_causation');
    const anchored = JournalBuilder.startedRequest().startTurn().modelStarted().modelCompleted().completeTurn();
    anchored.completeRequest({ causationEventId: anchored.last.eventId });
    expect(project(anchored.events).snapshot().lastRequest?.status).toBe('completed');
    const afterInput = JournalBuilder.startedRequest();
    afterInput.interruptRequest({ causationEventId: afterInput.last.eventId });
    expect(project(afterInput.events).snapshot().activeRequest).toBeNull();
  });

  it('rejects events naming another Request', () => {
    const b = new JournalBuilder().createSession().acceptRequest();
    b.startRequest({ requestId: RequestId('other') });
    expectLastRejected(b.events, 'correlation');
  });
});

describe('ID reuse', () => {
  it('rejects a reused Request ID', () => {
    const b = new JournalBuilder().createSession().acceptRequest({ requestId: 'r' }).startRequest().interruptRequest();
    b.acceptRequest({ requestId: 'r' });
    expectLastRejected(b.events, 'id_reused');
  });

  it('rejects a reused Turn ID (even in another Request)', () => {
    const b = JournalBuilder.startedRequest().startTurn({ turnId: 't' }).modelStarted().modelCompleted().completeTurn();
    b.startTurn({ turnId: 't' });
    expectLastRejected(b.events, 'id_reused');
  });

  it('rejects a reused model attempt ID', () => {
    const b = inTurn().modelCompleted();
    b.modelStarted({ modelAttemptId: b.modelAttemptId! });
    expectLastRejected(b.events, 'id_reused');
  });

  it('rejects a reused tool attempt ID', () => {
    const b = inTurn().scheduleTool({ toolAttemptId: 'tool-x' });
    b.scheduleTool({ toolAttemptId: 'tool-x' });
    expectLastRejected(b.events, 'id_reused');
  });

  it('rejects a reused permission request ID', () => {
    const b = inTurn().scheduleTool().requestPermission({ permissionRequestId: 'p' }).resolvePermission();
    b.scheduleTool().requestPermission({ permissionRequestId: 'p' });
    expectLastRejected(b.events, 'id_reused');
  });

  it('rejects a re-applied input ID', () => {
    expectLastRejected(JournalBuilder.startedRequest().applyInput().events, 'id_reused');
  });
});

describe('Turn invariants', () => {
  it('starts a Turn only in a started Request without another active Turn', () => {
    expectLastRejected(new JournalBuilder().createSession().acceptRequest().startTurn().events, 'turn_lifecycle');
    expectLastRejected(JournalBuilder.startedRequest().startTurn().startTurn({ turn: 2 }).events, 'turn_lifecycle');
  });

  it('numbers Turns 1, 2, 3 within each Request', () => {
    expectLastRejected(JournalBuilder.startedRequest().startTurn({ turn: 2 }).events, 'turn_number');
    const skip = JournalBuilder.startedRequest().startTurn().modelStarted().modelCompleted().completeTurn();
    expectLastRejected(skip.startTurn({ turn: 3 }).events, 'turn_number');
    const wrongEnd = JournalBuilder.startedRequest().startTurn().modelStarted().modelCompleted();
    expectLastRejected(wrongEnd.completeTurn({ turn: 2 }).events, 'turn_number');
    const next = JournalBuilder.startedRequest().startTurn().modelStarted().modelCompleted().completeTurn().completeRequest();
    next.acceptRequest().startRequest().startTurn();
    expect(project(next.events).snapshot().activeRequest?.activeTurn?.turn).toBe(1);
  });

  it('rejects Turn and model events that name another Turn', () => {
    const b = JournalBuilder.startedRequest().startTurn();
    b.modelStarted({ turnId: TurnId('other-turn') });
    expectLastRejected(b.events, 'correlation');
    expectLastRejected(JournalBuilder.startedRequest().modelStarted({ turnId: TurnId('t') }).events, 'turn_lifecycle');
  });

  it('blocks Turn termination while a model attempt is running', () => {
    expectLastRejected(inTurn().completeTurn().events, 'turn_blocked');
    expectLastRejected(inTurn().abortTurn().events, 'turn_blocked');
  });

  it('blocks Turn termination while a tool is unfinished', () => {
    expectLastRejected(inTurn().scheduleTool().modelCompleted().completeTurn().events, 'turn_blocked');
    expectLastRejected(inTurn().scheduleTool().modelCompleted().startTool().abortTurn().events, 'turn_blocked');
    const unknown = inTurn().scheduleTool({ sideEffect: 'non_idempotent' }).modelCompleted();
    unknown.startTool({ sideEffect: 'non_idempotent' }).toolOutcomeUnknown().abortTurn();
    expectLastRejected(unknown.events, 'turn_blocked');
    const awaiting = inTurn().scheduleTool().modelCompleted().requestPermission().abortTurn();
    expectLastRejected(awaiting.events, 'turn_blocked');
    const settled = inTurn().scheduleTool({ sideEffect: 'non_idempotent' }).modelCompleted();
    settled.startTool({ sideEffect: 'non_idempotent' }).toolOutcomeUnknown().cancelTool().abortTurn();
    expect(project(settled.events).snapshot().activeRequest?.lastTurn).toBe(1);
  });

  it('runs model attempts one at a time and settles each once', () => {
    expectLastRejected(inTurn().modelStarted().events, 'model_lifecycle');
    expectLastRejected(inTurn().modelCompleted().modelFailed().events, 'model_lifecycle');
    const unknown = inTurn();
    unknown.modelAborted({ modelAttemptId: unknown.modelAttemptId! });
    unknown.push({
      type: 'model_request_completed',
      requestId: unknown.requestId!,
      turnId: unknown.turnId!,
      modelAttemptId: 'not-an-attempt' as never,
      data: { response: { content: 'x' } },
    });
    expectLastRejected(unknown.events, 'correlation');
  });

  it('checks input_applied.turnId against the active Turn', () => {
    const noTurn = JournalBuilder.startedRequest();
    expectLastRejected(noTurn.applyInput({ inputId: 'steer', turnId: TurnId('t') }).events, 'input_applied');
    const other = JournalBuilder.startedRequest().startTurn();
    expectLastRejected(other.applyInput({ inputId: 'steer', turnId: TurnId('other') }).events, 'input_applied');
    const ok = JournalBuilder.startedRequest().startTurn();
    ok.applyInput({ inputId: 'steer', turnId: ok.turnId! });
    expect(project(ok.events).snapshot().activeRequest?.appliedInputIds).toEqual([ok.inputId, InputId('steer')]);
  });
});

describe('tool and permission invariants', () => {
  it('schedules tools only from a running or completed model attempt of the active Turn', () => {
    expectLastRejected(inTurn().modelFailed().scheduleTool().events, 'tool_lifecycle');
    const foreign = inTurn();
    foreign.scheduleTool({ modelAttemptId: 'ghost' as never });
    expectLastRejected(foreign.events, 'correlation');
    expectLastRejected(inTurn().scheduleTool({ toolCallId: 'c' }).scheduleTool({ toolCallId: 'c' }).events, 'tool_lifecycle');
  });

  it('matches scheduled tools against the confirmed response with canonical JSON', () => {
    const streamed = inTurn().scheduleTool({ toolCallId: 'c1', toolName: 'read', modelInput: { a: 1, b: [1, 2] } });
    streamed.modelCompleted({ toolCalls: [{ id: 'c1', name: 'read', arguments: { b: [1, 2], a: 1 } }] });
    expect(project(streamed.events).recoveryPlan().cancelableToolAttempts).toHaveLength(1);
    const missing = inTurn().scheduleTool({ toolCallId: 'c1' }).modelCompleted({ toolCalls: [] });
    expectLastRejected(missing.events, 'tool_call_mismatch');
    const renamed = inTurn().scheduleTool({ toolCallId: 'c1', toolName: 'read' });
    renamed.modelCompleted({ toolCalls: [{ id: 'c1', name: 'write', arguments: { call: 'c1' } }] });
    expectLastRejected(renamed.events, 'tool_call_mismatch');
    const late = inTurn().modelCompleted({ toolCalls: [{ id: 'c1', name: 'read', arguments: { a: 1 } }] });
    expectLastRejected(late.scheduleTool({ toolCallId: 'c1', modelInput: { a: 2 } }).events, 'tool_call_mismatch');
    const arrayOrder = inTurn().modelCompleted({ toolCalls: [{ id: 'c1', name: 'read', arguments: [1, 2] }] });
    expectLastRejected(arrayOrder.scheduleTool({ toolCallId: 'c1', modelInput: [2, 1] }).events, 'tool_call_mismatch');
  });

  it('rejects tool events naming an unknown attempt or another identity', () => {
    const unknown = inTurn().scheduleTool();
    unknown.push({
      type: 'tool_started',
      requestId: unknown.requestId!,
      turnId: unknown.turnId!,
      toolAttemptId: ToolAttemptId('ghost'),
      data: { toolCallId: 'x', toolName: 'y', input: null, sideEffect: 'pure' },
    });
    expectLastRejected(unknown.events, 'correlation');
    const identity = inTurn().scheduleTool().startTool();
    identity.events[identity.events.length - 1] = editData(identity.last, { toolName: 'other' });
    expectLastRejected(identity.events, 'correlation');
  });

  it('enforces the tool state machine', () => {
    expectLastRejected(inTurn().scheduleTool().completeTool().events, 'tool_lifecycle');
    expectLastRejected(inTurn().scheduleTool().startTool().startTool().events, 'tool_lifecycle');
    expectLastRejected(inTurn().scheduleTool().toolOutcomeUnknown().events, 'tool_lifecycle');
    expectLastRejected(inTurn().scheduleTool().cancelTool().cancelTool().events, 'tool_lifecycle');
    expectLastRejected(inTurn().scheduleTool().modelAborted().startTool().events, 'tool_lifecycle');
  });

  it('finishes permission decisions before tool_started', () => {
    expectLastRejected(inTurn().scheduleTool().requestPermission().startTool().events, 'permission');
    const denied = inTurn().scheduleTool().requestPermission().resolvePermission({ decision: 'deny' });
    expectLastRejected(denied.startTool({ sideEffect: 'non_idempotent' }).events, 'permission');
    expectLastRejected(inTurn().scheduleTool().requestPermission().cancelTool().events, 'permission');
    expectLastRejected(inTurn().scheduleTool().startTool().requestPermission().events, 'permission');
    const twice = inTurn().scheduleTool().requestPermission().resolvePermission();
    expectLastRejected(twice.resolvePermission().events, 'permission');
    const ghost = inTurn().scheduleTool().requestPermission();
    expectLastRejected(ghost.resolvePermission({ permissionRequestId: PermissionRequestId('ghost'), toolAttemptId: ghost.tools.keys().next().value! }).events, 'permission');
  });

  it('ties a permission decision to its own tool attempt', () => {
    const b = inTurn().scheduleTool({ toolAttemptId: 'a' }).requestPermission({ permissionRequestId: 'p' });
    b.scheduleTool({ toolAttemptId: 'b' });
    b.resolvePermission({ permissionRequestId: PermissionRequestId('p'), toolAttemptId: ToolAttemptId('b') });
    expectLastRejected(b.events, 'correlation');
  });

  it('never lets tool_started weaken the side effect', () => {
    expectLastRejected(inTurn().scheduleTool({ sideEffect: 'idempotent' }).startTool({ sideEffect: 'pure' }).events, 'side_effect');
    const allowed = inTurn().scheduleTool({ sideEffect: 'pure' }).requestPermission().resolvePermission();
    expectLastRejected(allowed.startTool({ sideEffect: 'idempotent' }).events, 'side_effect');
    const upgraded = inTurn().scheduleTool({ sideEffect: 'pure' }).requestPermission().resolvePermission();
    upgraded.startTool({ sideEffect: 'non_idempotent' });
    const tool = Object.values(project(upgraded.events).snapshot().activeRequest!.activeTurn!.toolAttempts)[0]!;
    expect(tool).toMatchObject({ status: 'started', sideEffect: 'non_idempotent', scheduledSideEffect: 'pure', resumedAfterPermission: true });
  });
});

describe('rollover provenance', () => {
  it('accepts the adjacent rollover patterns of one command', () => {
    const pre = JournalBuilder.startedRequest().rolloverPreTurn();
    expect(project(pre.events).snapshot().activeRequest?.recoveryKind).toBe('pre_turn_request');
    const active = JournalBuilder.startedRequest().startTurn().modelStarted().modelCompleted().rolloverActiveTurn();
    expect(project(active.events).snapshot().activeRequest?.recoveryKind).toBe('active_turn');
  });

  it('rejects recovery without the pattern', () => {
    const b = new JournalBuilder().createSession();
    b.acceptRequest({ recovery: { requestId: RequestId('r'), turnId: TurnId('t'), turn: 1 } });
    expectLastRejected(b.events, 'recovery_provenance');
  });

  it('rejects the pattern split across commands', () => {
    const b = JournalBuilder.startedRequest().startTurn().modelStarted().modelCompleted();
    const recovery = { requestId: b.requestId!, turnId: b.turnId!, turn: 1 };
    b.command('c1', () => b.abortTurn().interruptRequest());
    b.command('c2', () => b.acceptRequest({ recovery }));
    expectLastRejected(b.events, 'recovery_provenance');
  });

  it('rejects provenance naming another Turn number or Request', () => {
    const b = JournalBuilder.startedRequest().startTurn().modelStarted().modelCompleted();
    const source = b.requestId!;
    const turnId = b.turnId!;
    b.command('c', () => b.abortTurn().interruptRequest().acceptRequest({ recovery: { requestId: source, turnId, turn: 2 } }));
    expectLastRejected(b.events, 'recovery_provenance');
    const other = JournalBuilder.startedRequest().startTurn().modelStarted().modelCompleted();
    const t = other.turnId!;
    other.command('c', () => other.abortTurn().interruptRequest().acceptRequest({ recovery: { requestId: RequestId('x'), turnId: t, turn: 1 } }));
    expectLastRejected(other.events, 'recovery_provenance');
  });

  it('rejects a non-adjacent pattern', () => {
    const b = JournalBuilder.startedRequest().startTurn().modelStarted().modelCompleted();
    const recovery = { requestId: b.requestId!, turnId: b.turnId!, turn: 1 };
    b.command('c', () => {
      b.abortTurn().interruptRequest();
      b.acceptRequest({ requestId: 'between' });
      b.interruptRequest();
      b.acceptRequest({ recovery });
    });
    expectLastRejected(b.events, 'recovery_provenance');
  });

  it('treats a command without commandId as no command', () => {
    const b = JournalBuilder.startedRequest().startTurn().modelStarted().modelCompleted();
    const recovery = { requestId: b.requestId!, turnId: b.turnId!, turn: 1 };
    b.abortTurn().interruptRequest().acceptRequest({ recovery, commandId: CommandId('c') });
    expectLastRejected(b.events, 'recovery_provenance');
  });
});
