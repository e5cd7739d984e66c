/**
 * `AgentSessionClient` (agent-ledger/browser) against the real Worker run locally, over fetch and
 * Server-Sent Events only (what a browser or Node 20 without WebSocket has).
 *
 * - The default Worker (`wrangler.toml`: the demo agent, a scripted model and a pure tool): send a
 *   question, stream the token deltas, the tool progress and every durable event of the run.
 * - The fixture Worker (`test/workers/fixtures/agents-worker.ts`: the edge test agent) for what needs
 *   a run that waits: the connection cut mid-answer (a `gated` response held after two deltas) and
 *   resumed from the saved cursor, a permission answered, a steering input, an abort.
 * The connection is cut by aborting the subscription's fetch (the socket closes) between two
 * reads of the stream; the stream is read pull by pull, so nothing depends on timing.
 */
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AgentSessionClient,
  DurableError,
  webStorageCursorStore,
  type AgentClientFetch,
  type AgentReconnectInfo,
  type AgentStream,
  type AgentStatus,
  type AgentStreamItem,
  type DurableEventEnvelope,
  type SubscriberDeltaFrame,
} from '../../src/browser.js';
import { AGENT_SCOPES, startLocalWorker, type LocalWorker } from './local-worker.js';

const FIXTURE_CONFIG = fileURLToPath(new URL('../workers/fixtures/wrangler.agents.toml', import.meta.url));

let demo: LocalWorker;
let fixture: LocalWorker;

beforeAll(async () => {
  [demo, fixture] = await Promise.all([startLocalWorker(), startLocalWorker({ config: FIXTURE_CONFIG })]);
});
afterAll(async () => {
  await Promise.all([demo?.stop(), fixture?.stop()]);
});

let sessionCounter = 0;
function newSessionId(label: string): string {
  sessionCounter += 1;
  return `agent-client-${label}-${sessionCounter}-${Date.now().toString(36)}`;
}

/** Every event of the session, read with the admin token. */
async function logOf(worker: LocalWorker, sessionId: string): Promise<DurableEventEnvelope[]> {
  const response = await fetch(worker.href(`/v1/sessions/${sessionId}/events?limit=1000`), {
    headers: { authorization: `Bearer ${worker.adminToken}` },
  });
  expect(response.status).toBe(200);
  return ((await response.json()) as { events: DurableEventEnvelope[] }).events;
}

