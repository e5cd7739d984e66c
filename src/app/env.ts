/**
 * The Worker's bindings.
 *
 * Wrangler hands these to every request: plain variables and secrets come from `.dev.vars`
 * locally (written by `npm start`) and from `wrangler secret put` in production. Durable Object
 * namespaces are declared in `wrangler.toml` and appear under their binding name. The app reads
 * only the secrets and the binding it was configured with (this repository's own Worker declares
 * its bindings in `worker/env.ts`).
 */
import type { SessionObjectNamespaceLike } from '../adapters/durable-object/durable-object-store.js';
import type { AuthSecrets } from './auth.js';

/** Binding name of the session objects when the app is not told another one. */
export const DEFAULT_SESSION_BINDING = 'SESSIONS';

/**
 * What the app reads from any Worker's bindings: the secrets, and the session namespace under the
 * binding name given to `createApp` (default {@link DEFAULT_SESSION_BINDING}). A user's own `Env`
 * (with a `SessionObject` subclass bound under any name) is assignable to it.
 */
export type AppBindings = AuthSecrets & { readonly [binding: string]: unknown };

/** Per-request values the app's middleware sets. */
export interface AppVariables {
  /** The session objects' namespace, taken from the configured binding. */
  sessions: SessionObjectNamespaceLike;
}
