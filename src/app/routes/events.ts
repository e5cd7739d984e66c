/**
 * Event routes: append a batch, read a page (optionally long-polling), read the head.
 *
 * Appends are validated twice on purpose: here, with the protocol's zod schemas, so garbage never
 * reaches the object (and a refused body gets the store's own error code through the engine's
 * validators); and again inside the object, where the log engine is the authority. A read with
 * `waitMs` first asks the object to wait until an event after `after` exists (or the wait ends),
 * then reads the page as usual.
 */
import { checkExpectedLastSequence, validateDraftBatch } from '../../core/log-engine.js';
import type { RpcAppendOptions, RpcReadOptions } from '../../adapters/durable-object/rpc.js';
import type { DurableAppendResult, DurableReadResult } from '../../core/store.js';
import { DurableEventStoreError, DurableExecutionLeaseError } from '../../protocol/errors.js';
import type { EventSequence } from '../../protocol/ids.js';
import { MAX_REQUEST_BODY_BYTES } from '../body.js';
import { defineSessionRoute, type RouteDefinition } from '../route-kit.js';
import {
  appendRequestSchema,
  appendResponseSchema,
  executionFenceSchema,
  headResponseSchema,
  readQuerySchema,
  readResponseSchema,
} from '../schemas.js';
import { callObject } from '../session-rpc.js';
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

function writeOutcomeUnknown(cause: unknown): DurableEventStoreError {
  return new DurableEventStoreError(
    'DURABLE_EVENT_WRITE_FAILED',
    'the session object did not answer; the append may or may not have committed (read the head before retrying)',
    { cause },
  );
}

function readFailed(cause: unknown): DurableEventStoreError {
  return new DurableEventStoreError('DURABLE_EVENT_UNAVAILABLE', 'the session object did not answer', { cause });
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
        if (body.executionFence !== undefined) options.executionFence = body.executionFence;
        return callObject(() => object.append(sessionId, body.events, options), writeOutcomeUnknown);
      },
    }),
    defineSessionRoute({
      method: 'get',
      path: HTTP_PATHS.events,
      operationId: 'readEvents',
      summary: 'Read one page of events after a cursor',
      description:
        '`after` is exclusive and must not be ahead of the head. With `waitMs`, the call waits (long poll) until an event after `after` exists or the time is up, then answers with the page (possibly empty).',
      tags: ['events'],
      scope: 'read',
      query: readQuerySchema,
      queryErrorCode: (key) => (key === 'after' ? 'DURABLE_EVENT_INVALID_CURSOR' : 'DURABLE_EVENT_INVALID_INPUT'),
      response: { schema: readResponseSchema, description: 'One page.' },
      errors: ['DURABLE_EVENT_INVALID_INPUT', 'DURABLE_EVENT_INVALID_CURSOR', 'DURABLE_EVENT_UNAVAILABLE'],
      async handle({ sessionId, object, query }): Promise<DurableReadResult> {
        const after = query.after as EventSequence | undefined;
        if (query.waitMs !== undefined && query.waitMs > 0) {
          const waitMs = query.waitMs;
          await callObject(() => object.waitForEvents(sessionId, after ?? null, waitMs), readFailed);
        }
        const options: RpcReadOptions = {};
        if (after !== undefined) options.after = after;
        if (query.limit !== undefined) options.limit = query.limit;
        return callObject(() => object.read(sessionId, options), readFailed);
      },
    }),
    defineSessionRoute({
      method: 'get',
      path: HTTP_PATHS.head,
      operationId: 'getHeadSequence',
      summary: 'The head sequence (null for an empty session)',
      tags: ['events'],
      scope: 'read',
      response: { schema: headResponseSchema, description: 'The head.' },
      errors: ['DURABLE_EVENT_INVALID_INPUT', 'DURABLE_EVENT_UNAVAILABLE'],
      async handle({ sessionId, object }) {
        const headSequence = await callObject(() => object.getHeadSequence(sessionId), readFailed);
        return { headSequence };
      },
    }),
  ];
}
