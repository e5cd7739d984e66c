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
 * Shared by every HTTP test file: `const worker = await startLocalWorker()` in `beforeAll`,
 * `await worker.stop()` in `afterAll`.
 */
import { fileURLToPath } from 'node:url';

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

/** Starts the Worker; resolves once it accepts requests. `vars`: extra plain-text bindings. */
export async function startLocalWorker(options: { vars?: Readonly<Record<string, string>> } = {}): Promise<LocalWorker> {
  process.env['CLOUDFLARE_CF_FETCH_ENABLED'] = 'false';
  process.env['WRANGLER_SEND_METRICS'] = 'false';
  process.env['WRANGLER_HIDE_BANNER'] = 'true';
  const { unstable_startWorker } = await import('wrangler');
  const worker = await unstable_startWorker({
    config: CONFIG_PATH,
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
  const url = await worker.url;
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
    stop: () => worker.dispose(),
  };
}
