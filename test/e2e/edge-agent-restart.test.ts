/**
 * End to end under `wrangler dev`: one kill -9 of the whole dev process group, with a session of
 * the fixture Worker (test/e2e/fixtures/wrangler.e2e.toml) stopped at each boundary, then a
 * restart on the same port and `--persist-to` storage. Each boundary is killed once; the tests
 * below check what each session does after the restart:
 * 1. mid streamed model response (`hang-stream`: two deltas sent, the model never finishes):
 *    the object parks exactly as the recovery plan says (`reconcile_model_outcome`) and the model
 *    is not called again;
 * 2. while a non_idempotent tool runs (`hang-tool`: its effect is counted, then it waits): it is
 *    never run a second time, it is surfaced for reconciliation (`reconcile_tool_outcomes`), and
 *    after an operator reconciles it over HTTP under the lease, the run finishes;
 * 3. while a permission waits: the answer (HTTP) resumes it and the tool runs once;
 * 4. while a permission waits, aborted after the restart: `activeRequestId` names the Request,
 *    the abort answers `interrupted` and `request_interrupted` (user_abort) is in the log;
 * 5. while a permission waits, steered after the restart: the input is answered at once (202) and
 *    applied, with its text, once the permission is answered;
 * 6. (`EDGE_AUTO_RECOVERY_POLICY`, which the fixture agent uses for session IDs containing `-auto-`)
 *    mid streamed model response of `hang-once`: with NO client request to that session after the
 *    restart, the object's alarm wakes it, the cut attempt is recorded (`model_request_aborted`,
 *    `process_restart`), the model is called again and the request completes;
 * 7. the chat page (`GET /`) in Chromium, mid `hang-once` answer of an `-auto-` session: nobody
 *    touches the page, it reconnects after its cursor, and shows the cut text marked as cut, the
 *    recovery note and the new answer, once;
 * 8. a durable tool call (`sleepy`, the fixture's `test-agent`: step -> sleep 3 s -> step) sleeping
 *    in the object: its alarm, persisted with its storage, resumes it by replay, and each effect
 *    (counted in the object's SQLite storage) ran once.
 * A WebSocket subscriber of sessions 1-3 and 6 reconnects after the restart with its last cursor;
 * its events before and after form the final log exactly: no gap, no duplicate. Nothing depends on
 * timing: the tests poll for states with deadlines only (6 waits for an event, the fixture's line in
 * wrangler's output, bounded well under the 30 s a watchdog interval of 30 s needed).
 *
 * On the same restarted server, the inspector page in Chromium answers an agent's pending
 * permission (Allow goes through the agent, as `POST .../permissions/:id` does), the chat page
 * reloaded in the middle of a `gated` answer (held after "one two " until the test route releases
 * it) rebuilds the conversation from the log and continues the answer, ending "one two three"
 * exactly (no gap, no repeat), and the server takes a 73 MiB body on `POST .../events`: with and
 * without a Content-Length, it answers 413, and the next request on it is served.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import WebSocket from 'ws';
import { freePort, startWranglerDev, type WranglerDev } from './wrangler-dev.js';
import { launchChromium } from '../inspector/browser.js';
import { expectCleanChatPage, openChatPage, sendChatMessage } from '../chat/page.js';

const ADMIN_TOKEN = 'e2e-admin-token-0123456789abcdef';
const VARS = { ADMIN_TOKEN, TOKEN_SECRET: 'e2e-token-secret-0123456789abcdef' };
const CONFIG = 'test/e2e/fixtures/wrangler.e2e.toml';
const AUTH = { authorization: `Bearer ${ADMIN_TOKEN}` };
/** The `sleepy` tool call's sleep (8): the kill lands inside it. */
const SLEEP_MS = 3_000;
/** What the fixture model prints when a `hang-once` session calls it again (6, 7). */
const CALLED_AGAIN = 'edge-test-agent: hang-once called again';

interface Envelope {
  sequence: number;
  type: string;
  eventId: string;
  modelAttemptId?: string;
  data: Record<string, unknown>;
}
interface Frame {
  type: string;
  event?: Envelope;
  cursor?: string;
  delta?: string;
  offset?: number;
}
interface AgentStatus {
  state: string;
  activeRequestId: string | null;
  pendingPermissions: string[];
  plan: { action: string; unknownToolAttempts?: Array<{ toolAttemptId: string; toolName: string }> } | null;
}
interface RunState {
  status: string;
  toolCalls: Array<{ status: string; result?: unknown }>;
}
interface DurabilityPage {
  records: Array<{ kind: string; key: string; status?: string }>;
}

