/**
 * Starts the real Worker (`wrangler.toml` -> `worker/index.ts`, with its SessionObject Durable
 * Object) locally for HTTP tests, through wrangler's programmatic API (`unstable_startWorker`).
 *
 * - Loopback only: bound to 127.0.0.1 on a free port; local mode (no remote bindings), no
 *   inspector, no file watching, no metrics, no `request.cf` download.
 * - Storage is in memory (`persist: false`): every start is a fresh, empty ledger.
 * - Secrets are injected as bindings ({@link LOCAL_WORKER_SECRETS}); a developer's `.dev.vars`
 *   is not read.
 *
 * Used by every HTTP test file: `const worker = await startLocalWorker()` in `beforeAll`,
 * `await worker.stop()` in `afterAll`. In the vitest project `http`, one Worker started by this
 * file's globalSetup serves every file of the run (sessions are per test, so files never meet):
 * `startLocalWorker()` without options hands out that Worker, and its `stop()` does nothing. A
 * file that needs its own Worker (other vars, or one it may break) passes `vars` or `own: true`.
 */
import { fileURLToPath } from 'node:url';
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
export type TestTokenScope = 'read' | 'append' | 'subscribe' | 'recover' | 'lease' | 'deliver';

/** Every scope, for tokens that may do everything on their session. */
export const ALL_SCOPES: readonly TestTokenScope[] = ['read', 'append', 'subscribe', 'recover', 'lease', 'deliver'];

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

/** Starts the Worker (or hands out the run's shared one); resolves once it accepts requests. */
export async function startLocalWorker(options: LocalWorkerOptions = {}): Promise<LocalWorker> {
  const shared = options.vars === undefined && options.own !== true && options.config === undefined ? sharedWorkerUrl() : undefined;
  if (shared !== undefined) return localWorkerAt(new URL(shared), async () => undefined);
  process.env['CLOUDFLARE_CF_FETCH_ENABLED'] = 'false';
  process.env['WRANGLER_SEND_METRICS'] = 'false';
  process.env['WRANGLER_HIDE_BANNER'] = 'true';
  const { unstable_startWorker } = await import('wrangler');
  const worker = await unstable_startWorker({
    config: options.config ?? CONFIG_PATH,
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
  await worker.ready;
  return localWorkerAt(await worker.url, () => worker.dispose());
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
