/**
 * The two rollovers: the exact event sequence of each (one command), their preconditions, the
 * recovery Request they accept, the continuation content of a Turn rollover, and the unsafe
 * rollover of a non_idempotent tool that crossed its execution boundary.
 */
import { describe, expect, it } from 'vitest';
import { DurableSessionJournal } from '../../src/core/journal/index.js';
import {
  DurableSessionRecoveryCoordinator,
  parseRecoveryContinuation,
  type PrepareRequestRecoveryInput,
  type PrepareTurnRecoveryInput,
} from '../../src/core/recovery/index.js';
import type { ContentPart } from '../../src/protocol/event-payloads.js';
import { DurableSessionRecoveryError } from '../../src/protocol/errors.js';
import { CommandId, InputId, RequestId, ToolAttemptId, TurnId } from '../../src/protocol/ids.js';
import {
  acceptedState,
  activeTurnState,
  openOn,
  pendingPermissionState,
  preTurnState,
  RecoveryJournalBuilder,
  rejectionOf,
  SNAPSHOT,
  steeredState,
  unknownModelState,
  unknownToolState,
} from './helpers.js';

const requestInput = (overrides: Partial<PrepareRequestRecoveryInput> = {}): PrepareRequestRecoveryInput => ({
  commandId: CommandId('rc-request'),
  requestId: RequestId('req-a'),
  inputId: InputId('input-a'),
  sourceLastTurn: 0,
  recoveryTurnId: TurnId('turn-synthetic'),
  recoveryRequestId: RequestId('req-recovery'),
  recoveryInputId: InputId('input-recovery'),
  preparation: { status: 'reconciled', appliedInputIds: [InputId('input-a')], input: 'prepared input' },
  ...overrides,
});

const turnInput = (overrides: Partial<PrepareTurnRecoveryInput> = {}): PrepareTurnRecoveryInput => ({
  commandId: CommandId('rc-turn'),
  requestId: RequestId('req-a'),
  turnId: TurnId('turn-a1'),
  recoveryRequestId: RequestId('req-recovery'),
  recoveryInputId: InputId('input-recovery'),
  ...overrides,
});

async function expectRefused(setup: Awaited<ReturnType<typeof openOn>>, promise: Promise<unknown>, code: string): Promise<void> {
  const error = await rejectionOf(promise);
  expect(error).toBeInstanceOf(DurableSessionRecoveryError);
  expect(error).toMatchObject({ code });
  expect(await setup.store.getHeadSequence(setup.sessionId)).toBe(setup.head);
}

