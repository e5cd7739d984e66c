/**
 * The Worker's bindings.
 *
 * Wrangler hands these to every request: plain variables and secrets come from `.dev.vars`
 * locally (written by `npm start`) and from `wrangler secret put` in production. Durable Object
 * namespaces are declared in `wrangler.toml` and appear here under the same binding name.
 */
import type { SessionObject } from '../adapters/durable-object/object/session-object.js';

export interface Env {
  /** Bearer token that grants administrative access. */
  ADMIN_TOKEN: string;
  /** Key that signs and verifies session-scoped access tokens. */
  TOKEN_SECRET: string;
  /** One SessionObject per session, addressed with `idFromName(sessionId)`. */
  SESSIONS: DurableObjectNamespace<SessionObject>;
}
