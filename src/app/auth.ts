/**
 * Bearer-token authentication and scope checks.
 *
 * 1. {@link extractBearerToken} finds the token: the `Authorization: Bearer` header, or, only on
 *    routes that allow it (WebSocket and EventSource clients cannot set headers), the
 *    `access_token` query parameter or a `bearer.<token>` WebSocket subprotocol.
 * 2. {@link authenticate} turns it into a {@link Principal}: the admin token (a Worker secret,
 *    compared in constant time through SHA-256 digests), or a session token: an HS256 JWT signed
 *    with `TOKEN_SECRET` (`hono/jwt`) whose claims are `{ sub: sessionId, scopes, iat, exp, aud }`,
 *    living at most {@link MAX_TOKEN_TTL_SECONDS} (`exp - iat`, and `exp` from now), checked here.
 * 3. {@link authorize} checks a principal against a route's {@link AccessRule}: admin may do
 *    everything; a session token only its own session and only its scopes.
 * Tokens are never logged and never echoed in error messages (hono's JWT errors embed the token,
 * so their messages are dropped here).
 */
import { sign, verify } from 'hono/jwt';
import { z } from 'zod';
import { BEARER_SUBPROTOCOL_PREFIX } from '../adapters/http/websocket-watch.js';
import { isValidId, type SessionId } from '../protocol/ids.js';
import { HttpProblem } from './http-errors.js';

/** What a session token may allow. */
export const TOKEN_SCOPES = ['read', 'append', 'subscribe', 'recover', 'lease', 'deliver', 'request', 'permission'] as const;
/** One session-token scope. */
export type TokenScope = (typeof TOKEN_SCOPES)[number];

/** Audience claim of every session token this Worker mints. */
const TOKEN_AUDIENCE = 'agent-ledger';
/** Longest session-token lifetime: 30 days. */
export const MAX_TOKEN_TTL_SECONDS = 30 * 24 * 60 * 60;
/** Lifetime of a session token when the request does not say: 1 hour. */
export const DEFAULT_TOKEN_TTL_SECONDS = 60 * 60;
/** Query parameter that may carry a token on routes that allow it. */
export const ACCESS_TOKEN_QUERY = 'access_token';
/** Longest token accepted (keeps the verifier's work bounded). */
const MAX_TOKEN_LENGTH = 4096;

/** Who is calling. */
export type Principal =
  | { kind: 'admin' }
  | { kind: 'session'; sessionId: SessionId; scopes: ReadonlySet<TokenScope>; expiresAtSeconds: number };

/** Who may call a route. */
export type AccessRule =
  /** No token needed (health, docs). */
  | { kind: 'public' }
  /** Any valid token. */
  | { kind: 'authenticated' }
  /** The admin token only. */
  | { kind: 'admin' }
  /** Admin, or a session token for the route's session carrying `scope`. */
  | { kind: 'session'; scope: TokenScope; tokenInQuery?: boolean };

/** Secrets the Worker needs for authentication. */
export interface AuthSecrets {
  ADMIN_TOKEN?: string | undefined;
  TOKEN_SECRET?: string | undefined;
}

const claimsSchema = z.object({
  sub: z.string().refine(isValidId),
  scopes: z.array(z.enum(TOKEN_SCOPES)).min(1),
  exp: z.number().int(),
  iat: z.number().int(),
  aud: z.literal(TOKEN_AUDIENCE),
});

/** Clock skew tolerated on `iat` (a token "issued" later than this in the future is refused). */
const ISSUED_AT_SKEW_SECONDS = 60;

const TOKEN_CHARS = /^[A-Za-z0-9._~+/=-]+$/;

function unauthorized(message: string): HttpProblem {
  return new HttpProblem('HTTP_UNAUTHORIZED', message);
}

function forbidden(message: string): HttpProblem {
  return new HttpProblem('HTTP_FORBIDDEN', message);
}

/** The `bearer.<token>` entry of a `Sec-WebSocket-Protocol` header, if any. */
function tokenFromSubprotocols(header: string | null): string | undefined {
  if (header === null) return undefined;
  for (const entry of header.split(',')) {
    const protocol = entry.trim();
    if (protocol.startsWith(BEARER_SUBPROTOCOL_PREFIX)) return protocol.slice(BEARER_SUBPROTOCOL_PREFIX.length);
  }
  return undefined;
}

/**
 * Finds the request's bearer token. The header always counts; the query parameter and the
 * subprotocol count only when `allowAlternatives` is set.
 */
