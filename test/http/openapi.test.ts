/**
 * The OpenAPI document and the /docs page of the running Worker: OpenAPI 3.1, every mounted
 * route documented with its parameters, bodies and problem responses, every `$ref` resolvable,
 * no problem under Redocly's `recommended` lint ruleset (no error, no warning), and a docs page that lists every path
 * without loading any script.
 */
import { createConfig, lintFromString } from '@redocly/openapi-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TAG_DESCRIPTIONS } from '../../src/app/openapi.js';
import { api } from './http-helpers.js';
import { startLocalWorker, type LocalWorker } from './local-worker.js';

let worker: LocalWorker;

interface Operation {
  operationId: string;
  tags: string[];
  parameters: Array<{ name: string; in: string; required: boolean; schema: unknown }>;
  requestBody?: { content: Record<string, { schema: unknown }> };
  responses: Record<string, { content?: Record<string, { schema?: unknown }> }>;
  security: unknown[];
}

interface Document {
  openapi: string;
  info: { title: string; version: string };
  tags: Array<{ name: string; description: string }>;
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, unknown>; securitySchemes: Record<string, unknown> };
}

let document: Document;
let documentText: string;

beforeAll(async () => {
  worker = await startLocalWorker();
  const response = await api(worker, '/v1/openapi.json', { token: worker.adminToken });
  expect(response.status).toBe(200);
  documentText = await response.text();
  document = JSON.parse(documentText) as Document;
});

afterAll(async () => {
  await worker?.stop();
});

/** Every `$ref` string anywhere in `value`. */
function refs(value: unknown): string[] {
  if (Array.isArray(value)) return value.flatMap(refs);
  if (typeof value !== 'object' || value === null) return [];
  return Object.entries(value).flatMap(([key, inner]) => (key === '$ref' && typeof inner === 'string' ? [inner] : refs(inner)));
}

/** Paths of empty `{}` schemas (in schema positions; a `properties` map may be empty). */
function emptySchemas(value: unknown, path: string, isSchema = false): string[] {
  if (Array.isArray(value)) return value.flatMap((item, index) => emptySchemas(item, `${path}[${index}]`, isSchema));
  if (typeof value !== 'object' || value === null) return [];
  const entries = Object.entries(value);
  if (isSchema && entries.length === 0) return [path];
  return entries.flatMap(([key, inner]) => {
    if (key === 'properties' && typeof inner === 'object' && inner !== null) {
      return Object.entries(inner).flatMap(([name, schema]) => emptySchemas(schema, `${path}.properties.${name}`, true));
    }
    const schemaKey = ['schema', 'items', 'additionalProperties', 'anyOf', 'oneOf', 'allOf'].includes(key);
    return emptySchemas(inner, `${path}.${key}`, schemaKey || (path.endsWith('.components.schemas') && true));
  });
}

