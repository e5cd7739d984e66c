/**
 * The recovery operations: ONE table, runtime-neutral.
 *
 * Each row is one operation of `DurableSessionRecoveryCoordinator`, keyed by the coordinator's
 * method name, and becomes one row of `SESSION_OPERATIONS` (src/core/operations/, host
 * `recovery`), from which everything else is derived like for any session operation: the object's
 * `operation` RPC and its host (`src/edge/recovery-host.ts`), `callOperation`, the HTTP route
 * `POST /v1/sessions/{sessionId}/recovery/<segment>` (`GET` for a read-only row) with its body
 * schema (`input` plus an optional `executionFence`), OpenAPI entry and route-table line, and the
 * HTTP client's call. The positional `recover(sessionId, operation, input, options)` of the object,
 * `sessionClient` and `HttpDurableEventStore` types each input and result from the coordinator
 * method of the same name (`src/adapters/durable-object/journal-rpc.ts`) and runs the row.
 * `planActions` names the projector's recovery-plan actions that the operation answers, so the
 * plan's `resolve_permissions`, the method `resolvePermission` and the URL segment
 * `resolve-permission` are one row, not three spellings in six files.
 *
 * Adding an operation: the coordinator method (and its input parser in
 * `src/core/recovery/input-parsers.ts`, which the compiler then demands), and one row here.
 */
import { z } from 'zod';
import type { DurableErrorCode } from './errors.js';
import {
  commandIdSchema,
  durableErrorInfoSchema,
  durableInputSchema,
  durableReasonSchema,
  eventIdSchema,
  eventSequenceSchema,
  inputIdSchema,
  modelAttemptIdSchema,
  modelResponseSchema,
  permissionDecisionSchema,
  permissionRequestIdSchema,
  requestIdSchema,
  requestUsageSchema,
  toolAttemptIdSchema,
  turnIdSchema,
} from './events.js';
import { jsonValueSchema } from './json.js';

/** Shape of the answer of an operation (the HTTP layer maps each to its response schema). */
export type RecoveryResponseKind = 'command' | 'startToolAttempt' | 'turnRecovery' | 'planResume';

/** One row of {@link RECOVERY_OPERATIONS}. */
export interface RecoveryOperationSpec {
  /** The URL path segment under `/v1/sessions/{sessionId}/recovery/` (kebab-case). */
  readonly segment: string;
  /** True: commits one recovery command (`POST`). False: read-only, takes no input (`GET`). */
  readonly mutates: boolean;
  /** One line for the route table and OpenAPI. */
  readonly summary: string;
  readonly description: string;
  /** The projector's recovery-plan actions (`DurableRecoveryAction`) this operation answers. */
  readonly planActions: readonly string[];
  /** The coordinator input's schema (mutations only); the HTTP body adds `executionFence`. */
  readonly input?: z.ZodObject;
  readonly response: RecoveryResponseKind;
  /** Domain codes beyond those every mutation may answer with. */
  readonly extraErrors?: readonly DurableErrorCode[];
}

const expectedHeadSequenceSchema = eventSequenceSchema.nullable().optional().meta({
  description:
    'The head the decision was based on: the command commits only while the log head is exactly this (null: an empty log). Absent: after the current head (the coordinator pins the head it observes).',
});

/** Fields every recovery command input has besides its own. */
export const recoveryCommandFields = {
  commandId: commandIdSchema,
  expectedHeadSequence: expectedHeadSequenceSchema,
};

const toolOutcomeSchema = z
  .discriminatedUnion('status', [
    z.strictObject({ status: z.literal('completed'), result: jsonValueSchema }),
    z.strictObject({ status: z.literal('failed'), error: durableErrorInfoSchema }),
    z.strictObject({ status: z.literal('cancelled'), reason: durableReasonSchema.optional() }),
  ])
  .meta({ id: 'ToolOutcome', description: 'The outcome established with the external system.' });

const modelOutcomeSchema = z
  .discriminatedUnion('status', [
    z.strictObject({ status: z.literal('completed'), response: modelResponseSchema }),
    z.strictObject({ status: z.literal('failed'), error: durableErrorInfoSchema }),
    z.strictObject({ status: z.literal('aborted'), reason: durableReasonSchema.optional() }),
  ])
  .meta({ id: 'ModelOutcome', description: 'The outcome established from provider or application records.' });

const requestOutcomeSchema = z
  .discriminatedUnion('status', [
    z.strictObject({ status: z.literal('completed'), output: jsonValueSchema.optional(), usage: requestUsageSchema.optional() }),
    z.strictObject({ status: z.literal('failed'), error: durableErrorInfoSchema }),
    z.strictObject({ status: z.literal('interrupted'), reason: durableReasonSchema }),
  ])
  .meta({ id: 'RequestOutcome', description: 'The terminal outcome of the Request.' });

