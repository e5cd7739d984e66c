/**
 * End to end under `wrangler dev`: agent Sessions running inside their Durable Objects survive a
 * kill of the whole dev process group (SIGKILL) and a restart on the same `--persist-to` storage.
 *
 * Three sessions run the fixture's edge test agent (test/workers/fixtures/edge-test-agent.ts),
 * each stopped at a different point when the group is killed:
 * 1. mid streamed model response (`hang-stream`: two deltas sent, the model never finishes):
 *    after the restart the object parks exactly as the recovery plan says
 *    (`reconcile_model_outcome`) and the model is not called again;
 * 2. while a non_idempotent tool runs (`hang-tool`: its effect is counted, then it waits): it is
 *    never run a second time, it is surfaced for reconciliation (`reconcile_tool_outcomes`), and
 *    after an operator reconciles it over HTTP under the lease, the run finishes;
 * 3. while a permission waits: the answer (HTTP) resumes it and the tool runs once;
 * 4. while a permission waits, aborted after the restart: `activeRequestId` names the Request,
 *    the abort answers `interrupted` and `request_interrupted` (user_abort) is in the log;
 * 5. while a permission waits, steered after the restart: the input is answered at once (202) and
 *    applied, with its text, once the permission is answered.
 * A WebSocket subscriber of each session reconnects after the restart with its last cursor; its
 * events before and after form the final log exactly: no gap, no duplicate. Nothing depends on
 * timing: the test polls for states with deadlines only.
 *
 * 6. (`EDGE_AUTO_RECOVERY_POLICY`, which the fixture agent uses for session IDs containing `-auto-`)
 *    mid streamed model response of `hang-once`, killed again: after the restart, with NO client
 *    request, the object's alarm wakes it, the cut attempt is recorded (`model_request_aborted`,
 *    `process_restart`), the model is called again and the request completes; the wait is an
 *    event wait (the fixture's line in wrangler's output) bounded well under the 30 s a watchdog
 *    interval of 30 s needed.
 *
 * On the same restarted server, the inspector page in Chromium answers an agent's pending
 * permission (Allow goes through the agent, as `POST .../permissions/:id` does), and it takes a 73 MiB body on `POST .../events`: with and without a
 * Content-Length, it answers 413, and the next request on it is served.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { startWranglerDev, type WranglerDev } from './wrangler-dev.js';
import { launchChromium } from '../inspector/browser.js';

const ADMIN_TOKEN = 'e2e-admin-token-0123456789abcdef';
const VARS = { ADMIN_TOKEN, TOKEN_SECRET: 'e2e-token-secret-0123456789abcdef' };
const CONFIG = 'test/e2e/fixtures/wrangler.e2e.toml';
const AUTH = { authorization: `Bearer ${ADMIN_TOKEN}` };

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

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

/** The server of this file: started (and restarted) by the first test, used by the next, killed after all. */
let dev: WranglerDev | undefined;
/** The `--persist-to` directory of {@link dev}. */
let devStorage: string | undefined;
afterAll(async () => {
  await dev?.kill('SIGTERM');
});

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

/**
 * POSTs `size` declared bytes with node:http, writing only what `write` chooses (the whole body
 * after `100 Continue`, or a part and then nothing), and resolves with the status, or rejects when
 * no answer came within 30 s.
 */
