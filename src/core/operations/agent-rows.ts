/**
 * The rows of the session operation table for the agent Session running in the object (host
 * `agent`), and the schemas of the agent routes. The routes of requests, inputs, aborts and
 * permission answers stay hand-written (`src/app/routes/agent.ts`: a 202 answer, path parameters);
 * each runs its row through the one RPC client. Over RPC the host checks every input itself.
 */
import { z } from 'zod';
import type { DurableRecoveryPlan } from '../projector/projection-types.js';
import { durableInputSchema } from '../../protocol/event-schemas.js';
import { HTTP_PATHS } from '../../protocol/http-paths.js';
import { MAX_ID_LENGTH, isValidId } from '../../protocol/ids.js';
import { parsedJsonValueSchema } from '../../protocol/json.js';
import { noInput, type OperationSpec } from './spec.js';

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
    // Documented as any JSON value, as the other JSON values of the API.
    plan: z.custom<DurableRecoveryPlan>().nullable().meta({ description: 'The recovery plan the agent is parked on (needs_recovery).' }),
    message: z.string().nullable(),
  })
  .meta({ id: 'AgentStatus' });

/**
 * The agent rows. A lost answer of a request, an input, an abort or a permission answer is
 * `DURABLE_EVENT_WRITE_FAILED` (kind `write`: a request is reconciled by sending the same
 * `commandId` again, a permission by answering it again); of the status, `DURABLE_EVENT_UNAVAILABLE`.
 */
export const AGENT_ROWS = {
  submitRequest: {
    kind: 'write',
    host: 'agent',
    input: agentRequestSchema,
    output: agentRequestAcceptedSchema,
    rpcArgs: (input: z.output<typeof agentRequestSchema>) => input,
  },
  submitInput: {
    kind: 'write',
    host: 'agent',
    input: steerSchema,
    output: steerAcceptedSchema,
    rpcArgs: (input: z.output<typeof steerSchema>) => input,
  },
  abortRequest: {
    kind: 'write',
    host: 'agent',
    input: z.strictObject({ requestId: idSchema }),
    output: abortResultSchema,
    rpcArgs: (requestId: string) => ({ requestId }),
  },
  answerPermission: {
    kind: 'write',
    host: 'agent',
    input: z.strictObject({ permissionRequestId: idSchema, answer: permissionAnswerSchema }),
    output: permissionReceiptSchema,
    rpcArgs: (permissionRequestId: string, answer: z.output<typeof permissionAnswerSchema>) => ({ permissionRequestId, answer }),
  },
  agentStatus: {
    kind: 'read',
    host: 'agent',
    input: noInput,
    output: agentStatusSchema,
    rpcArgs: () => ({}),
    http: {
      method: 'get',
      path: HTTP_PATHS.agentStatus,
      scope: 'read',
      summary: 'What the agent in the session object is doing',
      description:
        'running, waiting_permission, needs_recovery (with the plan: act through the recovery routes under the lease), ' +
        'idle or stopped.',
      tags: ['agent'],
      errors: ['DURABLE_EVENT_INVALID_INPUT', 'DURABLE_EVENT_UNAVAILABLE'],
      responseDescription: 'The agent status.',
    },
  },
} as const satisfies Record<string, OperationSpec>;
