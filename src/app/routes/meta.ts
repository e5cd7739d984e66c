/**
 * Meta routes: the health check, the OpenAPI document and a small HTML page that renders it.
 *
 * `/docs` is built on the server from the same document (no scripts, no outside assets), so it
 * works offline and under a strict Content-Security-Policy. The document is built once per
 * isolate, on first use.
 */
import { HttpStatus } from '../http-errors.js';
import { buildOpenApiDocument, type OpenApiDocument } from '../openapi.js';
import { defineRoute, type RouteDefinition, type RouteSpec } from '../route-kit.js';
import { healthResponseSchema } from '../schemas.js';
import { z } from 'zod';
import { HTTP_PATHS } from '../../protocol/http-paths.js';

/** Name reported by the health check; matches `name` in `wrangler.toml`. */
const SERVICE_NAME = 'agent-ledger';
/** Version of the wire protocol (envelope v4) this Worker speaks. */
const PROTOCOL_VERSION = 4;
/** Version of the HTTP API described by the OpenAPI document. */
const API_VERSION = '1.0.0';

/** Body of `GET /healthz`. */
export interface HealthResponse {
  ok: true;
  name: typeof SERVICE_NAME;
  protocol: typeof PROTOCOL_VERSION;
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`);
}

function renderDocs(document: OpenApiDocument): string {
  const rows: string[] = [];
  for (const [path, item] of Object.entries(document.paths)) {
    for (const [method, op] of Object.entries(item)) {
      const summary = typeof op['summary'] === 'string' ? op['summary'] : '';
      const access = typeof op['x-access'] === 'string' ? op['x-access'] : '';
      rows.push(
        `<tr><td><code>${escapeHtml(method.toUpperCase())}</code></td><td><code>${escapeHtml(path)}</code></td>` +
          `<td>${escapeHtml(summary)}</td><td>${escapeHtml(access)}</td></tr>`,
      );
    }
  }
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>${escapeHtml(document.info.title)} API</title>
<style>body{font-family:system-ui,sans-serif;margin:2rem;max-width:72rem}table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #ddd;padding:.4rem;text-align:left;vertical-align:top}code{font-size:.9em}</style>
</head>
<body>
<h1>${escapeHtml(document.info.title)} <small>${escapeHtml(document.info.version)}</small></h1>
<p>${escapeHtml(document.info.description ?? '')}</p>
<p>Machine-readable: <code>GET /v1/openapi.json</code> (public, like this page). Errors are <code>application/problem+json</code> with a domain <code>code</code>.</p>
<table>
<thead><tr><th>Method</th><th>Path</th><th>Summary</th><th>Access</th></tr></thead>
<tbody>
${rows.join('\n')}
</tbody>
</table>
</body>
</html>
`;
}

/** The meta routes; `allRoutes` returns every mounted route (including these). */
export function metaRoutes(allRoutes: () => readonly RouteSpec[]): RouteDefinition[] {
  let cached: OpenApiDocument | undefined;
  const document = (): OpenApiDocument =>
    (cached ??= buildOpenApiDocument(allRoutes(), {
      title: SERVICE_NAME,
      version: API_VERSION,
      description:
        'Durable, append-only event ledger for AI-agent sessions: one Durable Object per session behind this Worker.',
      license: { name: 'MIT', identifier: 'MIT' },
    }));
  return [
    defineRoute({
      method: 'get',
      path: HTTP_PATHS.health,
      operationId: 'health',
      summary: 'Health check',
      tags: ['meta'],
      access: { kind: 'public' },
      response: { schema: healthResponseSchema, description: 'The Worker is up.' },
      errors: [],
      handle(): HealthResponse {
        return { ok: true, name: SERVICE_NAME, protocol: PROTOCOL_VERSION };
      },
    }),
    defineRoute({
      method: 'get',
      path: HTTP_PATHS.openapi,
      operationId: 'openapi',
      summary: 'This OpenAPI 3.1 document (public, so tools can read it)',
      tags: ['meta'],
      access: { kind: 'public' },
      response: {
        schema: z.looseObject({ openapi: z.literal('3.1.0'), info: z.looseObject({ title: z.string(), version: z.string() }), paths: z.record(z.string(), z.unknown()) }).meta({ id: 'OpenApiDocument' }),
        description: 'The OpenAPI document.',
      },
      errors: [],
      handle(): OpenApiDocument {
        return document();
      },
    }),
    defineRoute({
      method: 'get',
      path: HTTP_PATHS.docs,
      operationId: 'docs',
      summary: 'Human-readable list of the routes',
      tags: ['meta'],
      access: { kind: 'public' },
      extraResponses: [{ status: HttpStatus.OK, description: 'An HTML page.', contentType: 'text/html' }],
      errors: [],
      handle({ c }) {
        return c.html(renderDocs(document()), HttpStatus.OK, {
          'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'",
        });
      },
    }),
  ];
}
