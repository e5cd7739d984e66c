/**
 * Agent routes: requests, steering input, abort and permission answers for the agent Session
 * that runs inside the session's object (`SessionObject.sessionAgent()`), plus its status.
 *
 * - `POST /v1/sessions/{sessionId}/requests` stores a request (idempotent by `commandId`) and
 *   answers 202 with its IDs; the object runs it. Everything it does reaches the session's
 *   WebSocket subscribers: durable events, token deltas, tool progress (`docs/edge-agents.md`).
 * - `POST .../inputs` steers the running request; `POST .../requests/{requestId}/abort`
 *   interrupts it (or drops it while queued); `POST .../permissions/{permissionRequestId}`
 *   answers a permission the run is parked on (it survives eviction).
 * - `GET .../agent` tells what the object's agent is doing (running, waiting for a permission,
 *   parked on a recovery plan).
 * Scopes: `request` (requests, inputs, abort), `permission` (answers), `read` (status).
 */
import { z } from 'zod';
import type {
  AgentAbortResult,
  AgentPermissionReceipt,
  AgentRequestAccepted,
  AgentStatus,
  AgentSteerAccepted,
  SessionObjectAgentRpc,
} from '../../adapters/durable-object/agent-rpc.js';
import { DurableEventStoreError } from '../../protocol/errors.js';
import { durableInputSchema } from '../../protocol/event-schemas.js';
import { HTTP_PATHS } from '../../protocol/http-paths.js';
import { MAX_ID_LENGTH, isValidId } from '../../protocol/ids.js';
import { HttpStatus } from '../http-errors.js';
import { defineSessionRoute, type RouteDefinition } from '../route-kit.js';
import { callObject, type SessionObjectHandle } from '../session-rpc.js';
import { parsedJsonValueSchema } from '../../protocol/json.js';

const idSchema = z.custom<string>((value) => isValidId(value), {
  error: `must be a non-empty string of at most ${MAX_ID_LENGTH} characters without control characters`,
});

const requestStatusSchema = z.enum(['queued', 'running', 'completed', 'failed', 'interrupted', 'cancelled']);

const agentRequestSchema = z
  .strictObject({
    commandId: idSchema.meta({ description: 'Idempotency key: the same commandId answers the same IDs and runs once.' }),
    input: durableInputSchema.meta({ description: 'Text, or content parts.' }),
    priority: z.enum(['now', 'next', 'later']).optional().meta({ description: '`now` interrupts the running request (default `next`).' }),
    maxTurns: z.number().int().min(1).max(10_000).optional(),
    model: idSchema.optional().meta({ description: 'A model name the object mounts (default: its default model).' }),
    context: z.record(z.string(), parsedJsonValueSchema).optional().meta({ description: 'Runtime context persisted with the request, handed to tools.' }),
  })
  .meta({ id: 'AgentRequest' });

const agentRequestAcceptedSchema = z
  .strictObject({
    commandId: z.string(),
    requestId: z.string(),
    inputId: z.string(),
    created: z.boolean().meta({ description: 'false when this commandId had been submitted before.' }),
    status: requestStatusSchema,
  })
  .meta({ id: 'AgentRequestAccepted' });

const steerSchema = z
  .strictObject({
    input: durableInputSchema,
    priority: z
      .enum(['now', 'next'])
      .optional()
      .meta({ description: '`next` (default): applied after the running turn’s tools. `now`: also aborts the model call in flight (tools and permission waits go on).' }),
  })
  .meta({ id: 'AgentSteerInput' });

const steerAcceptedSchema = z.strictObject({ inputId: z.string(), requestId: z.string() }).meta({ id: 'AgentSteerAccepted' });

const abortRequestSchema = z
  .strictObject({ reason: z.string().max(256).optional().meta({ description: 'Free text for logs (not stored).' }) })
  .meta({ id: 'AgentAbortRequest', description: 'Send `{}`.' });

const abortResultSchema = z.strictObject({ requestId: z.string(), status: requestStatusSchema }).meta({ id: 'AgentAbortResult' });

