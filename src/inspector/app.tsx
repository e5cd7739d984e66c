/** @jsxRuntime automatic */
/** @jsxImportSource hono/jsx */
/**
 * The inspector's Hono app: the page, its sign-in, its live tail, its actions and its assets.
 *
 * Routes (`{base}` is `/v1/sessions/{sessionId}/inspect`):
 * - `GET {base}` — the page (or, for a browser without a valid cookie, the sign-in form); `?from=N`
 *   shows the event list from sequence N;
 * Every route also accepts `Authorization: Bearer <token>` (API clients, tests); the cookie is
 * only how a browser carries the same token. A token that is valid but not for this session has
 * no scope here (403).
 * - `POST {base}/login` — a form post with the token; sets an HttpOnly, SameSite=Strict cookie
 *   scoped to `{base}` and redirects (303) to the page. The token is never part of a URL, so it
 *   cannot land in an access log, the history or a Referer;
 * - `POST {base}/logout` — clears the cookie;
 * - `GET {base}/tail?after=<cursor>` — Server-Sent Events through `DurableEventSubscription`
 *   (`Last-Event-ID` wins over `after`), each message a server-rendered row;
 * - `POST {base}/actions/recover|deliver|fork` — a JSON action, under the scope of the path
 *   (`recover`: answer a permission, reconcile an outcome; `deliver`; `fork`); signed in by
 *   cookie it also needs the header `x-agent-ledger-inspector: 1` (a cross-site form cannot set
 *   it, and a cross-origin fetch with it needs a preflight these routes never grant);
 * - `GET /inspector/assets/inspector.js|.css` — the static assets (public, cacheable).
 * Every answer carries a strict Content-Security-Policy (`default-src 'none'; script-src 'self';
 * style-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'`).
 */
import { Hono, type Context } from 'hono';
import { deleteCookie, getCookie, setCookie } from 'hono/cookie';
import { DurableEventSubscription } from '../core/subscription/subscription.js';
import { decodeDurableEventCursor, encodeDurableEventCursor, type DurableEventCursor } from '../protocol/cursor.js';
import { isDurableError } from '../protocol/errors.js';
import { statusOfCode } from '../protocol/http-status.js';
import { describeInvalidId, type SessionId } from '../protocol/ids.js';
import { ACTION_SCOPES, parseInspectorAction, runInspectorAction, type InspectorHost, type InspectorScope } from './backend.js';
import { INSPECTOR_CSS, INSPECTOR_SCRIPT } from './assets.js';
import { DEFAULT_PAGE_FULL_FOLD_LIMIT, loadInspection } from './model/inspection.js';
import { ASSET_PREFIX, EventRow, EVENTS_PER_PAGE, InspectorPage, LoginPage } from './page.js';

/** Name of the cookie that carries the viewer's token. */
export const INSPECTOR_COOKIE = 'agent_ledger_inspector';
/** Header every action request must carry. */
const INSPECTOR_ACTION_HEADER = 'x-agent-ledger-inspector';
/** The Content-Security-Policy of every inspector answer. */
export const INSPECTOR_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";
/** Longest life of one tail response by default (EventSource then reconnects). */
const DEFAULT_TAIL_LIFETIME_MS = 5 * 60_000;
/** Interval of SSE keep-alive comments. */
const KEEP_ALIVE_MS = 15_000;

/** Path of the page of `sessionId`. */
function inspectPath(sessionId: string): string {
  return `/v1/sessions/${encodeURIComponent(sessionId)}/inspect`;
}

function securityHeaders(headers: Headers): void {
  headers.set('content-security-policy', INSPECTOR_CSP);
  headers.set('x-content-type-options', 'nosniff');
  headers.set('referrer-policy', 'no-referrer');
  headers.set('x-frame-options', 'DENY');
}

function problem(status: number, title: string, detail: string, code: string): Response {
  const response = new Response(JSON.stringify({ type: `urn:agent-ledger:problem:${code}`, title, status, detail, code }), {
    status,
    headers: { 'content-type': 'application/problem+json', 'cache-control': 'no-store' },
  });
  if (status === 401) response.headers.set('www-authenticate', 'Bearer realm="agent-ledger"');
  securityHeaders(response.headers);
  return response;
}

