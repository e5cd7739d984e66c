/**
 * Recovery routes, derived from the one table of operations (src/protocol/recovery-operations.ts):
 * one `POST /v1/sessions/{sessionId}/recovery/<segment>` per mutation row, and `GET` for the
 * read-only `planResume` row. Nothing here is written per operation.
 *
 * Each body is validated with its row's zod schema (and, when that fails, with the coordinator's
 * own argument check, so the answer carries the coordinator's exact error); the optional
 * `executionFence` is split off and sent beside the input. The session's object runs the
 * operation on its `DurableSessionRecoveryCoordinator`: one command pinned to the observed (or the
 * caller's) head, `committed` or `reconciled` on a retry with the same `commandId`. A call whose
 * RPC fails in transit has an unknown outcome: `DURABLE_COMMAND_OUTCOME_UNKNOWN`; retry it with
 * the same `commandId`.
 */
import type { z } from 'zod';
import type { RecoveryInputs } from '../../adapters/durable-object/journal-rpc.js';
import { RECOVERY_INPUT_PARSERS } from '../../core/recovery/input-parsers.js';
import type { DurableExecutionFence } from '../../core/store.js';
import type { DurableErrorCode } from '../../protocol/errors.js';
import { recoveryPathTemplate } from '../../protocol/http-paths.js';
import type { CommandId } from '../../protocol/ids.js';
import {
  PLAN_RESUME_OPERATION,
  RECOVERY_MUTATIONS,
  RECOVERY_OPERATIONS,
  type RecoveryMutation,
  type RecoveryOperationSpec,
} from '../../protocol/recovery-operations.js';
import { MAX_REQUEST_BODY_BYTES } from '../body.js';
import { defineSessionRoute, type RouteDefinition } from '../route-kit.js';
import { RECOVERY_RESPONSE_SCHEMAS, recoveryRequestSchema } from '../schemas-recovery.js';
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

function mutationRoute(operation: RecoveryMutation): RouteDefinition {
  const spec: RecoveryOperationSpec = RECOVERY_OPERATIONS[operation];
  const parse = RECOVERY_INPUT_PARSERS[operation];
  // SAFETY: every row's input has commandId and the body schema adds executionFence.
  const body = recoveryRequestSchema(operation) as unknown as z.ZodType<MutationBody>;
  return defineSessionRoute({
    method: 'post',
    path: recoveryPathTemplate(operation),
    operationId: operation,
    summary: spec.summary,
    description: spec.description,
    tags: ['recovery'],
    scope: 'recover',
    body,
    maxBodyBytes: MAX_REQUEST_BODY_BYTES,
    explainBodyFailure: (raw) => {
      parse(withoutFence(raw));
    },
    bodyErrorCode: (key) => (key === 'executionFence' ? 'DURABLE_EXECUTION_LEASE_INVALID' : 'DURABLE_EVENT_INVALID_INPUT'),
    response: {
      schema: RECOVERY_RESPONSE_SCHEMAS[spec.response],
      description: 'The recovery command as stored, with the new projection and plan.',
    },
    errors: [...COMMON_ERRORS, ...(spec.extraErrors ?? [])],
    async handle({ object: rpc, sessionId, body }) {
      const { executionFence, ...rest } = body;
      // SAFETY: `rest` passed this operation's schema, which mirrors its coordinator input type;
      // the coordinator checks it again inside the object.
      const input = rest as unknown as RecoveryInputs[RecoveryMutation];
      return callObject(
        () => rpc.recover(sessionId, operation, input, fenceOptions(executionFence)),
        commandOutcomeUnknown(body.commandId),
      );
    },
  });
}

/** The recovery routes: one per row of `RECOVERY_OPERATIONS`. */
export function recoveryRoutes(): RouteDefinition[] {
  const planResume = RECOVERY_OPERATIONS[PLAN_RESUME_OPERATION];
  return [
    ...RECOVERY_MUTATIONS.map(mutationRoute),
    defineSessionRoute({
      method: 'get',
      path: recoveryPathTemplate(PLAN_RESUME_OPERATION),
      operationId: PLAN_RESUME_OPERATION,
      summary: planResume.summary,
      description: planResume.description,
      tags: ['recovery'],
      scope: 'recover',
      response: { schema: RECOVERY_RESPONSE_SCHEMAS[planResume.response], description: 'The decision and the head it was taken on.' },
      errors: ['DURABLE_EVENT_INVALID_INPUT', 'DURABLE_EVENT_PROJECTION_INVALID', 'DURABLE_EVENT_UNAVAILABLE'],
      async handle({ object: rpc, sessionId }) {
        return callObject(() => rpc.recover(sessionId, PLAN_RESUME_OPERATION, undefined), objectUnavailable);
      },
    }),
  ];
}
