/**
 * Run routes: durable tool calls executed inside the session's object, deliveries to waiting
 * tools, the run's status, and the session's durability records.
 *
 * - `POST /v1/sessions/{sessionId}/runs/{runId}/tool-calls` starts a call of a tool of the
 *   object's mount (`SessionObject.sessionAgent()`, the tools its model calls too) and answers 202
 *   at once: the call runs in the object; progress arrives as `durability` frames on the
 *   session's WebSocket and in the status route. Posting the same call again is idempotent (and resumes it if nothing runs it).
 * - `POST .../deliveries` records a delivery for `waitFor(key)` (idempotent by `deliveryId`),
 *   wakes a live waiter, or resumes an evicted one by replay.
 * - `GET .../runs/{runId}` reports the run's tool calls; `GET .../durability` pages the durability records.
 * The object does the validating that matters (lossless JSON, mounted tools); the zod schemas
 * here keep garbage out and document the API.
 */
import { z } from 'zod';
import { callOperation } from '../../adapters/durable-object/operation-client.js';
import type { RunDeliveryReceipt, RunState } from '../../core/operations/durability-rows.js';
import { checkDurabilityKey } from '../../core/durability/record-engine.js';
import { MAX_ID_LENGTH, isValidId } from '../../protocol/ids.js';
import { parsedJsonValueSchema } from '../../protocol/json.js';
import { HttpStatus } from '../http-errors.js';
import { defineSessionRoute, type RouteDefinition, type SessionRouteInput } from '../route-kit.js';
import { HTTP_PATHS } from '../../protocol/http-paths.js';
import { operationRoutes } from './operations.js';

const idSchema = z
  .string()
  .min(1)
  .max(MAX_ID_LENGTH)
  .refine((value) => isValidId(value), {
    error: `must be a non-empty string of at most ${MAX_ID_LENGTH} characters without control characters`,
  });

const toolCallRequestSchema = z
  .strictObject({
    agent: idSchema,
    toolName: idSchema,
    toolCallId: idSchema.meta({ description: 'Stable id of the call: a replay finds its records under it.' }),
    input: parsedJsonValueSchema.optional().meta({ description: 'The tool input (lossless JSON; default null).' }),
  })
  .meta({ id: 'ToolCallRequest' });

const toolRunStatusSchema = z.enum(['running', 'completed', 'failed']);

const toolCallAcceptedSchema = z
  .strictObject({ runId: z.string(), toolCallId: z.string(), status: toolRunStatusSchema })
  .meta({ id: 'ToolCallAccepted' });

const deliveryRequestSchema = z
  .strictObject({
    key: idSchema.meta({ description: 'The `waitFor` key.' }),
    deliveryId: idSchema.meta({ description: 'Idempotency key of the delivery within the session.' }),
    payload: parsedJsonValueSchema.meta({ description: 'Lossless JSON handed to the waiter.' }),
  })
  .meta({ id: 'DeliveryRequest' });

const deliveryReceiptSchema = z
  .strictObject({
    deliveryId: z.string(),
    sequence: z.number().int(),
    created: z.boolean(),
    resumed: z.array(z.string()).meta({ description: 'Tool calls resumed by replay (their executor had been evicted).' }),
  })
  .meta({ id: 'DeliveryReceipt' });

const runStateSchema = z
  .strictObject({
    runId: z.string(),
    status: z.enum(['running', 'completed', 'failed', 'unknown']),
    toolCalls: z.array(
      z.strictObject({
        toolCallId: z.string(),
        agent: z.string(),
        toolName: z.string(),
        status: toolRunStatusSchema,
        attempts: z.number().int(),
        live: z.boolean(),
        result: parsedJsonValueSchema.optional(),
        error: parsedJsonValueSchema.optional(),
      }),
    ),
  })
  .meta({ id: 'RunState' });

const durabilityRecordSchema = z
  .looseObject({ kind: z.string(), sequence: z.number().int(), sessionId: z.string(), recordedAt: z.string() })
  .meta({ id: 'DurabilityRecord', description: 'A durability record: step, sleep, wait, wait_timeout, delivery or run_event.' });

