/**
 * The single-target operations, one by one: what each writes, which target and state it accepts,
 * and which stale or wrong observation it refuses (TARGET_NOT_FOUND vs INVALID_STATE), with
 * nothing written on every refusal.
 */
import { describe, expect, it } from 'vitest';
import { DurableSessionJournal } from '../../src/core/journal/index.js';
import {
  DurableCommandConflictError,
  DurableEventProjectionError,
  DurableEventStoreError,
  DurableSessionRecoveryError,
} from '../../src/protocol/errors.js';
import {
  CommandId,
  EventId,
  ModelAttemptId,
  PermissionRequestId,
  RequestId,
  ToolAttemptId,
  TurnId,
} from '../../src/protocol/ids.js';
import {
  activeTurnState,
  finishActiveTurn,
  openOn,
  pendingPermissionState,
  permittedToolState,
  readAll,
  RecoveryJournalBuilder,
  rejectionOf,
  terminalPendingState,
  unknownModelState,
  unknownToolState,
} from './helpers.js';

const tool1 = ToolAttemptId('tool-1');

async function expectRecoveryError(promise: Promise<unknown>, code: string): Promise<void> {
  const error = await rejectionOf(promise);
  expect(error).toBeInstanceOf(DurableSessionRecoveryError);
  expect(error).toMatchObject({ code });
}

async function expectNothingWritten(setup: { store: { getHeadSequence: (s: never) => Promise<unknown> }; sessionId: unknown; head: number }): Promise<void> {
  // SAFETY: test helper; the session id has the right brand at run time.
  expect(await setup.store.getHeadSequence(setup.sessionId as never)).toBe(setup.head);
}

