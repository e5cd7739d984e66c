/**
 * Zod schemas of the HTTP API: request bodies, query strings and response bodies.
 *
 * The same objects serve twice: routes validate requests with them before anything reaches a
 * Durable Object, and `openapi.ts` turns them into the OpenAPI document, so documentation and
 * validation cannot drift apart. Event drafts and envelopes reuse the protocol's own schemas.
 * Query values arrive as strings; their schemas accept the decimal spelling only (no `1e3`, no
 * signs, no leading zeros) and convert to numbers.
 */
import { z } from 'zod';
import type { DurableExecutionFence } from '../core/store.js';
import { MAX_CURSOR_TEXT_LENGTH } from '../protocol/cursor.js';
import { executionFenceSchema } from '../core/operations/operations.js';
import {
  durableEventDraftSchema as protocolDraftSchema,
  durableEventEnvelopeSchema as protocolEnvelopeSchema,
  eventSequenceSchema,
  sessionIdSchema,
} from '../protocol/events.js';
import { DEFAULT_READ_LIMIT, MAX_BATCH_EVENTS, MAX_READ_LIMIT } from '../protocol/limits.js';
import { MAX_TOKEN_TTL_SECONDS, TOKEN_SCOPES } from './auth.js';

/** Longest long-poll a read may ask for (`waitMs`). */
const MAX_LONG_POLL_MS = 30_000;

/** Schemas of the lease operations live with their rows in the protocol's operation table. */
export {
  executionFenceSchema,
  fencingTokenSchema,
  leaseIdSchema,
  okResponseSchema,
  workerIdSchema,
} from '../core/operations/operations.js';

/** Integer query parameter in `min..max`, decimal digits only. */
function integerQuery(min: number, max: number, label: string) {
  return z
    .string()
    .regex(/^(0|[1-9][0-9]{0,15})$/, `${label} must be a decimal integer`)
    .transform(Number)
    .pipe(z.number().int().min(min, `${label} must be >= ${min}`).max(max, `${label} must be <= ${max}`));
}

// ---- events ----

/** The protocol's draft schema, named for the OpenAPI components. */
export const durableEventDraftSchema = protocolDraftSchema.meta({
  id: 'DurableEventDraft',
  description: 'An event to append: `type`, `data` and the correlation ids its type requires (protocol v4).',
});
/** The protocol's envelope schema, named for the OpenAPI components. */
export const durableEventEnvelopeSchema = protocolEnvelopeSchema.meta({
  id: 'DurableEventEnvelope',
  description: 'A stored event (protocol v4).',
});

/** The three fields of a fence that a store compares (a lease record's other fields dropped). */
export function fenceOf(value: z.output<typeof executionFenceSchema>): DurableExecutionFence {
  return { leaseId: value.leaseId, ownerId: value.ownerId, fencingToken: value.fencingToken };
}

export const appendRequestSchema = z
  .strictObject({
    events: z.array(durableEventDraftSchema).min(1).max(MAX_BATCH_EVENTS),
    expectedLastSequence: eventSequenceSchema.nullable().optional().meta({
      description: 'Absent: append after the head. null: the stream must be empty. n: the head must be n.',
    }),
    executionFence: executionFenceSchema.optional(),
  })
  .meta({ id: 'AppendRequest', description: 'One atomic batch of event drafts.' });

export const appendResponseSchema = z
  .strictObject({
    previousSequence: eventSequenceSchema.nullable(),
    lastSequence: eventSequenceSchema,
    events: z.array(durableEventEnvelopeSchema),
  })
  .meta({ id: 'AppendResponse' });

export const readQuerySchema = z.strictObject({
  after: z
    .string()
    .min(1)
    .max(MAX_CURSOR_TEXT_LENGTH)
    .optional()
    .meta({
      description:
        'Exclusive lower bound: the encoded cursor of the last event seen (`nextCursor` of the previous page, or the `cursor` of a subscription frame). A bare sequence number is accepted as sugar. Absent: from the first event.',
    }),
  limit: integerQuery(1, MAX_READ_LIMIT, 'limit').optional().meta({ description: `Page size (default ${DEFAULT_READ_LIMIT}).` }),
  waitMs: integerQuery(0, MAX_LONG_POLL_MS, 'waitMs')
    .optional()
    .meta({ description: `Long-poll: wait up to this many ms (<= ${MAX_LONG_POLL_MS}) for an event after \`after\`.` }),
});

export const readResponseSchema = z
  .strictObject({
    events: z.array(durableEventEnvelopeSchema),
    nextCursor: z.string().nullable().meta({
      description:
        'Encoded cursor to pass as `after` for the next page: the last returned event, else the position read after (null: an empty session read from the start).',
    }),
    headSequence: eventSequenceSchema.nullable(),
    hasMore: z.boolean(),
  })
  .meta({ id: 'ReadResponse' });

// ---- subscribe ----

export const subscribeQuerySchema = z.strictObject({
  after: z
    .string()
    .min(1)
    .max(MAX_CURSOR_TEXT_LENGTH)
    .optional()
    .meta({ description: 'Encoded cursor of the last event seen; absent: from the first event. For SSE, Last-Event-ID wins.' }),
  access_token: z
    .string()
    .optional()
    .meta({ description: 'Bearer token for clients that cannot set headers (EventSource, browser WebSocket).' }),
  ack: z
    .enum(['0', '1'])
    .optional()
    .meta({
      description:
        'WebSocket only: `1` announces that the client sends `{"type":"ack","bytes":N}` acknowledgements (flow control; see docs/http-api.md). Without it the object sends at most one window (1 MiB) per connection, then closes with 4008.',
    }),
  frames: z
    .enum(['events', 'all'])
    .optional()
    .meta({
      description:
        'SSE only: `all` relays every frame the session object sends its WebSockets, transient ones included (token deltas, ' +
        'partial_response, tool_progress); `events` (default) long-polls the log.',
    }),
});

// ---- tokens ----

export const tokenRequestSchema = z
  .strictObject({
    sessionId: sessionIdSchema,
    scopes: z.array(z.enum(TOKEN_SCOPES)).min(1).max(TOKEN_SCOPES.length * 4),
    ttlSeconds: z.number().int().min(1).max(MAX_TOKEN_TTL_SECONDS).optional(),
  })
  .meta({ id: 'TokenRequest', description: 'Mint a token for one session (admin only).' });

export const tokenResponseSchema = z
  .strictObject({ token: z.string(), expiresAt: z.string() })
  .meta({ id: 'TokenResponse' });

// ---- meta ----

export const healthResponseSchema = z
  .strictObject({ ok: z.literal(true), name: z.string(), protocol: z.number().int() })
  .meta({ id: 'HealthResponse' });

export const problemSchema = z
  .object({
    type: z.string(),
    title: z.string(),
    status: z.number().int(),
    code: z.string(),
    detail: z.string(),
    details: z.record(z.string(), z.unknown()).optional(),
  })
  .meta({ id: 'Problem', description: 'RFC 9457 problem details with the domain error `code`.' });