const permissionAnswerSchema = z
  .strictObject({
    decision: z.enum(['allow', 'deny', 'cancel']),
    message: z.string().max(4096).optional(),
  })
  .meta({ id: 'AgentPermissionAnswer' });

const permissionReceiptSchema = z
  .strictObject({
    permissionRequestId: z.string(),
    decision: z.enum(['allow', 'deny', 'cancel']),
    created: z.boolean().meta({ description: 'false when an earlier answer was stored (the first answer wins).' }),
  })
  .meta({ id: 'AgentPermissionReceipt' });

const agentStatusSchema = z
  .strictObject({
    state: z.enum(['idle', 'running', 'waiting_permission', 'needs_recovery', 'stopped']),
    activeRequestId: z.string().nullable(),
    queued: z.array(z.string()),
    pendingPermissions: z.array(z.string()),
    plan: parsedJsonValueSchema.nullable().meta({ description: 'The recovery plan the agent is parked on (needs_recovery).' }),
    message: z.string().nullable(),
  })
  .meta({ id: 'AgentStatus' });

/** The session object, seen through its agent methods. */
function agentOf(object: SessionObjectHandle): SessionObjectAgentRpc {
  // SAFETY: `SESSIONS` binds a SessionObject (or a subclass), which implements these methods.
  return object as unknown as SessionObjectAgentRpc;
}

function outcomeUnknown(cause: unknown): DurableEventStoreError {
  return new DurableEventStoreError(
    'DURABLE_EVENT_WRITE_FAILED',
    'the session object did not answer; repeat the request with the same commandId to learn the outcome',
    { cause },
  );
}

function unavailable(cause: unknown): DurableEventStoreError {
  return new DurableEventStoreError('DURABLE_EVENT_UNAVAILABLE', 'the session object did not answer', { cause });
}

const noStore = { 'cache-control': 'no-store' };

