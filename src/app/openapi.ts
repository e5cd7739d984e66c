/**
 * The OpenAPI 3.1 document, generated from the route declarations and their zod schemas.
 *
 * 1. Every {@link RouteSpec} becomes one operation: path and query parameters, the JSON request
 *    body, the success response, extra responses (WebSocket upgrade, event stream), and one
 *    problem+json response per status its documented error codes map to (plus 401/403 when a
 *    token is needed). Nothing is written by hand, so a new route is documented by declaring it.
 *    Every operation also lists a `default` problem+json response (an unexpected failure answers
 *    500 with a problem), and every route declared through route-kit the 400 its query check
 *    gives (an unknown or repeated query parameter is refused).
 * 2. Schemas go through zod 4's `z.toJSONSchema` (JSON Schema 2020-12, the dialect of OpenAPI
 *    3.1). Schemas carrying a `.meta({ id })` become `components.schemas` entries referenced by
 *    `$ref`; the protocol's `z.custom` ids, sequences, timestamps and JSON values, which JSON Schema
 *    cannot derive, get their documented shape from {@link CUSTOM_SCHEMAS}.
 * 3. The document passes Redocly's `recommended` lint ruleset with no problem (test/http/openapi.test.ts):
 *    one relative server (`/`, the Worker serving the document), a license, a description for
 *    every tag ({@link TAG_DESCRIPTIONS}), a 2xx (or `default`) and a 4xx response per operation
 *    (the inspector's static assets, which take no query, document the 400 of the query check).
 */
import { z } from 'zod';
import {
  commandIdSchema,
  eventIdSchema,
  eventSequenceSchema,
  inputIdSchema,
  modelAttemptIdSchema,
  permissionRequestIdSchema,
  requestIdSchema,
  sessionIdSchema,
  timestampSchema,
  toolAttemptIdSchema,
  turnIdSchema,
} from '../protocol/events.js';
import { MAX_ID_LENGTH } from '../protocol/ids.js';
import { jsonObjectSchema, jsonValueSchema } from '../protocol/json.js';
import { PROBLEM_CONTENT_TYPE } from '../adapters/http/problem.js';
import { ACCESS_TOKEN_QUERY } from './auth.js';
import { HttpStatus, statusOfCode } from './http-errors.js';
import type { RouteSpec } from './route-kit.js';
import { fencingTokenSchema, leaseIdSchema, problemSchema, workerIdSchema } from './schemas.js';

/** A JSON Schema object (as produced by zod). */
type JsonSchema = Record<string, unknown>;

/** The generated document (only the members this API uses are typed). */
export interface OpenApiDocument {
  openapi: '3.1.0';
  info: OpenApiInfo;
  jsonSchemaDialect: string;
  servers: Array<{ url: string; description: string }>;
  tags: Array<{ name: string; description: string }>;
  paths: Record<string, Record<string, JsonSchema>>;
  components: { schemas: Record<string, JsonSchema>; securitySchemes: Record<string, JsonSchema> };
}

/** The document's `info` object. */
interface OpenApiInfo {
  title: string;
  version: string;
  description?: string;
  license?: { name: string; identifier?: string };
}

/** Descriptions of the built-in route groups' tags. */
export const TAG_DESCRIPTIONS: Readonly<Record<string, string>> = {
  events: 'Append to and read the event log of one session; its head sequence.',
  subscribe: 'Replay a session from a cursor, then follow it live (Server-Sent Events or WebSocket).',
  lease: 'The execution lease of a session: acquire, renew, release, assert a fence.',
  journal: 'Idempotent journal commands and the session projection with its recovery plan.',
  recovery: 'Commands that reconcile unfinished work found by the recovery plan.',
  checkpoints: 'Projection checkpoints: derived data a reader may use to open a session quickly.',
  runs: 'Durable tool calls run inside the session object (step, sleep, waitFor) and the durability records.',
  agent: 'The agent hosted by the session object: requests, steering input, aborts, permissions, status.',
  inspector: 'The session inspector: an HTML page, its live tail, its actions and static assets.',
  chat: 'The chat page at `/`, where a person talks to the agent of a session, and its static assets.',
  auth: 'Session-scoped tokens, minted with the admin token.',
  meta: 'Health check, this document and the human-readable route list.',
};

/** Description of a tag an extra route group brings without one of its own here. */
const EXTRA_TAG_DESCRIPTION = "Routes of this Worker's own route groups.";

/** Codes every route declared through route-kit may answer: its query string is validated. */
const QUERY_CHECK_ERRORS = ['DURABLE_EVENT_INVALID_INPUT'] as const;

const ID_JSON: JsonSchema = { type: 'string', minLength: 1, maxLength: MAX_ID_LENGTH };

