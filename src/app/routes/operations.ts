/**
 * The routes of the session operations, derived from their rows (`SESSION_OPERATIONS` in
 * `src/protocol/operations.ts`): method, path, scope, validation (`GET`: the row's input as the
 * query string, `POST`: as the JSON body), OpenAPI entry and route-table line. The handler runs
 * the row through the one RPC client, whose transport-failure rule comes from the row's kind.
 */
import type { z } from 'zod';
import { callOperation } from '../../adapters/durable-object/operation-client.js';
import {
  OPERATION_NAMES,
  SESSION_OPERATIONS,
  type OperationName,
  type OperationSpec,
} from '../../protocol/operations.js';
import { TOKEN_SCOPES, type TokenScope } from '../auth.js';
import { defineSessionRoute, type RouteDefinition } from '../route-kit.js';

function scopeOf(name: string, scope: string): TokenScope {
  if (!(TOKEN_SCOPES as readonly string[]).includes(scope)) throw new Error(`operation ${name}: unknown token scope ${scope}`);
  return scope as TokenScope;
}

/** The route of one row (which has `http`). */
function operationRoute(name: OperationName): RouteDefinition {
  const row: OperationSpec = SESSION_OPERATIONS[name];
  const http = row.http;
  if (http === undefined) throw new Error(`operation ${name} has no HTTP route`);
  const input = row.input as z.ZodObject;
  const inQuery = http.method === 'get';
  const takesQuery = inQuery && Object.keys(input.shape).length > 0;
  const inputErrorCode = http.inputErrorCode;
  return defineSessionRoute<unknown, unknown, unknown>({
    method: http.method,
    path: http.path,
    operationId: http.operationId ?? name,
    summary: http.summary,
    ...(http.description === undefined ? {} : { description: http.description }),
    tags: http.tags,
    scope: scopeOf(name, http.scope),
    ...(takesQuery ? { query: input, ...(inputErrorCode === undefined ? {} : { queryErrorCode: () => inputErrorCode }) } : {}),
    ...(inQuery ? {} : { body: row.input, ...(inputErrorCode === undefined ? {} : { bodyErrorCode: () => inputErrorCode }) }),
    response: { schema: http.answer?.schema ?? row.output, description: http.responseDescription },
    errors: http.errors,
    async handle({ sessionId, object, query, body }) {
      // SAFETY: validated above with the row's own input schema.
      const output = await callOperation(object, sessionId, name, (inQuery ? (query ?? {}) : body) as never);
      return http.answer === undefined ? output : http.answer.fromOutput(output);
    },
  });
}

/** The routes of the rows whose first tag is `tag`, in table order. */
export function operationRoutes(tag: string): RouteDefinition[] {
  return OPERATION_NAMES.filter((name) => {
    const row: OperationSpec = SESSION_OPERATIONS[name];
    return row.http?.tags[0] === tag;
  }).map(operationRoute);
}

/** Execution-lease routes: acquire, renew (heartbeat), release, assert, inspect. */
export const leaseRoutes = (): RouteDefinition[] => operationRoutes('lease');

/** Event-log reads of the table (the per-event digests); the streaming event routes are in `events.ts`. */
export const eventOperationRoutes = (): RouteDefinition[] => operationRoutes('events');