describe('reconcileToolOutcome', () => {
  it('records completed, failed or cancelled for a started tool, with the tool identity from the log', async () => {
    for (const [outcome, type, data] of [
      [{ status: 'completed', result: { deploymentId: 'dep-42' } }, 'tool_completed', { result: { deploymentId: 'dep-42' } }],
      [{ status: 'failed', error: { code: 'E_API', message: 'refused' } }, 'tool_failed', { error: { code: 'E_API', message: 'refused' } }],
      [{ status: 'cancelled' }, 'tool_cancelled', { reason: 'recovery' }],
      [{ status: 'cancelled', reason: 'user_abort' }, 'tool_cancelled', { reason: 'user_abort' }],
    ] as const) {
      const { coordinator } = await openOn(unknownToolState());
      const result = await coordinator.reconcileToolOutcome({ commandId: CommandId('rc-tool'), toolAttemptId: tool1, outcome });
      expect(result.events).toHaveLength(1);
      expect(result.events[0]).toMatchObject({
        type,
        requestId: 'req-a',
        turnId: 'turn-a1',
        toolAttemptId: 'tool-1',
        data: { toolCallId: 'call-1', toolName: 'deploy', ...data },
      });
      expect(result.recoveryPlan.action).toBe('resume_turn');
    }
  });

  it('settles a tool whose writer recorded tool_outcome_unknown', async () => {
    const state = RecoveryJournalBuilder.inTurn([{ id: 'call-1', name: 'deploy' }]);
    state.scheduleTool({ toolAttemptId: 'tool-1', toolCallId: 'call-1', sideEffect: 'non_idempotent' });
    state.startTool({ sideEffect: 'non_idempotent' }).toolOutcomeUnknown();
    const { coordinator } = await openOn(state);
    expect(coordinator.getRecoveryPlan().action).toBe('reconcile_tool_outcomes');
    const result = await coordinator.reconcileToolOutcome({
      commandId: CommandId('rc-tool'),
      toolAttemptId: tool1,
      outcome: { status: 'completed', result: null },
    });
    expect(result.projection.activeRequest?.activeTurn?.toolAttempts['tool-1']?.status).toBe('completed');
  });

  it('refuses tools that are not addressable (unknown, already ended) with TARGET_NOT_FOUND', async () => {
    const setup = await openOn(activeTurnState());
    await expectRecoveryError(
      setup.coordinator.reconcileToolOutcome({ commandId: CommandId('rc-x'), toolAttemptId: ToolAttemptId('nope'), outcome: { status: 'cancelled' } }),
      'DURABLE_RECOVERY_TARGET_NOT_FOUND',
    );
    await expectRecoveryError(
      setup.coordinator.reconcileToolOutcome({ commandId: CommandId('rc-y'), toolAttemptId: tool1, outcome: { status: 'cancelled' } }),
      'DURABLE_RECOVERY_TARGET_NOT_FOUND',
    );
    await expectNothingWritten(setup);
  });

  it('refuses an outcome for a tool that never started, and any outcome while a permission is pending (INVALID_STATE)', async () => {
    const scheduled = await openOn(activeTurnState());
    await expectRecoveryError(
      scheduled.coordinator.reconcileToolOutcome({
        commandId: CommandId('rc-x'),
        toolAttemptId: ToolAttemptId('tool-3'),
        outcome: { status: 'completed', result: 1 },
      }),
      'DURABLE_RECOVERY_INVALID_STATE',
    );
    await expectNothingWritten(scheduled);
    await expect(
      scheduled.coordinator.reconcileToolOutcome({ commandId: CommandId('rc-y'), toolAttemptId: ToolAttemptId('tool-3'), outcome: { status: 'cancelled' } }),
    ).resolves.toMatchObject({ status: 'committed' });
    const pending = await openOn(pendingPermissionState());
    await expectRecoveryError(
      pending.coordinator.reconcileToolOutcome({ commandId: CommandId('rc-z'), toolAttemptId: tool1, outcome: { status: 'cancelled' } }),
      'DURABLE_RECOVERY_INVALID_STATE',
    );
    await expectNothingWritten(pending);
  });

  it('checks its argument strictly before any store call', async () => {
    const setup = await openOn(unknownToolState());
    const bad: unknown[] = [
      { commandId: 'rc-1', toolAttemptId: 'tool-1', outcome: { status: 'done' } },
      { commandId: 'rc-1', toolAttemptId: 'tool-1', outcome: { status: 'completed' } },
      { commandId: 'rc-1', toolAttemptId: 'tool-1', outcome: { status: 'completed', result: 1, extra: true } },
      { commandId: 'rc-1', toolAttemptId: 'tool-1', outcome: { status: 'completed', result: Number.NaN } },
      { commandId: '', toolAttemptId: 'tool-1', outcome: { status: 'cancelled' } },
      { commandId: 'rc-1', toolAttemptId: 'tool-1', outcome: { status: 'cancelled', reason: 'because' } },
      { commandId: 'rc-1', toolAttemptId: 'tool-1', outcome: { status: 'cancelled' }, force: true },
      { commandId: 'rc-1', toolAttemptId: 'tool-1', outcome: { status: 'cancelled' }, expectedHeadSequence: 0 },
    ];
    for (const input of bad) {
      // SAFETY: deliberately malformed input, as an untyped caller could send it.
      const error = await rejectionOf(setup.coordinator.reconcileToolOutcome(input as never));
      expect(error).toBeInstanceOf(DurableEventStoreError);
      expect(error).toMatchObject({ code: 'DURABLE_EVENT_INVALID_INPUT' });
    }
    await expectNothingWritten(setup);
  });

  it('treats a reused commandId with another outcome, or for another operation, as a command conflict', async () => {
    const { coordinator } = await openOn(unknownToolState());
    await coordinator.reconcileToolOutcome({ commandId: CommandId('rc-1'), toolAttemptId: tool1, outcome: { status: 'completed', result: 'A' } });
    const otherContent = await rejectionOf(
      coordinator.reconcileToolOutcome({ commandId: CommandId('rc-1'), toolAttemptId: tool1, outcome: { status: 'completed', result: 'B' } }),
    );
    expect(otherContent).toBeInstanceOf(DurableCommandConflictError);
    const otherOperation = await rejectionOf(
      coordinator.startToolAttempt({ commandId: CommandId('rc-1'), toolAttemptId: tool1 }),
    );
    expect(otherOperation).toBeInstanceOf(DurableCommandConflictError);
  });
});

