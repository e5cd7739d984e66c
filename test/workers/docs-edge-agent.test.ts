/**
 * Inside workerd: the example of docs/edge-agents.md (snippet `edge-agent-workers-ai`, held by
 * fixtures/docs-edge-agent.ts). Its `sessionAgent()` runs with a stand-in `AI` binding as
 * `this.env.AI` (the binding `createWorkersAI` is given), and the mount it returns drives a Session
 * through a refund: the tool call streamed by `workers-ai-provider`, the permission round trip of
 * the `non_idempotent` tool, the payment client called once with the fencing token, the answer.
 */
import { describe, expect, it } from 'vitest';
import { MemoryDurableEventStore, SessionId } from '../../src/index.js';
import { createSession } from '../../src/session.js';
import type { SessionAgentMount } from '../../src/worker.js';
import { AgentObject, payments } from './fixtures/docs-edge-agent.js';

const encoder = new TextEncoder();

function sse(events: readonly unknown[]): ReadableStream<Uint8Array> {
  return new ReadableStream<Uint8Array>({
    start(controller) {
      for (const event of events) controller.enqueue(encoder.encode(`data: ${JSON.stringify(event)}\n\n`));
      controller.enqueue(encoder.encode('data: [DONE]\n\n'));
      controller.close();
    },
  });
}

describe('docs/edge-agents.md: the Workers AI example', () => {
  it('edge-agent-workers-ai: sessionAgent() with a stand-in AI binding refunds once, after the permission', async () => {
    const runs: Array<{ model: string; messages: Array<{ role: string }> }> = [];
    const ai = {
      run(model: string, inputs: { messages: Array<{ role: string }> }): Promise<ReadableStream<Uint8Array>> {
        runs.push({ model, messages: inputs.messages });
        const usage = { prompt_tokens: 30, completion_tokens: 5, total_tokens: 35 };
        if (!inputs.messages.some((message) => message.role === 'tool')) {
          return Promise.resolve(
            sse([
              { tool_calls: [{ id: 'call_r', type: 'function', index: 0, function: { name: 'refund', arguments: '{"orderId":"A-42"}' } }] },
              { response: '', usage, finish_reason: 'tool_calls' },
            ]),
          );
        }
        return Promise.resolve(sse([{ response: 'Order A-42 is refunded.' }, { response: '', usage, finish_reason: 'stop' }]));
      },
    };
    // SAFETY: `sessionAgent()` reads only `this.env.AI`, and the provider calls only `run` of it;
    // the object's other members (storage, alarm, routes) are not part of what the example decides.
    const sessionAgent = (AgentObject.prototype as unknown as { sessionAgent(this: { env: unknown }): SessionAgentMount }).sessionAgent;
    const mount = sessionAgent.call({ env: { AI: ai } });
    const model = mount.model;
    if (model === undefined) throw new Error('the example mounts no model');
    expect(model.specificationVersion).toBe('v4');

    const store = new MemoryDurableEventStore();
    const permissions: string[] = [];
    const session = await createSession({
      sessionId: 'docs-edge',
      model,
      ...(mount.system === undefined ? {} : { system: mount.system }),
      ...(mount.tools === undefined ? {} : { tools: mount.tools }),
      durableEventStore: store,
      onPermission: (request) => {
        permissions.push(request.toolName);
        return 'allow';
      },
    });
    const result = await session.run('Please refund order A-42.');
    await session.close();

    expect(result).toMatchObject({ status: 'completed', output: 'Order A-42 is refunded.' });
    expect(permissions).toEqual(['refund']);
    expect(payments.refunds).toHaveLength(1);
    expect(payments.refunds[0]?.orderId).toBe('A-42');
    expect(runs.map((run) => run.model)).toEqual(['@cf/meta/llama-3.1-8b-instruct', '@cf/meta/llama-3.1-8b-instruct']);
    expect(runs[0]?.messages[0]).toEqual({ role: 'system', content: 'You are a careful billing assistant.' });
    const events = (await store.read(SessionId('docs-edge'), { limit: 1000 })).events;
    expect(events.find((event) => event.type === 'model_request_started')?.data).toMatchObject({
      modelIdentity: { provider: 'workersai.chat', api: 'ai-sdk.language-model.v4' },
    });
  });
});
