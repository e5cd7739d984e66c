/**
 * Recovery routes: one `POST /v1/sessions/{sessionId}/recovery/<operation>` per coordinator
 * operation (kebab-case), plus the read-only `GET .../recovery/plan-resume`.
 *
 * Each body is validated with its own zod schema (and, when that fails, with the coordinator's
 * own argument check, so the answer carries the coordinator's exact error); the optional
 * `executionFence` is split off and sent beside the input. The session's object runs the
 * operation on its `DurableSessionRecoveryCoordinator`: one command pinned to the observed (or the
 * caller's) head, `committed` or `reconciled` on a retry with the same `commandId`. An operation
 * the table does not list is simply not routed (404). A call whose RPC fails in transit has an
 * unknown outcome: `DURABLE_COMMAND_OUTCOME_UNKNOWN`; retry it with the same `commandId`.
 */
import type { z } from 'zod';
import {
  PLAN_RESUME_OPERATION,
  sessionJournalRpc,
  type RecoveryInputs,
  type RecoveryMutation,
} from '../../adapters/durable-object/journal-rpc.js';
import {
  parseReconcileModelOutcome,
  parseReconcileRequestOutcome,
  parseReconcileToolOutcome,
  parseResolvePermission,
  parseStartToolAttempt,
} from '../../core/recovery/outcomes.js';
import { parsePrepareRequestRecovery, parsePrepareTurnRecovery } from '../../core/recovery/rollover.js';
import type { DurableExecutionFence } from '../../core/store.js';
import type { DurableErrorCode } from '../../protocol/errors.js';
import type { CommandId } from '../../protocol/ids.js';
import { MAX_REQUEST_BODY_BYTES } from '../body.js';
import { defineSessionRoute, type RouteDefinition } from '../route-kit.js';
import {
  planResumeResponseSchema,
  prepareRequestRecoveryRequestSchema,
  prepareTurnRecoveryRequestSchema,
  reconcileModelOutcomeRequestSchema,
  reconcileRequestOutcomeRequestSchema,
  reconcileToolOutcomeRequestSchema,
  recoveryCommandResponseSchema,
  resolvePermissionRequestSchema,
  startToolAttemptRequestSchema,
  startToolAttemptResponseSchema,
  turnRecoveryResponseSchema,
} from '../schemas-recovery.js';
import { callObject } from '../session-rpc.js';
import { commandOutcomeUnknown, fenceOptions, objectUnavailable, withoutFence } from './journal.js';

/** Codes every mutating recovery route may answer with. */
const COMMON_ERRORS: readonly DurableErrorCode[] = [
  'DURABLE_EVENT_INVALID_INPUT',
  'DURABLE_EVENT_LIMIT_EXCEEDED',
  'DURABLE_EVENT_SEQUENCE_CONFLICT',
  'DURABLE_COMMAND_CONFLICT',
  'DURABLE_RECOVERY_INVALID_STATE',
  'DURABLE_RECOVERY_TARGET_NOT_FOUND',
  'DURABLE_EVENT_PROJECTION_INVALID',
  'DURABLE_EXECUTION_LEASE_REQUIRED',
  'DURABLE_EXECUTION_LEASE_LOST',
  'DURABLE_EXECUTION_LEASE_INVALID',
  'DURABLE_COMMAND_OUTCOME_UNKNOWN',
];

/** What a mutating body always has. */
interface MutationBody {
  commandId: CommandId;
  executionFence?: DurableExecutionFence | undefined;
}

interface MutationRouteDef<O extends RecoveryMutation, B extends MutationBody> {
  operation: O;
  operationId: string;
  summary: string;
  description: string;
  body: z.ZodType<B>;
  /** The coordinator's own argument check, run on a refused body to report its exact error. */
  parse: (value: unknown) => unknown;
  response: z.ZodType;
  extraErrors?: readonly DurableErrorCode[];
}

function mutationRoute<O extends RecoveryMutation, B extends MutationBody>(def: MutationRouteDef<O, B>): RouteDefinition {
  return defineSessionRoute({
    method: 'post',
    path: `/v1/sessions/{sessionId}/recovery/${def.operation}`,
    operationId: def.operationId,
    summary: def.summary,
    description: def.description,
    tags: ['recovery'],
    scope: 'recover',
    body: def.body,
    maxBodyBytes: MAX_REQUEST_BODY_BYTES,
    explainBodyFailure: (raw) => {
      def.parse(withoutFence(raw));
    },
    bodyErrorCode: (key) => (key === 'executionFence' ? 'DURABLE_EXECUTION_LEASE_INVALID' : 'DURABLE_EVENT_INVALID_INPUT'),
    response: { schema: def.response, description: 'The recovery command as stored, with the new projection and plan.' },
    errors: [...COMMON_ERRORS, ...(def.extraErrors ?? [])],
    async handle({ env, sessionId, body }) {
      const { executionFence, ...rest } = body;
      // SAFETY: `rest` passed this operation's schema, which mirrors its coordinator input type;
      // the coordinator checks it again inside the object.
      const input = rest as unknown as RecoveryInputs[O];
      const rpc = sessionJournalRpc(env.SESSIONS, sessionId);
      return callObject(
        () => rpc.recover(sessionId, def.operation, input, fenceOptions(executionFence)),
        commandOutcomeUnknown(body.commandId),
      );
    },
  });
}

