/**
 * Event routes: append a batch, read a page (optionally long-polling). They run the log rows of
 * `SESSION_OPERATIONS` (`appendJson`, `read`, `waitForEvents`) through `callOperation`; the head
 * route is derived from its row (`operations.ts`).
 *
 * Appends are validated twice on purpose: here, with the protocol's zod schemas, so garbage never
 * reaches the object (and a refused body gets the store's own error code through the engine's
 * validators); and again inside the object, where the log engine is the authority. The batch
 * goes as JSON text and the answer is rebuilt from the object's receipt (`appendThroughObject`).
 * A read with `waitMs` first asks the object to wait until an event after `after` exists (or the
 * wait ends), then reads the page as usual.
 */
import { appendThroughObject } from '../../adapters/durable-object/append-receipt.js';
import { callOperation } from '../../adapters/durable-object/operation-client.js';
import type { RpcAppendOptions, RpcReadOptions } from '../../adapters/durable-object/rpc.js';
import { checkExpectedLastSequence, validateDraftBatch } from '../../core/log-engine.js';
import { decodeDurableEventCursor, durableEventCursor, encodeDurableEventCursor } from '../../protocol/cursor.js';
import type { DurableEventEnvelope } from '../../protocol/events.js';
import type { DurableAppendResult, DurableReadResult } from '../../core/store.js';
import { DurableEventStoreError, DurableExecutionLeaseError } from '../../protocol/errors.js';
import { EventSequence, type SessionId } from '../../protocol/ids.js';
import { anchorCursor, type CursorAnchor, type CursorRefusal } from '../../core/subscription/replay-start.js';
import { MAX_REQUEST_BODY_BYTES } from '../body.js';
import { defineSessionRoute, type RouteDefinition } from '../route-kit.js';
import {
  appendRequestSchema,
  fenceOf,
  appendResponseSchema,
  executionFenceSchema,
  readQuerySchema,
  readResponseSchema,
} from '../schemas.js';
import { HTTP_PATHS } from '../../protocol/http-paths.js';

const APPEND_KEYS = new Set(['events', 'expectedLastSequence', 'executionFence']);

/** Re-runs the store's own validators on a refused append body to report its exact error. */
function explainAppendFailure(raw: unknown): void {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new DurableEventStoreError('DURABLE_EVENT_INVALID_INPUT', 'body: expected an object');
  }
  for (const key of Object.keys(raw)) {
    if (!APPEND_KEYS.has(key)) {
      throw new DurableEventStoreError('DURABLE_EVENT_INVALID_INPUT', `body: unknown field ${JSON.stringify(key.slice(0, 64))}`);
    }
  }
  const body = raw as Record<string, unknown>;
  validateDraftBatch(body['events']);
  checkExpectedLastSequence(body['expectedLastSequence']);
  if (body['executionFence'] !== undefined && !executionFenceSchema.safeParse(body['executionFence']).success) {
    throw new DurableExecutionLeaseError('DURABLE_EXECUTION_LEASE_INVALID', 'executionFence is malformed');
  }
}

/** The body of `GET /events`: a store read page whose `nextCursor` is the encoded cursor. */
interface ReadResponse extends Omit<DurableReadResult, 'nextCursor'> {
  nextCursor: string | null;
}

/** A read's starting point: its sequence and the encoded cursor naming it. */
interface ReadCursor {
  sequence: EventSequence;
  /** The encoded cursor; `undefined` for the sugar form until needed. */
  text: string | undefined;
}

/** Refusal of `?after=` by the cursor rule: `DURABLE_EVENT_INVALID_CURSOR`. */
const refuseReadCursor: CursorRefusal = (message, details, cause) =>
  new DurableEventStoreError('DURABLE_EVENT_INVALID_CURSOR', message, cause === undefined ? { details } : { details, cause });

/** The stored event `anchor` names, checked by the cursor rule (`anchorCursor`). */
async function anchoredEvent(object: object, sessionId: SessionId, anchor: CursorAnchor): Promise<DurableEventEnvelope> {
  const read = (options: RpcReadOptions) => callOperation(object, sessionId, 'read', options);
  return (await anchorCursor(sessionId, anchor, read, refuseReadCursor)).event;
}

/** The encoded cursor of a read's starting point (reads the event for the sugar form). */
async function cursorText(object: object, sessionId: SessionId, from: ReadCursor): Promise<string> {
  if (from.text !== undefined) return from.text;
  return encodeDurableEventCursor(durableEventCursor(await anchoredEvent(object, sessionId, { sessionId, sequence: from.sequence })));
}

