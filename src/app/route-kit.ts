/**
 * Route definitions: one declaration drives routing, validation, auth and the OpenAPI document.
 *
 * A route group (`src/app/routes/*.ts`) declares each route with {@link defineRoute} or
 * {@link defineSessionRoute}: method, OpenAPI-style path, access rule, zod schemas and a handler.
 * The declaration's `run` does, in order:
 * 1. authentication (401) — the token comes from the header, or also from `?access_token=` / a
 *    `bearer.<token>` subprotocol when the rule allows it;
 * 2. the `{sessionId}` path parameter checked with the SessionId rules (400);
 * 3. authorization against the rule and the session (403);
 * 4. the query string and the bounded JSON body validated by their zod schemas (400 / 413); a
 *    route can `explainBodyFailure` to report the exact domain error the store would raise;
 * 5. the handler; a plain value is sent as JSON, a `Response` as is. Any throw becomes
 *    problem+json through `http-errors.ts`.
 * `openapi.ts` reads the same declarations (`spec`), so every route is documented.
 */
import type { Context } from 'hono';
import type { z } from 'zod';
import { durableErrorFromJson, isDurableError, type DurableErrorCode } from '../protocol/errors.js';
import { describeInvalidId, type SessionId } from '../protocol/ids.js';
import { authenticate, authorize, extractBearerToken, type AccessRule, type Principal, type TokenScope } from './auth.js';
import { MAX_CONTROL_BODY_BYTES, readJsonBody } from './body.js';
import type { AppBindings, AppVariables } from './env.js';
import { HttpProblem, HttpStatus, problemResponse } from './http-errors.js';
import { sessionObject, type SessionObjectHandle } from './session-rpc.js';

/** Hono environment of this Worker. */
export type AppEnv = { Bindings: AppBindings; Variables: AppVariables };
/** Hono context of this Worker. */
export type AppContext = Context<AppEnv>;
/** Methods the API uses. */
type HttpMethod = 'get' | 'post';

/** A documented response other than the main JSON one (WebSocket upgrade, event stream...). */
interface ExtraResponseDoc {
  status: number;
  description: string;
  contentType?: string;
  schema?: z.ZodType;
}

/** A documented request header. */
interface HeaderDoc {
  name: string;
  description: string;
}

/** What `openapi.ts` needs to know about a route. */
export interface RouteSpec {
  method: HttpMethod;
  /** OpenAPI path template, e.g. `/v1/sessions/{sessionId}/events`. */
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  tags: readonly string[];
  access: AccessRule;
  query?: z.ZodObject;
  body?: z.ZodType;
  /** The success response: a JSON schema (status 200 unless `created`) or only extra responses. */
  response?: { schema: z.ZodType; description: string; created?: boolean };
  extraResponses?: readonly ExtraResponseDoc[];
  headers?: readonly HeaderDoc[];
  /** Domain codes the route may answer with (documented with their statuses). */
  errors: readonly DurableErrorCode[];
  /**
   * Set by {@link defineRoute} and {@link defineSessionRoute}, which refuse an unknown or repeated
   * query parameter with 400 on every route; the OpenAPI document lists that 400 when it is set.
   */
  checksQuery?: boolean;
}

/** A declared route, ready to mount. */
export interface RouteDefinition {
  spec: RouteSpec;
  run(c: AppContext): Promise<Response>;
}

/** What a handler receives. */
export interface RouteInput<Q, B> {
  c: AppContext;
  env: AppBindings;
  /** `undefined` only on public routes. */
  principal: Principal | undefined;
  query: Q;
  body: B;
  /** Raw path parameters other than `sessionId` (already percent-decoded). */
  params: Readonly<Record<string, string>>;
}

/** What a session route's handler receives. */
export interface SessionRouteInput<Q, B> extends RouteInput<Q, B> {
  sessionId: SessionId;
  /** The session's Durable Object. */
  object: SessionObjectHandle;
}