describe('reconcileModelOutcome', () => {
  const target = { requestId: RequestId('req-a'), turnId: TurnId('turn-a1'), modelAttemptId: ModelAttemptId('model-a1') };

  it('records completed, failed or aborted, bound to the Request, Turn and Model Attempt', async () => {
    for (const [outcome, type, data] of [
      [{ status: 'completed', response: { content: 'Inspected result' } }, 'model_request_completed', { response: { content: 'Inspected result' } }],
      [{ status: 'failed', error: { code: 'E_PROVIDER', message: 'billing record says failed' } }, 'model_request_failed', { error: { code: 'E_PROVIDER', message: 'billing record says failed' } }],
      [{ status: 'aborted' }, 'model_request_aborted', { reason: 'recovery' }],
    ] as const) {
      const { coordinator } = await openOn(unknownModelState());
      expect(coordinator.getRecoveryPlan().action).toBe('reconcile_model_outcome');
      const result = await coordinator.reconcileModelOutcome({ commandId: CommandId('rc-model'), ...target, outcome });
      expect(result.events).toEqual([expect.objectContaining({ type, ...target, data })]);
      expect(result.recoveryPlan.action).toBe('resume_turn');
    }
  });

  it('refuses another Request, Turn or attempt (TARGET_NOT_FOUND) and a settled attempt (INVALID_STATE)', async () => {
    const setup = await openOn(unknownModelState());
    const outcome = { status: 'aborted' } as const;
    for (const wrong of [
      { requestId: RequestId('req-other') },
      { turnId: TurnId('turn-other') },
      { modelAttemptId: ModelAttemptId('model-other') },
    ]) {
      await expectRecoveryError(
        setup.coordinator.reconcileModelOutcome({ commandId: CommandId('rc-m'), ...target, ...wrong, outcome }),
        'DURABLE_RECOVERY_TARGET_NOT_FOUND',
      );
    }
    await expectNothingWritten(setup);
    const settled = await openOn(activeTurnState());
    await expectRecoveryError(
      settled.coordinator.reconcileModelOutcome({ commandId: CommandId('rc-m'), ...target, outcome }),
      'DURABLE_RECOVERY_INVALID_STATE',
    );
    await expectNothingWritten(settled);
  });

  it('lets the journal preview reject a response that contradicts tools already scheduled from the attempt', async () => {
    const state = unknownModelState();
    state.scheduleTool({ toolAttemptId: 'tool-1', toolCallId: 'call-1', toolName: 'deploy', modelInput: { env: 'prod' } });
    const setup = await openOn(state);
    const error = await rejectionOf(
      setup.coordinator.reconcileModelOutcome({
        commandId: CommandId('rc-m'),
        ...target,
        outcome: { status: 'completed', response: { content: 'no tools called' } },
      }),
    );
    expect(error).toBeInstanceOf(DurableEventProjectionError);
    await expectNothingWritten(setup);
  });
});

describe('resolvePermission', () => {
  const permission = PermissionRequestId('perm-1');

  it('commits deny / cancel together with the tool cancellation in one batch', async () => {
    for (const [decision, reason] of [
      ['deny', 'permission_denied'],
      ['cancel', 'permission_cancelled'],
    ] as const) {
      const { store, sessionId, head, coordinator } = await openOn(pendingPermissionState());
      let appends = 0;
      const unwatch = store.watch(sessionId, () => (appends += 1));
      const result = await coordinator.resolvePermission({
        commandId: CommandId('rc-perm'),
        permissionRequestId: permission,
        decision,
        message: 'Deployment window closed',
      });
      unwatch();
      expect(appends).toBe(1);
      expect(result.events.map((event) => [event.type, event.sequence])).toEqual([
        ['permission_resolved', head + 1],
        ['tool_cancelled', head + 2],
      ]);
      expect(result.events[0]?.data).toEqual({ permissionRequestId: 'perm-1', decision, message: 'Deployment window closed' });
      expect(result.events[1]?.data).toMatchObject({ toolCallId: 'call-1', toolName: 'deploy', reason });
      expect(result.projection.activeRequest?.activeTurn?.toolAttempts['tool-1']?.status).toBe('cancelled');
      expect(result.recoveryPlan.action).toBe('resume_turn');
    }
  });

  it('commits allow alone: the tool waits for startToolAttempt', async () => {
    const { coordinator } = await openOn(pendingPermissionState());
    const result = await coordinator.resolvePermission({ commandId: CommandId('rc-perm'), permissionRequestId: permission, decision: 'allow' });
    expect(result.events.map((event) => event.type)).toEqual(['permission_resolved']);
    expect(result.projection.activeRequest?.activeTurn?.toolAttempts['tool-1']?.status).toBe('permission_allowed');
  });

  it('refuses a permission that is not pending (unknown or already resolved) with TARGET_NOT_FOUND', async () => {
    const setup = await openOn(permittedToolState());
    for (const id of ['perm-1', 'perm-unknown']) {
      await expectRecoveryError(
        setup.coordinator.resolvePermission({ commandId: CommandId('rc-perm'), permissionRequestId: PermissionRequestId(id), decision: 'deny' }),
        'DURABLE_RECOVERY_TARGET_NOT_FOUND',
      );
    }
    await expectNothingWritten(setup);
  });
});

