/**
 * Starts the real Worker (`wrangler.toml` -> `worker/index.ts`, with its SessionObject Durable
 * Object) locally for HTTP tests, through wrangler's programmatic API (`unstable_startWorker`).
 *
 * - Loopback only: bound to 127.0.0.1 on a free port; local mode (no remote bindings), no
 *   inspector, no file watching, no metrics, no `request.cf` download.
 * - Storage is in memory (`persist: false`): every start is a fresh, empty ledger.
 * - The Worker is bundled once, at start, into a private temporary directory ({@link bundleWorker})
 *   and wrangler runs that bundle unbundled (`build.bundle: false`). wrangler's own dev bundler
 *   watches every file and directory it read (esbuild watch mode, whatever `dev.watch` says) and
 *   reloads the Worker when one changes; requests in flight then end in 503 or a broken pipe. In a
 *   test run the tree does change under a running Worker: `npm pack` in test/package rewrites
 *   `package.json` for seconds (scripts/publish-manifest.ts), and edits to `src/` land meanwhile.
 * - Secrets are injected as bindings ({@link LOCAL_WORKER_SECRETS}); a developer's `.dev.vars`
 *   is not read.
 *
 * Used by every HTTP test file: `const worker = await startLocalWorker()` in `beforeAll`,
 * `await worker.stop()` in `afterAll`. In the vitest project `http`, one Worker started by this
 * file's globalSetup serves every file of the run (sessions are per test, so files never meet):
 * `startLocalWorker()` without options hands out that Worker, and its `stop()` does nothing. A
 * file that needs its own Worker (other vars, or one it may break) passes `vars` or `own: true`.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { inject } from 'vitest';

declare module 'vitest' {
  export interface ProvidedContext {
    /** URL of the Worker the files of the `http` project share (absent in other projects). */
    localWorkerUrl?: string;
  }
}

/** Secrets of the Worker under test. */
export const LOCAL_WORKER_SECRETS = {
  ADMIN_TOKEN: 'http-test-admin-token-0123456789abcdef',
  TOKEN_SECRET: 'http-test-token-secret-0123456789abcdef',
} as const;

/** Token scopes the Worker knows. */
export type TestTokenScope = 'read' | 'append' | 'subscribe' | 'recover' | 'lease' | 'deliver' | 'request' | 'permission';

/** Every scope, for tokens that may do everything on their session. */
export const ALL_SCOPES: readonly TestTokenScope[] = ['read', 'append', 'subscribe', 'recover', 'lease', 'deliver'];

/** The scopes an agent client needs: send requests, answer permissions, subscribe and read. */
export const AGENT_SCOPES: readonly TestTokenScope[] = ['request', 'permission', 'subscribe', 'read'];

/** A running local Worker. */
export interface LocalWorker {
  /** `http://127.0.0.1:<port>/` */
  readonly url: URL;
  /** The admin bearer token. */
  readonly adminToken: string;
  /** Absolute URL of a path on the Worker. */
  href(path: string): string;
  /** Mints a session token through `POST /v1/tokens`. */
  mintToken(sessionId: string, scopes?: readonly TestTokenScope[], ttlSeconds?: number): Promise<string>;
  /** Stops the Worker and its runtime. */
  stop(): Promise<void>;
}

const CONFIG_PATH = fileURLToPath(new URL('../../wrangler.toml', import.meta.url));

/** Options of {@link startLocalWorker}. */
export interface LocalWorkerOptions {
  /** Extra plain-text bindings (implies a Worker of the caller's own). */
  vars?: Readonly<Record<string, string>>;
  /** Start a Worker of the caller's own even where a shared one runs. */
  own?: boolean;
  /** Another wrangler config, e.g. a fixture Worker (implies a Worker of the caller's own). */
  config?: string;
}

/** The shared Worker's URL when this file runs in the `http` project, else undefined. */
function sharedWorkerUrl(): string | undefined {
  try {
    return inject('localWorkerUrl');
  } catch {
    return undefined; // outside a vitest worker (the globalSetup itself, a script)
  }
}

/**
 * The module wrangler runs: the config's `main`, whose `fetch` reads the rest of a request body
 * its handler left unread before the answer goes out, as `wrangler dev`'s own
 * middleware-ensure-req-body-drained does. Without it workerd closes the connection after
 * answering a request whose body was not read (a 401 before the body, say) without saying so,
 * and a client that sends its next request on that kept-alive connection gets "other side closed".
 */
function entrySource(main: string): string {
  const specifier = JSON.stringify(main);
  return `import worker from ${specifier};
export * from ${specifier};
if (typeof worker !== 'object' || worker === null || typeof worker.fetch !== 'function') {
  throw new Error('local-worker.ts runs Workers whose default export is an object with fetch()');
}
export default {
  ...worker,
  async fetch(request, env, ctx) {
    try {
      return await worker.fetch(request, env, ctx);
    } finally {
      if (request.body !== null && !request.bodyUsed) {
        const reader = request.body.getReader();
        try {
          while (!(await reader.read()).done);
        } catch {
          // The client went away.
        }
      }
    }
  },
};
`;
}

/**
 * Bundles the `main` of a wrangler config ({@link entrySource}) into a new temporary directory,
 * with the settings wrangler's bundler uses for a modules Worker (ES module, the
 * `workerd`/`worker`/`browser` conditions, ES2024, `cloudflare:*` external). Returns the
 * bundle's path; the caller removes the directory above its directory.
 */
