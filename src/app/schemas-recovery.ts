/**
 * Zod response schemas of the journal and recovery routes (`/commands`, `/projection`,
 * `/recovery/*`), which `openapi.ts` documents. The request bodies are the inputs of their rows in
 * `SESSION_OPERATIONS` (`src/core/operations/`). The projection and plan list their main fields
 * and allow the rest (they are documented in `projection-types.ts`).
 */
import { z } from 'zod';
import { DURABLE_RECOVERY_ACTIONS } from '../core/projector/projection-types.js';
import {
  commandIdSchema,
  durableInputSchema,
  durableReasonSchema,
  eventIdSchema,
  eventSequenceSchema,
  inputIdSchema,
  requestIdSchema,
  sessionIdSchema,
  turnIdSchema,
} from '../protocol/events.js';
import { jsonObjectSchema } from '../protocol/json.js';
import type { RecoveryResponseKind } from '../protocol/recovery-operations.js';
import { durableEventEnvelopeSchema } from './schemas.js';

// ---- shared pieces ----

const looseRecord = z.record(z.string(), z.unknown());

// ---- commands ----

export const commandResponseSchema = z
  .strictObject({
    status: z.enum(['committed', 'replayed', 'reconciled']).meta({
      description:
        'committed: appended by this call; replayed: the identical command was already in the log; reconciled: found in the log after a conflict or an uncertain write. Nothing is appended twice.',
    }),
    commandId: commandIdSchema,
    events: z.array(durableEventEnvelopeSchema),
    headSequence: eventSequenceSchema,
  })
  .meta({ id: 'CommandResponse' });

// ---- projection ----

const sessionProjectionSchema = z
  .looseObject({
    sessionId: sessionIdSchema.nullable(),
    status: z.enum(['empty', 'open', 'closed']),
    headSequence: eventSequenceSchema.nullable(),
    lastEventId: eventIdSchema.nullable(),
    activeRequest: looseRecord.nullable().meta({
      description: 'The Request without a terminal event: requestId, status, input, appliedInputIds, lastTurn, lastTurnEventId, activeTurn (model and tool attempts, pending permissions)...',
    }),
    completedRequests: z.number().int(),
    lastRequest: looseRecord.nullable(),
    closedReason: durableReasonSchema.optional(),
  })
  .meta({ id: 'SessionProjection', description: 'The folded state of the session log (DurableSessionProjection).' });

const recoveryPlanSchema = z
  .looseObject({
    action: z.enum(DURABLE_RECOVERY_ACTIONS as [string, ...string[]]),
    reason: z.string(),
    headSequence: eventSequenceSchema.nullable(),
    requestId: requestIdSchema.optional(),
    turnId: turnIdSchema.optional(),
    activeModelAttempt: looseRecord.nullable(),
    retryableToolAttempts: z.array(looseRecord),
    cancelableToolAttempts: z.array(looseRecord),
    unknownToolAttempts: z.array(looseRecord),
    pendingPermissions: z.array(looseRecord),
    appliedInputIds: z.array(inputIdSchema),
    lastTurn: z.number().int(),
    lastTurnEventId: eventIdSchema.optional(),
    discardedUnconfirmedModelResponse: z.boolean(),
  })
  .meta({ id: 'RecoveryPlan', description: 'What recovery must do with the unfinished work (DurableRecoveryPlan).' });

export const projectionResponseSchema = z
  .strictObject({ projection: sessionProjectionSchema, recoveryPlan: recoveryPlanSchema, headSequence: eventSequenceSchema.nullable() })
  .meta({ id: 'ProjectionResponse' });

// ---- recovery responses ----

const recoveryResultFields = {
  status: z.enum(['committed', 'reconciled']),
  commandId: commandIdSchema,
  events: z.array(durableEventEnvelopeSchema),
  headSequence: eventSequenceSchema,
  projection: sessionProjectionSchema,
  recoveryPlan: recoveryPlanSchema,
};

export const recoveryCommandResponseSchema = z.strictObject(recoveryResultFields).meta({
  id: 'RecoveryCommandResponse',
  description: 'committed: appended by this call; reconciled: the identical command was already in the log (nothing appended).',
});

export const startToolAttemptResponseSchema = z
  .strictObject({
    ...recoveryResultFields,
    toolAttempt: looseRecord.nullable().meta({
      description: 'The attempt as now projected. Run its `input` only after `committed`; after `reconciled` someone else crossed the execution boundary.',
    }),
  })
  .meta({ id: 'StartToolAttemptResponse' });

export const turnRecoveryResponseSchema = z
  .strictObject({
    ...recoveryResultFields,
    continuation: looseRecord.meta({ description: 'The recovery facts the continuation Request carries (format version 1).' }),
  })
  .meta({ id: 'TurnRecoveryResponse' });

export const planResumeResponseSchema = z
  .discriminatedUnion('action', [
    z.strictObject({ action: z.literal('none'), headSequence: eventSequenceSchema.nullable() }),
    z.strictObject({
      action: z.literal('resume_accepted_request'),
      request: z.looseObject({
        requestId: requestIdSchema,
        inputId: inputIdSchema,
        input: durableInputSchema,
        maxTurns: z.number().int(),
        context: jsonObjectSchema,
      }),
      headSequence: eventSequenceSchema.nullable(),
    }),
    z.strictObject({ action: z.literal('recovery_required'), plan: recoveryPlanSchema, headSequence: eventSequenceSchema.nullable() }),
  ])
  .meta({
    id: 'PlanResumeResponse',
    description: 'Whether the session can resume without a recovery command, and the head that decision was taken on.',
  });

/** The response schema of each kind of recovery answer. */
export const RECOVERY_RESPONSE_SCHEMAS: { readonly [K in RecoveryResponseKind]: z.ZodType } = {
  command: recoveryCommandResponseSchema,
  startToolAttempt: startToolAttemptResponseSchema,
  turnRecovery: turnRecoveryResponseSchema,
  planResume: planResumeResponseSchema,
};
