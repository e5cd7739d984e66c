/** The rows of the session operation table for the commit and projection (host `journal`). */
import { z } from 'zod';
import { DURABLE_EVENT_TYPES, commandIdSchema, safeParseDurableEventDraft } from '../../protocol/events.js';
import { HTTP_PATHS } from '../../protocol/http-paths.js';
import type { EventSequence } from '../../protocol/ids.js';
import { MAX_BATCH_EVENTS } from '../../protocol/limits.js';
import { recoveryCommandFields } from '../../protocol/recovery-operations.js';
import type { DurableCommitResult, DurableJournalCommand } from '../journal/journal-options.js';
import type { DurableRecoveryPlan, DurableSessionProjection } from '../projector/projection-types.js';
import type { DurableExecutionFence } from '../store.js';
import { executionFenceSchema } from './lease-rows.js';
import { recoveryRowInput } from './recovery-rows.js';
import { noInput, type OperationSpec } from './spec.js';

/** Result of `projection`: the session's folded state, its recovery plan and their head. */
export interface SessionProjectionResult {
  projection: DurableSessionProjection;
  recoveryPlan: DurableRecoveryPlan;
  headSequence: EventSequence | null;
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** One draft of a command: a `DurableEventDraft` whose `commandId` may be omitted (the journal stamps it). */
const commandEventDraftSchema = z
  .looseObject({ type: z.enum(DURABLE_EVENT_TYPES), data: z.record(z.string(), z.unknown()), commandId: commandIdSchema.optional() })
  .meta({
    id: 'CommandEventDraft',
    description:
      'A DurableEventDraft (see that schema for each type) whose commandId may be omitted: the journal stamps the command id on every event.',
  });

/**
 * The input of `commit`: the command with an optional `executionFence` beside its fields (the HTTP
 * body). It mirrors the journal's own strict check, which the host runs again as the authority.
 */
export const commandRequestSchema = z
  .strictObject({
    ...recoveryCommandFields,
    executionFence: executionFenceSchema.optional(),
    events: z.array(commandEventDraftSchema).min(1).max(MAX_BATCH_EVENTS),
  })
  .superRefine((body, ctx) => {
    body.events.forEach((event, index) => {
      const own = event['commandId'];
      if (own !== undefined && own !== body.commandId) {
        ctx.addIssue({ code: 'custom', path: ['events', index, 'commandId'], message: 'differs from the command id' });
        return;
      }
      const parsed = safeParseDurableEventDraft({ ...event, commandId: body.commandId });
      if (!parsed.ok) ctx.addIssue({ code: 'custom', path: ['events', index], message: parsed.problem });
    });
  })
  .meta({
    id: 'CommandRequest',
    description: 'One journal command: its events commit as one atomic batch, at most once per commandId.',
  });

/** The journal rows. */
export const JOURNAL_ROWS = {
  /**
   * Commits one journal command (idempotent by `commandId`, previewed, optionally head-pinned).
   * Subscribers of the session receive the committed events like any append's.
   */
  commit: {
    kind: 'command',
    host: 'journal',
    input: commandRequestSchema,
    output: z.custom<DurableCommitResult>(),
    // The fence travels beside the command's fields, as for the recovery commands.
    rpcArgs: (command: DurableJournalCommand, options?: { executionFence?: DurableExecutionFence | undefined }) =>
      recoveryRowInput(command, options),
    http: {
      method: 'post',
      path: HTTP_PATHS.commands,
      scope: 'append',
      operationId: 'commitCommand',
      summary: 'Commit one journal command (idempotent by commandId)',
      description:
        'Runs DurableSessionJournal.commit in the session object: the events are previewed against the projection (an invariant violation writes nothing), then appended as one batch. The same commandId with identical events returns `replayed` without a second copy; with other events it is DURABLE_COMMAND_CONFLICT. With expectedHeadSequence the command commits only while the head is exactly that. Subscribers receive the events like any append.',
      tags: ['journal'],
      errors: [
        'DURABLE_SESSION_JOURNAL_INVALID',
        'DURABLE_EVENT_INVALID_INPUT',
        'DURABLE_EVENT_LIMIT_EXCEEDED',
        'DURABLE_EVENT_SEQUENCE_CONFLICT',
        'DURABLE_COMMAND_CONFLICT',
        'DURABLE_EVENT_PROJECTION_INVALID',
        'DURABLE_EXECUTION_LEASE_REQUIRED',
        'DURABLE_EXECUTION_LEASE_LOST',
        'DURABLE_EXECUTION_LEASE_INVALID',
        'DURABLE_COMMAND_OUTCOME_UNKNOWN',
      ],
      inputErrorCode: 'DURABLE_SESSION_JOURNAL_INVALID',
      fieldErrorCodes: { executionFence: 'DURABLE_EXECUTION_LEASE_INVALID' },
      largeBody: true,
      responseDescription: 'The command as stored.',
      // The command as stored, without the projection (the route documents it as CommandResponse).
      answer: {
        schema: z.custom<Omit<DurableCommitResult, 'projection'>>((body) => isRecord(body) && typeof body['status'] === 'string'),
        fromOutput: ({ status, commandId, events, headSequence }: DurableCommitResult) => ({ status, commandId, events, headSequence }),
        // SAFETY: checked by `schema`; the answer carries every field of the result but the projection.
        toOutput: (body: unknown) => body as DurableCommitResult,
      },
    },
  },
  /** The projection, recovery plan and head, refreshed to the log's current head. */
  projection: {
    kind: 'read',
    host: 'journal',
    input: noInput,
    output: z.custom<SessionProjectionResult>((value) => isRecord(value) && isRecord(value['projection'])),
    rpcArgs: () => ({}),
    http: {
      method: 'get',
      path: HTTP_PATHS.projection,
      scope: 'read',
      operationId: 'getProjection',
      summary: 'The session projection and its recovery plan',
      description:
        'Folds the log (only the events appended since the object last looked) and returns the projection, the recovery plan and the head they describe. Pin that head as expectedHeadSequence in a decision taken from them.',
      tags: ['journal'],
      errors: ['DURABLE_EVENT_INVALID_INPUT', 'DURABLE_EVENT_PROJECTION_INVALID', 'DURABLE_EVENT_UNAVAILABLE'],
      responseDescription: 'Projection, recovery plan and head.',
    },
  },
} as const satisfies Record<string, OperationSpec>;
