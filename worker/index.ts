/**
 * Worker entry point: the deployable Worker of this repository.
 *
 * Wrangler (`wrangler.toml` -> `main`) loads this module and calls the default export's
 * `fetch` for every HTTP request. The app itself (routes, auth, SSE, WebSockets, OpenAPI) lives in
 * `src/app/` and ships as `agent-ledger/worker`; this file only builds it once per isolate.
 *
 * workerd treats every export of this module as an entry point: the default handler, Durable
 * Object classes (`SessionObject`), `WorkerEntrypoint` classes. Exporting anything else (a
 * constant, a type guard, the Hono app itself) makes the runtime refuse to start, so shared
 * values belong in their own modules.
 */
import { chatRoutes, createApp } from '../src/app/app.js';
import type { Env } from './env.js';
import type { SessionAgentMount } from '../src/adapters/durable-object/agent-rpc.js';
import { SessionObject as LedgerSessionObject } from '../src/edge/session-object.js';
import { demoAgent } from './demo-agent.js';

// The chat page at `/` is opt-in for a user's Worker; this one serves it.
const app = createApp({ extraGroups: [chatRoutes] });

export default {
  fetch: app.fetch,
} satisfies ExportedHandler<Env>;

/**
 * The session object of this Worker: the ledger's SessionObject with the demo agent mounted
 * (`demo-agent.ts`), so the agent routes work out of the box. Same class name, same binding.
 */
export class SessionObject extends LedgerSessionObject {
  protected override sessionAgent(): SessionAgentMount {
    return demoAgent();
  }
}
