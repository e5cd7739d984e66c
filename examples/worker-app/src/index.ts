/**
 * A user's own Worker with agent-ledger mounted.
 *
 * - `Agents` is this app's SessionObject: one Durable Object per session holds the event log, the
 *   lease and the durability records; `sessionAgent()` mounts one agent with one durable tool (no
 *   model here: the tool is started as a run; add a `model` and the model calls the same tool).
 * - `routeSessionRequest` serves every ledger route (events, subscriptions, commands, recovery,
 *   runs, tokens, OpenAPI, /docs) for the `AGENTS` binding and answers `null` for other paths,
 *   which stay this app's own.
 */
import { defineTool } from 'agent-ledger/session';
import { routeSessionRequest, SessionObject, type SessionAgentMount } from 'agent-ledger/worker';

export interface Env {
  AGENTS: DurableObjectNamespace<Agents>;
  ADMIN_TOKEN: string;
  TOKEN_SECRET: string;
}

type Order = { orderId: string; status: 'shipped'; checkedAt: string };

/** The app's session object: the ledger's SessionObject plus a support agent. */
export class Agents extends SessionObject {
  protected override sessionAgent(): SessionAgentMount {
    return {
      name: 'support',
      tools: {
        /** One durable step: on a replay (after an eviction or a retry) the recorded result is reused. */
        lookupOrder: defineTool({
          sideEffect: 'pure',
          execute: async (input: { orderId: string }, ctx) => {
            if (ctx.step === undefined) throw new Error('no durability port');
            const order = await ctx.step('fetch-order', (): Order => ({
              orderId: input.orderId,
              status: 'shipped',
              checkedAt: new Date().toISOString(),
            }));
            return { answer: `order ${order.orderId} is ${order.status}` };
          },
        }),
      },
    };
  }
}

export default {
  async fetch(request, env, ctx): Promise<Response> {
    const ledger = await routeSessionRequest(request, env, { binding: 'AGENTS' }, ctx);
    if (ledger !== null) return ledger;
    if (new URL(request.url).pathname === '/') return new Response('my agents app\n');
    return new Response('not found\n', { status: 404 });
  },
} satisfies ExportedHandler<Env>;
