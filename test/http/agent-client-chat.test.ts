/**
 * `AgentChatTransport` driven as `useChat` drives it: the AI SDK's own `AbstractChat` (the class
 * `useChat` of React, Svelte and Vue wraps), of AI SDK 7 (`ai`) and AI SDK 6 (`ai-v6`), with an
 * in-memory chat state instead of a framework, against the real Worker run locally.
 *
 * - default Worker (demo agent): a message, its streamed text, the tool part and its output;
 * - fixture Worker (edge test agent): the connection cut mid-answer (the `gated` response is held
 *   after two deltas) while a second chat — a reloaded page — resumes the same answer through
 *   `resumeStream()`; both end with the whole text once; a permission shown as a tool approval and
 *   answered with `addToolApprovalResponse`; `stop()` aborting the request.
 * The chat state notifies on every change, so the test waits for states, never for time.
 */
import { fileURLToPath } from 'node:url';
import * as ai7 from 'ai';
import * as ai6 from 'ai-v6';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentSessionClient, createAgentChatTransport, type AgentClientFetch, type AgentChatTransport } from '../../src/browser.js';
import { AGENT_SCOPES, startLocalWorker, type LocalWorker } from './local-worker.js';

const FIXTURE_CONFIG = fileURLToPath(new URL('../workers/fixtures/wrangler.agents.toml', import.meta.url));

// The transport is a ChatTransport of both majors (checked by the compiler).
export function asChatTransports(transport: AgentChatTransport): [ai7.ChatTransport<ai7.UIMessage>, ai6.ChatTransport<ai6.UIMessage>] {
  return [transport, transport];
}

let demo: LocalWorker;
let fixture: LocalWorker;
beforeAll(async () => {
  [demo, fixture] = await Promise.all([startLocalWorker(), startLocalWorker({ config: FIXTURE_CONFIG })]);
});
afterAll(async () => {
  await Promise.all([demo?.stop(), fixture?.stop()]);
});

let counter = 0;
function newSessionId(label: string): string {
  counter += 1;
  return `agent-chat-${label}-${counter}-${Date.now().toString(36)}`;
}

/** The message shape both majors share, as the test reads it. */
interface Message {
  id: string;
  role: string;
  parts: Array<{ type: string; text?: string; state?: string; toolName?: string; output?: unknown; approval?: { id: string } }>;
}

/** A chat state (what React's or Svelte's `Chat` keeps in reactive state) that reports each change. */
class ObservedState<M> {
  #status: string = 'ready';
  error: Error | undefined = undefined;
  messages: M[] = [];
  readonly #listeners = new Set<() => void>();

  get status(): string {
    return this.#status;
  }
  set status(value: string) {
    this.#status = value;
    this.#changed();
  }
  pushMessage = (message: M): void => {
    this.messages = [...this.messages, message];
    this.#changed();
  };
  popMessage = (): void => {
    this.messages = this.messages.slice(0, -1);
    this.#changed();
  };
  replaceMessage = (index: number, message: M): void => {
    const next = [...this.messages];
    next[index] = message;
    this.messages = next;
    this.#changed();
  };
  snapshot = <T>(value: T): T => structuredClone(value);

  /** Resolves once `predicate` holds (checked now and after every change). */
  until(predicate: () => boolean): Promise<void> {
    return new Promise((resolve) => {
      const check = (): void => {
        if (!predicate()) return;
        this.#listeners.delete(check);
        resolve();
      };
      this.#listeners.add(check);
      check();
    });
  }