async function api<T>(dev: WranglerDev, method: string, route: string, body?: unknown): Promise<{ status: number; body: T }> {
  const response = await fetch(`${dev.url}${route}`, {
    method,
    headers: { ...AUTH, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    signal: AbortSignal.timeout(10_000),
  });
  return { status: response.status, body: (await response.json()) as T };
}

async function poll<T>(read: () => Promise<T>, done: (value: T) => boolean, what: string, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last = await read();
  while (!done(last)) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; last: ${JSON.stringify(last).slice(0, 1500)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
    last = await read();
  }
  return last;
}

/** A WebSocket subscriber recording every frame. */
class Subscriber {
  readonly frames: Frame[] = [];
  closed = false;
  private constructor(readonly ws: WebSocket) {
    ws.on('message', (data) => {
      const text = String(data);
      if (text !== 'pong') this.frames.push(JSON.parse(text) as Frame);
    });
    ws.on('close', () => {
      this.closed = true;
    });
    ws.on('error', () => {
      this.closed = true;
    });
  }

  static async open(dev: WranglerDev, sessionId: string, after?: string): Promise<Subscriber> {
    const query = after === undefined ? '' : `?after=${encodeURIComponent(after)}`;
    const ws = new WebSocket(`${dev.url.replace('http', 'ws')}/v1/sessions/${sessionId}/subscribe${query}`, { headers: AUTH });
    const subscriber = new Subscriber(ws);
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    await subscriber.until((s) => s.frames.some((f) => f.type === 'caught_up'), 'caught_up');
    return subscriber;
  }

  get events(): Envelope[] {
    return this.frames.flatMap((frame) => (frame.type === 'event' && frame.event !== undefined ? [frame.event] : []));
  }

  get lastCursor(): string | undefined {
    return this.frames.filter((frame) => frame.type === 'event').at(-1)?.cursor;
  }

  has(type: string): boolean {
    return this.events.some((event) => event.type === type);
  }

  async until(predicate: (s: Subscriber) => boolean, what: string, timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!predicate(this)) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; frames: ${JSON.stringify(this.frames).slice(0, 1500)}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  close(): void {
    this.ws.terminate();
  }
}

async function logOf(dev: WranglerDev, sessionId: string): Promise<Envelope[]> {
  return (await api<{ events: Envelope[] }>(dev, 'GET', `/v1/sessions/${sessionId}/events?limit=1000`)).body.events;
}

async function statusOf(dev: WranglerDev, sessionId: string): Promise<AgentStatus> {
  return (await api<AgentStatus>(dev, 'GET', `/v1/sessions/${sessionId}/agent`)).body;
}

async function effectsOf(dev: WranglerDev, sessionId: string): Promise<Record<string, number>> {
  return (await api<Record<string, number>>(dev, 'GET', `/v1/sessions/${sessionId}/test/effects`)).body;
}

/** A status and what arrived of the body. */
interface Answer {
  status: number;
  body: string;
}

/**
 * Sends again when no answer of the Worker arrived: wrangler dev's own 503 for a forward that broke
 * ("Your worker restarted mid-request... Only GET or HEAD requests are retried automatically"), or
 * the connection reset before the answer was read (the server answers a large upload early and
 * closes while the client still sends). At most three sends; any other answer is returned as it is.
 */
async function throughDevProxy(send: () => Promise<Answer>): Promise<Answer> {
  for (let attempt = 1; ; attempt++) {
    let answer: Answer;
    try {
      answer = await send();
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if ((code === 'ECONNRESET' || code === 'EPIPE') && attempt < 3) continue;
      throw error;
    }
    if (answer.status !== 503 || !answer.body.includes('restarted mid-request') || attempt === 3) return answer;
  }
}

/**
 * POSTs `size` declared bytes with node:http, writing only what `write` chooses (the whole body
 * after `100 Continue`, or a part and then nothing), and resolves with the status and what arrived
 * of the answer's body, or rejects when no answer came within 30 s. The body is for a failure's
 * message only (to tell the Worker's answer from one of wrangler's dev proxy): the server closes
 * while the client still sends, so the body may be cut.
 */
function rawPost(url: string, size: number, mode: 'expect-continue' | 'partial'): Promise<Answer> {
  return new Promise<Answer>((resolve, reject) => {
    const chunk = Buffer.alloc(1024 * 1024, 0x61);
    const request = httpRequest(url, {
      method: 'POST',
      headers: {
        ...AUTH,
        'content-type': 'application/json',
        'content-length': String(size),
        ...(mode === 'expect-continue' ? { expect: '100-continue' } : {}),
      },
      timeout: 30_000,
    });
    let written = 0;
    const writeAll = (): void => {
      while (written < size) {
        const part = chunk.subarray(0, Math.min(chunk.byteLength, size - written));
        written += part.byteLength;
        if (!request.write(part)) {
          request.once('drain', writeAll);
          return;
        }
      }
      request.end();
    };
    if (mode === 'expect-continue') request.on('continue', writeAll);
    else request.write(chunk);
    request.on('response', (response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (text: string) => {
        if (body.length < 300) body += text;
      });
      const answer = (): void => {
        resolve({ status: response.statusCode ?? 0, body: body.slice(0, 300) });
        request.destroy();
      };
      response.once('end', answer);
      response.once('error', answer);
      response.once('close', answer);
    });
    request.on('timeout', () => {
      request.destroy();
      reject(new Error(`no answer within 30 s (${mode}, ${written} bytes written)`));
    });
    request.on('error', (error) => reject(error));
  });
}