/** The agent routes. */
export function agentRoutes(): RouteDefinition[] {
  return [
    defineSessionRoute({
      method: 'post',
      path: HTTP_PATHS.agentRequests,
      operationId: 'submitRequest',
      summary: 'Send a request to the agent running in the session object',
      description:
        'Stores the request (idempotent by commandId) and answers 202 with its IDs; the object runs it as the session’s ' +
        'single writer. Subscribe to the session (WebSocket or SSE) to see its durable events, token deltas and tool progress. ' +
        'While a request is parked on a recovery plan, a new commandId is refused with 409 DURABLE_SESSION_RECOVERY_REQUIRED ' +
        '(details: plan, blockedRequestId, unblock) and not stored.',
      tags: ['agent'],
      scope: 'request',
      body: agentRequestSchema,
      extraResponses: [{ status: HttpStatus.ACCEPTED, description: 'The request is stored and will run.', schema: agentRequestAcceptedSchema }],
      errors: ['DURABLE_EVENT_INVALID_INPUT', 'DURABLE_COMMAND_CONFLICT', 'DURABLE_EVENT_WRITE_FAILED', 'DURABLE_SESSION_RECOVERY_REQUIRED'],
      async handle({ sessionId, object, body, c }): Promise<Response> {
        const accepted = await callObject<AgentRequestAccepted>(
          () =>
            agentOf(object).submitRequest(sessionId, {
              commandId: body.commandId,
              input: body.input,
              ...(body.priority === undefined ? {} : { priority: body.priority }),
              ...(body.maxTurns === undefined ? {} : { maxTurns: body.maxTurns }),
              ...(body.model === undefined ? {} : { model: body.model }),
              ...(body.context === undefined ? {} : { context: body.context }),
            }),
          outcomeUnknown,
        );
        return c.json(accepted, HttpStatus.ACCEPTED, noStore);
      },
    }),
    defineSessionRoute({
      method: 'post',
      path: HTTP_PATHS.agentInputs,
      operationId: 'submitInput',
      summary: 'Steer the running request with more input',
      description:
        'Answers 202 once the input is durable in the session object (stored before the Session takes it; an eviction ' +
        'does not lose it: the next instance applies it with the same inputId). It is applied — `input_applied` with the ' +
        'text in `data.input`, watch the event stream for its inputId — at the next turn boundary of the running request ' +
        '(`now`: the model call in flight is aborted and made again with it; running tools and permission waits are not ' +
        'interrupted). An input the request ends (or is rolled over) before applying is dropped. Without a running request ' +
        'the input becomes a new request.',
      tags: ['agent'],
      scope: 'request',
      body: steerSchema,
      extraResponses: [{ status: HttpStatus.ACCEPTED, description: 'The input is durable in the object; not applied yet.', schema: steerAcceptedSchema }],
      errors: ['DURABLE_EVENT_INVALID_INPUT', 'DURABLE_EVENT_WRITE_FAILED', 'DURABLE_SESSION_RECOVERY_REQUIRED'],
      async handle({ sessionId, object, body, c }): Promise<Response> {
        const accepted = await callObject<AgentSteerAccepted>(
          () => agentOf(object).submitInput(sessionId, { input: body.input, ...(body.priority === undefined ? {} : { priority: body.priority }) }),
          outcomeUnknown,
        );
        return c.json(accepted, HttpStatus.ACCEPTED, noStore);
      },
    }),
    defineSessionRoute({
      method: 'post',
      path: HTTP_PATHS.agentRequestAbort,
      operationId: 'abortRequest',
      summary: 'Abort a request',
      description: 'The running request is interrupted (`turn_aborted`, `request_interrupted` with `user_abort`); a queued one is dropped.',
      tags: ['agent'],
      scope: 'request',
      body: abortRequestSchema,
      response: { schema: abortResultSchema, description: 'Where the request stands after the abort.' },
      errors: ['DURABLE_EVENT_INVALID_INPUT', 'DURABLE_RECOVERY_TARGET_NOT_FOUND', 'DURABLE_EVENT_WRITE_FAILED'],
      async handle({ sessionId, object, params }): Promise<AgentAbortResult> {
        const requestId = params['requestId'] ?? '';
        return callObject(() => agentOf(object).abortRequest(sessionId, requestId), outcomeUnknown);
      },
    }),
    defineSessionRoute({
      method: 'post',
      path: HTTP_PATHS.agentPermission,
      operationId: 'answerPermission',
      summary: 'Answer a permission the run waits for',
      description:
        '`allow` runs the tool; `deny` and `cancel` cancel it. The first answer wins (a repeat answers created: false). ' +
        'The run may have been evicted while it waited: the answer is stored and resumes it.',
      tags: ['agent'],
      scope: 'permission',
      body: permissionAnswerSchema,
      response: { schema: permissionReceiptSchema, description: 'The stored answer.' },
      errors: ['DURABLE_EVENT_INVALID_INPUT', 'DURABLE_RECOVERY_TARGET_NOT_FOUND', 'DURABLE_EVENT_WRITE_FAILED'],
      async handle({ sessionId, object, params, body }): Promise<AgentPermissionReceipt> {
        const permissionRequestId = params['permissionRequestId'] ?? '';
        return callObject(
          () =>
            agentOf(object).answerPermission(sessionId, permissionRequestId, {
              decision: body.decision,
              ...(body.message === undefined ? {} : { message: body.message }),
            }),
          outcomeUnknown,
        );
      },
    }),
    defineSessionRoute({
      method: 'get',
      path: HTTP_PATHS.agentStatus,
      operationId: 'agentStatus',
      summary: 'What the agent in the session object is doing',
      description:
        'running, waiting_permission, needs_recovery (with the plan: act through the recovery routes under the lease), ' +
        'idle or stopped.',
      tags: ['agent'],
      scope: 'read',
      response: { schema: agentStatusSchema, description: 'The agent status.' },
      errors: ['DURABLE_EVENT_INVALID_INPUT', 'DURABLE_EVENT_UNAVAILABLE'],
      async handle({ sessionId, object }): Promise<AgentStatus> {
        return callObject(() => agentOf(object).agentStatus(sessionId), unavailable);
      },
    }),
  ];
}
