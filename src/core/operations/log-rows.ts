/** The event-log rows of the session operation table that are not streams (host `log`). */
import { z } from 'zod';
import { HTTP_PATHS } from '../../protocol/http-paths.js';
import { MAX_READ_LIMIT } from '../../protocol/limits.js';
import { integerQuery, type OperationSpec } from './spec.js';

export const eventDigestsResponseSchema = z
  .strictObject({
    digests: z.array(z.strictObject({ sequence: z.number().int().min(1), digest: z.number().int().nullable() })),
  })
  .meta({ id: 'EventDigests', description: 'The stored per-event content digests, in sequence order.' });


/** The log rows. */
export const LOG_ROWS = {
  readEventDigests: {
    kind: 'read',
    host: 'log',
    input: z.strictObject({
      after: integerQuery(0, Number.MAX_SAFE_INTEGER, 'after').optional(),
      limit: integerQuery(1, MAX_READ_LIMIT, 'limit').optional(),
    }),
    output: eventDigestsResponseSchema,
    http: {
      method: 'get',
      path: HTTP_PATHS.digests,
      scope: 'read',
      summary: 'The stored content digest of each event after `after` (default 0), at most `limit` (default and maximum 1000)',
      description:
        'One row per stored event, in sequence order; `digest` is `eventDigest` of the event as written (null for rows written before storage schema 5). `agent-ledger verify` compares them with the events it reads.',
      tags: ['events'],
      errors: ['DURABLE_EVENT_INVALID_INPUT'],
      responseDescription: 'The digests.',
    },
  },
} as const satisfies Record<string, OperationSpec>;
