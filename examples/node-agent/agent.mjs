// A durable agent in a few lines: a Session on a JSONL store, a pure tool that records its work
// with the durability port, and a non_idempotent tool behind a permission callback. The model is
// the package's scripted model (no network); any AI SDK provider model plugs in the same way.
//
//   node agent.mjs <dataDir> [--crash-after <sequence>]
//
// `--crash-after n` kills the process (SIGKILL) right after the store commits event n, to show
// `resumeSession` picking the work up (see test.mjs).
import { appendFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { JsonlDurableEventStore } from 'agent-ledger/advanced';
import { createScriptedModel, createSession, defineTool } from 'agent-ledger/session';

export const SESSION_ID = 'invoice-agent';

/** A model that asks for the invoice, then for the email, then answers. */
export function model() {
  return createScriptedModel(({ prompt }) => {
    const results = prompt.filter((message) => message.role === 'tool').flatMap((message) => message.content);
    const has = (name) => results.some((part) => part.toolName === name && part.output.type === 'json');
    if (!has('fetch_invoice')) return { text: 'Fetching the invoice.', toolCalls: [{ toolCallId: `c${prompt.length}-f`, toolName: 'fetch_invoice', input: { id: 'INV-7' } }] };
    if (!has('send_email')) return { text: 'Sending it.', toolCalls: [{ toolCallId: `c${prompt.length}-s`, toolName: 'send_email', input: { to: 'ops@example.com' } }] };
    return { text: 'Invoice INV-7 (120 EUR) was sent to ops@example.com.' };
  });
}

/** Session options shared by the first run and the resume. */
export function agentOptions(dataDir, store) {
  return {
    sessionId: SESSION_ID,
    model: model(),
    durableEventStore: store,
    tools: {
      fetch_invoice: defineTool({
        sideEffect: 'pure',
        execute: async ({ id }, ctx) => ctx.step('fetch', () => ({ id, amount: 120, currency: 'EUR' })),
      }),
      send_email: defineTool({
        sideEffect: 'non_idempotent',
        needsPermission: true,
        execute: ({ to }, ctx) => {
          // The external effect: a line in outbox.log (a real agent would call a mail API and
          // pass ctx.executionFence.fencingToken along).
          appendFileSync(path.join(dataDir, 'outbox.log'), `${ctx.toolAttemptId} ${to}\n`);
          return { sent: true, to };
        },
      }),
    },
    onPermission: ({ toolName, input }) => {
      console.log(`permission: allow ${toolName} ${JSON.stringify(input)}`);
      return 'allow';
    },
  };
}

/** Kills the process right after the commit that reaches `sequence`. */
function crashingAfter(store, sequence) {
  return new Proxy(store, {
    get(target, property) {
      if (property === 'append') {
        return async (...args) => {
          const result = await target.append(...args);
          if (result.lastSequence >= sequence) process.kill(process.pid, 'SIGKILL');
          return result;
        };
      }
      const value = Reflect.get(target, property, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const [dataDir = './.data', flag, value] = process.argv.slice(2);
  mkdirSync(dataDir, { recursive: true });
  const jsonl = new JsonlDurableEventStore(path.join(dataDir, 'ledger'));
  const store = flag === '--crash-after' ? crashingAfter(jsonl, Number(value)) : jsonl;
  const session = await createSession(agentOptions(dataDir, store));
  const frames = session.stream();
  const printing = (async () => {
    for await (const frame of frames) if (frame.type === 'durable_event') console.log(`#${frame.event.sequence} ${frame.event.type}`);
  })();
  const result = await session.run('Send invoice INV-7 to ops.');
  console.log(`answer: ${result.output}`);
  await session.close();
  await printing;
  await jsonl.close();
}