function expectGapless(before: Subscriber, after: Subscriber, log: readonly Envelope[]): void {
  expect([...before.events, ...after.events].map((event) => event.sequence)).toEqual(log.map((event) => event.sequence));
}

function finalText(log: readonly Envelope[]): string {
  const completion = log.filter((event) => event.type === 'model_request_completed').at(-1);
  const content = (completion?.data['response'] as { content?: unknown } | undefined)?.content;
  return typeof content === 'string' ? content : JSON.stringify(content);
}

/**
 * After the restart: waits for the run of `key`'s session to finish, then checks the effects it
 * counted, the final answer, and that its subscriber saw the whole log once across the restart.
 */
async function expectFinished(key: 'tool' | 'permission', what: string, effects: Record<string, number>, text: string): Promise<void> {
  const { dev, sessions, before, after } = restarted();
  await after[key].until((s) => s.has('request_completed'), what);
  const log = await logOf(dev, sessions[key]);
  expect(await effectsOf(dev, sessions[key])).toEqual(effects);
  expect(finalText(log)).toBe(text);
  expectGapless(before[key], after[key], log);
}

function occurrences(text: string, needle: string): number {
  return text.split(needle).length - 1;
}

type Watched = 'stream' | 'tool' | 'permission' | 'auto';

/** What the kill left behind, set up by `beforeAll`: the restarted server and each session's state. */
interface Matrix {
  /** The restarted `wrangler dev` (same port and storage as the killed one). */
  dev: WranglerDev;
  sessions: Record<'stream' | 'tool' | 'permission' | 'abort' | 'steer' | 'auto' | 'chat' | 'sleep', string>;
  requests: Partial<Record<'stream' | 'tool' | 'permission' | 'abort' | 'steer' | 'auto', { requestId: string; inputId: string }>>;
  permissionRequestId: string;
  steerPermissionId: string;
  /** Subscribers of the killed server, closed by the kill. */
  before: Record<Watched, Subscriber>;
  /** Subscribers of the restarted server from the last cursor of `before` (none for `auto`: no request may reach it). */
  after: Record<Exclude<Watched, 'auto'>, Subscriber>;
  /** When the restarted server answered `/healthz`. */
  readyAt: number;
  /** When the restarted server had printed {@link CALLED_AGAIN} twice (sessions 6 and 7), if it has yet. */
  calledAgainAt: number | undefined;
  chatPage: Page;
  chatPageErrors: string[];
}

let dev: WranglerDev | undefined;
let browser: Browser | undefined;
let matrix: Matrix | undefined;
const subscribers: Subscriber[] = [];
const dirs: string[] = [];
let watchCalledAgain: ReturnType<typeof setInterval> | undefined;