export function extractBearerToken(request: Request, allowAlternatives: boolean): string | undefined {
  const header = request.headers.get('authorization');
  if (header !== null) {
    const match = /^Bearer[ ]+(\S+)[ ]*$/i.exec(header);
    if (match?.[1] === undefined) throw unauthorized('the Authorization header must be "Bearer <token>"');
    return match[1];
  }
  if (!allowAlternatives) return undefined;
  const fromQuery = new URL(request.url).searchParams.get(ACCESS_TOKEN_QUERY);
  if (fromQuery !== null && fromQuery !== '') return fromQuery;
  return tokenFromSubprotocols(request.headers.get('sec-websocket-protocol'));
}

async function sha256(text: string): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text)));
}

/** Compares two secrets in time independent of where they differ (digests have equal length). */
async function constantTimeEqual(a: string, b: string): Promise<boolean> {
  const [left, right] = await Promise.all([sha256(a), sha256(b)]);
  let difference = 0;
  for (let index = 0; index < left.length; index++) difference |= (left[index] ?? 0) ^ (right[index] ?? 0);
  return difference === 0;
}

/** Resolves a token to its principal; throws `HTTP_UNAUTHORIZED` for anything not valid. */
export async function authenticate(secrets: AuthSecrets, token: string | undefined): Promise<Principal> {
  if (token === undefined || token === '') throw unauthorized('a bearer token is required');
  if (token.length > MAX_TOKEN_LENGTH || !TOKEN_CHARS.test(token)) throw unauthorized('the bearer token is malformed');
  const adminToken = secrets.ADMIN_TOKEN;
  if (adminToken !== undefined && adminToken !== '' && (await constantTimeEqual(token, adminToken))) {
    return { kind: 'admin' };
  }
  const secret = secrets.TOKEN_SECRET;
  if (secret === undefined || secret === '' || token.split('.').length !== 3) {
    throw unauthorized('the bearer token is not valid');
  }
  let payload: unknown;
  try {
    payload = await verify(token, secret, { alg: 'HS256', aud: TOKEN_AUDIENCE });
  } catch {
    // hono's JWT errors quote the token: never pass their messages on.
    throw unauthorized('the bearer token is not valid or has expired');
  }
  const claims = claimsSchema.safeParse(payload);
  if (!claims.success) throw unauthorized('the bearer token is not a session token');
  // The lifetime cap holds at verification too, not only when minting: a token signed elsewhere
  // with the secret (or minted before the cap was lowered) lives at most MAX_TOKEN_TTL_SECONDS.
  const { iat, exp } = claims.data;
  const nowSeconds = Math.floor(Date.now() / 1000);
  if (iat > nowSeconds + ISSUED_AT_SKEW_SECONDS || exp - iat > MAX_TOKEN_TTL_SECONDS || exp - nowSeconds > MAX_TOKEN_TTL_SECONDS) {
    throw unauthorized('the bearer token outlives the longest token lifetime');
  }
  return {
    kind: 'session',
    // SAFETY: `sub` passed isValidId, the SessionId rule.
    sessionId: claims.data.sub as SessionId,
    scopes: new Set(claims.data.scopes),
    expiresAtSeconds: claims.data.exp,
  };
}

/**
 * Checks that `principal` may call a route with `rule` on `sessionId` (for session routes).
 * Throws `HTTP_FORBIDDEN` otherwise.
 */
export function authorize(principal: Principal, rule: AccessRule, sessionId: SessionId | undefined): void {
  if (principal.kind === 'admin' || rule.kind === 'public' || rule.kind === 'authenticated') return;
  if (rule.kind === 'admin') throw forbidden('this route needs the admin token');
  if (sessionId === undefined || principal.sessionId !== sessionId) {
    throw forbidden('the token belongs to another session');
  }
  if (!principal.scopes.has(rule.scope)) throw forbidden(`the token lacks the "${rule.scope}" scope`);
}

/** Input of {@link mintSessionToken}. */
export interface MintRequest {
  sessionId: SessionId;
  scopes: readonly TokenScope[];
  ttlSeconds: number;
}

/** Signs a session token; `expiresAt` is an ISO timestamp. */
export async function mintSessionToken(
  secrets: AuthSecrets,
  request: MintRequest,
  nowMs: number,
): Promise<{ token: string; expiresAt: string }> {
  const secret = secrets.TOKEN_SECRET;
  if (secret === undefined || secret === '') {
    throw new HttpProblem('HTTP_FORBIDDEN', 'TOKEN_SECRET is not configured; session tokens are disabled');
  }
  const issuedAt = Math.floor(nowMs / 1000);
  const exp = issuedAt + request.ttlSeconds;
  const scopes = [...new Set(request.scopes)];
  const token = await sign({ sub: request.sessionId, scopes, aud: TOKEN_AUDIENCE, iat: issuedAt, exp }, secret, 'HS256');
  return { token, expiresAt: new Date(exp * 1000).toISOString() };
}