async function bundleWorker(configPath: string): Promise<string> {
  const { unstable_readConfig } = await import('wrangler');
  const config = unstable_readConfig({ config: configPath });
  if (config.main === undefined) throw new Error(`${configPath} names no main module`);
  const dir = await mkdtemp(path.join(os.tmpdir(), 'agent-ledger-local-worker-'));
  // The entry outside the bundle's directory: wrangler takes every module file there for the Worker's.
  const entry = path.join(dir, 'entry.mjs');
  await writeFile(entry, entrySource(path.resolve(path.dirname(configPath), config.main)));
  const outfile = path.join(dir, 'out', 'index.js');
  await build({
    entryPoints: [entry],
    outfile,
    bundle: true,
    format: 'esm',
    target: 'es2024',
    conditions: ['workerd', 'worker', 'browser'],
    external: ['cloudflare:*'],
    define: { 'process.env.NODE_ENV': '"development"' },
    sourcemap: true,
    logLevel: 'error',
  });
  return outfile;
}

/** The part of wrangler's DevEnv (`Worker.raw`) that {@link userWorkerUrl} taps. */
interface DevEnvBus {
  dispatch(event: { type: string; proxyData?: { userWorkerUrl?: { protocol: string; hostname: string; port: string } } }): void;
}

/**
 * The runtime's own address of the Worker, read from the `reloadComplete` event of wrangler's
 * DevEnv. Tests talk to it directly instead of through wrangler's ProxyWorker, a second workerd
 * that forwards every request over a pooled loopback connection: when the Worker's runtime closes
 * that connection for idleness while the ProxyWorker sends on it, the ProxyWorker answers a POST
 * with 503 "Your worker restarted mid-request" (it compares the request's URL, path included,
 * with the Worker's base URL, so any failed forward reads as a restart), and large bodies cross
 * loopback twice. The Worker is never reloaded here (see the module header), so the address holds.
 */
function userWorkerUrl(raw: unknown): Promise<URL> {
  const bus = raw as DevEnvBus;
  const dispatch = bus.dispatch.bind(bus);
  return new Promise((resolve) => {
    bus.dispatch = (event) => {
      const parts = event.type === 'reloadComplete' ? event.proxyData?.userWorkerUrl : undefined;
      if (parts !== undefined) resolve(new URL(`${parts.protocol}//${parts.hostname}:${parts.port}/`));
      dispatch(event);
    };
  });
}

/** Starts the Worker (or hands out the run's shared one); resolves once it accepts requests. */
export async function startLocalWorker(options: LocalWorkerOptions = {}): Promise<LocalWorker> {
  const shared = options.vars === undefined && options.own !== true && options.config === undefined ? sharedWorkerUrl() : undefined;
  if (shared !== undefined) return localWorkerAt(new URL(shared), async () => undefined);
  process.env['CLOUDFLARE_CF_FETCH_ENABLED'] = 'false';
  process.env['WRANGLER_SEND_METRICS'] = 'false';
  process.env['WRANGLER_HIDE_BANNER'] = 'true';
  const { unstable_startWorker } = await import('wrangler');
  const configPath = options.config ?? CONFIG_PATH;
  const entrypoint = await bundleWorker(configPath);
  const removeBundle = (): Promise<void> => rm(path.dirname(path.dirname(entrypoint)), { recursive: true, force: true });
  const worker = await unstable_startWorker({
    config: configPath,
    entrypoint,
    build: { bundle: false, moduleRoot: path.dirname(entrypoint) },
    envFiles: [],
    sendMetrics: false,
    bindings: {
      ADMIN_TOKEN: { type: 'secret_text', value: LOCAL_WORKER_SECRETS.ADMIN_TOKEN },
      TOKEN_SECRET: { type: 'secret_text', value: LOCAL_WORKER_SECRETS.TOKEN_SECRET },
      ...Object.fromEntries(Object.entries(options.vars ?? {}).map(([name, value]) => [name, { type: 'plain_text' as const, value }])),
    },
    dev: {
      server: { hostname: '127.0.0.1', port: 0 },
      inspector: false,
      watch: false,
      remote: false,
      persist: false,
      logLevel: process.env["LOCAL_WORKER_LOG"] === "1" ? "log" : "error",
    },
  });
  const direct = userWorkerUrl(worker.raw);
  let url: URL;
  try {
    await worker.ready;
    // `ready` is the ProxyWorker's; the Worker's own runtime reports its address when it has started.
    url = await direct;
  } catch (error) {
    await worker.dispose().catch(() => undefined);
    await removeBundle();
    throw error;
  }
  return localWorkerAt(url, async () => {
    await worker.dispose();
    await removeBundle();
  });
}

function localWorkerAt(url: URL, stop: () => Promise<void>): LocalWorker {
  const href = (path: string): string => new URL(path, url).href;
  return {
    url,
    adminToken: LOCAL_WORKER_SECRETS.ADMIN_TOKEN,
    href,
    async mintToken(sessionId, scopes = ALL_SCOPES, ttlSeconds) {
      const response = await fetch(href('/v1/tokens'), {
        method: 'POST',
        headers: { authorization: `Bearer ${LOCAL_WORKER_SECRETS.ADMIN_TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({ sessionId, scopes, ...(ttlSeconds === undefined ? {} : { ttlSeconds }) }),
      });
      if (!response.ok) throw new Error(`minting a token failed: HTTP ${response.status} ${await response.text()}`);
      const body = (await response.json()) as { token: string };
      return body.token;
    },
    stop,
  };
}

/** vitest globalSetup of the `http` project: one Worker for every file of the run. */
export default async function setup(project: { provide(key: 'localWorkerUrl', value: string): void }): Promise<() => Promise<void>> {
  const worker = await startLocalWorker({ own: true });
  project.provide('localWorkerUrl', worker.url.href);
  return () => worker.stop();
}
