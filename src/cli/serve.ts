/**
 * `agent-ledger serve`: the inspector page for a local store, on node:http.
 *
 * `@hono/node-server` is not a dependency, and the inspector needs only a small part of it: turn
 * an `IncomingMessage` into a `Request`, call the Hono app's `fetch`, and stream the `Response`
 * back (including the never-ending SSE tail, cancelled when the browser goes away). That is the
 * thirty lines of {@link toRequest} and {@link sendResponse}.
 *
 * Access: a token printed at start (or taken from `--page-token-env`) opens the page through its
 * sign-in form. The server binds to 127.0.0.1 by default and refuses requests whose `Host` is not
 * the address it listens on (a DNS-rebinding page cannot reach it through another name).
 */
import { randomBytes, timingSafeEqual, createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { ALL_INSPECTOR_SCOPES, type InspectorScope } from '../inspector/backend.js';
import { createInspectorApp } from '../inspector/app.js';
import { CliError, type CliOutput } from './output.js';
import type { OpenedStore } from './stores.js';

/** Options of {@link startInspectorServer}. */
interface InspectorServerOptions {
  port: number;
  host: string;
  json: boolean;
  readOnly: boolean;
  pageTokenEnv?: string;
}

/** Turns a node:http request into a fetch `Request` (aborted when the client goes away). */
export function toRequest(req: IncomingMessage, origin: string): Request {
  const controller = new AbortController();
  req.once('close', () => {
    if (!req.complete || req.destroyed) controller.abort();
  });
  const method = req.method ?? 'GET';
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (Array.isArray(value)) for (const item of value) headers.append(name, item);
    else if (value !== undefined) headers.set(name, value);
  }
  const hasBody = method !== 'GET' && method !== 'HEAD';
  return new Request(new URL(req.url ?? '/', origin), {
    method,
    headers,
    signal: controller.signal,
    ...(hasBody ? { body: Readable.toWeb(req) as ReadableStream<Uint8Array>, duplex: 'half' } : {}),
  } as RequestInit);
}

/** Streams a fetch `Response` into a node:http response (stops reading when the client goes away). */
export async function sendResponse(response: Response, res: ServerResponse): Promise<void> {
  const headers: Record<string, string | string[]> = {};
  response.headers.forEach((value, name) => {
    if (name === 'set-cookie') return;
    headers[name] = value;
  });
  const cookies = response.headers.getSetCookie();
  if (cookies.length > 0) headers['set-cookie'] = cookies;
  res.writeHead(response.status, headers);
  if (response.body === null) {
    res.end();
    return;
  }
  const reader = response.body.getReader();
  res.once('close', () => void reader.cancel().catch(() => undefined));
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (!res.write(value)) await new Promise((resolve) => res.once('drain', resolve));
  }
  res.end();
}

function sameSecret(a: string, b: string): boolean {
  const left = createHash('sha256').update(a).digest();
  const right = createHash('sha256').update(b).digest();
  return timingSafeEqual(left, right);
}

/** Starts the server; resolves once it listens (it then runs until the process is stopped). */
export async function startInspectorServer(opened: OpenedStore, out: CliOutput, options: InspectorServerOptions): Promise<void> {
  let token: string;
  if (options.pageTokenEnv !== undefined) {
    const value = out.io.env[options.pageTokenEnv];
    if (value === undefined || value.length < 16) throw new CliError(`${options.pageTokenEnv} must hold a token of at least 16 characters`);
    token = value;
  } else token = randomBytes(24).toString('base64url');
  const scopes: ReadonlySet<InspectorScope> = options.readOnly ? new Set<InspectorScope>(['read', 'subscribe']) : ALL_INSPECTOR_SCOPES;
  const app = createInspectorApp<Record<string, never>>({
    store: () => opened.store,
    authorize: async (_env, candidate) => (sameSecret(candidate, token) ? scopes : null),
  });
  const server = createServer((req, res) => {
    const address = server.address() as AddressInfo;
    const allowed = new Set([`127.0.0.1:${address.port}`, `localhost:${address.port}`, `[::1]:${address.port}`, `${options.host}:${address.port}`]);
    if (!allowed.has(req.headers.host ?? '')) {
      res.writeHead(421, { 'content-type': 'text/plain' }).end('misdirected request\n');
      return;
    }
    const origin = `http://${req.headers.host ?? `127.0.0.1:${address.port}`}`;
    void Promise.resolve(app.fetch(toRequest(req, origin), {}))
      .then((response) => sendResponse(response, res))
      .catch(() => {
        if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
        res.end('internal error\n');
      });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) => reject(new CliError(`cannot listen on ${options.host}:${options.port}: ${error.code ?? error.message}`)));
    server.listen(options.port, options.host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  const url = `http://${host}:${address.port}`;
  const stop = (): void => {
    server.closeAllConnections();
    server.close();
    void opened.close();
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  if (options.json) out.printJson({ url, pagePath: '/v1/sessions/{sessionId}/inspect', token: options.pageTokenEnv === undefined ? token : undefined, store: opened.spec.raw });
  else {
    out.println(`agent-ledger inspector for ${opened.spec.raw} on ${url}`);
    out.println(`open ${url}/v1/sessions/<sessionId>/inspect and sign in with the token:`);
    out.println(options.pageTokenEnv === undefined ? `  ${token}` : `  (the value of ${options.pageTokenEnv})`);
  }
}