/** Every recovery operation, keyed by its coordinator method name. See the module header. */
export const RECOVERY_OPERATIONS = {
  reconcileToolOutcome: {
    segment: 'reconcile-tool-outcome',
    mutates: true,
    summary: 'Record the outcome of a tool attempt established outside the log',
    description:
      'completed / failed need a started tool; cancelled also ends one that never started. Reuse the commandId when retrying.',
    planActions: ['reconcile_tool_outcomes'],
    input: z.strictObject({ ...recoveryCommandFields, toolAttemptId: toolAttemptIdSchema, outcome: toolOutcomeSchema }),
    response: 'command',
  },
  reconcileModelOutcome: {
    segment: 'reconcile-model-outcome',
    mutates: true,
    summary: 'Record the outcome of a model attempt that started without one',
    description: 'Binds the Request, Turn and Model Attempt; established from provider or application records.',
    planActions: ['reconcile_model_outcome'],
    input: z.strictObject({
      ...recoveryCommandFields,
      requestId: requestIdSchema,
      turnId: turnIdSchema,
      modelAttemptId: modelAttemptIdSchema,
      outcome: modelOutcomeSchema,
    }),
    response: 'command',
  },
  resolvePermission: {
    segment: 'resolve-permission',
    mutates: true,
    summary: 'Resolve a pending permission',
    description: 'deny / cancel also cancel the tool in the same command.',
    planActions: ['resolve_permissions'],
    input: z.strictObject({
      ...recoveryCommandFields,
      permissionRequestId: permissionRequestIdSchema,
      decision: permissionDecisionSchema,
      message: z.string().optional(),
    }),
    response: 'command',
  },
  startToolAttempt: {
    segment: 'start-tool-attempt',
    mutates: true,
    summary: 'Commit tool_started for a scheduled or permitted tool, from persisted facts only',
    description:
      'Run the returned toolAttempt.input only after `committed`. A tool resumed after a permission starts as non_idempotent.',
    planActions: ['resume_turn'],
    input: z.strictObject({ ...recoveryCommandFields, toolAttemptId: toolAttemptIdSchema }),
    response: 'startToolAttempt',
  },
  prepareRequestRecovery: {
    segment: 'prepare-request-recovery',
    mutates: true,
    summary: 'Roll a Request that started no Turn into a recovery Request',
    description:
      'For plans rollover_request / reconcile_request_inputs: echo the observed inputId, sourceLastTurn and appliedInputIds, and give the final prepared input.',
    planActions: ['rollover_request', 'reconcile_request_inputs'],
    input: z.strictObject({
      ...recoveryCommandFields,
      requestId: requestIdSchema,
      inputId: inputIdSchema,
      sourceLastTurn: z.number().int().min(0),
      recoveryTurnId: turnIdSchema,
      recoveryRequestId: requestIdSchema,
      recoveryInputId: inputIdSchema,
      preparation: z.strictObject({
        status: z.literal('reconciled'),
        appliedInputIds: z.array(inputIdSchema),
        input: durableInputSchema,
      }),
    }),
    response: 'command',
  },
  prepareTurnRecovery: {
    segment: 'prepare-turn-recovery',
    mutates: true,
    summary: 'Roll the active Turn into a continuation Request',
    description:
      'For plan resume_turn. Refused with DURABLE_RECOVERY_UNSAFE_ROLLOVER when a non_idempotent tool crossed its execution boundary.',
    planActions: ['resume_turn'],
    input: z.strictObject({
      ...recoveryCommandFields,
      requestId: requestIdSchema,
      turnId: turnIdSchema,
      recoveryRequestId: requestIdSchema,
      recoveryInputId: inputIdSchema,
    }),
    response: 'turnRecovery',
    extraErrors: ['DURABLE_RECOVERY_UNSAFE_ROLLOVER'],
  },
  reconcileRequestOutcome: {
    segment: 'reconcile-request-outcome',
    mutates: true,
    summary: 'Commit the terminal event of a Request whose last Turn ended without one',
    description: 'Anchored to the terminal Turn event the caller inspected (lastTurnEventId).',
    planActions: ['reconcile_request_outcome'],
    input: z.strictObject({
      ...recoveryCommandFields,
      requestId: requestIdSchema,
      lastTurnEventId: eventIdSchema,
      outcome: requestOutcomeSchema,
    }),
    response: 'command',
  },
  planResume: {
    segment: 'plan-resume',
    mutates: false,
    summary: 'Whether the session can resume without a recovery command',
    description:
      'resume_accepted_request only for an accepted Request without a start boundary that carries its complete execution snapshot; recovery_required (with the plan) for anything else unfinished.',
    planActions: ['none', 'resume_request'],
    response: 'planResume',
  },
} as const satisfies Record<string, RecoveryOperationSpec>;

/** Any recovery operation name (a coordinator method name). */
export type RecoveryOperation = keyof typeof RECOVERY_OPERATIONS;

/** A recovery operation that commits a command. */
export type RecoveryMutation = {
  [O in RecoveryOperation]: (typeof RECOVERY_OPERATIONS)[O]['mutates'] extends true ? O : never;
}[RecoveryOperation];

/** The read-only recovery operation. */
export const PLAN_RESUME_OPERATION = 'planResume' satisfies RecoveryOperation;

/** Every operation name, in table order. */
export const RECOVERY_OPERATION_NAMES = Object.freeze(Object.keys(RECOVERY_OPERATIONS) as RecoveryOperation[]);

/** The operations that commit a command, in table order. */
export const RECOVERY_MUTATIONS = Object.freeze(
  RECOVERY_OPERATION_NAMES.filter((name): name is RecoveryMutation => RECOVERY_OPERATIONS[name].mutates),
);

/** True when `value` names a recovery operation. */
export function isRecoveryOperation(value: unknown): value is RecoveryOperation {
  return typeof value === 'string' && Object.hasOwn(RECOVERY_OPERATIONS, value);
}

/** True when `value` names a recovery operation that commits a command. */
export function isRecoveryMutation(value: unknown): value is RecoveryMutation {
  return isRecoveryOperation(value) && RECOVERY_OPERATIONS[value].mutates;
}

/** The row of an operation. */
export function recoveryOperationSpec(operation: RecoveryOperation): RecoveryOperationSpec {
  return RECOVERY_OPERATIONS[operation];
}