describe('startToolAttempt', () => {
  it('starts a permitted tool as non_idempotent with the input the permission persisted, and returns it', async () => {
    const { coordinator } = await openOn(permittedToolState());
    const result = await coordinator.startToolAttempt({ commandId: CommandId('rc-start'), toolAttemptId: tool1 });
    expect(result.events).toEqual([
      expect.objectContaining({
        type: 'tool_started',
        toolAttemptId: 'tool-1',
        data: { toolCallId: 'call-1', toolName: 'deploy', input: { target: 'prod' }, sideEffect: 'non_idempotent' },
      }),
    ]);
    expect(result.toolAttempt).toMatchObject({ status: 'started', input: { target: 'prod' }, sideEffect: 'non_idempotent' });
    const again = await coordinator.startToolAttempt({ commandId: CommandId('rc-start'), toolAttemptId: tool1 });
    expect(again.status).toBe('reconciled');
    expect(again.toolAttempt?.status).toBe('started');
  });

  it('keeps the scheduled side-effect class of a tool without a permission round trip', async () => {
    const { coordinator } = await openOn(activeTurnState());
    const result = await coordinator.startToolAttempt({ commandId: CommandId('rc-start'), toolAttemptId: ToolAttemptId('tool-3') });
    expect(result.events[0]?.data).toMatchObject({ sideEffect: 'idempotent', input: { call: 'call-3' } });
  });

  it('takes no side-effect class from the caller: a downgrade attempt is invalid input', async () => {
    const setup = await openOn(permittedToolState());
    // SAFETY: deliberately passes a key the API does not have.
    const error = await rejectionOf(setup.coordinator.startToolAttempt({ commandId: CommandId('rc-start'), toolAttemptId: tool1, sideEffect: 'pure' } as never));
    expect(error).toMatchObject({ code: 'DURABLE_EVENT_INVALID_INPUT' });
    await expectNothingWritten(setup);
  });

  it('refuses a tool that awaits permission, was denied, already started, or comes from an unconfirmed response', async () => {
    const pending = await openOn(pendingPermissionState());
    await expectRecoveryError(pending.coordinator.startToolAttempt({ commandId: CommandId('rc-s'), toolAttemptId: tool1 }), 'DURABLE_RECOVERY_INVALID_STATE');
    const denied = await openOn(pendingPermissionState().resolvePermission({ decision: 'deny' }));
    await expectRecoveryError(denied.coordinator.startToolAttempt({ commandId: CommandId('rc-s'), toolAttemptId: tool1 }), 'DURABLE_RECOVERY_INVALID_STATE');
    const started = await openOn(activeTurnState());
    await expectRecoveryError(
      started.coordinator.startToolAttempt({ commandId: CommandId('rc-s'), toolAttemptId: ToolAttemptId('tool-2') }),
      'DURABLE_RECOVERY_INVALID_STATE',
    );
    const streaming = unknownModelState();
    streaming.scheduleTool({ toolAttemptId: 'tool-1', toolCallId: 'call-1' });
    const unconfirmed = await openOn(streaming);
    await expectRecoveryError(unconfirmed.coordinator.startToolAttempt({ commandId: CommandId('rc-s'), toolAttemptId: tool1 }), 'DURABLE_RECOVERY_INVALID_STATE');
    for (const setup of [pending, denied, started, unconfirmed]) await expectNothingWritten(setup);
  });
});