function failure(error: unknown, title: string): Response {
  return problem(statusOf(error), title, error instanceof Error ? error.message : String(error), isDurableError(error) ? error.code : 'HTTP_INTERNAL');
}

const unauthorized = (detail: string): Response => problem(401, 'Unauthorized', detail, 'HTTP_UNAUTHORIZED');
const forbidden = (detail: string): Response => problem(403, 'Forbidden', detail, 'HTTP_FORBIDDEN');

/** The status of a failure: a domain code's one status everywhere (`STATUS_BY_CODE`), 500 for anything else. */
function statusOf(error: unknown): number {
  return isDurableError(error) ? statusOfCode(error.code) : 500;
}

/**
 * Builds the inspector's Hono app for a host (local stores or the Worker).
 *
 * @example
 * const app = createInspectorApp({ store: () => store, authorize: async (_env, token) => (token === secret ? ALL_INSPECTOR_SCOPES : null) });
 * await app.fetch(new Request('http://127.0.0.1/v1/sessions/s-1/inspect'));
 */
export function createInspectorApp<E extends object = Record<string, never>>(host: InspectorHost<E>): Hono<{ Bindings: E }> {
  const app = new Hono<{ Bindings: E }>();
  type C = Context<{ Bindings: E }>;

  app.use('*', async (c, next) => {
    await next();
    try {
      securityHeaders(c.res.headers);
    } catch {
      // An immutable response (a stream handed through): it was built with the headers already.
    }
  });

  app.get(`${ASSET_PREFIX}/inspector.js`, () => new Response(INSPECTOR_SCRIPT, {
    headers: { 'content-type': 'text/javascript; charset=utf-8', 'cache-control': 'public, max-age=300' },
  }));
  app.get(`${ASSET_PREFIX}/inspector.css`, () => new Response(INSPECTOR_CSS, {
    headers: { 'content-type': 'text/css; charset=utf-8', 'cache-control': 'public, max-age=300' },
  }));

  function sessionOf(c: C): SessionId | Response {
    const raw = c.req.param('sessionId') ?? '';
    const reason = describeInvalidId(raw);
    if (reason !== undefined) return problem(400, 'Bad Request', `sessionId ${reason}`, 'DURABLE_EVENT_INVALID_INPUT');
    // SAFETY: checked with the SessionId rule above.
    return raw as SessionId;
  }

  const wantsHtml = (c: C): boolean => (c.req.header('accept') ?? '').includes('text/html');

  const loginPage = async (c: C, sessionId: SessionId, status: 401 | 403, error?: string): Promise<Response> => {
    const response = html(
      c,
      await (<LoginPage sessionId={sessionId} loginUrl={`${inspectPath(sessionId)}/login`} {...(error === undefined ? {} : { error })} />),
      status,
    );
    if (status === 401) response.headers.set('www-authenticate', 'Bearer realm="agent-ledger"');
    return response;
  };

  /** The bearer token of the Authorization header, `undefined` without one, `null` when malformed. */
  function bearer(c: C): string | undefined | null {
    const header = c.req.header('authorization');
    if (header === undefined) return undefined;
    const match = /^Bearer[ ]+(\S+)[ ]*$/i.exec(header);
    return match?.[1] ?? null;
  }

  /**
   * Who is asking: a bearer token (API clients; no CSRF concern) wins over the page cookie
   * (browsers). Answers the refusal instead when there is no valid credential or `scope` is missing.
   */
  async function viewer(
    c: C,
    sessionId: SessionId,
    scope: InspectorScope,
    page = false,
  ): Promise<{ scopes: ReadonlySet<InspectorScope>; via: 'bearer' | 'cookie' } | Response> {
    const fromHeader = bearer(c);
    if (fromHeader === null) return unauthorized('the Authorization header must be "Bearer <token>"');
    const token = fromHeader ?? getCookie(c, INSPECTOR_COOKIE);
    if (token === undefined || token === '') {
      return page && wantsHtml(c) ? loginPage(c, sessionId, 401) : unauthorized('a bearer token or the sign-in cookie is required');
    }
    const scopes = await host.authorize(c.env, token, sessionId).catch(() => null);
    if (scopes === null) {
      return page && wantsHtml(c) && fromHeader === undefined
        ? loginPage(c, sessionId, 401, 'The saved sign-in is no longer valid.')
        : unauthorized('the token is not valid');
    }
    if (!scopes.has(scope)) return forbidden(`the token does not allow ${scope} on this session`);
    return { scopes, via: fromHeader === undefined ? 'cookie' : 'bearer' };
  }

  const html = (c: C, body: unknown, status = 200): Response => {
    const response = c.html(`<!DOCTYPE html>${String(body)}`, status as 200);
    response.headers.set('cache-control', 'no-store');
    return response;
  };

  app.get('/v1/sessions/:sessionId/inspect', async (c) => {
    const sessionId = sessionOf(c);
    if (sessionId instanceof Response) return sessionId;
    const base = inspectPath(sessionId);
    const who = await viewer(c, sessionId, 'read', true);
    if (who instanceof Response) return who;
    const scopes = who.scopes;
    const fromText = c.req.query('from');
    const from = fromText !== undefined && /^\d+$/.test(fromText) ? Math.max(1, Number(fromText)) : undefined;
    try {
      const whole = c.req.query('full') === '1';
      const inspection = await loadInspection(host.store(c.env, sessionId), sessionId, {
        recentEvents: EVENTS_PER_PAGE,
        fullFoldLimit: whole ? Number.POSITIVE_INFINITY : (host.fullFoldLimit ?? DEFAULT_PAGE_FULL_FOLD_LIMIT),
        ...(from === undefined ? {} : { listFrom: from }),
      });
      return html(c, await (<InspectorPage inspection={inspection} scopes={scopes} basePath={base} {...(from === undefined ? {} : { listFrom: from })} />));
    } catch (error) {
      return failure(error, 'Inspection failed');
    }
  });

  app.post('/v1/sessions/:sessionId/inspect/login', async (c) => {
    const sessionId = sessionOf(c);
    if (sessionId instanceof Response) return sessionId;
    const base = inspectPath(sessionId);
    const fromHeader = bearer(c);
    if (fromHeader === null) return unauthorized('the Authorization header must be "Bearer <token>"');
    const isJson = (c.req.header('content-type') ?? '').includes('application/json');
    const form: Record<string, unknown> = isJson
      ? await c.req.json<Record<string, unknown>>().catch(() => ({}))
      : await c.req.parseBody().catch(() => ({}));
    const posted = typeof form['token'] === 'string' ? form['token'].trim() : '';
    const token = posted !== '' ? posted : (fromHeader ?? '');
    const browser = wantsHtml(c) || !isJson && fromHeader === undefined;
    if (token === '') return browser ? loginPage(c, sessionId, 401, 'Enter a token.') : unauthorized('a token is required');
    const scopes = await host.authorize(c.env, token, sessionId).catch(() => null);
    if (scopes === null) return browser ? loginPage(c, sessionId, 401, 'That token is not valid.') : unauthorized('the token is not valid');
    if (!scopes.has('read')) {
      return browser ? loginPage(c, sessionId, 403, 'That token does not open this session.') : forbidden('the token does not allow read on this session');
    }
    const secure = host.secureCookie ?? new URL(c.req.url).protocol === 'https:';
    setCookie(c, INSPECTOR_COOKIE, token, { path: base, httpOnly: true, sameSite: 'Strict', secure });
    return c.redirect(base, 303);
  });

  app.post('/v1/sessions/:sessionId/inspect/logout', async (c) => {
    const sessionId = sessionOf(c);
    if (sessionId instanceof Response) return sessionId;
    const who = await viewer(c, sessionId, 'read');
    if (who instanceof Response) return who;
    deleteCookie(c, INSPECTOR_COOKIE, { path: inspectPath(sessionId) });
    return c.redirect(inspectPath(sessionId), 303);
  });

  app.get('/v1/sessions/:sessionId/inspect/tail', async (c) => {
    const sessionId = sessionOf(c);
    if (sessionId instanceof Response) return sessionId;
    const who = await viewer(c, sessionId, 'read');
    if (who instanceof Response) return who;
    const text = c.req.header('last-event-id') ?? c.req.query('after') ?? '';
    let after: DurableEventCursor | null = null;
    const store = host.store(c.env, sessionId);
    const controller = new AbortController();
    let subscription: DurableEventSubscription;
    try {
      if (text !== '') {
        after = decodeDurableEventCursor(text);
        if (after.sessionId !== sessionId) return problem(400, 'Bad Request', 'the cursor names another session', 'DURABLE_EVENT_INVALID_CURSOR');
      }
      subscription = await DurableEventSubscription.open(store, sessionId, { after, signal: controller.signal, pollIntervalMs: 500 });
    } catch (error) {
      return failure(error, 'Tail refused');
    }
    const encoder = new TextEncoder();
    const lifetime = host.tailLifetimeMs ?? DEFAULT_TAIL_LIFETIME_MS;
    let keepAlive: ReturnType<typeof setInterval> | undefined;
    let ends: ReturnType<typeof setTimeout> | undefined;
    const stopTimers = (): void => {
      if (keepAlive !== undefined) clearInterval(keepAlive);
      if (ends !== undefined) clearTimeout(ends);
    };
    const stream = new ReadableStream<Uint8Array>({
      start(streamController) {
        const send = (chunk: string): void => {
          try {
            streamController.enqueue(encoder.encode(chunk));
          } catch {
            controller.abort();
          }
        };
        send('retry: 2000\n\n');
        keepAlive = setInterval(() => send(': keep-alive\n\n'), KEEP_ALIVE_MS);
        ends = setTimeout(() => controller.abort(), lifetime);
        void (async () => {
          try {
            for await (const message of subscription) {
              if (message.type !== 'event') continue;
              const row = String(await (<EventRow event={message.event} />));
              const data = JSON.stringify({ sequence: message.event.sequence, type: message.event.type, html: row });
              send(`id: ${encodeDurableEventCursor(message.cursor)}\nevent: event\ndata: ${data}\n\n`);
            }
            send('event: closed\ndata: {}\n\n');
          } catch {
            // Aborted (client gone or lifetime over) or a store failure: end the stream; EventSource reconnects.
          } finally {
            stopTimers();
            try {
              streamController.close();
            } catch {
              // Already closed by cancel().
            }
          }
        })();
      },
      cancel() {
        stopTimers();
        controller.abort();
        subscription.close();
      },
    });
    const response = new Response(stream, {
      headers: { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store', 'x-accel-buffering': 'no' },
    });
    securityHeaders(response.headers);
    return response;
  });

  for (const group of ['recover', 'deliver', 'fork'] as const) {
    app.post(`/v1/sessions/:sessionId/inspect/actions/${group}`, async (c) => {
      const sessionId = sessionOf(c);
      if (sessionId instanceof Response) return sessionId;
      const who = await viewer(c, sessionId, group);
      if (who instanceof Response) return who;
      if (who.via === 'cookie' && c.req.header(INSPECTOR_ACTION_HEADER) !== '1') {
        return forbidden(`actions signed in by cookie need the ${INSPECTOR_ACTION_HEADER} header`);
      }
      try {
        const action = parseInspectorAction(await c.req.json().catch(() => undefined));
        if (ACTION_SCOPES[action.action] !== group) {
          return problem(400, 'Bad Request', `${action.action} is posted to .../actions/${ACTION_SCOPES[action.action]}`, 'DURABLE_EVENT_INVALID_INPUT');
        }
        const viaAgent = action.action === 'resolve-permission' ? await host.answerPermission?.(c.env, sessionId, action) : undefined;
        const result = viaAgent ?? (await runInspectorAction(host.store(c.env, sessionId), sessionId, action));
        return c.json(result, 200, { 'cache-control': 'no-store' });
      } catch (error) {
        return failure(error, 'Action refused');
      }
    });
  }

  return app;
}
