/**
 * The chat page group: `GET /` (a page where a person talks to the Worker's agent, see
 * `src/chat/`) and its three static assets under `/chat/assets/`.
 *
 * All public: the page is a static shell, and every call it makes is an API call with the bearer
 * token the person signs in with (kept by the page in `sessionStorage`, never in a cookie, so
 * these routes authorize nothing). Every answer carries the inspector's Content-Security-Policy.
 */
import { AGENT_CLIENT_SCRIPT, CHAT_CSS, CHAT_SCRIPT } from '../../chat/assets.js';
import { CHAT_ASSET_PREFIX, renderChatPage } from '../../chat/page.js';
import { INSPECTOR_CSP } from '../../inspector/app.js';
import { HttpStatus } from '../http-errors.js';
import { defineRoute, type RouteDefinition } from '../route-kit.js';

function secured(body: string, contentType: string, cacheControl: string): Response {
  return new Response(body, {
    headers: {
      'content-type': contentType,
      'cache-control': cacheControl,
      'content-security-policy': INSPECTOR_CSP,
      'x-content-type-options': 'nosniff',
      'referrer-policy': 'no-referrer',
      'x-frame-options': 'DENY',
    },
  });
}

/** Assets may be cached briefly: they change only with a deploy. */
const ASSET_CACHE = 'public, max-age=300';

function asset(name: string, operationId: string, contentType: string, body: string, summary: string, kind: string): RouteDefinition {
  return defineRoute({
    method: 'get',
    path: `${CHAT_ASSET_PREFIX}/${name}`,
    operationId,
    summary,
    tags: ['chat'],
    access: { kind: 'public' },
    extraResponses: [{ status: HttpStatus.OK, description: kind, contentType: contentType.split(';')[0] ?? contentType }],
    errors: [],
    handle: () => secured(body, contentType, ASSET_CACHE),
  });
}

/** The chat routes. */
export function chatRoutes(): RouteDefinition[] {
  return [
    defineRoute({
      method: 'get',
      path: '/',
      operationId: 'chatPage',
      summary: 'The chat page (HTML): talk to the agent of a session',
      description:
        'A static page whose script signs in with a token (kept in the tab), lists the chats started in this browser, and talks to the agent through the agent routes with `AgentSessionClient` (streamed answers, tool calls, permission prompts, a reloaded page resuming the answer in flight).',
      tags: ['chat'],
      access: { kind: 'public' },
      extraResponses: [{ status: HttpStatus.OK, description: 'The page.', contentType: 'text/html' }],
      errors: [],
      handle: async () => secured(await renderChatPage(), 'text/html; charset=utf-8', 'no-store'),
    }),
    asset('chat.js', 'chatScript', 'text/javascript; charset=utf-8', CHAT_SCRIPT, "The chat page's script (static)", 'JavaScript'),
    asset('agent-client.js', 'chatAgentClientScript', 'text/javascript; charset=utf-8', AGENT_CLIENT_SCRIPT, 'The agent client bundled for the chat page (static)', 'JavaScript'),
    asset('chat.css', 'chatStylesheet', 'text/css; charset=utf-8', CHAT_CSS, "The chat page's stylesheet (static)", 'CSS'),
  ];
}
