/**
 * One crash per recovery action: the journal a writer leaves when its process stops at that point
 * is written into a store; a new process opens a coordinator on it, follows the plan, and a
 * minimal writer carries whatever it may resume to completion. Every scenario ends with no
 * unfinished work. The same scenarios run on the memory store and on the durable JSONL store
 * (where the crashed writer's store is closed and the recovering process opens a new one).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { MemoryDurableEventStore } from '../../src/adapters/memory/memory-store.js';
import { JsonlDurableEventStore } from '../../src/advanced.js';
import { DurableSessionJournal } from '../../src/core/journal/index.js';
import type { DurableRecoveryAction } from '../../src/core/projector/index.js';
import { DurableSessionRecoveryCoordinator } from '../../src/core/recovery/index.js';
import type { DurableEventStore } from '../../src/core/store.js';
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
import {
  acceptedState,
  activeTurnState,
  expectNoUnfinishedWork,
  finishAcceptedRequest,
  finishActiveTurn,
  finishedState,
  pendingPermissionState,
  preTurnState,
  rejectionOf,
  seedSession,
  steeredState,
  terminalPendingState,
  unknownModelState,
  unknownToolState,
  type RecoveryJournalBuilder,
} from './helpers.js';

type Recover = (coordinator: DurableSessionRecoveryCoordinator, store: DurableEventStore, sessionId: SessionId) => Promise<DurableSessionJournal>;

interface CrashScenario {
  action: DurableRecoveryAction;
  label: string;
  state: () => RecoveryJournalBuilder;
  recover: Recover;
}

const reqA = RequestId('req-a');
const turnA1 = TurnId('turn-a1');

/** Rolls the active Turn over, then resumes and finishes the continuation Request. */
async function rollTurnAndFinish(coordinator: DurableSessionRecoveryCoordinator, store: DurableEventStore, sessionId: SessionId) {
  const rolled = await coordinator.prepareTurnRecovery({
    commandId: CommandId('recover-turn'),
    requestId: reqA,
    turnId: turnA1,
    recoveryRequestId: RequestId('req-recovery'),
    recoveryInputId: InputId('input-recovery'),
  });
  expect(rolled.recoveryPlan.action).toBe('resume_request');
  expect(coordinator.planResume()).toMatchObject({ action: 'resume_accepted_request', request: { requestId: 'req-recovery' } });
  return finishAcceptedRequest(store, sessionId);
}

async function rollRequestAndFinish(
  coordinator: DurableSessionRecoveryCoordinator,
  store: DurableEventStore,
  sessionId: SessionId,
): Promise<DurableSessionJournal> {
  const request = coordinator.getProjection().activeRequest;
  if (request === null) throw new Error('no active Request');
  await coordinator.prepareRequestRecovery({
    commandId: CommandId('recover-request'),
    requestId: request.requestId,
    inputId: request.inputId,
    sourceLastTurn: request.lastTurn,
    recoveryTurnId: TurnId('turn-synthetic'),
    recoveryRequestId: RequestId('req-recovery'),
    recoveryInputId: InputId('input-recovery'),
    preparation: { status: 'reconciled', appliedInputIds: request.appliedInputIds, input: 'prepared input after reconciliation' },
  });
  expect(coordinator.planResume()).toMatchObject({ action: 'resume_accepted_request', request: { requestId: 'req-recovery' } });
  return finishAcceptedRequest(store, sessionId);
}