/** A loopback URL on which nothing listens (a port that was just free). */
async function closedPortUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${address.port}`;
}

/** Polls the agent status until `done` holds (bounded). */
async function statusUntil(client: AgentSessionClient, done: (status: AgentStatus) => boolean): Promise<AgentStatus> {
  for (let attempt = 0; ; attempt += 1) {
    const status = await client.status();
    if (done(status) || attempt === 500) return status;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** A fetch whose subscription connections the test can cut (their sockets close). */
function cuttableFetch(): { fetch: AgentClientFetch; cut(): void; readonly connects: number } {
  const live = new Set<AbortController>();
  let connects = 0;
  return {
    fetch: (input, init) => {
      if (!input.includes('/subscribe')) return fetch(input, init);
      connects += 1;
      const mine = new AbortController();
      live.add(mine);
      const signal = init.signal === undefined || init.signal === null ? mine.signal : AbortSignal.any([mine.signal, init.signal]);
      return fetch(input, { ...init, signal });
    },
    cut() {
      for (const controller of live) controller.abort(new Error('connection cut by the test'));
      live.clear();
    },
    get connects() {
      return connects;
    },
  };
}

/** Reads a stream pull by pull, keeping what it handed out. */
class Reader {
  readonly items: AgentStreamItem[] = [];
  readonly #iterator: AsyncIterator<AgentStreamItem>;

  constructor(readonly stream: AgentStream) {
    this.#iterator = stream[Symbol.asyncIterator]();
  }

  /** Reads until `predicate` holds for an item (which it answers). */
  async until(predicate: (item: AgentStreamItem) => boolean, what: string): Promise<AgentStreamItem> {
    for (;;) {
      const next = await this.#iterator.next();
      if (next.done === true) throw new Error(`the stream ended before ${what}`);
      this.items.push(next.value);
      if (predicate(next.value)) return next.value;
    }
  }

  async event<T extends DurableEventEnvelope['type']>(type: T, what = type): Promise<DurableEventEnvelope<T>> {
    const item = await this.until((i) => i.type === 'event' && i.event.type === type, what);
    // SAFETY: the predicate checked the type.
    return (item as unknown as { event: DurableEventEnvelope<T> }).event;
  }

  get events(): DurableEventEnvelope[] {
    return this.items.flatMap((item) => (item.type === 'event' ? [item.event] : []));
  }

  get deltas(): SubscriberDeltaFrame[] {
    return this.items.flatMap((item) => (item.type === 'text_delta' ? [item] : []));
  }

  /** The text the deltas of one model attempt spell; checks that each starts where the last ended. */
  textOf(modelAttemptId: string): string {
    let text = '';
    for (const delta of this.deltas.filter((d) => d.modelAttemptId === modelAttemptId)) {
      expect(delta.offset, `offset of ${JSON.stringify(delta.delta)}`).toBe(text.length);
      text += delta.delta;
    }
    return text;
  }
}

function responseText(event: DurableEventEnvelope<'model_request_completed'>): string {
  const content = event.data.response.content;
  return typeof content === 'string' ? content : content.map((part) => (part.type === 'text' ? part.text : '')).join('');
}

/** The events a stream handed out are the log's, in order: no gap, no repeat. */
function expectSameAsLog(events: readonly DurableEventEnvelope[], log: readonly DurableEventEnvelope[]): void {
  expect(events.map((e) => e.sequence)).toEqual(log.slice(0, events.length).map((e) => e.sequence));
  expect(events.map((e) => e.eventId)).toEqual(log.slice(0, events.length).map((e) => e.eventId));
}

describe('AgentSessionClient against the default Worker (demo agent)', () => {
  it('sends a request and streams its deltas, tool progress and durable events', async () => {
    const sessionId = newSessionId('demo');
    const client = new AgentSessionClient({ baseUrl: demo.url, sessionId, token: await demo.mintToken(sessionId, AGENT_SCOPES) });
    const reader = new Reader(client.stream());
    await reader.until((item) => item.type === 'caught_up', 'caught_up');

    const accepted = await client.send('How many words is this?', { commandId: 'ask-1' });
    expect(accepted).toMatchObject({ commandId: 'ask-1', created: true });
    const again = await client.send('How many words is this?', { commandId: 'ask-1' });
    expect(again).toEqual({ ...accepted, created: false, status: again.status });

    const done = await reader.until(
      (item) => item.type === 'event' && item.event.type === 'request_completed' && item.event.requestId === accepted.requestId,
      'request_completed',
    );
    expect(done.type).toBe('event');
    const completions = reader.events.filter((e): e is DurableEventEnvelope<'model_request_completed'> => e.type === 'model_request_completed');
    expect(completions).toHaveLength(2);
    for (const completion of completions) expect(reader.textOf(completion.modelAttemptId)).toBe(responseText(completion));
    expect(responseText(completions[1]!)).toContain('Your message has 5 words');
    // Each delta comes before the event that completes its response.
    const firstCompletion = reader.items.findIndex((item) => item.type === 'event' && item.event.eventId === completions[0]!.eventId);
    expect(reader.items.findIndex((item) => item.type === 'text_delta')).toBeLessThan(firstCompletion);
    const progress = reader.items.filter((item) => item.type === 'tool_progress');
    expect(progress).toEqual([expect.objectContaining({ toolName: 'word_stats', data: { counted: 5 } })]);
    expect(reader.items.some((item) => item.type === 'partial_response')).toBe(false);

    expectSameAsLog(reader.events, await logOf(demo, sessionId));
    expect(reader.stream.cursor).toBe(client.cursor);
    reader.stream.close();
    await expect(reader.until(() => false, 'the end')).rejects.toThrow(/ended/);
    expect((await client.status()).state).toBe('idle');
  });

  it('a new client with the same cursor store resumes after the saved cursor', async () => {
    const sessionId = newSessionId('resume');
    const token = await demo.mintToken(sessionId, AGENT_SCOPES);
    const saved = new Map<string, string>();
    const storage = { getItem: (key: string) => saved.get(key) ?? null, setItem: (key: string, value: string) => void saved.set(key, value) };
    const first = new AgentSessionClient({ baseUrl: demo.url, sessionId, token, cursorStore: webStorageCursorStore(storage, 'cursor') });
    const one = await first.send('one two');
    const reader = new Reader(first.stream());
    await reader.until((i) => i.type === 'event' && i.event.type === 'request_completed' && i.event.requestId === one.requestId, 'first answer');
    reader.stream.close();
    const seen = reader.events.at(-1)!;
    expect(saved.get('cursor')).toBe(first.cursor);

    // The "reloaded page": a new client, the same storage.
    const second = new AgentSessionClient({ baseUrl: demo.url, sessionId, token, cursorStore: webStorageCursorStore(storage, 'cursor') });
    const two = await second.send('three four five');
    const resumed = new Reader(second.stream());
    await resumed.until((i) => i.type === 'event' && i.event.type === 'request_completed' && i.event.requestId === two.requestId, 'second answer');
    resumed.stream.close();
    expect(resumed.events[0]!.sequence).toBe(seen.sequence + 1);
    const log = await logOf(demo, sessionId);
    expectSameAsLog([...reader.events, ...resumed.events], log);
  });
});

describe('AgentSessionClient against the fixture Worker (edge test agent)', () => {
  it('reconnects mid-answer from its cursor: no event missed or repeated, the text continues where it was cut', async () => {
    const sessionId = newSessionId('cut');
    const wire = cuttableFetch();
    const reconnects: AgentReconnectInfo[] = [];
    const client = new AgentSessionClient({ baseUrl: fixture.url, sessionId, token: await fixture.mintToken(sessionId, AGENT_SCOPES), fetch: wire.fetch });
    const reader = new Reader(client.stream({ onReconnect: (info) => reconnects.push(info) }));
    await reader.until((item) => item.type === 'caught_up', 'caught_up');
    const accepted = await client.send('gated');

    const first = (await reader.until((item) => item.type === 'text_delta', 'the first delta')) as SubscriberDeltaFrame;
    expect(first).toMatchObject({ delta: 'one ', offset: 0, requestId: accepted.requestId });
    const cursorAtCut = reader.stream.cursor;
    wire.cut();

    // The reconnect replays after the cursor, then the object sends the partial text ("one two ").
    await reader.until((item) => item.type === 'caught_up', 'caught_up after the reconnect');
    expect(wire.connects).toBe(2);
    expect(reconnects).toHaveLength(1);
    expect(reconnects[0]).toMatchObject({ attempt: 1, cursor: cursorAtCut });
    expect(reconnects[0]!.error).toBeInstanceOf(DurableError);
    expect(reconnects[0]!.error?.code).toBe('DURABLE_EVENT_UNAVAILABLE');
    const release = await fetch(fixture.href(`/v1/sessions/${sessionId}/test/release-model`), {
      method: 'POST',
      headers: { authorization: `Bearer ${fixture.adminToken}` },
    });
    expect(release.status).toBe(200);

    const completed = await reader.event('model_request_completed');
    expect(responseText(completed)).toBe('one two three');
    expect(reader.textOf(completed.modelAttemptId)).toBe('one two three');
    expect(reader.items.some((item) => item.type === 'partial_response')).toBe(false);
    await reader.until((i) => i.type === 'event' && i.event.type === 'request_completed', 'request_completed');
    reader.stream.close();

    const log = await logOf(fixture, sessionId);
    expectSameAsLog(reader.events, log);
    expect(reader.events).toHaveLength(log.length);
  });

  it('answers a permission and steers the waiting request', async () => {
    const sessionId = newSessionId('permission');
    const client = new AgentSessionClient({ baseUrl: fixture.url, sessionId, token: await fixture.mintToken(sessionId, AGENT_SCOPES) });
    const reader = new Reader(client.stream());
    const accepted = await client.send('permission');
    const asked = await reader.event('permission_requested');
    expect(asked.data).toMatchObject({ toolName: 'approve_me', message: 'May I deploy?' });
    const status = await statusUntil(client, (s) => s.state === 'waiting_permission');
    expect(status).toMatchObject({ state: 'waiting_permission', activeRequestId: accepted.requestId });
    expect(status.pendingPermissions).toEqual([asked.data.permissionRequestId]);

    const steered = await client.steer('and say thanks');
    expect(steered.requestId).toBe(accepted.requestId);
    const receipt = await client.answerPermission(asked.data.permissionRequestId, 'allow');
    expect(receipt).toEqual({ permissionRequestId: asked.data.permissionRequestId, decision: 'allow', created: true });
    expect((await client.answerPermission(asked.data.permissionRequestId, 'deny')).created).toBe(false);

    expect((await reader.event('permission_resolved')).data.decision).toBe('allow');
    expect((await reader.event('tool_completed')).data.result).toEqual({ approved: 'deploy' });
    const applied = await reader.event('input_applied');
    expect(applied.data).toMatchObject({ inputId: steered.inputId, input: 'and say thanks' });
    await reader.until((i) => i.type === 'event' && i.event.type === 'request_completed' && i.event.requestId === accepted.requestId, 'request_completed');
    reader.stream.close();
    expectSameAsLog(reader.events, await logOf(fixture, sessionId));
  });

  it('aborts a request mid-answer', async () => {
    const sessionId = newSessionId('abort');
    const client = new AgentSessionClient({ baseUrl: fixture.url, sessionId, token: await fixture.mintToken(sessionId, AGENT_SCOPES) });
    const reader = new Reader(client.stream());
    const accepted = await client.send('hang-stream');
    await reader.until((item) => item.type === 'text_delta', 'a delta');
    expect(await client.abort(accepted.requestId)).toEqual({ requestId: accepted.requestId, status: 'interrupted' });
    expect((await reader.event('turn_aborted')).data.reason).toBe('user_abort');
    const interrupted = await reader.event('request_interrupted');
    expect(interrupted).toMatchObject({ requestId: accepted.requestId, data: { reason: 'user_abort' } });
    reader.stream.close();
    expectSameAsLog(reader.events, await logOf(fixture, sessionId));
  });
});

describe('AgentSessionClient errors', () => {
  it('come back as the ledger error classes and codes', async () => {
    const sessionId = newSessionId('errors');
    const token = await fixture.mintToken(sessionId, AGENT_SCOPES);
    const client = new AgentSessionClient({ baseUrl: fixture.url, sessionId, token });

    const unknownRequest = await client.abort('no-such-request').catch((error: unknown) => error);
    expect(unknownRequest).toBeInstanceOf(DurableError);
    expect(unknownRequest).toMatchObject({ code: 'DURABLE_RECOVERY_TARGET_NOT_FOUND' });

    const badToken = new AgentSessionClient({ baseUrl: fixture.url, sessionId, token: 'not-a-token' });
    await expect(badToken.send('hello')).rejects.toMatchObject({ code: 'DURABLE_EVENT_UNAVAILABLE', details: { httpStatus: 401 } });

    // A refusal reconnecting cannot mend ends the stream with the error.
    const readOnly = new AgentSessionClient({ baseUrl: fixture.url, sessionId, token: await fixture.mintToken(sessionId, ['read']) });
    await expect(new Reader(readOnly.stream()).until(() => true, 'anything')).rejects.toMatchObject({ details: { httpStatus: 403 } });
    const otherSession = newSessionId('other');
    const other = new AgentSessionClient({ baseUrl: fixture.url, sessionId: otherSession, token: await fixture.mintToken(otherSession, AGENT_SCOPES) });
    await other.send('hi');
    const otherReader = new Reader(other.stream());
    await otherReader.until((i) => i.type === 'event', 'an event');
    otherReader.stream.close();
    await expect(new Reader(client.stream({ after: other.cursor! })).until(() => true, 'anything')).rejects.toMatchObject({
      code: 'DURABLE_EVENT_SUBSCRIPTION_INVALID',
    });

    // Nothing listens on the port: the outcome of a send is unknown (send again with its commandId).
    const closed = await closedPortUrl();
    const nowhere = new AgentSessionClient({ baseUrl: closed, sessionId, token });
    await expect(nowhere.send('hello', { commandId: 'c-1' })).rejects.toMatchObject({
      code: 'DURABLE_EVENT_WRITE_FAILED',
      details: { commandId: 'c-1' },
    });
    const refused = new AgentSessionClient({ baseUrl: closed, sessionId, token, maxReconnectAttempts: 2, reconnectDelayMs: () => 1 });
    await expect(new Reader(refused.stream()).until(() => true, 'anything')).rejects.toMatchObject({ code: 'DURABLE_EVENT_UNAVAILABLE' });
  });
});
