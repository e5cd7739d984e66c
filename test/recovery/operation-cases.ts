/**
 * One table row per coordinator operation: the crash state it starts from, a call with a given
 * commandId, and the event types the call must commit as one command. The generic tests in
 * `operations.test.ts` (happy path, retry, races, stale head) run over every row.
 */
import type { DurableSessionProjection } from '../../src/core/projector/index.js';
import type { DurableRecoveryCommandResult, DurableSessionRecoveryCoordinator } from '../../src/core/recovery/index.js';
import type { DurableEventType } from '../../src/protocol/events.js';
import {
  EventId,
  InputId,
  ModelAttemptId,
  PermissionRequestId,
  RequestId,
  ToolAttemptId,
  TurnId,
  type CommandId,
} from '../../src/protocol/ids.js';
import {
  activeTurnState,
  pendingPermissionState,
  permittedToolState,
  preTurnState,
  terminalPendingState,
  unknownModelState,
  unknownToolState,
  type RecoveryJournalBuilder,
} from './helpers.js';

export interface OperationCase {
  name: string;
  state: () => RecoveryJournalBuilder;
  /** `observed` is the projection the caller inspected before its first attempt (retries reuse it). */
  run: (
    coordinator: DurableSessionRecoveryCoordinator,
    commandId: CommandId,
    observed: DurableSessionProjection,
  ) => Promise<DurableRecoveryCommandResult>;
  types: DurableEventType[];
}

export const operationCases: OperationCase[] = [
  {
    name: 'reconcileToolOutcome',
    state: unknownToolState,
    run: (c, commandId) =>
      c.reconcileToolOutcome({
        commandId,
        toolAttemptId: ToolAttemptId('tool-1'),
        outcome: { status: 'completed', result: { deploymentId: 'dep-42' } },
      }),
    types: ['tool_completed'],
  },
  {
    name: 'reconcileModelOutcome',
    state: unknownModelState,
    run: (c, commandId) =>
      c.reconcileModelOutcome({
        commandId,
        requestId: RequestId('req-a'),
        turnId: TurnId('turn-a1'),
        modelAttemptId: ModelAttemptId('model-a1'),
        outcome: { status: 'completed', response: { content: 'Inspected result' } },
      }),
    types: ['model_request_completed'],
  },
  {
    name: 'resolvePermission',
    state: pendingPermissionState,
    run: (c, commandId) =>
      c.resolvePermission({ commandId, permissionRequestId: PermissionRequestId('perm-1'), decision: 'deny', message: 'closed' }),
    types: ['permission_resolved', 'tool_cancelled'],
  },
  {
    name: 'startToolAttempt',
    state: permittedToolState,
    run: (c, commandId) => c.startToolAttempt({ commandId, toolAttemptId: ToolAttemptId('tool-1') }),
    types: ['tool_started'],
  },
  {
    name: 'prepareRequestRecovery',
    state: preTurnState,
    run: (c, commandId) =>
      c.prepareRequestRecovery({
        commandId,
        requestId: RequestId('req-a'),
        inputId: InputId('input-a'),
        sourceLastTurn: 0,
        recoveryTurnId: TurnId('turn-synthetic'),
        recoveryRequestId: RequestId('req-recovery'),
        recoveryInputId: InputId('input-recovery'),
        preparation: { status: 'reconciled', appliedInputIds: [InputId('input-a')], input: 'prepared input' },
      }),
    types: ['turn_started', 'turn_aborted', 'request_interrupted', 'request_accepted'],
  },
  {
    name: 'prepareTurnRecovery',
    state: activeTurnState,
    run: (c, commandId) =>
      c.prepareTurnRecovery({
        commandId,
        requestId: RequestId('req-a'),
        turnId: TurnId('turn-a1'),
        recoveryRequestId: RequestId('req-recovery'),
        recoveryInputId: InputId('input-recovery'),
      }),
    types: ['tool_cancelled', 'tool_cancelled', 'turn_aborted', 'request_interrupted', 'request_accepted'],
  },
  {
    name: 'reconcileRequestOutcome',
    state: terminalPendingState,
    run: (c, commandId, observed) => {
      const lastTurnEventId = observed.activeRequest?.lastTurnEventId;
      return c.reconcileRequestOutcome({
        commandId,
        requestId: RequestId('req-a'),
        lastTurnEventId: lastTurnEventId ?? EventId('missing'),
        outcome: { status: 'completed', output: 'already completed' },
      });
    },
    types: ['request_completed'],
  },
];
