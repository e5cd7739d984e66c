/**
 * The store spec's Recovery Coordinator examples, run as written (adapted to our payload shapes),
 * each on the journal that makes the example meaningful. IDs are the spec's.
 */
import { describe, expect, it } from 'vitest';
import { MemoryDurableEventStore } from '../../src/adapters/memory/memory-store.js';
import { DurableSessionJournal } from '../../src/core/journal/index.js';
import { DurableSessionRecoveryCoordinator } from '../../src/core/recovery/index.js';
import {
  CommandId,
  InputId,
  ModelAttemptId,
  PermissionRequestId,
  RequestId,
  SessionId,
  ToolAttemptId,
  TurnId,
} from '../../src/protocol/ids.js';
import { RecoveryJournalBuilder, seedSession } from './helpers.js';

const sessionId = SessionId('session-123');

async function storeWith(state: RecoveryJournalBuilder): Promise<MemoryDurableEventStore> {
  const store = new MemoryDurableEventStore();
  await seedSession(store, sessionId, state.events);
  return store;
}

/** session_created + the spec's Request `request-42`, started, initial input applied. */
function request42(requestId = 'request-42', inputId = 'input-42'): RecoveryJournalBuilder {
  return new RecoveryJournalBuilder({ sessionId: 'session-123' })
    .createSession()
    .acceptFullRequest({ requestId, inputId, input: 'Run the deployment checks' })
    .startRequest()
    .applyInput();
}