interface CommonDef<Q, B> extends Omit<RouteSpec, 'query' | 'body' | 'access' | 'checksQuery'> {
  query?: z.ZodObject & z.ZodType<Q>;
  body?: z.ZodType<B>;
  /** Largest accepted body (default {@link MAX_CONTROL_BODY_BYTES}). */
  maxBodyBytes?: number;
  /** Code of a query failure, by the offending top-level key (default `DURABLE_EVENT_INVALID_INPUT`). */
  queryErrorCode?: (key: string | undefined) => DurableErrorCode;
  /** Code of a body failure, by the offending top-level key (default `DURABLE_EVENT_INVALID_INPUT`). */
  bodyErrorCode?: (key: string | undefined) => DurableErrorCode;
  /** Called when the body schema fails: throw the precise domain error if there is one. */
  explainBodyFailure?: (raw: unknown) => void;
}

/** Declaration of a route without a session. */
export interface RouteDef<Q, B, R> extends CommonDef<Q, B> {
  access: Exclude<AccessRule, { kind: 'session' }>;
  handle(input: RouteInput<Q, B>): Promise<R | Response> | R | Response;
}

/** Declaration of a route on `/v1/sessions/{sessionId}/...`. */
export interface SessionRouteDef<Q, B, R> extends CommonDef<Q, B> {
  /** Scope a session token needs; `tokenInQuery` also accepts `?access_token=` and subprotocols. */
  scope: TokenScope;
  tokenInQuery?: boolean;
  handle(input: SessionRouteInput<Q, B>): Promise<R | Response> | R | Response;
}

function domainError(code: DurableErrorCode, message: string): Error {
  return durableErrorFromJson({ code, message });
}

function describeIssue(issue: z.core.$ZodIssue | undefined): { key: string | undefined; message: string } {
  if (issue === undefined) return { key: undefined, message: 'invalid' };
  const first = issue.path[0];
  const where = issue.path.length === 0 ? '' : `${issue.path.map(String).join('.')}: `;
  const key = issue.code === 'unrecognized_keys' ? undefined : typeof first === 'string' ? first : undefined;
  return { key, message: `${where}${issue.message}` };
}

function parseQuery<Q>(c: AppContext, def: CommonDef<Q, unknown>): Q {
  const all = c.req.queries();
  const flat: Record<string, string> = {};
  for (const [key, values] of Object.entries(all)) {
    if (values.length !== 1 || values[0] === undefined) {
      throw domainError('DURABLE_EVENT_INVALID_INPUT', `query parameter ${JSON.stringify(key.slice(0, 64))} is repeated`);
    }
    flat[key] = values[0];
  }
  if (def.query === undefined) {
    if (Object.keys(flat).length > 0) throw domainError('DURABLE_EVENT_INVALID_INPUT', 'this route takes no query parameters');
    // SAFETY: a route without a query schema declares Q as undefined/unknown.
    return undefined as Q;
  }
  const result = def.query.safeParse(flat);
  if (result.success) return result.data;
  const { key, message } = describeIssue(result.error.issues[0]);
  throw domainError(def.queryErrorCode?.(key) ?? 'DURABLE_EVENT_INVALID_INPUT', `query: ${message}`);
}

async function parseBody<B>(c: AppContext, def: CommonDef<unknown, B>): Promise<B> {
  if (def.body === undefined) {
    // SAFETY: a route without a body schema declares B as undefined/unknown; its body is ignored.
    return undefined as B;
  }
  const raw = await readJsonBody(c.req.raw, def.maxBodyBytes ?? MAX_CONTROL_BODY_BYTES);
  const result = def.body.safeParse(raw);
  if (result.success) return result.data;
  def.explainBodyFailure?.(raw);
  const { key, message } = describeIssue(result.error.issues[0]);
  throw domainError(def.bodyErrorCode?.(key) ?? 'DURABLE_EVENT_INVALID_INPUT', `body: ${message}`);
}