/** The recovery routes. */
export function recoveryRoutes(): RouteDefinition[] {
  return [
    mutationRoute({
      operation: 'reconcile-tool-outcome',
      operationId: 'reconcileToolOutcome',
      summary: 'Record the outcome of a tool attempt established outside the log',
      description:
        'completed / failed need a started tool; cancelled also ends one that never started. Reuse the commandId when retrying.',
      body: reconcileToolOutcomeRequestSchema,
      parse: parseReconcileToolOutcome,
      response: recoveryCommandResponseSchema,
    }),
    mutationRoute({
      operation: 'reconcile-model-outcome',
      operationId: 'reconcileModelOutcome',
      summary: 'Record the outcome of a model attempt that started without one',
      description: 'Binds the Request, Turn and Model Attempt; established from provider or application records.',
      body: reconcileModelOutcomeRequestSchema,
      parse: parseReconcileModelOutcome,
      response: recoveryCommandResponseSchema,
    }),
    mutationRoute({
      operation: 'resolve-permission',
      operationId: 'resolvePermission',
      summary: 'Resolve a pending permission',
      description: 'deny / cancel also cancel the tool in the same command.',
      body: resolvePermissionRequestSchema,
      parse: parseResolvePermission,
      response: recoveryCommandResponseSchema,
    }),
    mutationRoute({
      operation: 'start-tool-attempt',
      operationId: 'startToolAttempt',
      summary: 'Commit tool_started for a scheduled or permitted tool, from persisted facts only',
      description:
        'Run the returned toolAttempt.input only after `committed`. A tool resumed after a permission starts as non_idempotent.',
      body: startToolAttemptRequestSchema,
      parse: parseStartToolAttempt,
      response: startToolAttemptResponseSchema,
    }),
    mutationRoute({
      operation: 'prepare-request-recovery',
      operationId: 'prepareRequestRecovery',
      summary: 'Roll a Request that started no Turn into a recovery Request',
      description:
        'For plans rollover_request / reconcile_request_inputs: echo the observed inputId, sourceLastTurn and appliedInputIds, and give the final prepared input.',
      body: prepareRequestRecoveryRequestSchema,
      parse: parsePrepareRequestRecovery,
      response: recoveryCommandResponseSchema,
    }),
    mutationRoute({
      operation: 'prepare-turn-recovery',
      operationId: 'prepareTurnRecovery',
      summary: 'Roll the active Turn into a continuation Request',
      description:
        'For plan resume_turn. Refused with DURABLE_RECOVERY_UNSAFE_ROLLOVER when a non_idempotent tool crossed its execution boundary.',
      body: prepareTurnRecoveryRequestSchema,
      parse: parsePrepareTurnRecovery,
      response: turnRecoveryResponseSchema,
      extraErrors: ['DURABLE_RECOVERY_UNSAFE_ROLLOVER'],
    }),
    mutationRoute({
      operation: 'reconcile-request-outcome',
      operationId: 'reconcileRequestOutcome',
      summary: 'Commit the terminal event of a Request whose last Turn ended without one',
      description: 'Anchored to the terminal Turn event the caller inspected (lastTurnEventId).',
      body: reconcileRequestOutcomeRequestSchema,
      parse: parseReconcileRequestOutcome,
      response: recoveryCommandResponseSchema,
    }),
    defineSessionRoute({
      method: 'get',
      path: `/v1/sessions/{sessionId}/recovery/${PLAN_RESUME_OPERATION}`,
      operationId: 'planResume',
      summary: 'Whether the session can resume without a recovery command',
      description:
        'resume_accepted_request only for an accepted Request without a start boundary that carries its complete execution snapshot; recovery_required (with the plan) for anything else unfinished.',
      tags: ['recovery'],
      scope: 'recover',
      response: { schema: planResumeResponseSchema, description: 'The decision and the head it was taken on.' },
      errors: ['DURABLE_EVENT_INVALID_INPUT', 'DURABLE_EVENT_PROJECTION_INVALID', 'DURABLE_EVENT_UNAVAILABLE'],
      async handle({ env, sessionId }) {
        const rpc = sessionJournalRpc(env.SESSIONS, sessionId);
        return callObject(() => rpc.recover(sessionId, PLAN_RESUME_OPERATION, undefined), objectUnavailable);
      },
    }),
  ];
}
