/**
 * Journal routes: commit a command, read the projection.
 *
 * `POST /commands` runs `DurableSessionJournal.commit` inside the session's object: the command is
 * validated here first (zod, plus the journal's own check to report its exact error), then the
 * object previews it, pins or follows the head, appends it as one batch and answers `committed`,
 * `replayed` (the identical command was already in the log) or `reconciled`. A command whose RPC
 * fails in transit has an unknown outcome: the answer is `DURABLE_COMMAND_OUTCOME_UNKNOWN`, and
 * resubmitting the same command (same `commandId`, same events) settles it without a duplicate.
 * `GET /projection` returns the projection, its recovery plan and the head they were folded to.
 */
import type { RpcJournalCallOptions } from '../../adapters/durable-object/journal-rpc.js';
import { prepareCommand } from '../../core/journal/journal-options.js';
import { DurableCommandOutcomeUnknownError, DurableEventStoreError, DurableExecutionLeaseError } from '../../protocol/errors.js';
import type { CommandId } from '../../protocol/ids.js';
import { MAX_REQUEST_BODY_BYTES } from '../body.js';
import { defineSessionRoute, type RouteDefinition } from '../route-kit.js';
import type { z } from 'zod';
import { executionFenceSchema, fenceOf } from '../schemas.js';
import { commandOf, commandRequestSchema, commandResponseSchema, projectionResponseSchema } from '../schemas-recovery.js';
import { callObject } from '../session-rpc.js';
import { HTTP_PATHS } from '../../protocol/http-paths.js';

/** Builds the error of a command or recovery call whose RPC failed in transit (outcome unknown). */
export function commandOutcomeUnknown(commandId: CommandId): (cause: unknown) => DurableCommandOutcomeUnknownError {
  return (cause) =>
    new DurableCommandOutcomeUnknownError(
      `the session object did not answer; the outcome of command ${commandId} is unknown (resubmit the same command to reconcile)`,
      { cause, details: { commandId } },
    );
}

/** The error of a read whose RPC failed in transit. */
export function objectUnavailable(cause: unknown): DurableEventStoreError {
  return new DurableEventStoreError('DURABLE_EVENT_UNAVAILABLE', 'the session object did not answer', { cause });
}

/**
 * Splits the optional `executionFence` off a raw body: throws `DURABLE_EXECUTION_LEASE_INVALID`
 * for a malformed fence, and returns the rest for the core's own argument check.
 */
export function withoutFence(raw: unknown): unknown {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return raw;
  const { executionFence, ...rest } = raw as Record<string, unknown>;
  if (executionFence !== undefined && !executionFenceSchema.safeParse(executionFence).success) {
    throw new DurableExecutionLeaseError('DURABLE_EXECUTION_LEASE_INVALID', 'executionFence is malformed');
  }
  return rest;
}

/** The call options carrying a body's fence. */
export function fenceOptions(fence: z.output<typeof executionFenceSchema> | undefined): RpcJournalCallOptions {
  return fence === undefined ? {} : { executionFence: fenceOf(fence) };
}

/** The journal routes. */
export function journalRoutes(): RouteDefinition[] {
  return [
    defineSessionRoute({
      method: 'post',
      path: HTTP_PATHS.commands,
      operationId: 'commitCommand',
      summary: 'Commit one journal command (idempotent by commandId)',
      description:
        'Runs DurableSessionJournal.commit in the session object: the events are previewed against the projection (an invariant violation writes nothing), then appended as one batch. The same commandId with identical events returns `replayed` without a second copy; with other events it is DURABLE_COMMAND_CONFLICT. With expectedHeadSequence the command commits only while the head is exactly that. Subscribers receive the events like any append.',
      tags: ['journal'],
      scope: 'append',
      body: commandRequestSchema,
      maxBodyBytes: MAX_REQUEST_BODY_BYTES,
      explainBodyFailure: (raw) => {
        prepareCommand(withoutFence(raw));
      },
      bodyErrorCode: (key) => (key === 'executionFence' ? 'DURABLE_EXECUTION_LEASE_INVALID' : 'DURABLE_SESSION_JOURNAL_INVALID'),
      response: { schema: commandResponseSchema, description: 'The command as stored.' },
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
      async handle({ object: rpc, sessionId, body }) {
        const result = await callObject(
          () => rpc.commit(sessionId, commandOf(body), fenceOptions(body.executionFence)),
          commandOutcomeUnknown(body.commandId),
        );
        return {
          status: result.status,
          commandId: result.commandId,
          events: result.events,
          headSequence: result.headSequence,
        };
      },
    }),
    defineSessionRoute({
      method: 'get',
      path: HTTP_PATHS.projection,
      operationId: 'getProjection',
      summary: 'The session projection and its recovery plan',
      description:
        'Folds the log (only the events appended since the object last looked) and returns the projection, the recovery plan and the head they describe. Pin that head as expectedHeadSequence in a decision taken from them.',
      tags: ['journal'],
      scope: 'read',
      response: { schema: projectionResponseSchema, description: 'Projection, recovery plan and head.' },
      errors: ['DURABLE_EVENT_INVALID_INPUT', 'DURABLE_EVENT_PROJECTION_INVALID', 'DURABLE_EVENT_UNAVAILABLE'],
      async handle({ object: rpc, sessionId }) {
        return callObject(() => rpc.projection(sessionId), objectUnavailable);
      },
    }),
  ];
}
