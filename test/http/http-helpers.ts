/**
 * Small helpers for the HTTP tests: authenticated `fetch` against the local Worker, problem+json
 * reading, and the list of operations taken from the Worker's own OpenAPI document (so tests that
 * must cover "every route" follow the route table as it grows).
 */
import { expect } from 'vitest';
import type { ProblemDocument } from '../../src/client.js';
import type { LocalWorker } from './local-worker.js';

/** Options of {@link api}. */
export interface ApiOptions {
  token?: string | undefined;
  method?: string;
  /** A JSON value (serialized) or a raw string body. */
  body?: unknown;
  rawBody?: string;
  headers?: Record<string, string>;
}

/** One request to the Worker. */
export async function api(worker: LocalWorker, path: string, options: ApiOptions = {}): Promise<Response> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.token !== undefined) headers['authorization'] = `Bearer ${options.token}`;
  let body: string | undefined = options.rawBody;
  if (options.body !== undefined) {
    body = JSON.stringify(options.body);
    headers['content-type'] ??= 'application/json';
  }
  return fetch(worker.href(path), {
    method: options.method ?? (body === undefined ? 'GET' : 'POST'),
    headers,
    ...(body === undefined ? {} : { body }),
  });
}

/** Reads a problem+json body and checks its basic shape against the response. */
export async function readProblem(response: Response): Promise<ProblemDocument> {
  expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  const problem = (await response.json()) as ProblemDocument;
  expect(problem.status).toBe(response.status);
  expect(typeof problem.code).toBe('string');
  expect(typeof problem.detail).toBe('string');
  expect(problem.type).toBe(`urn:agent-ledger:problem:${problem.code}`);
  return problem;
}

/** Who may call an operation, as the OpenAPI document states it. */
export interface OperationAccess {
  kind: 'public' | 'authenticated' | 'admin' | 'session';
  scope?: string;
}

/** One operation of the OpenAPI document. */
export interface DocumentedOperation {
  method: string;
  path: string;
  operationId: string;
  access: OperationAccess;
}

/** Every operation the Worker documents (fetched with the admin token). */
export async function documentedOperations(worker: LocalWorker): Promise<DocumentedOperation[]> {
  const response = await api(worker, '/v1/openapi.json', { token: worker.adminToken });
  expect(response.status).toBe(200);
  const document = (await response.json()) as { paths: Record<string, Record<string, Record<string, unknown>>> };
  const out: DocumentedOperation[] = [];
  for (const [path, item] of Object.entries(document.paths)) {
    for (const [method, operation] of Object.entries(item)) {
      out.push({
        method: method.toUpperCase(),
        path,
        operationId: String(operation['operationId']),
        access: operation['x-agent-ledger-access'] as OperationAccess,
      });
    }
  }
  return out;
}

/** Fills an OpenAPI path template: `{sessionId}` with the (encoded) session id, others with `x`. */
export function concretePath(template: string, sessionId: string): string {
  return template.replace(/\{([A-Za-z0-9_]+)\}/g, (_, name: string) =>
    name === 'sessionId' ? encodeURIComponent(sessionId) : 'x',
  );
}