const scenarios: CrashScenario[] = [
  {
    action: 'none',
    label: 'stopped after the Request completed',
    state: finishedState,
    recover: async (coordinator, store, sessionId) => {
      expect(coordinator.planResume()).toEqual({ action: 'none' });
      return DurableSessionJournal.open(store, sessionId);
    },
  },
  {
    action: 'resume_request',
    label: 'stopped after accepting a Request',
    state: acceptedState,
    recover: async (coordinator, store, sessionId) => {
      expect(coordinator.planResume()).toMatchObject({ action: 'resume_accepted_request', request: { requestId: 'req-a', input: 'deploy the service' } });
      return finishAcceptedRequest(store, sessionId);
    },
  },
  {
    action: 'rollover_request',
    label: 'stopped after request_started and the initial input_applied, before Turn 1',
    state: preTurnState,
    recover: rollRequestAndFinish,
  },
  {
    action: 'resume_turn',
    label: 'stopped mid-Turn with a completed, a started pure and a scheduled tool',
    state: activeTurnState,
    recover: rollTurnAndFinish,
  },
  {
    action: 'resolve_permissions',
    label: 'stopped while a permission was pending (denied on recovery)',
    state: pendingPermissionState,
    recover: async (coordinator, store, sessionId) => {
      const resolved = await coordinator.resolvePermission({
        commandId: CommandId('deny'),
        permissionRequestId: PermissionRequestId('perm-1'),
        decision: 'deny',
      });
      expect(resolved.recoveryPlan.action).toBe('resume_turn');
      return rollTurnAndFinish(coordinator, store, sessionId);
    },
  },
  {
    action: 'resolve_permissions',
    label: 'stopped while a permission was pending (allowed: run, settle, continue the Turn in place)',
    state: pendingPermissionState,
    recover: async (coordinator, store, sessionId) => {
      await coordinator.resolvePermission({ commandId: CommandId('allow'), permissionRequestId: PermissionRequestId('perm-1'), decision: 'allow' });
      const started = await coordinator.startToolAttempt({ commandId: CommandId('start'), toolAttemptId: ToolAttemptId('tool-1') });
      expect(started.toolAttempt).toMatchObject({ sideEffect: 'non_idempotent', input: { target: 'prod' } });
      await coordinator.reconcileToolOutcome({
        commandId: CommandId('settle'),
        toolAttemptId: ToolAttemptId('tool-1'),
        outcome: { status: 'completed', result: { deployed: true } },
      });
      // The permitted tool ran as non_idempotent: the Turn may not roll over, the writer continues it.
      const unsafe = await rejectionOf(
        coordinator.prepareTurnRecovery({
          commandId: CommandId('recover-turn'),
          requestId: reqA,
          turnId: turnA1,
          recoveryRequestId: RequestId('req-recovery'),
          recoveryInputId: InputId('input-recovery'),
        }),
      );
      expect(unsafe).toMatchObject({ code: 'DURABLE_RECOVERY_UNSAFE_ROLLOVER' });
      const journal = await DurableSessionJournal.open(store, sessionId);
      await finishActiveTurn(journal, reqA, turnA1, 1);
      return journal;
    },
  },
  {
    action: 'reconcile_tool_outcomes',
    label: 'stopped after a non_idempotent tool started',
    state: unknownToolState,
    recover: async (coordinator, store, sessionId) => {
      const settled = await coordinator.reconcileToolOutcome({
        commandId: CommandId('reconcile-deploy'),
        toolAttemptId: ToolAttemptId('tool-1'),
        outcome: { status: 'failed', error: { code: 'E_DEPLOY', message: 'the API never received it' } },
      });
      expect(settled.recoveryPlan.action).toBe('resume_turn');
      const journal = await DurableSessionJournal.open(store, sessionId);
      await finishActiveTurn(journal, reqA, turnA1, 1);
      return journal;
    },
  },
  {
    action: 'reconcile_model_outcome',
    label: 'stopped after model_request_started',
    state: unknownModelState,
    recover: async (coordinator, store, sessionId) => {
      const reconciled = await coordinator.reconcileModelOutcome({
        commandId: CommandId('reconcile-model'),
        requestId: reqA,
        turnId: turnA1,
        modelAttemptId: ModelAttemptId('model-a1'),
        outcome: { status: 'completed', response: { content: 'Inspected result', usage: { promptTokens: 120, completionTokens: 30, totalTokens: 150 } } },
      });
      expect(reconciled.recoveryPlan.action).toBe('resume_turn');
      return rollTurnAndFinish(coordinator, store, sessionId);
    },
  },
  {
    action: 'reconcile_request_inputs',
    label: 'stopped after a steering input was applied before Turn 1',
    state: steeredState,
    recover: rollRequestAndFinish,
  },
  {
    action: 'reconcile_request_outcome',
    label: 'stopped after turn_completed, before the Request terminal event',
    state: terminalPendingState,
    recover: async (coordinator, store, sessionId) => {
      const request = coordinator.getProjection().activeRequest;
      if (request?.lastTurnEventId === undefined) throw new Error('no terminal-pending Turn');
      await coordinator.reconcileRequestOutcome({
        commandId: CommandId('reconcile-request'),
        requestId: request.requestId,
        lastTurnEventId: request.lastTurnEventId,
        outcome: { status: 'completed', output: 'already completed' },
      });
      return DurableSessionJournal.open(store, sessionId);
    },
  },
];

const roots: string[] = [];
afterAll(() => {
  for (const root of roots) rmSync(root, { recursive: true, force: true });
});

interface Backend {
  name: string;
  /** The crashed writer's store, then the store of the process that recovers. */
  open(): Promise<{ crashed: DurableEventStore; recovering: () => Promise<DurableEventStore>; close: () => Promise<void> }>;
}

const backends: Backend[] = [
  {
    name: 'MemoryDurableEventStore',
    async open() {
      const store = new MemoryDurableEventStore();
      return { crashed: store, recovering: async () => store, close: async () => undefined };
    },
  },
  {
    name: 'JsonlDurableEventStore',
    async open() {
      const root = mkdtempSync(path.join(os.tmpdir(), 'recovery-crash-'));
      roots.push(root);
      const crashed = new JsonlDurableEventStore(root);
      let recovering: JsonlDurableEventStore | undefined;
      return {
        crashed,
        recovering: async () => {
          await crashed.close();
          recovering = new JsonlDurableEventStore(root);
          return recovering;
        },
        close: async () => {
          await recovering?.close();
        },
      };
    },
  },
];

let sessionCounter = 0;

describe.each(backends)('crash recovery on $name', (backend) => {
  it.each(scenarios.map((scenario) => [scenario.action, scenario.label, scenario] as const))(
    '%s: %s',
    async (action, _label, scenario) => {
      const { crashed, recovering, close } = await backend.open();
      try {
        const sessionId = SessionId(`crash-${sessionCounter++}`);
        await seedSession(crashed, sessionId, scenario.state().events);
        const store = await recovering();
        const coordinator = await DurableSessionRecoveryCoordinator.open(store, sessionId);
        expect(coordinator.getRecoveryPlan().action).toBe(action);
        if (action !== 'none' && action !== 'resume_request') {
          expect(coordinator.planResume()).toMatchObject({ action: 'recovery_required', plan: { action } });
        }
        const journal = await scenario.recover(coordinator, store, sessionId);
        await journal.refresh();
        expectNoUnfinishedWork(journal);
        const reopened = await DurableSessionRecoveryCoordinator.open(store, sessionId);
        expect(reopened.planResume()).toEqual({ action: 'none' });
      } finally {
        await close();
      }
    },
  );
});