beforeAll(async () => {
  const persistTo = mkdtempSync(path.join(tmpdir(), 'agent-ledger-edge-e2e-'));
  dirs.push(persistTo);
  // One port for both servers: the chat page keeps its origin across the restart.
  const port = await freePort();
  const stamp = Date.now().toString(36);
  const sessions: Matrix['sessions'] = {
    stream: `e2e-stream-${stamp}`,
    tool: `e2e-tool-${stamp}`,
    permission: `e2e-perm-${stamp}`,
    abort: `e2e-abort-${stamp}`,
    steer: `e2e-steer-${stamp}`,
    auto: `e2e-auto-${stamp}`,
    chat: `chat-auto-${stamp}`,
    sleep: `e2e-sleep-${stamp}`,
  };
  const inputs = { stream: 'hang-stream', tool: 'hang-tool', permission: 'permission', abort: 'permission', steer: 'permission', auto: 'hang-once' } as const;
  [dev, browser] = await Promise.all([startWranglerDev({ config: CONFIG, persistTo, vars: VARS, port }), launchChromium()]);
  const first = dev;

  const before: Matrix['before'] = {
    stream: await Subscriber.open(first, sessions.stream),
    tool: await Subscriber.open(first, sessions.tool),
    permission: await Subscriber.open(first, sessions.permission),
    auto: await Subscriber.open(first, sessions.auto),
  };
  subscribers.push(...Object.values(before));
  const requests: Matrix['requests'] = {};
  for (const key of Object.keys(inputs) as Array<keyof typeof inputs>) {
    const accepted = await api<{ status: string; created: boolean; requestId: string; inputId: string }>(first, 'POST', `/v1/sessions/${sessions[key]}/requests`, {
      commandId: `cmd-${key}`,
      input: inputs[key],
    });
    expect(accepted).toMatchObject({ status: 202, body: { created: true } });
    requests[key] = accepted.body;
  }

  // (7) The chat page sends `hang-once` and shows the first part of the answer.
  const context: BrowserContext = await browser.newContext({ viewport: { width: 1200, height: 900 } });
  // Hang guards, not timings: with both cores saturated the first page load from wrangler dev
  // took over 30 s once.
  context.setDefaultTimeout(90_000);
  context.setDefaultNavigationTimeout(90_000);
  const chatPage = await context.newPage();
  const chatPageErrors: string[] = [];
  chatPage.on('pageerror', (error) => chatPageErrors.push(error.message));
  await chatPage.goto(`${first.url}/#${sessions.chat}`);
  await chatPage.fill('#token', ADMIN_TOKEN);
  await chatPage.click('#sign-in');
  await chatPage.locator('#conn-state', { hasText: 'live' }).waitFor({ timeout: 60_000 });
  expect(await chatPage.locator('#session-title').textContent()).toBe(sessions.chat);
  await chatPage.fill('#message', 'hang-once');
  await chatPage.click('#send');
  const shown = await poll(() => chatPage.locator('li.assistant .text').allTextContents(), (texts) => texts.join('') === 'Partial ', 'the first part of the answer');
  expect(shown).toEqual(['Partial ']);

  // Every other session at its boundary.
  await before.stream.until((s) => s.frames.filter((f) => f.type === 'text_delta').length === 2, 'two deltas');
  expect(before.stream.frames.filter((f) => f.type === 'text_delta').map((f) => f.delta).join('')).toBe('Partial ');
  await before.tool.until((s) => s.has('tool_started'), 'tool_started');
  await poll(() => effectsOf(first, sessions.tool), (effects) => effects['charge'] === 1, 'the charge');
  await before.permission.until((s) => s.has('permission_requested'), 'permission_requested');
  const waiting = await poll(() => statusOf(first, sessions.permission), (s) => s.state === 'waiting_permission', 'waiting');
  await poll(() => statusOf(first, sessions.abort), (s) => s.state === 'waiting_permission', 'waiting (abort)');
  const steerWait = await poll(() => statusOf(first, sessions.steer), (s) => s.state === 'waiting_permission', 'waiting (steer)');
  await before.auto.until((s) => s.frames.filter((f) => f.type === 'text_delta').length === 2, 'two deltas (auto)');

  // (8) Last, as its sleep is short: the durable tool call, killed while it sleeps.
  const started = await api<{ status: string }>(first, 'POST', `/v1/sessions/${sessions.sleep}/runs/run-1/tool-calls`, {
    agent: 'test-agent',
    toolName: 'sleepy',
    toolCallId: 'call-1',
    input: { sleepMs: SLEEP_MS },
  });
  expect(started).toEqual({ status: 202, body: { runId: 'run-1', toolCallId: 'call-1', status: 'running' } });
  await poll(
    async () => (await api<DurabilityPage>(first, 'GET', `/v1/sessions/${sessions.sleep}/durability`)).body,
    (page) => page.records.some((record) => record.kind === 'sleep'),
    'the sleep record',
  );
  expect(await effectsOf(first, sessions.sleep)).toEqual({ first: 1 });

  // The kill: wrangler and workerd, SIGKILL, then a start on the same port and storage.
  await dev.kill('SIGKILL');
  dev = undefined;
  await Promise.all(subscribers.map((s) => s.until((x) => x.closed, 'the socket to drop', 10_000)));
  await chatPage.locator('#conn-state', { hasText: 'reconnecting' }).waitFor({ timeout: 60_000 });
  dev = await startWranglerDev({ config: CONFIG, persistTo, vars: VARS, port });
  const second = dev;
  const readyAt = Date.now();
  // No request reaches session 6 until the fixture model has been called again twice (by 6 and 7).
  watchCalledAgain = setInterval(() => {
    if (matrix !== undefined && matrix.calledAgainAt === undefined && occurrences(second.output(), CALLED_AGAIN) >= 2) matrix.calledAgainAt = Date.now();
  }, 20);
  const after: Matrix['after'] = {
    stream: await Subscriber.open(second, sessions.stream, before.stream.lastCursor),
    tool: await Subscriber.open(second, sessions.tool, before.tool.lastCursor),
    permission: await Subscriber.open(second, sessions.permission, before.permission.lastCursor),
  };
  subscribers.push(...Object.values(after));
  matrix = {
    dev: second,
    sessions,
    requests,
    permissionRequestId: waiting.pendingPermissions[0] as string,
    steerPermissionId: steerWait.pendingPermissions[0] as string,
    before,
    after,
    readyAt,
    calledAgainAt: occurrences(second.output(), CALLED_AGAIN) >= 2 ? Date.now() : undefined,
    chatPage,
    chatPageErrors,
  };
}, 300_000);

