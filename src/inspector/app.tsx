/** @jsxRuntime automatic */
/** @jsxImportSource hono/jsx */
/**
 * The inspector's Hono app: the page, its sign-in, its live tail, its actions and its assets.
 *
 * Routes (`{base}` is `/v1/sessions/{sessionId}/inspect`):
 * - `GET {base}` — the page (or the sign-in form without a valid cookie); `?from=N` shows the
 *   event list from sequence N;
 * - `POST {base}/login` — a form post with the token; sets an HttpOnly, SameSite=Strict cookie
 *   scoped to `{base}` and redirects (303) to the page. The token is never part of a URL, so it
 *   cannot land in an access log, the history or a Referer;
 * - `POST {base}/logout` — clears the cookie;
 * - `GET {base}/tail?after=<cursor>` — Server-Sent Events through `DurableEventSubscription`
 *   (`Last-Event-ID` wins over `after`), each message a server-rendered row;
 * - `POST {base}/actions` — a JSON action; needs the header `x-agent-ledger-inspector: 1` (a
 *   cross-site form cannot set it, and a cross-origin fetch with it needs a preflight the page's
 *   routes never grant) and the action's scope;
 * - `GET /inspector/assets/inspector.js|.css` — the static assets (public, cacheable).
 * Every answer carries a strict Content-Security-Policy (`default-src 'none'; script-src 'self';
 * style-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'`).
 */
import { Hono, type Context } from 'hono';
import { deleteCookie, getCookie, setCookie } from 'hono/cookie';
import { DurableEventSubscription } from '../core/subscription/subscription.js';
import { decodeDurableEventCursor, encodeDurableEventCursor, type DurableEventCursor } from '../protocol/cursor.js';
import { isDurableError } from '../protocol/errors.js';
import { describeInvalidId, type SessionId } from '../protocol/ids.js';
import { ACTION_SCOPES, parseInspectorAction, runInspectorAction, type InspectorHost, type InspectorScope } from './backend.js';
import { INSPECTOR_CSS, INSPECTOR_SCRIPT } from './assets.js';
import { loadInspection } from './model/inspection.js';
import { ASSET_PREFIX, EventRow, EVENTS_PER_PAGE, InspectorPage, LoginPage } from './page.js';

/** Name of the cookie that carries the viewer's token. */
export const INSPECTOR_COOKIE = 'agent_ledger_inspector';
/** Header every action request must carry. */
export const INSPECTOR_ACTION_HEADER = 'x-agent-ledger-inspector';
/** The Content-Security-Policy of every inspector answer. */
export const INSPECTOR_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";
/** Longest life of one tail response by default (EventSource then reconnects). */
const DEFAULT_TAIL_LIFETIME_MS = 5 * 60_000;
/** Interval of SSE keep-alive comments. */
const KEEP_ALIVE_MS = 15_000;

/** Path of the page of `sessionId`. */
export function inspectPath(sessionId: string): string {
  return `/v1/sessions/${encodeURIComponent(sessionId)}/inspect`;
}

function securityHeaders(headers: Headers): void {
  headers.set('content-security-policy', INSPECTOR_CSP);
  headers.set('x-content-type-options', 'nosniff');
  headers.set('referrer-policy', 'no-referrer');
  headers.set('x-frame-options', 'DENY');
}

function problem(status: number, title: string, detail: string, code?: string): Response {
  const response = new Response(JSON.stringify({ type: 'about:blank', title, status, detail, ...(code === undefined ? {} : { code }) }), {
    status,
    headers: { 'content-type': 'application/problem+json', 'cache-control': 'no-store' },
  });
  securityHeaders(response.headers);
  return response;
}

function statusOf(error: unknown): number {
  if (!isDurableError(error)) return 500;
  const code = error.code;
  if (code.endsWith('_INVALID_INPUT') || code.endsWith('_INVALID_CURSOR') || code.endsWith('INVALID_VALUE') || code === 'DURABLE_EVENT_SUBSCRIPTION_INVALID') return 400;
  if (code.includes('CONFLICT') || code.includes('INVALID_STATE') || code === 'DURABLE_SESSION_RECOVERY_REQUIRED' || code.includes('LEASE')) return 409;
  if (code.includes('NOT_FOUND')) return 404;
  if (code === 'DURABLE_EVENT_PROJECTION_INVALID') return 422;
  return 500;
}

