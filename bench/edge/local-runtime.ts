/**
 * Starts the bench Worker (`worker/bench-worker.ts`) on local workerd for `bench/edge.bench.ts`.
 *
 * 1. Bundle the TypeScript entry with esbuild (wrangler's own copy, so no new dependency):
 *    ESM, Workers export conditions, `cloudflare:*` left to the runtime.
 * 2. Start it with Miniflare's programmatic API (the top-level `miniflare`, which ships the same
 *    workerd as wrangler 4.86): bound to 127.0.0.1 on a free port, the compatibility date of
 *    `wrangler.toml`, two SQLite-backed Durable Object namespaces (`SESSIONS` -> SessionObject,
 *    `BARE` -> BareObject, `PROFILE` -> ProfileObject) persisted on disk in a temporary
 *    directory as `wrangler dev` does (`EDGE_BENCH_PERSIST=memory`: in memory), and fixed secrets. No request goes off the machine (`CLOUDFLARE_CF_FETCH_ENABLED=false`).
 * Miniflare talks to workerd directly, without the proxy Worker `wrangler dev` puts in front.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Miniflare } from 'miniflare';

/** Admin token of the bench Worker (loopback only). */
export const BENCH_ADMIN_TOKEN = 'bench-admin-token-0123456789abcdef';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const ENTRY = path.join(ROOT, 'bench/edge/worker/bench-worker.ts');

/** The running bench Worker. */
export interface BenchRuntime {
  /** `http://127.0.0.1:<port>/` */
  readonly url: URL;
  /** Bytes of the bundled Worker. */
  readonly bundleBytes: number;
  /** Where Durable Object storage lives: `disk` (default) or `memory`. */
  readonly storage: 'disk' | 'memory';
  /** Stops workerd and deletes its storage. */
  stop(): Promise<void>;
}

interface EsbuildLike {
  build(options: Record<string, unknown>): Promise<unknown>;
}

/** The compatibility date of the repository's `wrangler.toml`, for every benchmark runtime. */
export function compatibilityDate(): string {
  const toml = readFileSync(path.join(ROOT, 'wrangler.toml'), 'utf8');
  const match = /^compatibility_date\s*=\s*"([0-9-]+)"/m.exec(toml);
  if (match?.[1] === undefined) throw new Error('wrangler.toml has no compatibility_date');
  return match[1];
}

/**
 * Bundles a Worker entry into one ESM file as wrangler would (esbuild from wrangler's own copy, so
 * no new dependency): Workers export conditions, `cloudflare:*` left to the runtime.
 */
export async function bundleWorker(entry: string, outfile: string): Promise<void> {
  // SAFETY: wrangler depends on esbuild; its `build` accepts these options.
  const esbuild = createRequire(createRequire(import.meta.url).resolve('wrangler/package.json'))('esbuild') as EsbuildLike;
  await esbuild.build({
    entryPoints: [entry],
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
}

/** Bundles and starts the bench Worker. */
export async function startBenchRuntime(): Promise<BenchRuntime> {
  process.env['CLOUDFLARE_CF_FETCH_ENABLED'] = 'false';
  process.env['WRANGLER_SEND_METRICS'] = 'false';
  const dir = mkdtempSync(path.join(os.tmpdir(), 'edge-bench-'));
  const outfile = path.join(dir, 'bench-worker.js');
  await bundleWorker(ENTRY, outfile);
  const bundleBytes = readFileSync(outfile).byteLength;
  const storage = process.env['EDGE_BENCH_PERSIST'] === 'memory' ? 'memory' : 'disk';
  const { Miniflare: MiniflareClass } = await import('miniflare');
  const mf: Miniflare = new MiniflareClass({
    host: '127.0.0.1',
    port: 0,
    modules: true,
    scriptPath: outfile,
    modulesRoot: dir,
    compatibilityDate: compatibilityDate(),
    bindings: { ADMIN_TOKEN: BENCH_ADMIN_TOKEN, TOKEN_SECRET: 'bench-token-secret-0123456789abcdef' },
    durableObjects: {
      SESSIONS: { className: 'SessionObject', useSQLite: true },
      BARE: { className: 'BareObject', useSQLite: true },
      PROFILE: { className: 'ProfileObject', useSQLite: true },
    },
    durableObjectsPersist: storage === 'memory' ? false : path.join(dir, 'do'),
  });
  const url = await mf.ready;
  return {
    url,
    bundleBytes,
    storage,
    async stop() {
      await mf.dispose();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
