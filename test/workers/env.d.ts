/**
 * Types for tests that run inside workerd.
 *
 * `env` and `exports` from `cloudflare:workers` are typed through the global `Cloudflare`
 * namespace: `Env` lists the Worker's bindings, `GlobalProps.mainModule` names the module whose
 * exports `exports` loops back to (the Worker's `main` in wrangler.toml).
 */
import type { Env as WorkerEnv } from '../../worker/env.js';
import type * as WorkerMain from '../../worker/index.js';

declare global {
  namespace Cloudflare {
    interface Env extends WorkerEnv {}
    interface GlobalProps {
      mainModule: typeof WorkerMain;
    }
  }
}