const durabilityPageSchema = z
  .strictObject({
    records: z.array(durabilityRecordSchema),
    nextCursor: z.number().int().nullable(),
    headSequence: z.number().int().nullable(),
    hasMore: z.boolean(),
  })
  .meta({ id: 'DurabilityPage' });

function runIdOf<Q, B>(input: SessionRouteInput<Q, B>): string {
  return checkDurabilityKey(input.params['runId'], 'runId');
}

const durabilityInvalid = () => 'DURABILITY_INVALID_INPUT' as const;

/** The run routes. */
export function runRoutes(): RouteDefinition[] {
  return [
    defineSessionRoute({
      method: 'post',
      path: HTTP_PATHS.runToolCalls,
      operationId: 'startToolCall',
      summary: 'Start a durable tool call inside the session object',
      description:
        'Answers 202 once the call is stored; it then runs in the object. Steps, sleeps and waits are recorded in the ' +
        'durability records; a sleep survives eviction (the object alarm resumes the call by replay). The final outcome ' +
        'is a run_event record "run". Repeating the request is idempotent.',
      tags: ['runs'],
      scope: 'append',
      body: toolCallRequestSchema,
      bodyErrorCode: durabilityInvalid,
      extraResponses: [{ status: HttpStatus.ACCEPTED, description: 'The call is running (or had finished).', schema: toolCallAcceptedSchema }],
      errors: ['DURABILITY_INVALID_INPUT', 'DURABILITY_INVALID_VALUE', 'DURABILITY_CONFLICT', 'DURABLE_EVENT_WRITE_FAILED'],
      async handle(input): Promise<Response> {
        const { sessionId, object, body, c } = input;
        const runId = runIdOf(input);
        const accepted = await callOperation(object, sessionId, 'startToolCall', {
          runId,
          agent: body.agent,
          toolName: body.toolName,
          toolCallId: body.toolCallId,
          input: body.input ?? null,
        });
        return c.json(accepted, HttpStatus.ACCEPTED, { 'cache-control': 'no-store' });
      },
    }),
    defineSessionRoute({
      method: 'post',
      path: HTTP_PATHS.runDeliveries,
      operationId: 'deliver',
      summary: 'Deliver to a waitFor(key) of the run',
      description:
        'Records the delivery (idempotent by deliveryId; the same id with other content is 409), wakes a waiting tool ' +
        'call, and resumes an evicted one by replay.',
      tags: ['runs'],
      scope: 'deliver',
      body: deliveryRequestSchema,
      bodyErrorCode: durabilityInvalid,
      response: { schema: deliveryReceiptSchema, description: 'The delivery receipt.' },
      errors: ['DURABILITY_INVALID_INPUT', 'DURABILITY_INVALID_VALUE', 'DURABILITY_CONFLICT', 'DURABLE_EVENT_WRITE_FAILED'],
      async handle(input): Promise<RunDeliveryReceipt> {
        const { sessionId, object, body } = input;
        const runId = runIdOf(input);
        return callOperation(object, sessionId, 'deliver', { runId, key: body.key, deliveryId: body.deliveryId, payload: body.payload });
      },
    }),
    defineSessionRoute({
      method: 'get',
      path: HTTP_PATHS.run,
      operationId: 'getRun',
      summary: 'The run: its tool calls, their status, results and errors',
      tags: ['runs'],
      scope: 'read',
      response: { schema: runStateSchema, description: 'The run (status "unknown" when it has no tool call).' },
      errors: ['DURABILITY_INVALID_INPUT', 'DURABLE_EVENT_UNAVAILABLE'],
      async handle(input): Promise<RunState> {
        return callOperation(input.object, input.sessionId, 'getRun', { runId: runIdOf(input) });
      },
    }),
    // GET .../durability: the row readDurability, documented with the page's exact schema.
    ...operationRoutes('runs', { responseSchema: (name) => (name === 'readDurability' ? durabilityPageSchema : undefined) }),
  ];
}
