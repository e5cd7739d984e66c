/**
 * Token route: the admin mints session-scoped bearer tokens.
 *
 * A session token is an HS256 JWT (see `auth.ts`) naming one session, its scopes and an expiry
 * (default one hour, at most thirty days). Hand it to an agent or a browser; it can touch only
 * that session, and only as far as its scopes allow.
 */
import { DEFAULT_TOKEN_TTL_SECONDS, mintSessionToken } from '../auth.js';
import { defineRoute, type RouteDefinition } from '../route-kit.js';
import { tokenRequestSchema, tokenResponseSchema } from '../schemas.js';
import { HTTP_PATHS } from '../../protocol/http-paths.js';

/** The token routes. */
export function tokenRoutes(): RouteDefinition[] {
  return [
    defineRoute({
      method: 'post',
      path: HTTP_PATHS.tokens,
      operationId: 'mintToken',
      summary: 'Mint a session-scoped token (admin only)',
      description:
        'Scopes: read, append, subscribe, recover, lease, deliver. ttlSeconds defaults to 3600 and is at most 30 days.',
      tags: ['auth'],
      access: { kind: 'admin' },
      body: tokenRequestSchema,
      response: { schema: tokenResponseSchema, description: 'The token and its expiry.', created: true },
      errors: ['DURABLE_EVENT_INVALID_INPUT'],
      async handle({ env, body }) {
        return mintSessionToken(
          env,
          { sessionId: body.sessionId, scopes: body.scopes, ttlSeconds: body.ttlSeconds ?? DEFAULT_TOKEN_TTL_SECONDS },
          Date.now(),
        );
      },
    }),
  ];
}