describe('prepareRequestRecovery', () => {
  it('rolls a started pre-Turn Request into a recovery Request: synthetic Turn, abort, interrupt, accept', async () => {
    const { coordinator } = await openOn(preTurnState());
    expect(coordinator.getRecoveryPlan().action).toBe('rollover_request');
    const result = await coordinator.prepareRequestRecovery(requestInput());
    expect(result.events.map((event) => event.type)).toEqual(['turn_started', 'turn_aborted', 'request_interrupted', 'request_accepted']);
    const [started, aborted, interrupted, accepted] = result.events;
    expect(started).toMatchObject({ requestId: 'req-a', turnId: 'turn-synthetic', data: { turn: 1 } });
    expect(aborted).toMatchObject({ requestId: 'req-a', turnId: 'turn-synthetic', data: { turn: 1, reason: 'process_restart' } });
    expect(interrupted).toMatchObject({ requestId: 'req-a', data: { reason: 'process_restart' } });
    expect(accepted).toMatchObject({
      requestId: 'req-recovery',
      data: {
        inputId: 'input-recovery',
        input: 'prepared input',
        priority: 'next',
        ...SNAPSHOT,
        recovery: { requestId: 'req-a', turnId: 'turn-synthetic', turn: 1 },
      },
    });
    const request = result.projection.activeRequest;
    expect(request).toMatchObject({ requestId: 'req-recovery', status: 'accepted', recoveryKind: 'pre_turn_request' });
    expect(result.recoveryPlan.action).toBe('resume_request');
    expect(coordinator.planResume()).toEqual({
      action: 'resume_accepted_request',
      request: {
        requestId: 'req-recovery',
        inputId: 'input-recovery',
        input: 'prepared input',
        priority: 'next',
        ...SNAPSHOT,
        recovery: { requestId: 'req-a', turnId: 'turn-synthetic', turn: 1 },
      },
    });
  });

  it('writes request_started first when the source is still only accepted (inputs applied before it started)', async () => {
    const state = acceptedState().applyInput({ inputId: 'input-a' });
    const { coordinator } = await openOn(state);
    expect(coordinator.getRecoveryPlan()).toMatchObject({ action: 'reconcile_request_inputs', requestStatus: 'accepted' });
    const result = await coordinator.prepareRequestRecovery(requestInput());
    expect(result.events.map((event) => event.type)).toEqual([
      'request_started',
      'turn_started',
      'turn_aborted',
      'request_interrupted',
      'request_accepted',
    ]);
  });

  it('reconciles a steering input: the caller echoes every applied input, in order', async () => {
    const setup = await openOn(steeredState());
    expect(setup.coordinator.getRecoveryPlan().action).toBe('reconcile_request_inputs');
    for (const appliedInputIds of [[InputId('input-a')], [InputId('input-steer'), InputId('input-a')], []]) {
      await expectRefused(
        setup,
        setup.coordinator.prepareRequestRecovery(requestInput({ preparation: { status: 'reconciled', appliedInputIds, input: 'x' } })),
        'DURABLE_RECOVERY_INVALID_STATE',
      );
    }
    const result = await setup.coordinator.prepareRequestRecovery(
      requestInput({ preparation: { status: 'reconciled', appliedInputIds: [InputId('input-a'), InputId('input-steer')], input: 'x' } }),
    );
    expect(result.status).toBe('committed');
  });

  it('rolls over between Turns with the synthetic Turn numbered after the last one', async () => {
    const state = RecoveryJournalBuilder.inTurn();
    state.completeTurn().applyInput({ inputId: 'input-late' });
    const setup = await openOn(state);
    expect(setup.coordinator.getRecoveryPlan().action).toBe('reconcile_request_inputs');
    const preparation = { status: 'reconciled' as const, appliedInputIds: [InputId('input-a'), InputId('input-late')], input: 'x' };
    await expectRefused(setup, setup.coordinator.prepareRequestRecovery(requestInput({ preparation })), 'DURABLE_RECOVERY_INVALID_STATE');
    const result = await setup.coordinator.prepareRequestRecovery(requestInput({ preparation, sourceLastTurn: 1 }));
    expect(result.events[0]).toMatchObject({ type: 'turn_started', data: { turn: 2 } });
    expect(result.projection.activeRequest?.recovery).toEqual({ requestId: 'req-a', turnId: 'turn-synthetic', turn: 2 });
  });

  it('keeps a multimodal prepared input as content parts', async () => {
    const { coordinator } = await openOn(preTurnState());
    const parts: ContentPart[] = [
      { type: 'text', text: 'describe this' },
      { type: 'image', mediaType: 'image/png', url: 'https://example.com/a.png' },
    ];
    const result = await coordinator.prepareRequestRecovery(
      requestInput({ preparation: { status: 'reconciled', appliedInputIds: [InputId('input-a')], input: parts } }),
    );
    expect(result.projection.activeRequest?.input).toEqual(parts);
  });

  it('refuses stale observations: another Request, input, Turn number, or a plan that is not a pre-Turn rollover', async () => {
    const setup = await openOn(preTurnState());
    await expectRefused(setup, setup.coordinator.prepareRequestRecovery(requestInput({ requestId: RequestId('req-b') })), 'DURABLE_RECOVERY_TARGET_NOT_FOUND');
    await expectRefused(setup, setup.coordinator.prepareRequestRecovery(requestInput({ inputId: InputId('input-b') })), 'DURABLE_RECOVERY_INVALID_STATE');
    await expectRefused(setup, setup.coordinator.prepareRequestRecovery(requestInput({ sourceLastTurn: 1 })), 'DURABLE_RECOVERY_INVALID_STATE');
    const accepted = await openOn(acceptedState());
    await expectRefused(
      accepted,
      accepted.coordinator.prepareRequestRecovery(requestInput({ preparation: { status: 'reconciled', appliedInputIds: [], input: 'x' } })),
      'DURABLE_RECOVERY_INVALID_STATE',
    );
    // A real Turn started meanwhile: the pre-Turn decision is stale.
    const journal = await DurableSessionJournal.open(setup.store, setup.sessionId);
    const committed = await journal.commit({
      commandId: CommandId('writer-turn'),
      events: [{ type: 'turn_started', requestId: RequestId('req-a'), turnId: TurnId('turn-real'), data: { turn: 1 } }],
    });
    await expectRefused(
      { ...setup, head: committed.headSequence },
      setup.coordinator.prepareRequestRecovery(requestInput()),
      'DURABLE_RECOVERY_INVALID_STATE',
    );
  });

  it('refuses a recovery Request that reuses the source Request ID', async () => {
    const { coordinator } = await openOn(preTurnState());
    await expect(coordinator.prepareRequestRecovery(requestInput({ recoveryRequestId: RequestId('req-a') }))).rejects.toMatchObject({
      code: 'DURABLE_EVENT_INVALID_INPUT',
    });
  });
});

