/**
 * Worker entry of the edge benchmark (`bench/edge.bench.ts` bundles it with esbuild and runs it
 * on local workerd through Miniflare). Never deployed.
 *
 * It is the real Worker plus a baseline: `/bench/...` goes to the benchmark routes
 * (`bench-routes.ts`), every other path to the real Hono app (`worker/app.ts`), exactly as
 * `worker/index.ts` serves it. Exports are entry points only (workerd refuses anything else):
 * the default handler, the real `SessionObject` and the baseline `BareObject`.
 */
import { createApp } from '../../../src/app/app.js';
import { handleBenchRequest, type BenchEnv } from './bench-routes.js';

const app = createApp();

export default {
  async fetch(request, env, ctx) {
    const bench = new URL(request.url).pathname.startsWith('/bench/') ? await handleBenchRequest(request, env) : null;
    return bench ?? app.fetch(request, env, ctx);
  },
} satisfies ExportedHandler<BenchEnv>;

export { SessionObject } from '../../../src/edge/session-object.js';
export { BareObject } from './bare-object.js';
export { ProfileObject } from './profile-object.js';