  #changed(): void {
    for (const listener of [...this.#listeners]) listener();
  }
}

/** What the test does with a chat, whichever major runs it. */
interface TestChat {
  readonly state: ObservedState<unknown>;
  readonly data: unknown[];
  sendMessage(text: string): Promise<void>;
  resumeStream(): Promise<void>;
  stop(): Promise<void>;
  approve(id: string, approved: boolean): Promise<void>;
}

interface ChatOptions {
  id: string;
  transport: AgentChatTransport;
  /** Send the answered approvals automatically (the documented setup for tool approvals). */
  autoSendApprovals?: boolean;
}

type Major = { name: string; chat(options: ChatOptions): TestChat };

const MAJORS: Major[] = [
  {
    name: 'AI SDK 7',
    chat({ id, transport, autoSendApprovals }) {
      const state = new ObservedState<ai7.UIMessage>();
      const data: unknown[] = [];
      class Chat extends ai7.AbstractChat<ai7.UIMessage> {}
      const chat = new Chat({
        id,
        transport,
        // SAFETY: ObservedState implements ChatState (status typed as string for both majors).
        state: state as unknown as ai7.ChatState<ai7.UIMessage>,
        onData: (part) => void data.push(part),
        ...(autoSendApprovals === true ? { sendAutomaticallyWhen: ai7.lastAssistantMessageIsCompleteWithApprovalResponses } : {}),
      });
      return {
        state: state as ObservedState<unknown>,
        data,
        sendMessage: (text) => chat.sendMessage({ text }),
        resumeStream: () => chat.resumeStream(),
        stop: () => chat.stop(),
        approve: async (approvalId, approved) => chat.addToolApprovalResponse({ id: approvalId, approved }),
      };
    },
  },
  {
    name: 'AI SDK 6',
    chat({ id, transport, autoSendApprovals }) {
      const state = new ObservedState<ai6.UIMessage>();
      const data: unknown[] = [];
      class Chat extends ai6.AbstractChat<ai6.UIMessage> {}
      const chat = new Chat({
        id,
        transport,
        // SAFETY: ObservedState implements ChatState (status typed as string for both majors).
        state: state as unknown as ai6.ChatState<ai6.UIMessage>,
        onData: (part) => void data.push(part),
        ...(autoSendApprovals === true ? { sendAutomaticallyWhen: ai6.lastAssistantMessageIsCompleteWithApprovalResponses } : {}),
      });
      return {
        state: state as ObservedState<unknown>,
        data,
        sendMessage: (text) => chat.sendMessage({ text }),
        resumeStream: () => chat.resumeStream(),
        stop: () => chat.stop(),
        approve: async (approvalId, approved) => chat.addToolApprovalResponse({ id: approvalId, approved }),
      };
    },
  },
];

function messagesOf(chat: TestChat): Message[] {
  return chat.state.messages as Message[];
}

function assistantOf(chat: TestChat): Message | undefined {
  return messagesOf(chat).findLast((message) => message.role === 'assistant');
}

function assistantText(chat: TestChat): string {
  return (assistantOf(chat)?.parts ?? []).flatMap((part) => (part.type === 'text' ? [part.text ?? ''] : [])).join('|');
}

/** A fetch whose subscription connections the test can cut, and count. */
function cuttableFetch(): { fetch: AgentClientFetch; cut(): void; connected(n: number): Promise<void> } {
  const live = new Set<AbortController>();
  let connects = 0;
  const waiters: Array<{ n: number; resolve: () => void }> = [];
  return {
    fetch: (input, init) => {
      if (!input.includes('/subscribe')) return fetch(input, init);
      connects += 1;
      for (const waiter of waiters.filter((w) => w.n <= connects)) waiter.resolve();
      const mine = new AbortController();
      live.add(mine);
      const signal = init.signal === undefined || init.signal === null ? mine.signal : AbortSignal.any([mine.signal, init.signal]);
      return fetch(input, { ...init, signal });
    },
    cut() {
      for (const controller of live) controller.abort(new Error('connection cut by the test'));
      live.clear();
    },
    connected(n) {
      return n <= connects ? Promise.resolve() : new Promise((resolve) => waiters.push({ n, resolve }));
    },
  };
}

describe.each(MAJORS)('AgentChatTransport under $name', (major) => {
  it('sends a message and streams the answer, with the tool part and its output', async () => {
    const sessionId = newSessionId('demo');
    const transport = createAgentChatTransport({ baseUrl: demo.url, token: await demo.mintToken(sessionId, AGENT_SCOPES) });
    const chat = major.chat({ id: sessionId, transport });
    await chat.sendMessage('How many words is this?');

    expect(chat.state.status).toBe('ready');
    const messages = messagesOf(chat);
    expect(messages.map((m) => m.role)).toEqual(['user', 'assistant']);
    const assistant = messages[1]!;
    expect(assistant.parts.map((part) => part.type)).toEqual(['step-start', 'text', 'dynamic-tool', 'step-start', 'text']);
    expect(assistant.parts[1]).toMatchObject({ text: 'Let me count the words in your message.', state: 'done' });
    expect(assistant.parts[2]).toMatchObject({ toolName: 'word_stats', state: 'output-available', output: { words: 5, longest: 'words' } });
    expect(assistant.parts[4]!.text).toMatch(/^Your message has 5 words and 18 letters/);
    expect(chat.data).toEqual([expect.objectContaining({ type: 'data-tool-progress', data: expect.objectContaining({ progress: { counted: 5 } }) })]);

    // The assistant message is the request; sending the same user message again runs nothing new.
    const client = new AgentSessionClient({ baseUrl: demo.url, sessionId, token: await demo.mintToken(sessionId, AGENT_SCOPES) });
    const again = await client.send('How many words is this?', { commandId: messages[0]!.id });
    expect(again).toMatchObject({ created: false, requestId: assistant.id });
  });

  it('survives a cut connection mid-answer, and a reloaded page resumes the same answer', async () => {
    const sessionId = newSessionId('resume');
    const token = await fixture.mintToken(sessionId, AGENT_SCOPES);
    const wire = cuttableFetch();
    const first = major.chat({ id: sessionId, transport: createAgentChatTransport({ baseUrl: fixture.url, token, fetch: wire.fetch }) });
    const sending = first.sendMessage('gated');
    await first.state.until(() => assistantText(first).startsWith('one '));
    wire.cut();
    await wire.connected(2);

    // A second page (a new chat on the same session, nothing in memory) resumes mid-answer.
    const second = major.chat({ id: sessionId, transport: createAgentChatTransport({ baseUrl: fixture.url, token }) });
    const resuming = second.resumeStream();
    await second.state.until(() => assistantText(second) === 'one two ');
    expect(second.state.status).toBe('streaming');

    const release = await fetch(fixture.href(`/v1/sessions/${sessionId}/test/release-model`), {
      method: 'POST',
      headers: { authorization: `Bearer ${fixture.adminToken}` },
    });
    expect(release.status).toBe(200);
    await Promise.all([sending, resuming]);
    for (const chat of [first, second]) {
      expect(chat.state.status).toBe('ready');
      expect(assistantText(chat)).toBe('one two three');
    }
    expect(assistantOf(second)!.id).toBe(assistantOf(first)!.id);
    expect(messagesOf(second).map((m) => m.role)).toEqual(['assistant']);
    // Nothing runs: resuming an idle session answers no stream.
    await second.resumeStream();
    expect(messagesOf(second)).toHaveLength(1);
  });

  it('shows a permission as a tool approval and answers it with addToolApprovalResponse', async () => {
    const sessionId = newSessionId('permission');
    const transport = createAgentChatTransport({ baseUrl: fixture.url, token: await fixture.mintToken(sessionId, AGENT_SCOPES) });
    const chat = major.chat({ id: sessionId, transport, autoSendApprovals: true });
    await chat.sendMessage('permission');
    expect(chat.state.status).toBe('ready');
    const tool = assistantOf(chat)!.parts.find((part) => part.type === 'dynamic-tool')!;
    expect(tool).toMatchObject({ toolName: 'approve_me', state: 'approval-requested' });

    await chat.approve(tool.approval!.id, true);
    await chat.state.until(() => chat.state.status === 'ready' && assistantText(chat).startsWith('Done'));
    expect(assistantText(chat)).toBe('Done: {"approved":"deploy"}');
    const messages = messagesOf(chat);
    expect(messages.map((m) => m.role)).toEqual(['user', 'assistant']);
    expect(messages[1]!.parts.find((part) => part.type === 'dynamic-tool')).toMatchObject({ state: 'output-available', output: { approved: 'deploy' } });
  });

  it('a reloaded page resumes a request waiting for a permission and answers it', async () => {
    const sessionId = newSessionId('reload-permission');
    const token = await fixture.mintToken(sessionId, AGENT_SCOPES);
    const first = major.chat({ id: sessionId, transport: createAgentChatTransport({ baseUrl: fixture.url, token }) });
    await first.sendMessage('permission');

    const page = major.chat({ id: sessionId, transport: createAgentChatTransport({ baseUrl: fixture.url, token }), autoSendApprovals: true });
    await page.resumeStream();
    expect(page.state.status).toBe('ready');
    const tool = assistantOf(page)!.parts.find((part) => part.type === 'dynamic-tool')!;
    expect(tool).toMatchObject({ toolName: 'approve_me', state: 'approval-requested' });
    await page.approve(tool.approval!.id, false);
    await page.state.until(() => page.state.status === 'ready' && assistantText(page).startsWith('Done'));
    expect(assistantOf(page)!.parts.find((part) => part.type === 'dynamic-tool')).toMatchObject({ state: 'output-denied' });
    expect(messagesOf(page)).toHaveLength(1);
  });

  it('stop() aborts the request in the session object', async () => {
    const sessionId = newSessionId('stop');
    const token = await fixture.mintToken(sessionId, AGENT_SCOPES);
    const chat = major.chat({ id: sessionId, transport: createAgentChatTransport({ baseUrl: fixture.url, token }) });
    const sending = chat.sendMessage('hang-stream');
    await chat.state.until(() => assistantText(chat).startsWith('Part'));
    await chat.stop();
    await sending;
    expect(chat.state.status).toBe('ready');

    const client = new AgentSessionClient({ baseUrl: fixture.url, sessionId, token });
    const stream = client.stream({ after: null });
    for await (const item of stream) {
      if (item.type === 'event' && item.event.type === 'request_interrupted') {
        expect(item.event.data.reason).toBe('user_abort');
        break;
      }
    }
  });
});
