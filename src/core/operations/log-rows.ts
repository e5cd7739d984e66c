/**
 * The event-log rows of the session operation table (host `log`). The append and the read of a
 * page have hand-written routes (`src/app/routes/events.ts`: drafts in, the stored batch out;
 * encoded cursors and long polls), which run these rows.
 */
import { z } from 'zod';
import type { DurableExecutionFence, DurableReadResult } from '../store.js';
import { eventSequenceSchema } from '../../protocol/events.js';
import { HTTP_PATHS } from '../../protocol/http-paths.js';
import { MAX_READ_LIMIT } from '../../protocol/limits.js';
import { integerQuery, noInput, type OperationSpec } from './spec.js';

export const eventDigestsResponseSchema = z
  .strictObject({
    digests: z.array(z.strictObject({ sequence: z.number().int().min(1), digest: z.number().int().nullable() })),
  })
  .meta({ id: 'EventDigests', description: 'The stored per-event content digests, in sequence order.' });

export const headResponseSchema = z
  .strictObject({ headSequence: eventSequenceSchema.nullable() })
  .meta({ id: 'HeadResponse' });

/** Append options that cross RPC (an `AbortSignal` cannot). */
const appendOptionsSchema = z.strictObject({
  expectedLastSequence: eventSequenceSchema.nullable().optional(),
  executionFence: z.custom<DurableExecutionFence>().optional(),
});

/**
 * The store-assigned part of an append result: the caller holds the drafts it sent and rebuilds
 * the envelopes from them (`src/adapters/durable-object/append-receipt.ts`), so a 1,000-event
 * batch does not travel back over RPC.
 */
const appendReceiptSchema = z.strictObject({
  /** Head before the batch (`null` for an empty stream). */
  previousSequence: eventSequenceSchema.nullable(),
  /** Sequence of the batch's last event. */
  lastSequence: eventSequenceSchema,
  /** The event ID the store assigned to each draft, in order, joined by `\n` (one string crosses RPC much faster than a thousand). */
  eventIds: z.string(),
  /** The batch's commit time (every event's `recordedAt`). */
  recordedAt: z.string(),
});

/** Read options that cross RPC; the log engine checks them (`planRead`). */
const readOptionsSchema = z.strictObject({
  after: eventSequenceSchema.optional(),
  limit: z.number().optional(),
  /** Byte budget of the page (default and maximum `MAX_READ_PAGE_BYTES`). */
  maxBytes: z.number().optional(),
});

/** The log rows. */
export const LOG_ROWS = {
  appendJson: {
    // The one append RPC: a batch as JSON text (`JSON.stringify` of validated drafts, which is
    // lossless), answered with the receipt. The object parses and validates the text as any
    // store validates drafts; the HTTP route and the RPC clients send through it.
    kind: 'write',
    host: 'log',
    input: z.strictObject({ draftsJson: z.string(), options: appendOptionsSchema.optional() }),
    output: appendReceiptSchema,
    rpcArgs: (draftsJson: string, options?: z.output<typeof appendOptionsSchema>) => ({ draftsJson, options }),
  },
  read: {
    kind: 'read',
    host: 'log',
    input: readOptionsSchema,
    output: z.custom<DurableReadResult>(),
    rpcArgs: (options?: z.output<typeof readOptionsSchema>) => (options === undefined ? {} : options),
  },
  getHeadSequence: {
    kind: 'read',
    host: 'log',
    input: noInput,
    output: eventSequenceSchema.nullable(),
    rpcArgs: () => ({}),
    http: {
      method: 'get',
      path: HTTP_PATHS.head,
      scope: 'read',
      summary: 'The head sequence (null for an empty session)',
      tags: ['events'],
      errors: ['DURABLE_EVENT_INVALID_INPUT', 'DURABLE_EVENT_UNAVAILABLE'],
      responseDescription: 'The head.',
      answer: {
        schema: headResponseSchema,
        fromOutput: (headSequence) => ({ headSequence }),
        toOutput: (body) => (body as z.output<typeof headResponseSchema>).headSequence,
      },
    },
  },
  waitForEvents: {
    // Long poll: resolves as soon as the head is past `after` (`null`: as soon as any event
    // exists), or after `waitMs` (0..MAX_WAIT_FOR_EVENTS_MS) with the unchanged head.
    kind: 'read',
    host: 'log',
    input: z.strictObject({ after: z.number().nullable(), waitMs: z.number() }),
    output: z.strictObject({ headSequence: eventSequenceSchema.nullable() }),
    rpcArgs: (after: number | null, waitMs: number) => ({ after, waitMs }),
  },
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