/** Answers a failed request; unexpected errors are logged by name only (messages may quote input). */
function fail(error: unknown, operationId: string): Response {
  if (!(error instanceof HttpProblem) && !isDurableError(error)) {
    const name = error instanceof Error ? error.name : typeof error;
    console.error(`agent-ledger worker: unexpected ${name} in ${operationId}`);
  }
  return problemResponse(error);
}

function respond<R>(c: AppContext, result: R | Response, created: boolean | undefined): Response {
  if (result instanceof Response) return result;
  return c.json(result as object, created === true ? HttpStatus.CREATED : HttpStatus.OK, { 'cache-control': 'no-store' });
}

function specOf(def: CommonDef<unknown, unknown>, access: AccessRule): RouteSpec {
  const { query, body, handle: _handle, maxBodyBytes: _m, queryErrorCode: _q, bodyErrorCode: _b, explainBodyFailure: _e, ...rest } =
    def as CommonDef<unknown, unknown> & { handle?: unknown };
  return {
    ...rest,
    access,
    ...(query === undefined ? {} : { query }),
    ...(body === undefined ? {} : { body }),
    checksQuery: true,
  };
}

/** Declares a route that is not about one session (tokens, docs, health). */
export function defineRoute<Q = undefined, B = undefined, R = unknown>(def: RouteDef<Q, B, R>): RouteDefinition {
  const spec = specOf(def as CommonDef<unknown, unknown>, def.access);
  return {
    spec,
    async run(c) {
      try {
        let principal: Principal | undefined;
        if (def.access.kind !== 'public') {
          principal = await authenticate(c.env, extractBearerToken(c.req.raw, false));
          authorize(principal, def.access, undefined);
        }
        const query = parseQuery(c, def);
        const body = await parseBody(c, def);
        const result = await def.handle({ c, env: c.env, principal, query, body, params: c.req.param() });
        return respond(c, result, def.response?.created);
      } catch (error) {
        return fail(error, spec.operationId);
      }
    },
  };
}

/** Declares a route on one session; `path` must contain `{sessionId}`. */
export function defineSessionRoute<Q = undefined, B = undefined, R = unknown>(
  def: SessionRouteDef<Q, B, R>,
): RouteDefinition {
  if (!def.path.includes('{sessionId}')) throw new Error(`session route ${def.path} lacks {sessionId}`);
  const access: AccessRule = {
    kind: 'session',
    scope: def.scope,
    ...(def.tokenInQuery === true ? { tokenInQuery: true } : {}),
  };
  const { scope: _scope, tokenInQuery: _tokenInQuery, ...common } = def;
  const spec = specOf(common as CommonDef<unknown, unknown>, access);
  return {
    spec,
    async run(c) {
      try {
        const principal = await authenticate(c.env, extractBearerToken(c.req.raw, def.tokenInQuery === true));
        const rawSessionId = c.req.param('sessionId');
        const problem = describeInvalidId(rawSessionId);
        if (problem !== undefined) throw domainError('DURABLE_EVENT_INVALID_INPUT', `sessionId ${problem}`);
        // SAFETY: validated just above with the SessionId rule.
        const sessionId = rawSessionId as SessionId;
        authorize(principal, access, sessionId);
        const query = parseQuery(c, def);
        const body = await parseBody(c, def);
        const { sessionId: _s, ...params } = c.req.param();
        const namespace = c.get('sessions') as AppVariables['sessions'] | undefined;
        if (namespace === undefined) throw domainError('DURABLE_EVENT_UNAVAILABLE', 'the Worker has no session objects binding (see createApp({ binding }))');
        const object = sessionObject(namespace, sessionId);
        const result = await def.handle({ c, env: c.env, principal, query, body, params, sessionId, object });
        return respond(c, result, def.response?.created);
      } catch (error) {
        return fail(error, spec.operationId);
      }
    },
  };
}

/** Hono path of an OpenAPI path template: `{name}` -> `:name`. */
export function honoPath(openApiPath: string): string {
  return openApiPath.replace(/\{([A-Za-z0-9_]+)\}/g, ':$1');
}
