/**
 * The bindings of this repository's own Worker (`worker/index.ts`, `wrangler.toml`). Wrangler
 * hands these to every request: secrets come from `.dev.vars` locally (written by `npm start`)
 * and from `wrangler secret put` in production; `SESSIONS` is declared in `wrangler.toml`.
 */
import type { SessionObject } from '../src/edge/session-object.js';

export interface Env {
  /** Bearer token that grants administrative access. */
  ADMIN_TOKEN: string;
  /** Key that signs and verifies session-scoped access tokens. */
  TOKEN_SECRET: string;
  /** One SessionObject per session, addressed with `idFromName(sessionId)`. */
  SESSIONS: DurableObjectNamespace<SessionObject>;
}