describe('reconcileRequestOutcome', () => {
  it('commits the terminal event anchored to the inspected terminal Turn event', async () => {
    for (const [outcome, type] of [
      [{ status: 'completed', output: 'already completed', usage: { inputTokens: 120, outputTokens: 30, totalTokens: 150 } }, 'request_completed'],
      [{ status: 'failed', error: { code: 'E_FINAL', message: 'provider record shows failure' } }, 'request_failed'],
      [{ status: 'interrupted', reason: 'user_abort' }, 'request_interrupted'],
    ] as const) {
      const { coordinator } = await openOn(terminalPendingState());
      const anchor = coordinator.getProjection().activeRequest?.lastTurnEventId;
      if (anchor === undefined) throw new Error('no anchor');
      const result = await coordinator.reconcileRequestOutcome({ commandId: CommandId('rc-req'), requestId: RequestId('req-a'), lastTurnEventId: anchor, outcome });
      expect(result.events).toEqual([expect.objectContaining({ type, requestId: 'req-a', causationEventId: anchor })]);
      expect(result.recoveryPlan.action).toBe('none');
      expect(result.projection.lastRequest).toMatchObject({ requestId: 'req-a', status: outcome.status });
    }
  });

  it('fails closed on another anchor, another Request, or a newer Turn', async () => {
    const setup = await openOn(terminalPendingState());
    const anchor = setup.coordinator.getProjection().activeRequest?.lastTurnEventId;
    if (anchor === undefined) throw new Error('no anchor');
    const outcome = { status: 'completed' } as const;
    await expectRecoveryError(
      setup.coordinator.reconcileRequestOutcome({ commandId: CommandId('rc-1'), requestId: RequestId('req-a'), lastTurnEventId: EventId('evt-other'), outcome }),
      'DURABLE_RECOVERY_INVALID_STATE',
    );
    await expectRecoveryError(
      setup.coordinator.reconcileRequestOutcome({ commandId: CommandId('rc-2'), requestId: RequestId('req-b'), lastTurnEventId: anchor, outcome }),
      'DURABLE_RECOVERY_TARGET_NOT_FOUND',
    );
    await expectNothingWritten(setup);
    // The writer moves on to Turn 2: the inspected anchor is stale.
    const journal = await DurableSessionJournal.open(setup.store, setup.sessionId);
    await journal.commit({
      commandId: CommandId('writer-turn-2'),
      events: [{ type: 'turn_started', requestId: RequestId('req-a'), turnId: TurnId('turn-a2'), data: { turn: 2 } }],
    });
    await expectRecoveryError(
      setup.coordinator.reconcileRequestOutcome({ commandId: CommandId('rc-3'), requestId: RequestId('req-a'), lastTurnEventId: anchor, outcome }),
      'DURABLE_RECOVERY_INVALID_STATE',
    );
    // ... and once Turn 2 ended, only its own terminal event is an acceptable anchor.
    await finishActiveTurn(journal, RequestId('req-a'), TurnId('turn-a2'), 2);
    expect((await readAll(setup.store, setup.sessionId)).at(-1)?.type).toBe('request_completed');
  });

  it('refuses a retry of the same commandId with another anchor as a command conflict', async () => {
    const { coordinator } = await openOn(terminalPendingState());
    const anchor = coordinator.getProjection().activeRequest?.lastTurnEventId;
    if (anchor === undefined) throw new Error('no anchor');
    const input = { commandId: CommandId('rc-1'), requestId: RequestId('req-a'), outcome: { status: 'completed' } } as const;
    await coordinator.reconcileRequestOutcome({ ...input, lastTurnEventId: anchor });
    await expect(coordinator.reconcileRequestOutcome({ ...input, lastTurnEventId: anchor })).resolves.toMatchObject({ status: 'reconciled' });
    const error = await rejectionOf(coordinator.reconcileRequestOutcome({ ...input, lastTurnEventId: EventId('evt-1') }));
    expect(error).toBeInstanceOf(DurableCommandConflictError);
  });
});
