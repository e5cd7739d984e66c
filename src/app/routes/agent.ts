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
import { callOperation } from '../../adapters/durable-object/operation-client.js';
import { AGENT_ROWS } from '../../core/operations/agent-rows.js';
import { HTTP_PATHS } from '../../protocol/http-paths.js';
import { HttpStatus } from '../http-errors.js';
import { defineSessionRoute, type RouteDefinition } from '../route-kit.js';
import { operationRoutes } from './operations.js';

const abortRequestSchema = z
  .strictObject({ reason: z.string().max(256).optional().meta({ description: 'Free text for logs (not stored).' }) })
  .meta({ id: 'AgentAbortRequest', description: 'Send `{}`.' });

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
      body: AGENT_ROWS.submitRequest.input,
      extraResponses: [{ status: HttpStatus.ACCEPTED, description: 'The request is stored and will run.', schema: AGENT_ROWS.submitRequest.output }],
      errors: ['DURABLE_EVENT_INVALID_INPUT', 'DURABLE_COMMAND_CONFLICT', 'DURABLE_EVENT_WRITE_FAILED', 'DURABLE_SESSION_RECOVERY_REQUIRED'],
      async handle({ sessionId, object, body, c }): Promise<Response> {
        return c.json(await callOperation(object, sessionId, 'submitRequest', body), HttpStatus.ACCEPTED, noStore);
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
      body: AGENT_ROWS.submitInput.input,
      extraResponses: [{ status: HttpStatus.ACCEPTED, description: 'The input is durable in the object; not applied yet.', schema: AGENT_ROWS.submitInput.output }],
      errors: ['DURABLE_EVENT_INVALID_INPUT', 'DURABLE_EVENT_WRITE_FAILED', 'DURABLE_SESSION_RECOVERY_REQUIRED'],
      async handle({ sessionId, object, body, c }): Promise<Response> {
        return c.json(await callOperation(object, sessionId, 'submitInput', body), HttpStatus.ACCEPTED, noStore);
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
      response: { schema: AGENT_ROWS.abortRequest.output, description: 'Where the request stands after the abort.' },
      errors: ['DURABLE_EVENT_INVALID_INPUT', 'DURABLE_RECOVERY_TARGET_NOT_FOUND', 'DURABLE_EVENT_WRITE_FAILED'],
      handle: ({ sessionId, object, params }) => callOperation(object, sessionId, 'abortRequest', { requestId: params['requestId'] ?? '' }),
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
      body: AGENT_ROWS.answerPermission.input.shape.answer,
      response: { schema: AGENT_ROWS.answerPermission.output, description: 'The stored answer.' },
      errors: ['DURABLE_EVENT_INVALID_INPUT', 'DURABLE_RECOVERY_TARGET_NOT_FOUND', 'DURABLE_EVENT_WRITE_FAILED'],
      handle: ({ sessionId, object, params, body }) =>
        callOperation(object, sessionId, 'answerPermission', { permissionRequestId: params['permissionRequestId'] ?? '', answer: body }),
    }),
    ...operationRoutes('agent'),
  ];
}
