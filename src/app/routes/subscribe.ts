/**
 * The subscribe route: a WebSocket upgrade forwarded to the session object, or Server-Sent Events
 * served by the Worker (`Accept: text/event-stream`).
 *
 * WebSocket: the cursor is decoded and checked for the session here (so a bad one is a plain
 * 400), then the upgrade goes to the object's `fetch` with only `sessionId` and `after`; the
 * token never reaches the object. Browsers cannot set headers, so the token may come as
 * `?access_token=` or as a `bearer.<token>` subprotocol; the answer then selects the non-secret
 * subprotocol {@link LEDGER_SUBPROTOCOL}, which the client must offer alongside.
 * SSE: `Last-Event-ID` (what EventSource sends on reconnect) takes precedence over `?after=`.
 */
import { LEDGER_SUBPROTOCOL } from '../../adapters/http/websocket-watch.js';
import { decodeDurableEventCursor, type DurableEventCursor } from '../../protocol/cursor.js';
import { checkCursorSession, resumeCursorText } from '../../core/subscription/replay-start.js';
import type { SessionId } from '../../protocol/ids.js';
import { HttpProblem, HttpStatus } from '../http-errors.js';
import { defineSessionRoute, type RouteDefinition } from '../route-kit.js';
import { SUBSCRIBER_ACK_PARAM, subscriptionFrameSchema } from '../../protocol/frames.js';
import { subscribeQuerySchema } from '../schemas.js';
import { sseRelayResponse, sseResponse, verifyCursor } from '../sse.js';
import { HTTP_PATHS } from '../../protocol/http-paths.js';


/** Decodes a resume cursor and refuses one of another session (a plain 400, before the object is asked). */
function decodeForSession(text: string | undefined, sessionId: SessionId): DurableEventCursor | undefined {
  if (text === undefined || text === '') return undefined;
  const cursor = decodeDurableEventCursor(text);
  checkCursorSession(sessionId, cursor);
  return cursor;
}

function offeredSubprotocols(request: Request): string[] {
  const header = request.headers.get('sec-websocket-protocol');
  return header === null ? [] : header.split(',').map((entry) => entry.trim());
}

/** A Workers Response: it may carry the server end of a WebSocket. */
type WorkersResponse = Response & { webSocket?: unknown };
/** A Workers ResponseInit: it may hand over a WebSocket. */
type WorkersResponseInit = ResponseInit & { webSocket?: unknown };

/** The subscribe route. */
export function subscribeRoutes(): RouteDefinition[] {
  return [
    defineSessionRoute({
      method: 'get',
      path: HTTP_PATHS.subscribe,
      operationId: 'subscribe',
      summary: 'Subscribe: replay from a cursor, one caught_up, then live events',
      description:
        'Send `Upgrade: websocket` for a WebSocket (JSON text frames, see SubscriptionMessage; offer the subprotocol `agent-ledger.v1`, and `bearer.<token>` to pass the token) or `Accept: text/event-stream` for SSE (`id:` is the cursor; EventSource resumes with Last-Event-ID).',
      tags: ['subscribe'],
      scope: 'subscribe',
      tokenInQuery: true,
      query: subscribeQuerySchema,
      queryErrorCode: (key) => (key === 'after' ? 'DURABLE_EVENT_INVALID_CURSOR' : 'DURABLE_EVENT_INVALID_INPUT'),
      headers: [{ name: 'Last-Event-ID', description: 'SSE resume cursor; takes precedence over `after`.' }],
      extraResponses: [
        { status: HttpStatus.SWITCHING_PROTOCOLS, description: 'WebSocket accepted; frames are SubscriptionMessage JSON.' },
        {
          status: HttpStatus.OK,
          description: 'Server-Sent Events; each `data:` line is a SubscriptionMessage.',
          contentType: 'text/event-stream',
          schema: subscriptionFrameSchema,
        },
      ],
      errors: [
        'DURABLE_EVENT_INVALID_INPUT',
        'DURABLE_EVENT_INVALID_CURSOR',
        'DURABLE_EVENT_SUBSCRIPTION_INVALID',
        'DURABLE_EVENT_UNAVAILABLE',
      ],
      async handle({ c, sessionId, object, query }) {
        const request = c.req.raw;
        if (request.headers.get('upgrade')?.toLowerCase() === 'websocket') {
          const cursor = decodeForSession(query.after, sessionId);
          const target = new URL('https://session-object.internal/subscribe');
          target.searchParams.set('sessionId', sessionId);
          if (cursor !== undefined && query.after !== undefined) target.searchParams.set('after', query.after);
          if (query.ack === '1') target.searchParams.set(SUBSCRIBER_ACK_PARAM, '1');
          const upgrade = await object.fetch(new Request(target, { headers: { Upgrade: 'websocket' } }));
          // Workers extend Response with `webSocket`; typed structurally so this module also
          // type-checks in the Node program (the route-table script reads the declarations there).
          const socket = (upgrade as WorkersResponse).webSocket;
          if (socket === null || socket === undefined || !offeredSubprotocols(request).includes(LEDGER_SUBPROTOCOL)) {
            return upgrade;
          }
          const init: WorkersResponseInit = {
            status: upgrade.status,
            webSocket: socket,
            headers: { 'sec-websocket-protocol': LEDGER_SUBPROTOCOL },
          };
          return new Response(null, init);
        }
        if ((request.headers.get('accept') ?? '').includes('text/event-stream')) {
          const resumeFrom = resumeCursorText(request.headers.get('last-event-id'), query.after);
          const cursor = decodeForSession(resumeFrom, sessionId);
          if (cursor !== undefined) await verifyCursor(object, sessionId, cursor);
          if (query.frames === 'all') return sseRelayResponse({ object, sessionId, after: cursor === undefined ? undefined : resumeFrom });
          return sseResponse({ object, sessionId, after: cursor });
        }
        throw new HttpProblem(
          'HTTP_UPGRADE_REQUIRED',
          'subscribe needs a WebSocket upgrade or an Accept: text/event-stream header',
        );
      },
    }),
  ];
}