function rawPost(url: string, size: number, mode: 'expect-continue' | 'partial'): Promise<number> {
  return new Promise<number>((resolve, reject) => {
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
      response.resume();
      resolve(response.statusCode ?? 0);
      request.destroy();
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

describe('agent sessions in Durable Objects across a kill of wrangler dev', () => {
  it('parks a cut model stream, never repeats a non_idempotent tool, and resumes a waiting permission', async () => {
    const persistTo = mkdtempSync(path.join(tmpdir(), 'agent-ledger-edge-e2e-'));
    dirs.push(persistTo);
    const stamp = Date.now().toString(36);
    const sessions = {
      stream: `e2e-stream-${stamp}`,
      tool: `e2e-tool-${stamp}`,
      permission: `e2e-perm-${stamp}`,
      abort: `e2e-abort-${stamp}`,
      steer: `e2e-steer-${stamp}`,
    };
    const inputs = { stream: 'hang-stream', tool: 'hang-tool', permission: 'permission', abort: 'permission', steer: 'permission' } as const;
    dev = await startWranglerDev({ config: CONFIG, persistTo, vars: VARS });
    devStorage = persistTo;
    const subscribers: Subscriber[] = [];
    try {
      const first = dev;
      const before: Record<'stream' | 'tool' | 'permission', Subscriber> = {
        stream: await Subscriber.open(first, sessions.stream),
        tool: await Subscriber.open(first, sessions.tool),
        permission: await Subscriber.open(first, sessions.permission),
      };
      subscribers.push(...Object.values(before));
      const requests: Partial<Record<keyof typeof sessions, { requestId: string; inputId: string }>> = {};
      for (const key of Object.keys(sessions) as Array<keyof typeof sessions>) {
        const accepted = await api<{ status: string; created: boolean; requestId: string; inputId: string }>(first, 'POST', `/v1/sessions/${sessions[key]}/requests`, {
          commandId: `cmd-${key}`,
          input: inputs[key],
        });
        expect(accepted).toMatchObject({ status: 202, body: { created: true } });
        requests[key] = accepted.body;
      }
      await before.stream.until((s) => s.frames.filter((f) => f.type === 'text_delta').length === 2, 'two deltas');
      expect(before.stream.frames.filter((f) => f.type === 'text_delta').map((f) => f.delta).join('')).toBe('Partial ');
      await before.tool.until((s) => s.has('tool_started'), 'tool_started');
      await poll(() => effectsOf(first, sessions.tool), (effects) => effects['charge'] === 1, 'the charge');
      await before.permission.until((s) => s.has('permission_requested'), 'permission_requested');
      const waiting = await poll(() => statusOf(first, sessions.permission), (s) => s.state === 'waiting_permission', 'waiting');
      const permissionRequestId = waiting.pendingPermissions[0] as string;
      await poll(() => statusOf(first, sessions.abort), (s) => s.state === 'waiting_permission', 'waiting (abort)');
      const steerWait = await poll(() => statusOf(first, sessions.steer), (s) => s.state === 'waiting_permission', 'waiting (steer)');
      const steerPermissionId = steerWait.pendingPermissions[0] as string;

      await dev.kill('SIGKILL');
      dev = undefined;
      await Promise.all(subscribers.map((s) => s.until((x) => x.closed, 'the socket to drop', 10_000)));
      dev = await startWranglerDev({ config: CONFIG, persistTo, vars: VARS });
      const second = dev;
      const after: Record<'stream' | 'tool' | 'permission', Subscriber> = {
        stream: await Subscriber.open(second, sessions.stream, before.stream.lastCursor),
        tool: await Subscriber.open(second, sessions.tool, before.tool.lastCursor),
        permission: await Subscriber.open(second, sessions.permission, before.permission.lastCursor),
      };
      subscribers.push(...Object.values(after));

      // (1) The cut stream parks as the plan says; the model is not called again.
      const parkedStream = await poll(() => statusOf(second, sessions.stream), (s) => s.state === 'needs_recovery', 'parked stream');
      expect(parkedStream.plan?.action).toBe('reconcile_model_outcome');
      const streamLog = await logOf(second, sessions.stream);
      expect(streamLog.filter((e) => e.type === 'model_request_started')).toHaveLength(1);
      expect(streamLog.map((e) => e.type)).not.toContain('model_request_completed');
      expectGapless(before.stream, after.stream, streamLog);
      expect(after.stream.frames.some((f) => f.type === 'partial_response' || f.type === 'text_delta')).toBe(false);

      // (2) The non_idempotent tool: surfaced, never repeated; reconciled by an operator, then the run ends.
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
      await after.tool.until((s) => s.has('request_completed'), 'the reconciled run to finish');
      const toolLog = await logOf(second, sessions.tool);
      expect(await effectsOf(second, sessions.tool)).toEqual({ charge: 1 });
      expect(finalText(toolLog)).toBe('Done: {"charged":5}');
      expectGapless(before.tool, after.tool, toolLog);

      // (3) The permission: the answer resumes the run.
      const answer = await api(second, 'POST', `/v1/sessions/${sessions.permission}/permissions/${permissionRequestId}`, { decision: 'allow' });
      expect(answer).toEqual({ status: 200, body: { permissionRequestId, decision: 'allow', created: true } });
      await after.permission.until((s) => s.has('request_completed'), 'the permitted run to finish');
      const permissionLog = await logOf(second, sessions.permission);
      expect(await effectsOf(second, sessions.permission)).toEqual({ approved: 1 });
      expect(finalText(permissionLog)).toBe('Done: {"approved":"deploy"}');
      expectGapless(before.permission, after.permission, permissionLog);

      // (4) Aborted while the restarted instance presents the permission again.
      const abortId = requests.abort?.requestId as string;
      const again = await poll(() => statusOf(second, sessions.abort), (s) => s.state === 'waiting_permission', 'waiting again (abort)');
      expect(again.activeRequestId).toBe(abortId);
      const aborted = await api(second, 'POST', `/v1/sessions/${sessions.abort}/requests/${abortId}/abort`, {});
      expect(aborted).toEqual({ status: 200, body: { requestId: abortId, status: 'interrupted' } });
      const abortLog = await logOf(second, sessions.abort);
      expect(abortLog.filter((e) => e.type === 'request_interrupted').map((e) => e.data)).toEqual([{ reason: 'user_abort' }]);
      expect(await effectsOf(second, sessions.abort)).toEqual({});

      // (5) Steered while the restarted instance presents the permission again: answered at once, applied after the answer.
      await poll(() => statusOf(second, sessions.steer), (s) => s.state === 'waiting_permission', 'waiting again (steer)');
      const steered = await api<{ inputId: string; requestId: string }>(second, 'POST', `/v1/sessions/${sessions.steer}/inputs`, { input: 'also mention the weather' });
      expect(steered).toMatchObject({ status: 202, body: { requestId: requests.steer?.requestId } });
      await api(second, 'POST', `/v1/sessions/${sessions.steer}/permissions/${steerPermissionId}`, { decision: 'allow' });
      const steerLog = await poll(() => logOf(second, sessions.steer), (log) => log.some((e) => e.type === 'request_completed'), 'the steered run to finish');
      const applied = steerLog.filter((e) => e.type === 'input_applied');
      expect(applied.map((e) => e.data['inputId'])).toEqual([requests.steer?.inputId, steered.body.inputId]);
      expect(applied[1]?.data['input']).toBe('also mention the weather');
    } finally {
      for (const subscriber of subscribers) subscriber.close();
    }
  }, 300_000);

  it('(6) EDGE_AUTO_RECOVERY_POLICY: a stream cut by the kill completes after the restart without any client request', async () => {
    if (dev === undefined || devStorage === undefined) {
      devStorage = mkdtempSync(path.join(tmpdir(), 'agent-ledger-edge-e2e-'));
      dirs.push(devStorage);
      dev = await startWranglerDev({ config: CONFIG, persistTo: devStorage, vars: VARS });
    }
    const sessionId = `e2e-auto-${Date.now().toString(36)}`;
    const first = dev;
    const before = await Subscriber.open(first, sessionId);
    const subscribers = [before];
    try {
      const accepted = await api<{ requestId: string }>(first, 'POST', `/v1/sessions/${sessionId}/requests`, { commandId: 'cmd-auto', input: 'hang-once' });
      expect(accepted.status).toBe(202);
      await before.until((s) => s.frames.filter((f) => f.type === 'text_delta').length === 2, 'two deltas');

      await dev.kill('SIGKILL');
      dev = undefined;
      await before.until((s) => s.closed, 'the socket to drop', 10_000);
      dev = await startWranglerDev({ config: CONFIG, persistTo: devStorage, vars: VARS });
      const second = dev;
      const ready = Date.now();
      // No request reaches the object now: only its alarm can wake it. The fixture model prints
      // this line when it is called again. 15 s: generous for the short watchdog, and less than
      // the 19-26 s a 30 s watchdog took after a restart.
      const marker = 'edge-test-agent: hang-once called again';
      await poll(async () => second.output(), (output) => output.includes(marker), 'the model to be called again without a client request', 15_000);
      console.log(`edge auto-recovery: the model was called again ${Date.now() - ready} ms after wrangler dev was ready`);

      const after = await Subscriber.open(second, sessionId, before.lastCursor);
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
      expectGapless(before, after, log);
    } finally {
      for (const subscriber of subscribers) subscriber.close();
    }
  }, 180_000);

  it('lets the inspector page in Chromium allow a pending permission of the agent, which then finishes the run', async () => {
    if (dev === undefined) {
      const persistTo = mkdtempSync(path.join(tmpdir(), 'agent-ledger-edge-e2e-'));
      dirs.push(persistTo);
      dev = await startWranglerDev({ config: CONFIG, persistTo, vars: VARS });
    }
    const server = dev;
    const sessionId = `e2e-inspect-${Date.now().toString(36)}`;
    await api(server, 'POST', `/v1/sessions/${sessionId}/requests`, { commandId: 'cmd-inspect', input: 'permission' });
    await poll(() => statusOf(server, sessionId), (s) => s.state === 'waiting_permission', 'waiting (inspector)');
    const browser = await launchChromium();
    try {
      const page = await browser.newPage();
      const pageUrl = `${server.url}/v1/sessions/${sessionId}/inspect`;
      await page.goto(pageUrl);
      await page.fill('#token', ADMIN_TOKEN);
      await Promise.all([page.waitForURL(pageUrl), page.click('#sign-in')]);
      await page.locator('.plan-item[data-kind="permission"] button.allow').click({ timeout: 20_000 });
      await page.locator('#action-status.ok').waitFor({ timeout: 20_000 });
      expect(await page.locator('#action-status').textContent()).toContain('resolve-permission: allow');
    } finally {
      await browser.close();
    }
    await poll(() => logOf(server, sessionId), (log) => log.some((e) => e.type === 'request_completed'), 'the allowed run to finish');
    expect(await effectsOf(server, sessionId)).toEqual({ approved: 1 });
  }, 120_000);

  it('answers 413 to a 73 MiB append, with and without a Content-Length, and serves the next request', async () => {
    if (dev === undefined) {
      const persistTo = mkdtempSync(path.join(tmpdir(), 'agent-ledger-edge-e2e-'));
      dirs.push(persistTo);
      dev = await startWranglerDev({ config: CONFIG, persistTo, vars: VARS });
    }
    const server = dev;
    const size = 73 * 1024 * 1024;
    const head = new TextEncoder().encode('{"events":[{"type":"custom","data":{"s":"');
    const chunk = new Uint8Array(1024 * 1024).fill(0x61);
    const route = `${server.url}/v1/sessions/e2e-413/events`;
    const headers = { ...AUTH, 'content-type': 'application/json' };
    // No answer within 30 s fails the test (the client would otherwise wait for ever).
    const declared = new Uint8Array(size);
    declared.set(head);
    declared.fill(0x61, head.byteLength);
    const withLength = await fetch(route, { method: 'POST', headers, body: declared, signal: AbortSignal.timeout(30_000) });
    expect(withLength.status).toBe(413);
    expect(await withLength.json()).toMatchObject({ code: 'DURABLE_EVENT_LIMIT_EXCEEDED', details: { actual: size } });

    let sent = 0;
    const streamed = new ReadableStream<Uint8Array>({
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
    const chunked = await fetch(route, { method: 'POST', headers, body: streamed, duplex: 'half', signal: AbortSignal.timeout(30_000) } as RequestInit);
    expect(chunked.status).toBe(413);
    expect(await chunked.json()).toMatchObject({ code: 'DURABLE_EVENT_LIMIT_EXCEEDED' });

    // A client that waits for `100 Continue` before it sends: the body must be asked for.
    expect(await rawPost(route, size, 'expect-continue')).toBe(413);
    // A client that declares far more than it sends (an endless upload): answered without waiting for the rest.
    expect(await rawPost(route, 1024 * 1024 * 1024, 'partial')).toBe(413);

    const next = await api<{ events: unknown[] }>(server, 'GET', '/v1/sessions/e2e-413/events');
    expect(next).toMatchObject({ status: 200, body: { events: [] } });
  }, 120_000);
});