/** JSON Schema of the `z.custom` schemas the API uses. */
const CUSTOM_SCHEMAS = new Map<unknown, JsonSchema>([
  ...[
    sessionIdSchema,
    requestIdSchema,
    turnIdSchema,
    commandIdSchema,
    inputIdSchema,
    modelAttemptIdSchema,
    toolAttemptIdSchema,
    permissionRequestIdSchema,
    eventIdSchema,
    workerIdSchema,
    leaseIdSchema,
  ].map((schema) => [schema, ID_JSON] as const),
  [eventSequenceSchema, { type: 'integer', minimum: 1, maximum: Number.MAX_SAFE_INTEGER }],
  [fencingTokenSchema, { type: 'integer', minimum: 1, maximum: Number.MAX_SAFE_INTEGER }],
  [timestampSchema, { type: 'string', format: 'date-time' }],
  [jsonValueSchema, { description: 'Any lossless JSON value.' }],
  [jsonObjectSchema, { type: 'object', description: 'A lossless JSON object.' }],
]);

const COMPONENT_REF = '#/components/schemas/';

function rewriteRefs(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(rewriteRefs);
  if (typeof value !== 'object' || value === null) return value;
  const out: Record<string, unknown> = {};
  for (const [key, inner] of Object.entries(value)) {
    out[key] = key === '$ref' && typeof inner === 'string' ? inner.replace(/^#\/\$defs\//, COMPONENT_REF) : rewriteRefs(inner);
  }
  return out;
}

/** Keys whose value is a schema (or a list of schemas) in JSON Schema. */
const SCHEMA_KEYS = new Set(['items', 'additionalProperties', 'not', 'propertyNames', 'contains']);
const SCHEMA_LIST_KEYS = new Set(['anyOf', 'oneOf', 'allOf', 'prefixItems']);
/** What an unconstrained schema (`{}`, from `z.unknown()` or a loose record) is documented as. */
const ANY_JSON: JsonSchema = { description: 'Any JSON value.' };

/** Replaces every empty sub-schema `{}` with {@link ANY_JSON}, so no schema is left undocumented. */
function documentEmpty(schema: JsonSchema): JsonSchema {
  const fill = (value: unknown): unknown =>
    typeof value === 'object' && value !== null && !Array.isArray(value)
      ? Object.keys(value).length === 0
        ? { ...ANY_JSON }
        : documentEmpty(value as JsonSchema)
      : value;
  const out: JsonSchema = {};
  for (const [key, value] of Object.entries(schema)) {
    if (SCHEMA_KEYS.has(key)) out[key] = fill(value);
    else if (SCHEMA_LIST_KEYS.has(key) && Array.isArray(value)) out[key] = value.map(fill);
    else if ((key === 'properties' || key === '$defs') && typeof value === 'object' && value !== null) {
      out[key] = Object.fromEntries(Object.entries(value).map(([name, inner]) => [name, fill(inner)]));
    } else out[key] = value;
  }
  return out;
}

/** Converts zod schemas, collecting named sub-schemas into `components.schemas`. */
class SchemaCollector {
  readonly components: Record<string, JsonSchema> = {};

  convert(schema: z.ZodType, io: 'input' | 'output'): JsonSchema {
    const raw = z.toJSONSchema(schema, {
      target: 'draft-2020-12',
      io,
      unrepresentable: 'any',
      override: (ctx) => {
        const known = CUSTOM_SCHEMAS.get(ctx.zodSchema);
        if (known !== undefined) Object.assign(ctx.jsonSchema, known);
      },
    }) as JsonSchema;
    const { $schema: _schema, $id: _id, $defs, ...rest } = raw;
    if (typeof $defs === 'object' && $defs !== null) {
      for (const [name, def] of Object.entries($defs as Record<string, unknown>)) {
        this.#add(name, documentEmpty(rewriteRefs(def) as JsonSchema));
      }
    }
    const converted = documentEmpty(rewriteRefs(rest) as JsonSchema);
    return Object.keys(converted).length === 0 ? { ...ANY_JSON } : converted;
  }

  #add(name: string, schema: JsonSchema): void {
    const existing = this.components[name];
    if (existing !== undefined && JSON.stringify(existing) !== JSON.stringify(schema)) {
      throw new Error(`OpenAPI: two different schemas share the id ${name}`);
    }
    this.components[name] = schema;
  }
}

function pathParameters(path: string): JsonSchema[] {
  return [...path.matchAll(/\{([A-Za-z0-9_]+)\}/g)].map(([, name]) => ({
    name,
    in: 'path',
    required: true,
    description: name === 'sessionId' ? 'The session id, URL-encoded.' : undefined,
    schema: name === 'sessionId' ? ID_JSON : { type: 'string' },
  }));
}

function queryParameters(query: z.ZodObject | undefined, collector: SchemaCollector): JsonSchema[] {
  if (query === undefined) return [];
  return Object.entries(query.shape).map(([name, field]) => {
    const { description, ...schema } = collector.convert(field as z.ZodType, 'input');
    return {
      name,
      in: 'query',
      required: !(field as z.ZodType).safeParse(undefined).success,
      ...(typeof description === 'string' ? { description } : {}),
      schema,
    };
  });
}