describe('prepareTurnRecovery', () => {
  it('cancels unfinished tools, ends the Turn and Request, and accepts a continuation Request, in one command', async () => {
    const { coordinator, head } = await openOn(activeTurnState());
    expect(coordinator.getRecoveryPlan().action).toBe('resume_turn');
    const result = await coordinator.prepareTurnRecovery(turnInput());
    expect(result.events.map((event) => [event.type, event.sequence])).toEqual([
      ['tool_cancelled', head + 1],
      ['tool_cancelled', head + 2],
      ['turn_aborted', head + 3],
      ['request_interrupted', head + 4],
      ['request_accepted', head + 5],
    ]);
    expect(result.events.slice(0, 2).map((event) => ('toolAttemptId' in event ? event.toolAttemptId : null))).toEqual(['tool-2', 'tool-3']);
    expect(result.events.slice(0, 3).every((event) => (event.data as { reason?: string }).reason === 'process_restart')).toBe(true);
    const accepted = result.events[4];
    expect(accepted).toMatchObject({
      requestId: 'req-recovery',
      data: { inputId: 'input-recovery', priority: 'next', ...SNAPSHOT, recovery: { requestId: 'req-a', turnId: 'turn-a1', turn: 1 } },
    });
    expect(result.projection.activeRequest).toMatchObject({ requestId: 'req-recovery', recoveryKind: 'active_turn', status: 'accepted' });
    expect(coordinator.planResume()).toMatchObject({ action: 'resume_accepted_request', request: { requestId: 'req-recovery' } });
  });

  it('carries the original input and the durable recovery facts in the continuation', async () => {
    const { coordinator } = await openOn(activeTurnState());
    const result = await coordinator.prepareTurnRecovery(turnInput());
    const input = result.projection.activeRequest?.input;
    if (input === undefined) throw new Error('no recovery Request');
    expect(typeof input).toBe('string');
    const parsed = parseRecoveryContinuation(input);
    expect(parsed?.originalInput).toBe('deploy the service');
    expect(parsed?.continuation).toEqual(result.continuation);
    expect(result.continuation).toMatchObject({
      kind: 'agent_ledger.recovery_continuation',
      version: 1,
      source: { requestId: 'req-a', turnId: 'turn-a1', turn: 1, inputId: 'input-a' },
      discardedUnconfirmedModelResponse: false,
    });
    expect(result.continuation.tools.map((tool) => [tool.toolAttemptId, tool.status])).toEqual([
      ['tool-1', 'completed'],
      ['tool-2', 'interrupted_before_trusted_completion'],
      ['tool-3', 'not_started'],
    ]);
    expect(result.continuation.tools[0]).toMatchObject({ toolName: 'read', result: { text: 'file body' }, modelResponseConfirmed: true });
    expect(result.continuation.modelResponses).toEqual([
      {
        modelAttemptId: 'model-a1',
        model: 'test-model',
        content: 'model says',
        toolCalls: [
          { id: 'call-1', name: 'read' },
          { id: 'call-2', name: 'search' },
          { id: 'call-3', name: 'write' },
        ],
        stopReason: 'tool_use',
        truncated: false,
      },
    ]);
  });

  it('keeps multimodal original content as parts and appends one facts part', async () => {
    const parts: ContentPart[] = [
      { type: 'text', text: 'what is in this image?' },
      { type: 'image', mediaType: 'image/png', data: 'iVBORw0KGgo=' },
    ];
    const { coordinator } = await openOn(activeTurnState().withInput(parts));
    const result = await coordinator.prepareTurnRecovery(turnInput());
    const input = result.projection.activeRequest?.input;
    expect(Array.isArray(input)).toBe(true);
    expect((input as ContentPart[]).slice(0, 2)).toEqual(parts);
    expect(input).toHaveLength(3);
    const parsed = parseRecoveryContinuation(input ?? '');
    expect(parsed?.originalInput).toEqual(parts);
    expect(parsed?.continuation.originalInput).toEqual({ kind: 'parts', partCount: 2 });
  });

  it('bounds confirmed model responses to maxContinuationResponseBytes without splitting a character', async () => {
    const state = RecoveryJournalBuilder.started();
    state.startTurn({ turnId: 'turn-a1' }).modelStarted({ modelAttemptId: 'model-a1' }).modelCompleted();
    const completed = state.events.length - 1;
    const event = state.events[completed];
    if (event === undefined) throw new Error('no event');
    state.events[completed] = { ...event, data: { response: { content: 'héllo wörld' } } } as typeof event;
    const { coordinator } = await openOn(state, { maxContinuationResponseBytes: 2 });
    const result = await coordinator.prepareTurnRecovery(turnInput());
    expect(result.continuation.modelResponses[0]).toMatchObject({ content: 'h', truncated: true });
    const roomy = await openOn(state);
    const full = await roomy.coordinator.prepareTurnRecovery(turnInput());
    expect(full.continuation.modelResponses[0]).toMatchObject({ content: 'héllo wörld', truncated: false });
  });

  it('marks tools of a response that was never confirmed as discarded', async () => {
    const state = unknownModelState();
    state.scheduleTool({ toolAttemptId: 'tool-1', toolCallId: 'call-1', sideEffect: 'pure' }).startTool();
    state.modelFailed();
    const { coordinator } = await openOn(state);
    expect(coordinator.getRecoveryPlan()).toMatchObject({ action: 'resume_turn', discardedUnconfirmedModelResponse: true });
    const result = await coordinator.prepareTurnRecovery(turnInput());
    expect(result.continuation.discardedUnconfirmedModelResponse).toBe(true);
    expect(result.continuation.tools).toEqual([
      expect.objectContaining({ toolAttemptId: 'tool-1', status: 'discarded_unconfirmed_model_response', modelResponseConfirmed: false }),
    ]);
    expect(result.continuation.modelResponses).toEqual([]);
  });

  it('reports a tool denied before it ran as not_started with the denial as reason', async () => {
    const { coordinator } = await openOn(pendingPermissionState().resolvePermission({ decision: 'deny' }));
    const result = await coordinator.prepareTurnRecovery(turnInput());
    expect(result.continuation.tools).toEqual([expect.objectContaining({ status: 'not_started', reason: 'permission_denied' })]);
  });

  describe('a non_idempotent tool that crossed its execution boundary makes the rollover unsafe', () => {
    const cases: Array<[string, () => RecoveryJournalBuilder]> = [
      ['started without outcome', unknownToolState],
      ['started, outcome unknown', () => unknownToolState().toolOutcomeUnknown()],
      ['completed after it started', () => unknownToolState().completeTool()],
      ['failed after it started', () => unknownToolState().failTool()],
      ['cancelled after it started', () => unknownToolState().cancelTool()],
      ['resumed after permission, then completed', () => pendingPermissionState().resolvePermission({ decision: 'allow' }).startTool({ sideEffect: 'non_idempotent' }).completeTool()],
      ['resumed after permission, then cancelled', () => pendingPermissionState().resolvePermission({ decision: 'allow' }).startTool({ sideEffect: 'non_idempotent' }).cancelTool()],
    ];
    it.each(cases)('%s', async (_, state) => {
      const setup = await openOn(state());
      await expectRefused(setup, setup.coordinator.prepareTurnRecovery(turnInput()), 'DURABLE_RECOVERY_UNSAFE_ROLLOVER');
    });

    it('but not a non_idempotent tool cancelled before it started (with or without a permission)', async () => {
      const state = RecoveryJournalBuilder.inTurn([{ id: 'call-1', name: 'deploy' }]);
      state.scheduleTool({ toolAttemptId: 'tool-1', toolCallId: 'call-1', sideEffect: 'non_idempotent' }).cancelTool();
      const { coordinator } = await openOn(state);
      const result = await coordinator.prepareTurnRecovery(turnInput());
      expect(result.continuation.tools).toEqual([expect.objectContaining({ status: 'not_started', reason: 'user_abort' })]);
      const permitted = RecoveryJournalBuilder.inTurn([{ id: 'call-1', name: 'deploy' }]);
      permitted.scheduleTool({ toolAttemptId: 'tool-1', toolCallId: 'call-1', sideEffect: 'non_idempotent' });
      permitted.requestPermission().resolvePermission({ decision: 'allow' }).cancelTool();
      const other = await openOn(permitted);
      await expect(other.coordinator.prepareTurnRecovery(turnInput())).resolves.toMatchObject({ status: 'committed' });
    });
  });

  it('refuses plans other than resume_turn, and a Turn or Request the caller did not observe', async () => {
    const model = await openOn(unknownModelState());
    await expectRefused(model, model.coordinator.prepareTurnRecovery(turnInput()), 'DURABLE_RECOVERY_INVALID_STATE');
    const permission = await openOn(pendingPermissionState());
    await expectRefused(permission, permission.coordinator.prepareTurnRecovery(turnInput()), 'DURABLE_RECOVERY_INVALID_STATE');
    const setup = await openOn(activeTurnState());
    await expectRefused(setup, setup.coordinator.prepareTurnRecovery(turnInput({ turnId: TurnId('turn-newer') })), 'DURABLE_RECOVERY_TARGET_NOT_FOUND');
    await expectRefused(setup, setup.coordinator.prepareTurnRecovery(turnInput({ requestId: RequestId('req-b') })), 'DURABLE_RECOVERY_TARGET_NOT_FOUND');
  });

  it('never targets a newer Turn than the one the caller observed', async () => {
    const state = RecoveryJournalBuilder.inTurn();
    const setup = await openOn(state);
    const journal = await DurableSessionJournal.open(setup.store, setup.sessionId);
    await journal.commit({
      commandId: CommandId('writer-next'),
      events: [
        { type: 'turn_completed', requestId: RequestId('req-a'), turnId: TurnId('turn-a1'), data: { turn: 1, hasToolCalls: false } },
        { type: 'turn_started', requestId: RequestId('req-a'), turnId: TurnId('turn-a2'), data: { turn: 2 } },
      ],
    });
    const stale = await DurableSessionRecoveryCoordinator.open(setup.store, setup.sessionId);
    const error = await rejectionOf(stale.prepareTurnRecovery(turnInput()));
    expect(error).toMatchObject({ code: 'DURABLE_RECOVERY_TARGET_NOT_FOUND', details: { turnId: 'turn-a1', activeTurnId: 'turn-a2' } });
  });

  it("starts no tool itself: the only tool_started events are the crashed writer's", async () => {
    const { store, sessionId, coordinator } = await openOn(activeTurnState());
    await coordinator.prepareTurnRecovery(turnInput());
    const started = (await store.read(sessionId, { limit: 1000 })).events.filter((event) => event.type === 'tool_started');
    expect(started.map((event) => ('toolAttemptId' in event ? event.toolAttemptId : null))).toEqual([
      ToolAttemptId('tool-1'),
      ToolAttemptId('tool-2'),
    ]);
  });
});