/**
 * Resolves `?after=`: an encoded cursor must hold by the cursor rule (this session, the event
 * that really sits at its sequence); a bare sequence (documented sugar) is checked by the read
 * itself and turned into the cursor of its event only when the page is empty, so every page
 * answers an encoded `nextCursor` without an extra read on the common path.
 */
async function resolveReadCursor(object: object, sessionId: SessionId, text: string): Promise<ReadCursor> {
  if (/^[0-9]+$/.test(text)) {
    const sequence = Number(text);
    if (!/^[1-9][0-9]{0,15}$/.test(text) || !Number.isSafeInteger(sequence)) {
      throw refuseReadCursor('after must be an encoded cursor or a sequence >= 1', {});
    }
    // The cursor text is only needed for an empty page (see `cursorText`): no extra read here.
    return { sequence: EventSequence(sequence), text: undefined };
  }
  const cursor = decodeDurableEventCursor(text);
  await anchoredEvent(object, sessionId, cursor);
  return { sequence: cursor.sequence, text };
}

/** The event routes. */
export function eventRoutes(): RouteDefinition[] {
  return [
    defineSessionRoute({
      method: 'post',
      path: HTTP_PATHS.events,
      operationId: 'appendEvents',
      summary: 'Append one atomic batch of events',
      description:
        'Validates every draft, checks the lease fence and the compare-and-append precondition, and stores the batch with contiguous sequences.',
      tags: ['events'],
      scope: 'append',
      body: appendRequestSchema,
      maxBodyBytes: MAX_REQUEST_BODY_BYTES,
      explainBodyFailure: explainAppendFailure,
      bodyErrorCode: (key) => (key === 'executionFence' ? 'DURABLE_EXECUTION_LEASE_INVALID' : 'DURABLE_EVENT_INVALID_INPUT'),
      response: { schema: appendResponseSchema, description: 'The stored batch.' },
      errors: [
        'DURABLE_EVENT_INVALID_INPUT',
        'DURABLE_EVENT_LIMIT_EXCEEDED',
        'DURABLE_EVENT_SEQUENCE_CONFLICT',
        'DURABLE_EXECUTION_LEASE_REQUIRED',
        'DURABLE_EXECUTION_LEASE_LOST',
        'DURABLE_EXECUTION_LEASE_INVALID',
        'DURABLE_EVENT_WRITE_FAILED',
      ],
      async handle({ sessionId, object, body }): Promise<DurableAppendResult> {
        const options: RpcAppendOptions = {};
        if (body.expectedLastSequence !== undefined) options.expectedLastSequence = body.expectedLastSequence;
        if (body.executionFence !== undefined) options.executionFence = fenceOf(body.executionFence);
        return appendThroughObject(object, sessionId, body.events, options);
      },
    }),
    defineSessionRoute({
      method: 'get',
      path: HTTP_PATHS.events,
      operationId: 'readEvents',
      summary: 'Read one page of events after a cursor',
      description:
        '`after` (exclusive) is the encoded cursor of the last event seen (a bare sequence is accepted as sugar) and must name an event of this log. With `waitMs`, the call waits (long poll) until an event after `after` exists or the time is up, then answers with the page (possibly empty).',
      tags: ['events'],
      scope: 'read',
      query: readQuerySchema,
      queryErrorCode: (key) => (key === 'after' ? 'DURABLE_EVENT_INVALID_CURSOR' : 'DURABLE_EVENT_INVALID_INPUT'),
      response: { schema: readResponseSchema, description: 'One page.' },
      errors: ['DURABLE_EVENT_INVALID_INPUT', 'DURABLE_EVENT_INVALID_CURSOR', 'DURABLE_EVENT_UNAVAILABLE'],
      async handle({ sessionId, object, query }): Promise<ReadResponse> {
        const from = query.after === undefined ? undefined : await resolveReadCursor(object, sessionId, query.after);
        const after = from?.sequence;
        if (query.waitMs !== undefined && query.waitMs > 0) {
          const waitMs = query.waitMs;
          await callOperation(object, sessionId, 'waitForEvents', { after: after ?? null, waitMs });
        }
        const options: RpcReadOptions = {};
        if (after !== undefined) options.after = after;
        if (query.limit !== undefined) options.limit = query.limit;
        const page = await callOperation(object, sessionId, 'read', options);
        const last = page.events[page.events.length - 1];
        const nextCursor =
          last !== undefined
            ? encodeDurableEventCursor(durableEventCursor(last))
            : from === undefined
              ? null
              : await cursorText(object, sessionId, from);
        return { events: page.events, nextCursor, headSequence: page.headSequence, hasMore: page.hasMore };
      },
    }),
  ];
}
