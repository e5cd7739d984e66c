/**
 * The HTTP paths of an agent-ledger Worker: typed once, used by the server's routes
 * (`src/app/routes/*`), the HTTP clients (`src/adapters/http/*`) and the route table of
 * `docs/http-api.md`.
 *
 * Paths are OpenAPI templates (`{name}` placeholders). {@link httpPath} fills them in, each value
 * percent-encoded as one path segment; the compiler checks that every placeholder gets a value.
 */
import { RECOVERY_OPERATIONS, type RecoveryOperation } from './recovery-operations.js';

/** Every route path, by name. */
export const HTTP_PATHS = {
  health: '/healthz',
  openapi: '/v1/openapi.json',
  docs: '/docs',
  tokens: '/v1/tokens',
  events: '/v1/sessions/{sessionId}/events',
  head: '/v1/sessions/{sessionId}/head',
  subscribe: '/v1/sessions/{sessionId}/subscribe',
  commands: '/v1/sessions/{sessionId}/commands',
  projection: '/v1/sessions/{sessionId}/projection',
  lease: '/v1/sessions/{sessionId}/lease',
  leaseAcquire: '/v1/sessions/{sessionId}/lease/acquire',
  leaseRenew: '/v1/sessions/{sessionId}/lease/renew',
  leaseRelease: '/v1/sessions/{sessionId}/lease/release',
  leaseAssert: '/v1/sessions/{sessionId}/lease/assert',
  run: '/v1/sessions/{sessionId}/runs/{runId}',
  runToolCalls: '/v1/sessions/{sessionId}/runs/{runId}/tool-calls',
  runDeliveries: '/v1/sessions/{sessionId}/runs/{runId}/deliveries',
  durability: '/v1/sessions/{sessionId}/durability',
  agentRequests: '/v1/sessions/{sessionId}/requests',
  agentRequestAbort: '/v1/sessions/{sessionId}/requests/{requestId}/abort',
  agentInputs: '/v1/sessions/{sessionId}/inputs',
  agentPermission: '/v1/sessions/{sessionId}/permissions/{permissionRequestId}',
  agentStatus: '/v1/sessions/{sessionId}/agent',
  checkpoint: '/v1/sessions/{sessionId}/checkpoint',
  digests: '/v1/sessions/{sessionId}/digests',
} as const;

/** A route path template of {@link HTTP_PATHS}. */
export type HttpPathTemplate = (typeof HTTP_PATHS)[keyof typeof HTTP_PATHS];

/** The placeholder names of a path template: `'/a/{x}/b/{y}'` -> `'x' | 'y'`. */
type HttpPathParamNames<P extends string> = P extends `${string}{${infer Name}}${infer Rest}`
  ? Name | HttpPathParamNames<Rest>
  : never;

/** The values a path template needs. */
export type HttpPathParams<P extends string> = { readonly [K in HttpPathParamNames<P>]: string };

/** The path of one recovery operation (`/v1/sessions/{sessionId}/recovery/<segment>`). */
export function recoveryPathTemplate(operation: RecoveryOperation): `/v1/sessions/{sessionId}/recovery/${string}` {
  return `/v1/sessions/{sessionId}/recovery/${RECOVERY_OPERATIONS[operation].segment}`;
}

/**
 * Fills in a path template; each value is percent-encoded as one segment.
 *
 * @example
 * httpPath(HTTP_PATHS.events, { sessionId: 'session/1' }) // '/v1/sessions/session%2F1/events'
 */
export function httpPath<P extends string>(template: P, params: HttpPathParams<P>): string {
  return template.replace(/\{([A-Za-z0-9_]+)\}/g, (_match, name: string) => {
    const value = (params as Readonly<Record<string, string>>)[name];
    if (value === undefined) throw new TypeError(`httpPath: no value for {${name}}`);
    return encodeURIComponent(value);
  });
}