/** Options of {@link createInspectorApp}. */
export type CreateInspectorAppOptions<E> = InspectorHost<E>;

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

  async function viewer(c: C, sessionId: SessionId): Promise<ReadonlySet<InspectorScope> | null> {
    const token = getCookie(c, INSPECTOR_COOKIE);
    if (token === undefined || token === '') return null;
    return host.authorize(c.env, token, sessionId);
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
    const scopes = await viewer(c, sessionId);
    if (scopes === null) return html(c, await (<LoginPage sessionId={sessionId} loginUrl={`${base}/login`} />), 401);
    if (!scopes.has('read')) return problem(403, 'Forbidden', 'the token lacks the read scope', 'HTTP_FORBIDDEN');
    const fromText = c.req.query('from');
    const from = fromText !== undefined && /^\d+$/.test(fromText) ? Math.max(1, Number(fromText)) : undefined;
    try {
      const inspection = await loadInspection(host.store(c.env, sessionId), sessionId, {
        recentEvents: EVENTS_PER_PAGE,
        ...(from === undefined ? {} : { listFrom: from }),
      });
      return html(c, await (<InspectorPage inspection={inspection} scopes={scopes} basePath={base} {...(from === undefined ? {} : { listFrom: from })} />));
    } catch (error) {
      return problem(statusOf(error), 'Inspection failed', error instanceof Error ? error.message : String(error), isDurableError(error) ? error.code : undefined);
    }
  });

  app.post('/v1/sessions/:sessionId/inspect/login', async (c) => {
    const sessionId = sessionOf(c);
    if (sessionId instanceof Response) return sessionId;
    const base = inspectPath(sessionId);
    const form = await c.req.parseBody().catch(() => ({}) as Record<string, unknown>);
    const token = typeof form['token'] === 'string' ? form['token'].trim() : '';
    const scopes = token === '' ? null : await host.authorize(c.env, token, sessionId).catch(() => null);
    if (scopes === null) {
      return html(c, await (<LoginPage sessionId={sessionId} loginUrl={`${base}/login`} error="That token does not open this session." />), 401);
    }
    const secure = host.secureCookie ?? new URL(c.req.url).protocol === 'https:';
    setCookie(c, INSPECTOR_COOKIE, token, { path: base, httpOnly: true, sameSite: 'Strict', secure });
    return c.redirect(base, 303);
  });

  app.post('/v1/sessions/:sessionId/inspect/logout', (c) => {
    const sessionId = sessionOf(c);
    if (sessionId instanceof Response) return sessionId;
    deleteCookie(c, INSPECTOR_COOKIE, { path: inspectPath(sessionId) });
    return c.redirect(inspectPath(sessionId), 303);
  });

  app.get('/v1/sessions/:sessionId/inspect/tail', async (c) => {
    const sessionId = sessionOf(c);
    if (sessionId instanceof Response) return sessionId;
    const scopes = await viewer(c, sessionId);
    if (scopes === null) return problem(401, 'Unauthorized', 'sign in on the page first', 'HTTP_UNAUTHORIZED');
    if (!scopes.has('read')) return problem(403, 'Forbidden', 'the token lacks the read scope', 'HTTP_FORBIDDEN');
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
      return problem(statusOf(error), 'Tail refused', error instanceof Error ? error.message : String(error), isDurableError(error) ? error.code : undefined);
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

  app.post('/v1/sessions/:sessionId/inspect/actions', async (c) => {
    const sessionId = sessionOf(c);
    if (sessionId instanceof Response) return sessionId;
    if (c.req.header(INSPECTOR_ACTION_HEADER) !== '1') {
      return problem(403, 'Forbidden', `actions need the ${INSPECTOR_ACTION_HEADER} header`, 'HTTP_FORBIDDEN');
    }
    const scopes = await viewer(c, sessionId);
    if (scopes === null) return problem(401, 'Unauthorized', 'sign in on the page first', 'HTTP_UNAUTHORIZED');
    try {
      const action = parseInspectorAction(await c.req.json().catch(() => undefined));
      const scope = ACTION_SCOPES[action.action];
      if (!scopes.has(scope)) return problem(403, 'Forbidden', `this action needs the ${scope} scope`, 'HTTP_FORBIDDEN');
      const result = await runInspectorAction(host.store(c.env, sessionId), sessionId, action);
      return c.json(result, 200, { 'cache-control': 'no-store' });
    } catch (error) {
      return problem(statusOf(error), 'Action refused', error instanceof Error ? error.message : String(error), isDurableError(error) ? error.code : undefined);
    }
  });

  return app;
}