describe('GET /v1/openapi.json', () => {
  it('is an OpenAPI 3.1 document listing every route', () => {
    expect(document.openapi).toBe('3.1.0');
    expect(document.info.title).toBe('agent-ledger');
    const routes = Object.entries(document.paths).flatMap(([path, item]) =>
      Object.keys(item).map((method) => `${method.toUpperCase()} ${path}`),
    );
    expect(routes).toEqual(
      expect.arrayContaining([
        'POST /v1/sessions/{sessionId}/events',
        'GET /v1/sessions/{sessionId}/events',
        'GET /v1/sessions/{sessionId}/head',
        'GET /v1/sessions/{sessionId}/subscribe',
        'POST /v1/sessions/{sessionId}/lease/acquire',
        'POST /v1/sessions/{sessionId}/lease/renew',
        'POST /v1/sessions/{sessionId}/lease/release',
        'POST /v1/sessions/{sessionId}/lease/assert',
        'GET /v1/sessions/{sessionId}/lease',
        'POST /v1/tokens',
        'GET /v1/openapi.json',
        'GET /docs',
        'GET /healthz',
      ]),
    );
    const ids = Object.values(document.paths).flatMap((item) => Object.values(item).map((op) => op.operationId));
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('documents parameters, bodies, security and problem responses', () => {
    for (const [path, item] of Object.entries(document.paths)) {
      for (const [method, operation] of Object.entries(item)) {
        const where = `${method} ${path}`;
        for (const [, name] of path.matchAll(/\{(\w+)\}/g)) {
          expect(operation.parameters.some((p) => p.in === 'path' && p.name === name && p.required), where).toBe(true);
        }
        if (path.startsWith('/v1/') && path !== '/v1/openapi.json') {
          expect(operation.security.length, where).toBeGreaterThan(0);
          expect(operation.responses['401']?.content?.['application/problem+json'], where).toBeDefined();
        }
        if (method === 'post') expect(operation.requestBody?.content['application/json']?.schema, where).toBeDefined();
      }
    }
    const read = document.paths['/v1/sessions/{sessionId}/events']?.['get'];
    expect(read?.parameters.map((p) => p.name)).toEqual(['sessionId', 'after', 'limit', 'waitMs']);
    const append = document.paths['/v1/sessions/{sessionId}/events']?.['post'];
    expect(Object.keys(append?.responses ?? {})).toEqual(expect.arrayContaining(['200', '400', '401', '403', '409', '413', '428']));
    expect(document.components.securitySchemes).toHaveProperty('bearerAuth');
  });

  it('generates its schemas from zod: named components, every $ref resolvable', () => {
    const names = Object.keys(document.components.schemas);
    expect(names).toEqual(
      expect.arrayContaining(['DurableEventDraft', 'DurableEventEnvelope', 'AppendRequest', 'ExecutionFence', 'Problem', 'LeaseRecord']),
    );
    const all = refs(document);
    expect(all.length).toBeGreaterThan(0);
    for (const ref of all) {
      expect(ref.startsWith('#/components/schemas/'), ref).toBe(true);
      expect(names, ref).toContain(ref.slice('#/components/schemas/'.length));
    }
    const draft = document.components.schemas['DurableEventDraft'] as { oneOf?: unknown[]; anyOf?: unknown[] };
    expect((draft.oneOf ?? draft.anyOf)?.length).toBe(23);
    const fence = document.components.schemas['ExecutionFence'] as { required: string[]; additionalProperties: boolean };
    expect(fence.required.sort()).toEqual(['fencingToken', 'leaseId', 'ownerId']);
    expect(fence.additionalProperties).toBe(false);
  });

  it('is served without a token, so tools can read it', async () => {
    const response = await api(worker, '/v1/openapi.json');
    expect(response.status).toBe(200);
    const open = (await response.json()) as Document;
    expect(Object.keys(open.paths)).toEqual(Object.keys(document.paths));
    expect(Object.keys(open.components.schemas)).toEqual(Object.keys(document.components.schemas));
  });

  it("passes Redocly's recommended lint ruleset with no problem", async () => {
    const config = await createConfig({ extends: ['recommended'] });
    const problems = await lintFromString({ source: documentText, absoluteRef: 'openapi.json', config });
    const found = problems.map((problem) => `${problem.severity} ${problem.ruleId} at ${problem.location[0]?.pointer ?? '?'}`);
    expect(found).toEqual([]);
  }, 60_000);

  it('describes every tag of the built-in routes from TAG_DESCRIPTIONS', () => {
    expect(document.tags.length).toBeGreaterThan(0);
    for (const tag of document.tags) expect(tag.description, tag.name).toBe(TAG_DESCRIPTIONS[tag.name]);
  });

  it('documents a default problem everywhere and the 400 of the query check, and that 400 is real', async () => {
    for (const [path, item] of Object.entries(document.paths)) {
      for (const operation of Object.values(item)) {
        expect(operation.responses['default']?.content?.['application/problem+json'], operation.operationId).toBeDefined();
        // The inspector's page routes hand the request to the inspector app, which reads its own
        // query; its static assets are route-kit routes like the rest.
        if (operation.tags.includes('inspector') && !path.startsWith('/inspector/assets/')) continue;
        expect(operation.responses['400']?.content?.['application/problem+json'], operation.operationId).toBeDefined();
      }
    }
    const assets = [
      ['/inspector/assets/inspector.js', /^text\/javascript/],
      ['/inspector/assets/inspector.css', /^text\/css/],
    ] as const;
    for (const path of ['/healthz', '/docs', '/v1/openapi.json', ...assets.map(([asset]) => asset)]) {
      for (const query of ['unexpected=1', 'v=1&v=2']) {
        const response = await api(worker, `${path}?${query}`);
        expect(response.status, `${path}?${query}`).toBe(400);
        expect(response.headers.get('content-type'), path).toMatch(/^application\/problem\+json/);
        expect(((await response.json()) as { code: string }).code, `${path}?${query}`).toBe('DURABLE_EVENT_INVALID_INPUT');
      }
    }
    // Without a query the inspector app serves the asset: 200, its type, cacheable.
    for (const [path, type] of assets) {
      const response = await api(worker, path);
      expect(response.status, path).toBe(200);
      expect(response.headers.get('content-type'), path).toMatch(type);
      expect(response.headers.get('cache-control'), path).toBe('public, max-age=300');
      await response.body?.cancel();
    }
  });

  it('has no undocumented empty schema and no auto-named component', () => {
    expect(Object.keys(document.components.schemas).filter((name) => name.startsWith('__'))).toEqual([]);
    expect(emptySchemas(document, '$')).toEqual([]);
  });
});

describe('GET /docs', () => {
  it('lists every documented path in plain HTML, without scripts', async () => {
    const response = await api(worker, '/docs');
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/html/);
    expect(response.headers.get('content-security-policy')).toContain("default-src 'none'");
    const html = await response.text();
    expect(html).not.toMatch(/<script/i);
    for (const path of Object.keys(document.paths)) expect(html).toContain(`<code>${path}</code>`);
  });
});

describe('GET /healthz', () => {
  it('answers without a token', async () => {
    const response = await api(worker, '/healthz');
    expect(await response.json()).toEqual({ ok: true, name: 'agent-ledger', protocol: 4 });
  });
});

describe('CORS (browser clients)', () => {
  it('answers preflights and lets any origin read answers (access is by bearer token only)', async () => {
    const preflight = await fetch(worker.href('/v1/sessions/s/events'), {
      method: 'OPTIONS',
      headers: {
        origin: 'https://app.example',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization, content-type',
      },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe('*');
    expect(preflight.headers.get('access-control-allow-headers')).toContain('authorization');
    expect(preflight.headers.get('access-control-allow-methods')).toContain('POST');
    const answer = await api(worker, '/v1/sessions/s/head', { token: worker.adminToken, headers: { origin: 'https://app.example' } });
    expect(answer.headers.get('access-control-allow-origin')).toBe('*');
    const refused = await api(worker, '/v1/sessions/s/head', { headers: { origin: 'https://app.example' } });
    expect(refused.status).toBe(401);
    expect(refused.headers.get('access-control-allow-origin')).toBe('*');
    await Promise.all([answer.body?.cancel(), refused.body?.cancel()]);
  });
});