function errorResponses(spec: RouteSpec): Record<string, JsonSchema> {
  const byStatus = new Map<number, string[]>();
  const codes = new Set<string>([...spec.errors, ...(spec.checksQuery === true ? QUERY_CHECK_ERRORS : [])]);
  if (spec.access.kind !== 'public') codes.add('HTTP_UNAUTHORIZED');
  if (spec.access.kind === 'admin' || spec.access.kind === 'session') codes.add('HTTP_FORBIDDEN');
  for (const code of codes) {
    const status = statusOfCode(code);
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  const out: Record<string, JsonSchema> = {};
  for (const [status, list] of [...byStatus].sort(([a], [b]) => a - b)) {
    out[String(status)] = {
      description: `Problem: ${list.join(', ')}`,
      content: { [PROBLEM_CONTENT_TYPE]: { schema: { $ref: `${COMPONENT_REF}Problem` } } },
    };
  }
  out['default'] = {
    description: 'Problem: any other failure (an unexpected one answers 500)',
    content: { [PROBLEM_CONTENT_TYPE]: { schema: { $ref: `${COMPONENT_REF}Problem` } } },
  };
  return out;
}

function accessNote(spec: RouteSpec): string {
  switch (spec.access.kind) {
    case 'public':
      return 'public';
    case 'authenticated':
      return 'any valid token';
    case 'admin':
      return 'admin token';
    case 'session':
      return `admin token, or a session token for this session with scope "${spec.access.scope}"`;
  }
}

function operation(spec: RouteSpec, collector: SchemaCollector): JsonSchema {
  const responses: Record<string, JsonSchema> = {};
  if (spec.response !== undefined) {
    const status = spec.response.created === true ? HttpStatus.CREATED : HttpStatus.OK;
    responses[String(status)] = {
      description: spec.response.description,
      content: { 'application/json': { schema: collector.convert(spec.response.schema, 'output') } },
    };
  }
  for (const extra of spec.extraResponses ?? []) {
    responses[String(extra.status)] = {
      description: extra.description,
      ...(extra.contentType === undefined
        ? {}
        : {
            content: {
              [extra.contentType]: extra.schema === undefined ? {} : { schema: collector.convert(extra.schema, 'output') },
            },
          }),
    };
  }
  Object.assign(responses, errorResponses(spec));
  const security =
    spec.access.kind === 'public'
      ? []
      : spec.access.kind === 'session' && spec.access.tokenInQuery === true
        ? [{ bearerAuth: [] }, { accessTokenQuery: [] }]
        : [{ bearerAuth: [] }];
  const headers = (spec.headers ?? []).map((header) => ({
    name: header.name,
    in: 'header',
    required: false,
    description: header.description,
    schema: { type: 'string' },
  }));
  return {
    operationId: spec.operationId,
    summary: spec.summary,
    ...(spec.description === undefined ? {} : { description: spec.description }),
    tags: [...spec.tags],
    security,
    'x-access': accessNote(spec),
    'x-agent-ledger-access': {
      kind: spec.access.kind,
      ...(spec.access.kind === 'session' ? { scope: spec.access.scope } : {}),
    },
    parameters: [...pathParameters(spec.path), ...queryParameters(spec.query, collector), ...headers],
    ...(spec.body === undefined
      ? {}
      : { requestBody: { required: true, content: { 'application/json': { schema: collector.convert(spec.body, 'input') } } } }),
    responses,
  };
}

/** Builds the OpenAPI 3.1 document of `routes`. */
export function buildOpenApiDocument(routes: readonly RouteSpec[], info: OpenApiInfo): OpenApiDocument {
  const collector = new SchemaCollector();
  collector.convert(problemSchema, 'output');
  const paths: OpenApiDocument['paths'] = {};
  const tags = new Set<string>();
  for (const spec of routes) {
    const item = (paths[spec.path] ??= {});
    if (item[spec.method] !== undefined) throw new Error(`OpenAPI: ${spec.method.toUpperCase()} ${spec.path} is declared twice`);
    item[spec.method] = operation(spec, collector);
    for (const tag of spec.tags) tags.add(tag);
  }
  return {
    openapi: '3.1.0',
    info,
    jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
    // Relative: the Worker that serves this document, whatever its host.
    servers: [{ url: '/', description: 'The Worker serving this document.' }],
    tags: [...tags].map((name) => ({ name, description: TAG_DESCRIPTIONS[name] ?? EXTRA_TAG_DESCRIPTION })),
    paths,
    components: {
      schemas: collector.components,
      securitySchemes: {
        bearerAuth: {
          type: 'http',
          scheme: 'bearer',
          description: 'The admin token, or a session token minted by POST /v1/tokens.',
        },
        accessTokenQuery: {
          type: 'apiKey',
          in: 'query',
          name: ACCESS_TOKEN_QUERY,
          description: 'The same token, for EventSource and browser WebSocket clients (subscribe only).',
        },
      },
    },
  };
}
