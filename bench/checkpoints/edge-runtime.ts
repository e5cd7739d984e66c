/**
 * The real Worker + SessionObject on local workerd (Miniflare, loopback, on-disk SQLite as with
 * `wrangler dev`) for the checkpoint benchmark, with `evict()`: restarts workerd on the same
 * storage, so every object's next request is a cold start.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Miniflare, MiniflareOptions } from 'miniflare';
import { bundleWorker, compatibilityDate } from '../edge/local-runtime.js';

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
  await bundleWorker(path.join(ROOT, 'worker/index.ts'), outfile);
  const options: MiniflareOptions = {
    host: '127.0.0.1',
    port: 0,
    modules: true,
    scriptPath: outfile,
    modulesRoot: dir,
    compatibilityDate: compatibilityDate(),
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