afterAll(async () => {
  clearInterval(watchCalledAgain);
  for (const subscriber of subscribers) subscriber.close();
  await browser?.close();
  await dev?.kill('SIGTERM');
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
}, 60_000);

function restarted(): Matrix {
  if (matrix === undefined) throw new Error('the kill and restart in beforeAll failed');
  return matrix;
}

describe('agent sessions in Durable Objects across one kill -9 of wrangler dev', () => {
  it('(6) EDGE_AUTO_RECOVERY_POLICY: a stream cut by the kill completes after the restart without any client request', async () => {
    const m = restarted();
    const { dev: second, before } = m;
    const sessionId = m.sessions.auto;
    // 15 s: generous for the short watchdog, and less than the 19-26 s a 30 s watchdog took after a restart.
    await poll(async () => m.calledAgainAt, (at) => at !== undefined, 'the model to be called again without a client request', 15_000 - (Date.now() - m.readyAt));
    console.log(`edge auto-recovery: the model was called again ${(m.calledAgainAt ?? 0) - m.readyAt} ms after wrangler dev was ready`);

    const after = await Subscriber.open(second, sessionId, before.auto.lastCursor);
    subscribers.push(after);
    await after.until((s) => s.has('request_completed'), 'the request to complete');
    const log = await logOf(second, sessionId);
    const starts = log.filter((e) => e.type === 'model_request_started');
    expect(starts).toHaveLength(2);
    expect(log.filter((e) => e.type === 'model_request_aborted').map((e) => [e.modelAttemptId, e.data])).toEqual([
      [starts[0]?.modelAttemptId, { reason: 'process_restart' }],
    ]);
    expect(log.filter((e) => e.type === 'request_accepted')).toHaveLength(1);
    expect(finalText(log)).toBe('Recovered answer');
    expect(await effectsOf(second, sessionId)).toEqual({ 'hang-once': 1 });
    expectGapless(before.auto, after, log);
  }, 60_000);

  it('(1) parks a cut model stream as the plan says, and does not call the model again', async () => {
    const { dev: second, sessions, before, after } = restarted();
    const parkedStream = await poll(() => statusOf(second, sessions.stream), (s) => s.state === 'needs_recovery', 'parked stream');
    expect(parkedStream.plan?.action).toBe('reconcile_model_outcome');
    const streamLog = await logOf(second, sessions.stream);
    expect(streamLog.filter((e) => e.type === 'model_request_started')).toHaveLength(1);
    expect(streamLog.map((e) => e.type)).not.toContain('model_request_completed');
    expectGapless(before.stream, after.stream, streamLog);
    expect(after.stream.frames.some((f) => f.type === 'partial_response' || f.type === 'text_delta')).toBe(false);
  }, 60_000);

  it('(2) never repeats a non_idempotent tool: surfaced, reconciled by an operator, then the run ends', async () => {
    const { dev: second, sessions } = restarted();
    const stamp = Date.now().toString(36);
    const parkedTool = await poll(() => statusOf(second, sessions.tool), (s) => s.state === 'needs_recovery', 'parked tool');
    expect(parkedTool.plan?.action).toBe('reconcile_tool_outcomes');
    const unknown = parkedTool.plan?.unknownToolAttempts ?? [];
    expect(unknown.map((tool) => tool.toolName)).toEqual(['charge']);
    expect(await effectsOf(second, sessions.tool)).toEqual({ charge: 1 });
    const lease = await api<{ leaseId: string; ownerId: string; fencingToken: number }>(second, 'POST', `/v1/sessions/${sessions.tool}/lease/acquire`, {
      ownerId: 'operator',
      leaseId: `op-${stamp}`,
      ttlMs: 60_000,
    });
    expect(lease.status).toBe(200);
    const fence = { leaseId: lease.body.leaseId, ownerId: lease.body.ownerId, fencingToken: lease.body.fencingToken };
    const reconciled = await api(second, 'POST', `/v1/sessions/${sessions.tool}/recovery/reconcile-tool-outcome`, {
      commandId: `reconcile-${stamp}`,
      toolAttemptId: unknown[0]?.toolAttemptId,
      outcome: { status: 'completed', result: { charged: 5 } },
      executionFence: fence,
    });
    expect(reconciled.status).toBe(200);
    expect((await api(second, 'POST', `/v1/sessions/${sessions.tool}/lease/release`, { fence })).status).toBe(200);
    await expectFinished('tool', 'the reconciled run to finish', { charge: 1 }, 'Done: {"charged":5}');
  }, 60_000);

  it('(3) resumes a waiting permission with the answer', async () => {
    const { dev: second, sessions, permissionRequestId } = restarted();
    const answer = await api(second, 'POST', `/v1/sessions/${sessions.permission}/permissions/${permissionRequestId}`, { decision: 'allow' });
    expect(answer).toEqual({ status: 200, body: { permissionRequestId, decision: 'allow', created: true } });
    await expectFinished('permission', 'the permitted run to finish', { approved: 1 }, 'Done: {"approved":"deploy"}');
  }, 60_000);

  it('(4) aborts a Request while the restarted instance presents its permission again', async () => {
    const { dev: second, sessions, requests } = restarted();
    const abortId = requests.abort?.requestId as string;
    const again = await poll(() => statusOf(second, sessions.abort), (s) => s.state === 'waiting_permission', 'waiting again (abort)');
    expect(again.activeRequestId).toBe(abortId);
    const aborted = await api(second, 'POST', `/v1/sessions/${sessions.abort}/requests/${abortId}/abort`, {});
    expect(aborted).toEqual({ status: 200, body: { requestId: abortId, status: 'interrupted' } });
    const abortLog = await logOf(second, sessions.abort);
    expect(abortLog.filter((e) => e.type === 'request_interrupted').map((e) => e.data)).toEqual([{ reason: 'user_abort' }]);
    expect(await effectsOf(second, sessions.abort)).toEqual({});
  }, 60_000);

  it('(5) steers a Request waiting for a permission again: answered at once, applied after the answer', async () => {
    const { dev: second, sessions, requests, steerPermissionId } = restarted();
    await poll(() => statusOf(second, sessions.steer), (s) => s.state === 'waiting_permission', 'waiting again (steer)');
    const steered = await api<{ inputId: string; requestId: string }>(second, 'POST', `/v1/sessions/${sessions.steer}/inputs`, { input: 'also mention the weather' });
    expect(steered).toMatchObject({ status: 202, body: { requestId: requests.steer?.requestId } });
    await api(second, 'POST', `/v1/sessions/${sessions.steer}/permissions/${steerPermissionId}`, { decision: 'allow' });
    const steerLog = await poll(() => logOf(second, sessions.steer), (log) => log.some((e) => e.type === 'request_completed'), 'the steered run to finish');
    const applied = steerLog.filter((e) => e.type === 'input_applied');
    expect(applied.map((e) => e.data['inputId'])).toEqual([requests.steer?.inputId, steered.body.inputId]);
    expect(applied[1]?.data['input']).toBe('also mention the weather');
  }, 60_000);

  it('(7) the chat page finishes the answer by itself after the restart and shows the recovery', async () => {
    const { chatPage: page, chatPageErrors } = restarted();
    // Nobody touches the page: it reconnects, and the object's alarm finishes the request.
    const answer = page.locator('li.assistant');
    const texts = page.locator('li.assistant .text');
    await answer.and(page.locator('.done')).waitFor({ timeout: 60_000 });
    expect(await texts.allTextContents()).toEqual(['Partial ', 'Recovered answer']);
    expect(await texts.first().getAttribute('class')).toContain('cut');
    const notes = await answer.locator('.note.recovery').allTextContents();
    expect(notes).toHaveLength(1);
    expect(notes[0]).toContain('The model call was cut (process_restart');
    expect(await page.locator('li.user').allTextContents()).toEqual(['hang-once']);
    expect(await page.locator('#conn-state').textContent()).toBe('live');
    expect(chatPageErrors).toEqual([]);
  }, 120_000);

  it('(8) completes a durable tool call that was sleeping when the dev process group was killed, each effect once', async () => {
    const { dev: second, sessions } = restarted();
    const session = sessions.sleep;
    const state = await poll(
      async () => (await api<RunState>(second, 'GET', `/v1/sessions/${session}/runs/run-1`)).body,
      (run) => run.status !== 'running',
      'the run to finish after the restart',
    );
    expect(state.status).toBe('completed');
    expect(state.toolCalls[0]?.result).toEqual({ first: { at: 'first' }, second: { at: 'second' } });
    expect(await effectsOf(second, session)).toEqual({ first: 1, second: 1 });
    const records = (await api<DurabilityPage>(second, 'GET', `/v1/sessions/${session}/durability`)).body.records;
    expect(records.map((r) => `${r.kind}:${r.key}`)).toEqual(['step:first', 'sleep:nap', 'run_event:sleep-elapsed-2', 'step:second', 'run_event:run']);
  }, 60_000);

  it('lets the inspector page in Chromium allow a pending permission of the agent, which then finishes the run', async () => {
    const { dev: server, chatPage } = restarted();
    const sessionId = `e2e-inspect-${Date.now().toString(36)}`;
    await api(server, 'POST', `/v1/sessions/${sessionId}/requests`, { commandId: 'cmd-inspect', input: 'permission' });
    await poll(() => statusOf(server, sessionId), (s) => s.state === 'waiting_permission', 'waiting (inspector)');
    // A page of the chat page's context: in this single-process Chromium the pages of a second
    // context sent no cookie with their fetch() calls (the action answered 401).
    const page = await chatPage.context().newPage();
    const pageUrl = `${server.url}/v1/sessions/${sessionId}/inspect`;
    await page.goto(pageUrl);
    await page.fill('#token', ADMIN_TOKEN);
    await Promise.all([page.waitForURL(pageUrl), page.click('#sign-in')]);
    await page.locator('.plan-item[data-kind="permission"] button.allow').click({ timeout: 20_000 });
    const status = page.locator('#action-status');
    await page.locator('#action-status.ok, #action-status.error').waitFor({ timeout: 20_000 }).catch(async (error: unknown) => {
      throw new Error(`no answer to the action; status "${await status.textContent()}"`, { cause: error });
    });
    expect(await status.textContent()).toContain('resolve-permission: allow');
    await poll(() => logOf(server, sessionId), (log) => log.some((e) => e.type === 'request_completed'), 'the allowed run to finish');
    expect(await effectsOf(server, sessionId)).toEqual({ approved: 1 });
  }, 120_000);

  it('the chat page reloaded mid-answer continues the answer with no gap and no repeat', async () => {
    const { dev: server } = restarted();
    if (browser === undefined) throw new Error('no browser');
    // A session of its own: at `/` alone the page would open the latest one of the token (session 7).
    const sessionId = `chat-reload-${Date.now().toString(36)}`;
    const watched = await openChatPage(await browser.newContext({ viewport: { width: 1200, height: 900 } }), server.url, ADMIN_TOKEN, sessionId);
    const { page } = watched;
    expect(await page.locator('#session-title').textContent()).toBe(sessionId);
    await sendChatMessage(page, 'gated');
    const text = page.locator('li.assistant .text');
    await expect.poll(() => text.allTextContents(), { timeout: 30_000 }).toEqual(['one two ']);

    await page.reload();
    await page.locator('#conn-state', { hasText: 'live' }).waitFor({ timeout: 20_000 });
    await expect.poll(() => text.allTextContents(), { timeout: 30_000 }).toEqual(['one two ']);
    expect(await page.locator('li.user').allTextContents()).toEqual(['gated']);
    expect(await page.locator('li.assistant.running').count()).toBe(1);

    expect((await api(server, 'POST', `/v1/sessions/${sessionId}/test/release-model`)).status).toBe(200);
    await page.locator('li.assistant.done').waitFor({ timeout: 30_000 });
    expect(await text.allTextContents()).toEqual(['one two three']);
    expect(await page.locator('li.user').count()).toBe(1);
    expectCleanChatPage(watched, server.url, ADMIN_TOKEN);
  }, 120_000);

  it('answers 413 to a 73 MiB append, with and without a Content-Length, and serves the next request', async () => {
    const { dev: server } = restarted();
    const size = 73 * 1024 * 1024;
    const head = new TextEncoder().encode('{"events":[{"type":"custom","data":{"s":"');
    const chunk = new Uint8Array(1024 * 1024).fill(0x61);
    const route = `${server.url}/v1/sessions/e2e-413/events`;
    const headers = { ...AUTH, 'content-type': 'application/json' };
    // No answer within 30 s fails the test (the client would otherwise wait for ever).
    const declared = new Uint8Array(size);
    declared.set(head);
    declared.fill(0x61, head.byteLength);
    const post = async (init: RequestInit): Promise<Answer> => {
      const response = await fetch(route, { method: 'POST', headers, signal: AbortSignal.timeout(30_000), ...init });
      return { status: response.status, body: await response.text() };
    };
    const withLength = await throughDevProxy(() => post({ body: declared }));
    expect(withLength.status, withLength.body).toBe(413);
    expect(JSON.parse(withLength.body)).toMatchObject({ code: 'DURABLE_EVENT_LIMIT_EXCEEDED', details: { actual: size } });

    const streamed = (): ReadableStream<Uint8Array> => {
      let sent = 0;
      return new ReadableStream<Uint8Array>({
        pull(controller) {
          if (sent === 0) controller.enqueue(head);
          if (sent >= size) {
            controller.close();
            return;
          }
          sent += chunk.byteLength;
          controller.enqueue(chunk);
        },
      });
    };
    const chunked = await throughDevProxy(() => post({ body: streamed(), duplex: 'half' } as RequestInit));
    expect(chunked.status, chunked.body).toBe(413);
    expect(JSON.parse(chunked.body)).toMatchObject({ code: 'DURABLE_EVENT_LIMIT_EXCEEDED' });

    // A client that waits for `100 Continue` before it sends: the body must be asked for.
    const continued = await throughDevProxy(() => rawPost(route, size, 'expect-continue'));
    expect(continued.status, continued.body).toBe(413);
    // A client that declares far more than it sends (an endless upload): answered without waiting for the rest.
    const partial = await throughDevProxy(() => rawPost(route, 1024 * 1024 * 1024, 'partial'));
    expect(partial.status, partial.body).toBe(413);

    const next = await api<{ events: unknown[] }>(server, 'GET', '/v1/sessions/e2e-413/events');
    expect(next).toMatchObject({ status: 200, body: { events: [] } });
  }, 120_000);
});
