/**
 * The real Worker + SessionObject on local workerd (Miniflare, loopback, on-disk SQLite as with
 * `wrangler dev`) for the checkpoint benchmark, with `evict()`: restarts workerd on the same
 * storage, so every object's next request is a cold start.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Miniflare, MiniflareOptions } from 'miniflare';

export const ADMIN_TOKEN = 'checkpoint-bench-admin-token-0123456789';
const ROOT = fileURLToPath(new URL('../../', import.meta.url));

export interface EdgeRuntime {
  url(): URL;
  evict(): Promise<void>;
  stop(): Promise<void>;
}

export async function startEdgeRuntime(): Promise<EdgeRuntime> {
  process.env['CLOUDFLARE_CF_FETCH_ENABLED'] = 'false';
  process.env['WRANGLER_SEND_METRICS'] = 'false';
  const dir = mkdtempSync(path.join(os.tmpdir(), 'checkpoint-edge-'));
  const outfile = path.join(dir, 'worker.js');
  const esbuild = createRequire(createRequire(import.meta.url).resolve('wrangler/package.json'))('esbuild') as {
    build(options: Record<string, unknown>): Promise<unknown>;
  };
  await esbuild.build({
    entryPoints: [path.join(ROOT, 'worker/index.ts')],
    outfile,
    bundle: true,
    format: 'esm',
    platform: 'neutral',
    target: 'es2022',
    conditions: ['workerd', 'worker', 'browser', 'import'],
    mainFields: ['module', 'main'],
    external: ['cloudflare:*'],
    logLevel: 'error',
  });
  const toml = readFileSync(path.join(ROOT, 'wrangler.toml'), 'utf8');
  const compatibilityDate = /^compatibility_date\s*=\s*"([0-9-]+)"/m.exec(toml)?.[1] ?? '2025-01-01';
  const options: MiniflareOptions = {
    host: '127.0.0.1',
    port: 0,
    modules: true,
    scriptPath: outfile,
    modulesRoot: dir,
    compatibilityDate,
    bindings: { ADMIN_TOKEN, TOKEN_SECRET: 'checkpoint-bench-token-secret-0123456789' },
    durableObjects: { SESSIONS: { className: 'SessionObject', useSQLite: true } },
    durableObjectsPersist: path.join(dir, 'do'),
  };
  const { Miniflare: MiniflareClass } = await import('miniflare');
  const mf: Miniflare = new MiniflareClass(options);
  let url = await mf.ready;
  return {
    url: () => url,
    async evict() {
      await mf.setOptions(options);
      url = await mf.ready;
    },
    async stop() {
      await mf.dispose();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
