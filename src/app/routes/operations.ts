/**
 * The routes of the session operations, derived from their rows (`SESSION_OPERATIONS` in
 * `src/core/operations/`): method, path, scope, validation (`GET`: the row's input as the
 * query string, `POST`: as the JSON body), OpenAPI entry and route-table line. The handler runs
 * the row through the one RPC client, whose transport-failure rule comes from the row's kind.
 *
 * The journal and recovery rows take two things from the HTTP layer that the core cannot hold:
 * the exact response schema (`schemas-recovery.ts`), and, for a body the row's schema refuses,
 * the journal's or the coordinator's own argument check, so that the answer carries its exact
 * error.
 */
import type { z } from 'zod';
import { callOperation } from '../../adapters/durable-object/operation-client.js';
import { prepareCommand } from '../../core/journal/journal-options.js';
import { RECOVERY_INPUT_PARSERS } from '../../core/recovery/input-parsers.js';
import {
  OPERATION_NAMES,
  SESSION_OPERATIONS,
  type OperationName,
  type OperationSpec,
} from '../../core/operations/operations.js';
import { DurableExecutionLeaseError } from '../../protocol/errors.js';
import { RECOVERY_OPERATIONS, isRecoveryMutation, isRecoveryOperation } from '../../protocol/recovery-operations.js';
import { TOKEN_SCOPES, type TokenScope } from '../auth.js';
import { MAX_REQUEST_BODY_BYTES } from '../body.js';
import { defineSessionRoute, type RouteDefinition } from '../route-kit.js';
import { commandResponseSchema, projectionResponseSchema, RECOVERY_RESPONSE_SCHEMAS } from '../schemas-recovery.js';
import { executionFenceSchema } from '../schemas.js';

/** What a group of routes adds to its rows (see the module header). */
interface RouteExtras {
  /** The documented response schema of row `name`, when more exact than the row's output. */
  responseSchema?(name: OperationName): z.ZodType | undefined;
  /** Runs on a body the row's schema refused: throws the domain error to answer with, if any. */
  explainBodyFailure?(name: OperationName, raw: unknown): void;
}

function scopeOf(name: string, scope: string): TokenScope {
  if (!(TOKEN_SCOPES as readonly string[]).includes(scope)) throw new Error(`operation ${name}: unknown token scope ${scope}`);
  return scope as TokenScope;
}

/** The route of one row (which has `http`). */
function operationRoute(name: OperationName, extras: RouteExtras = {}): RouteDefinition {
  const row: OperationSpec = SESSION_OPERATIONS[name];
  const http = row.http;
  if (http === undefined) throw new Error(`operation ${name} has no HTTP route`);
  const input = row.input as z.ZodObject;
  const inQuery = http.method === 'get';
  const takesQuery = inQuery && Object.keys(input.shape).length > 0;
  const inputErrorCode = http.inputErrorCode;
  const fieldErrorCodes = http.fieldErrorCodes;
  const bodyErrorCode =
    inputErrorCode === undefined && fieldErrorCodes === undefined
      ? {}
      : { bodyErrorCode: (key: string | undefined) => (key === undefined ? undefined : fieldErrorCodes?.[key]) ?? inputErrorCode ?? 'DURABLE_EVENT_INVALID_INPUT' };
  const explain = extras.explainBodyFailure;
  return defineSessionRoute<unknown, unknown, unknown>({
    method: http.method,
    path: http.path,
    operationId: http.operationId ?? name,
    summary: http.summary,
    ...(http.description === undefined ? {} : { description: http.description }),
    tags: http.tags,
    scope: scopeOf(name, http.scope),
    ...(takesQuery ? { query: input, ...(inputErrorCode === undefined ? {} : { queryErrorCode: () => inputErrorCode }) } : {}),
    ...(inQuery
      ? {}
      : {
          body: row.input,
          ...bodyErrorCode,
          ...(http.largeBody === true ? { maxBodyBytes: MAX_REQUEST_BODY_BYTES } : {}),
          ...(explain === undefined ? {} : { explainBodyFailure: (raw: unknown) => explain(name, raw) }),
        }),
    response: {
      schema: extras.responseSchema?.(name) ?? http.answer?.schema ?? row.output,
      description: http.responseDescription,
    },
    errors: http.errors,
    async handle({ sessionId, object, query, body }) {
      // SAFETY: validated above with the row's own input schema.
      const output = await callOperation(object, sessionId, name, (inQuery ? (query ?? {}) : body) as never);
      return http.answer === undefined ? output : http.answer.fromOutput(output);
    },
  });
}

/** The routes of the rows whose first tag is `tag`, in table order. */
export function operationRoutes(tag: string, extras: RouteExtras = {}): RouteDefinition[] {
  return OPERATION_NAMES.filter((name) => {
    const row: OperationSpec = SESSION_OPERATIONS[name];
    return row.http?.tags[0] === tag;
  }).map((name) => operationRoute(name, extras));
}

/**
 * Splits the optional `executionFence` off a raw body: throws `DURABLE_EXECUTION_LEASE_INVALID`
 * for a malformed fence, and returns the rest for the core's own argument check.
 */
function withoutFence(raw: unknown): unknown {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return raw;
  const { executionFence, ...rest } = raw as Record<string, unknown>;
  if (executionFence !== undefined && !executionFenceSchema.safeParse(executionFence).success) {
    throw new DurableExecutionLeaseError('DURABLE_EXECUTION_LEASE_INVALID', 'executionFence is malformed');
  }
  return rest;
}

/** Execution-lease routes: acquire, renew (heartbeat), release, assert, inspect. */
export const leaseRoutes = (): RouteDefinition[] => operationRoutes('lease');

/** Event-log reads of the table (the per-event digests); the streaming event routes are in `events.ts`. */
export const eventOperationRoutes = (): RouteDefinition[] => operationRoutes('events');

/**
 * Journal routes: `POST .../commands` commits one command inside the session's object (previewed,
 * head-pinned or following the head; `committed`, `replayed` or `reconciled`; a lost answer is
 * `DURABLE_COMMAND_OUTCOME_UNKNOWN`: resubmit the same command), `GET .../projection` answers the
 * projection, its recovery plan and the head they were folded to.
 */
export const journalRoutes = (): RouteDefinition[] =>
  operationRoutes('journal', {
    responseSchema: (name) => (name === 'commit' ? commandResponseSchema : name === 'projection' ? projectionResponseSchema : undefined),
    explainBodyFailure: (name, raw) => {
      if (name === 'commit') prepareCommand(withoutFence(raw));
    },
  });

/**
 * Recovery routes: `POST /v1/sessions/{sessionId}/recovery/<segment>` per recovery command and
 * `GET .../recovery/plan-resume`. The session's object runs each on its coordinator: one command
 * pinned to the observed (or the caller's) head, `committed`, or `reconciled` on a retry with the
 * same `commandId`; a call whose RPC fails in transit is `DURABLE_COMMAND_OUTCOME_UNKNOWN`.
 */
export const recoveryRoutes = (): RouteDefinition[] =>
  operationRoutes('recovery', {
    responseSchema: (name) => (isRecoveryOperation(name) ? RECOVERY_RESPONSE_SCHEMAS[RECOVERY_OPERATIONS[name].response] : undefined),
    explainBodyFailure: (name, raw) => {
      if (isRecoveryMutation(name)) RECOVERY_INPUT_PARSERS[name](withoutFence(raw));
    },
  });