describe('store spec: Recovery Coordinator examples', () => {
  it('open, planResume, reconcileToolOutcome', async () => {
    const state = request42();
    state.startTurn({ turnId: 'turn-42' }).modelStarted({ modelAttemptId: 'model-attempt-42' });
    state.modelCompleted({ toolCalls: [{ id: 'call-42', name: 'deploy', arguments: { env: 'prod' } }] });
    state.scheduleTool({ toolAttemptId: 'attempt-42', toolCallId: 'call-42', sideEffect: 'non_idempotent' });
    state.startTool({ sideEffect: 'non_idempotent', input: { env: 'prod' } });
    const store = await storeWith(state);

    const coordinator = await DurableSessionRecoveryCoordinator.open(store, sessionId);

    const decision = coordinator.planResume();
    if (decision.action === 'resume_accepted_request') {
      console.log(decision.request.input);
    }
    expect(decision).toMatchObject({ action: 'recovery_required', plan: { action: 'reconcile_tool_outcomes' } });

    await coordinator.reconcileToolOutcome({
      commandId: CommandId('reconcile-deploy-42'),
      toolAttemptId: ToolAttemptId('attempt-42'),
      outcome: {
        status: 'completed',
        result: { deploymentId: 'dep-42' },
      },
    });
    expect(coordinator.getProjection().activeRequest?.activeTurn?.toolAttempts['attempt-42']).toMatchObject({
      status: 'completed',
      result: { deploymentId: 'dep-42' },
    });
  });

  it('planResume resumes an accepted Request with its complete snapshot', async () => {
    const store = await storeWith(
      new RecoveryJournalBuilder({ sessionId: 'session-123' }).createSession().acceptFullRequest({ requestId: 'request-123', input: 'Run the deployment checks' }),
    );
    const coordinator = await DurableSessionRecoveryCoordinator.open(store, sessionId);
    const decision = coordinator.planResume();
    expect(decision.action).toBe('resume_accepted_request');
    if (decision.action === 'resume_accepted_request') expect(decision.request.input).toBe('Run the deployment checks');
  });

  it('reconcileModelOutcome, then prepareTurnRecovery carries the confirmed response', async () => {
    const state = request42();
    state.startTurn({ turnId: 'turn-42' }).modelStarted({ modelAttemptId: 'model-attempt-42' });
    const store = await storeWith(state);
    const coordinator = await DurableSessionRecoveryCoordinator.open(store, sessionId);

    await coordinator.reconcileModelOutcome({
      commandId: CommandId('reconcile-model-42'),
      requestId: RequestId('request-42'),
      turnId: TurnId('turn-42'),
      modelAttemptId: ModelAttemptId('model-attempt-42'),
      outcome: {
        status: 'completed',
        response: {
          content: 'Inspected result',
          usage: {
            promptTokens: 120,
            completionTokens: 30,
            totalTokens: 150,
          },
        },
      },
    });

    const rolled = await coordinator.prepareTurnRecovery({
      commandId: CommandId('recover-turn-42'),
      requestId: RequestId('request-42'),
      turnId: TurnId('turn-42'),
      recoveryRequestId: RequestId('request-recovery-42'),
      recoveryInputId: InputId('input-recovery-42'),
    });
    expect(rolled.continuation.modelResponses).toEqual([expect.objectContaining({ content: 'Inspected result', truncated: false })]);
  });

  it('resolvePermission: deny commits permission_resolved and tool_cancelled in one command', async () => {
    const state = request42();
    state.startTurn({ turnId: 'turn-42' }).modelStarted({ modelAttemptId: 'model-attempt-42' });
    state.modelCompleted({ toolCalls: [{ id: 'call-42', name: 'deploy', arguments: { env: 'prod' } }] });
    state.scheduleTool({ toolAttemptId: 'attempt-42', toolCallId: 'call-42' });
    state.requestPermission({ permissionRequestId: 'permission-42' });
    const store = await storeWith(state);
    const coordinator = await DurableSessionRecoveryCoordinator.open(store, sessionId);

    const result = await coordinator.resolvePermission({
      commandId: CommandId('deny-deploy-42'),
      permissionRequestId: PermissionRequestId('permission-42'),
      decision: 'deny',
      message: 'Deployment window closed',
    });
    expect(result.events.map((event) => [event.type, event.commandId])).toEqual([
      ['permission_resolved', 'deny-deploy-42'],
      ['tool_cancelled', 'deny-deploy-42'],
    ]);
  });

  it('prepareRequestRecovery with the observed activeRequest', async () => {
    const store = await storeWith(request42('request-source-42', 'input-source-42'));
    const coordinator = await DurableSessionRecoveryCoordinator.open(store, sessionId);

    const request = coordinator.getProjection().activeRequest;
    if (!request) throw new Error('No active Request');
    const preparedInput = 'prepared input after external reconciliation';

    await coordinator.prepareRequestRecovery({
      commandId: CommandId('recover-request-42'),
      requestId: RequestId('request-source-42'),
      inputId: InputId('input-source-42'),
      sourceLastTurn: request.lastTurn,
      recoveryTurnId: TurnId('synthetic-recovery-turn-42'),
      recoveryRequestId: RequestId('request-recovery-42'),
      recoveryInputId: InputId('input-recovery-42'),
      preparation: {
        status: 'reconciled',
        appliedInputIds: request.appliedInputIds ?? [],
        input: preparedInput,
      },
    });
    expect(coordinator.getProjection().activeRequest).toMatchObject({
      requestId: 'request-recovery-42',
      input: preparedInput,
      recovery: { requestId: 'request-source-42', turnId: 'synthetic-recovery-turn-42', turn: 1 },
      recoveryKind: 'pre_turn_request',
    });
  });

  it('reconcileRequestOutcome binds the terminal Turn event', async () => {
    const state = request42();
    state.startTurn({ turnId: 'turn-42' }).modelStarted().modelCompleted().completeTurn();
    const store = await storeWith(state);
    const coordinator = await DurableSessionRecoveryCoordinator.open(store, sessionId);

    const terminalPending = coordinator.getProjection().activeRequest;
    if (!terminalPending?.lastTurnEventId) {
      throw new Error('No terminal-pending Turn');
    }

    await coordinator.reconcileRequestOutcome({
      commandId: CommandId('reconcile-request-42'),
      requestId: terminalPending.requestId,
      lastTurnEventId: terminalPending.lastTurnEventId,
      outcome: {
        status: 'completed',
        output: 'already completed',
        usage: { inputTokens: 120, outputTokens: 30, totalTokens: 150 },
      },
    });
    expect(coordinator.getProjection().lastRequest).toMatchObject({ requestId: 'request-42', status: 'completed' });
  });

  it('prepareTurnRecovery: the whole rollover retried with the same commandId commits once, even against a moved head', async () => {
    const state = request42('request-source-42', 'input-source-42');
    state.startTurn({ turnId: 'turn-source-42' }).modelStarted().modelCompleted();
    const store = await storeWith(state);
    const coordinator = await DurableSessionRecoveryCoordinator.open(store, sessionId);
    const observedHead = coordinator.getHeadSequence();
    const rollover = (c: DurableSessionRecoveryCoordinator) =>
      c.prepareTurnRecovery({
        commandId: CommandId('recover-turn-42'),
        requestId: RequestId('request-source-42'),
        turnId: TurnId('turn-source-42'),
        recoveryRequestId: RequestId('request-recovery-42'),
        recoveryInputId: InputId('input-recovery-42'),
        ...(observedHead === null ? {} : { expectedHeadSequence: observedHead }),
      });
    const first = await rollover(coordinator);
    // The new accepted Request uses the existing resume path: a writer starts it, the head moves.
    const journal = await DurableSessionJournal.open(store, sessionId);
    await journal.commit({
      commandId: CommandId('resume-recovery-42'),
      events: [{ type: 'request_started', requestId: RequestId('request-recovery-42'), data: {} }],
    });
    const competitor = await DurableSessionRecoveryCoordinator.open(store, sessionId);
    const retried = await rollover(competitor);
    expect(retried.status).toBe('reconciled');
    expect(retried.events.map((event) => event.eventId)).toEqual(first.events.map((event) => event.eventId));
  });
});
