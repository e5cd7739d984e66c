/**
 * Bundles and runs the Worker of `bench/peer-agent/worker.ts` on local workerd through Miniflare,
 * for `bench/peer-agent.bench.ts` and `bench/peer-agent/kill-mid-answer.ts`.
 *
 * Bundled by wrangler's own bundler (`wrangler deploy --dry-run --outdir`), as a deploy would
 * bundle it: the peer needs `nodejs_compat` (it imports `node:async_hooks` and friends, and a
 * CommonJS dependency requires `path`); nothing is uploaded. Served on 127.0.0.1 only, SQLite
 * Durable Objects persisted on disk, `CLOUDFLARE_CF_FETCH_ENABLED=false`.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Miniflare } from 'miniflare';
import { compatibilityDate } from '../edge/local-runtime.js';

/** Admin token of the bench Worker (loopback only). */
export const PEER_BENCH_ADMIN = 'bench-admin-token-0123456789abcdef';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** The bundled Worker. */
export interface PeerBundle {
  readonly outfile: string;
  readonly bytes: number;
}

/**
 * Bundles the Worker into `dir/out/worker.js`; `peerAi` 7 uses the repository's `ai`, 6 the
 * `ai-v6` alias (and the bench model as `LanguageModelV3`).
 */
export function bundlePeerWorker(dir: string, peerAi: 6 | 7): PeerBundle {
  process.env['CLOUDFLARE_CF_FETCH_ENABLED'] = 'false';
  process.env['WRANGLER_SEND_METRICS'] = 'false';
  mkdirSync(dir, { recursive: true });
  const config = path.join(dir, 'wrangler.toml');
  writeFileSync(
    config,
    [
      'name = "peer-agent-bench"',
      `main = ${JSON.stringify(path.join(ROOT, 'bench/peer-agent/worker.ts'))}`,
      `compatibility_date = "${compatibilityDate()}"`,
      'compatibility_flags = ["nodejs_compat"]',
      '[define]',
      `PEER_AI_MAJOR = "${peerAi}"`,
      // `ai` 6 is installed as the alias `ai-v6`: its ESM entry, by path (wrangler resolves
      // aliases from the config's directory).
      ...(peerAi === 6 ? ['[alias]', `ai = ${JSON.stringify(path.join(ROOT, 'node_modules/ai-v6/dist/index.mjs'))}`] : []),
      '',
    ].join('\n'),
  );
  const wrangler = path.join(path.dirname(createRequire(import.meta.url).resolve('wrangler/package.json')), 'bin/wrangler.js');
  const bundled = spawnSync(process.execPath, [wrangler, 'deploy', '--dry-run', '--outdir', path.join(dir, 'out'), '-c', config], {
    cwd: dir,
    encoding: 'utf8',
    env: { ...process.env, CLOUDFLARE_CF_FETCH_ENABLED: 'false', WRANGLER_SEND_METRICS: 'false' },
  });
  if (bundled.status !== 0) throw new Error(`wrangler could not bundle the bench Worker:\n${bundled.stdout}${bundled.stderr}`);
  const outfile = path.join(dir, 'out/worker.js');
  return { outfile, bytes: readFileSync(outfile).byteLength };
}

/** A running workerd with the bundled Worker. */
export interface PeerRuntime {
  readonly url: URL;
  readonly mf: Miniflare;
}

/** Starts workerd with the bundle; Durable Object storage under `persistDir` (kept across restarts). */
export async function startPeerRuntime(bundle: PeerBundle, persistDir: string): Promise<PeerRuntime> {
  const { Miniflare: MiniflareClass } = await import('miniflare');
  const mf: Miniflare = new MiniflareClass({
    host: '127.0.0.1',
    port: 0,
    modules: true,
    scriptPath: bundle.outfile,
    modulesRoot: path.dirname(bundle.outfile),
    compatibilityDate: compatibilityDate(),
    compatibilityFlags: ['nodejs_compat'],
    bindings: { ADMIN_TOKEN: PEER_BENCH_ADMIN, TOKEN_SECRET: 'bench-token-secret-0123456789abcdef' },
    durableObjects: {
      SESSIONS: { className: 'SessionObject', useSQLite: true },
      PeerChatAgent: { className: 'PeerChatAgent', useSQLite: true },
    },
    durableObjectsPersist: persistDir,
  });
  return { url: await mf.ready, mf };
}
