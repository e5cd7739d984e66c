/**
 * What each side does after `kill -9` mid-answer: `node --import tsx bench/peer-agent/kill-mid-answer.ts`.
 *
 * Not a benchmark (it prints what happened, nothing is timed against a target). One workerd with
 * the Worker of `bench/peer-agent/worker.ts` (`runtime.ts`): ours (the ledger's SessionObject,
 * `EDGE_AUTO_RECOVERY_POLICY`) and the peer (`AIChatAgent`, its default `chatRecovery`) each get
 * a turn whose first model call streams slowly (`[slow]`: 100 ms per delta). Once each client has
 * received 3 deltas, the workerd process is killed with SIGKILL, and a new one is started on the
 * same Durable Object storage. Then, with no client connected for `KILL_WAIT_MS` (default 35 s, past the peer's 30 s keep-alive alarm):
 * which side's model is called again, and when (`GET /bench/model-calls`, served by the Worker
 * without waking an object). After that: ours' event log (`GET .../events`) and the peer's stored
 * messages (`GET /agents/peer-chat-agent/:name/get-messages`), then each client reconnecting as its
 * browser client does (ours: `AgentSessionClient.stream()` from the start; the peer: WebSocket, the
 * stream-resume probe and its acknowledgement), what it is given, and the model calls in another
 * `KILL_WAIT_MS`.
 */
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import WebSocket from 'ws';
import { AgentSessionClient, type AgentStreamItem } from '../../src/agent-client/index.js';
import { PEER_BENCH_ADMIN as ADMIN, bundlePeerWorker, startPeerRuntime, type PeerRuntime } from './runtime.js';

const WAIT_MS = Number(process.env['KILL_WAIT_MS'] ?? '35000');
const TEXT = '[slow] Please look up alpha.';

interface ModelCall {
  side: 'ours' | 'peer';
  afterTool: boolean;
  at: number;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

async function until(check: () => boolean, what: string, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

/** The workerd processes this process started (Miniflare spawns workerd as a direct child). */
function workerdChildren(): number[] {
  const out = execFileSync('ps', ['-o', 'pid=,comm=', '--ppid', String(process.pid)], { encoding: 'utf8' });
  return out
    .split('\n')
    .map((line) => line.trim().split(/\s+/))
    .filter(([, comm]) => comm === 'workerd')
    .map(([pid]) => Number(pid));
}

const dir = mkdtempSync(path.join(os.tmpdir(), 'peer-agent-kill-'));
const persist = path.join(dir, 'do');
const bundle = bundlePeerWorker(dir, 7);
let runtime: PeerRuntime = await startPeerRuntime(bundle, persist);
const sessionId = `ours-${randomUUID()}`;
const peerName = `peer-${randomUUID()}`;

try {
  // Ours: subscribed, then the request.
  const ours = new AgentSessionClient({ baseUrl: runtime.url, sessionId, token: ADMIN, reconnectDelayMs: () => 60_000 });
  const oursStream = ours.stream({ after: null });
  let oursDeltas = 0;
  let oursCaughtUp = false;
  const oursPump = (async () => {
    for await (const item of oursStream) {
      if (item.type === 'caught_up') oursCaughtUp = true;
      if (item.type === 'text_delta') oursDeltas++;
    }
  })().catch(() => undefined);
  await until(() => oursCaughtUp, 'ours: caught_up');
  await ours.send(TEXT);

  // Peer: connected, resume probe answered, then the chat request.
  const peerSocket = new WebSocket(`${runtime.url.href.replace(/^http/, 'ws')}agents/peer-chat-agent/${peerName}`);
  peerSocket.on('error', () => undefined);
  let peerDeltas = 0;
  let peerIdle = false;
  peerSocket.on('message', (data: WebSocket.RawData) => {
    const frame = JSON.parse(String(data)) as { type?: string; body?: string };
    if (frame.type === 'cf_agent_stream_resume_none') peerIdle = true;
    if (frame.type === 'cf_agent_use_chat_response' && frame.body?.includes('"type":"text-delta"') === true) peerDeltas++;
  });
  await new Promise<void>((resolve, reject) => {
    peerSocket.once('open', () => resolve());
    peerSocket.once('error', reject);
  });
  peerSocket.send(JSON.stringify({ type: 'cf_agent_stream_resume_request', probeId: 'probe-1' }));
  await until(() => peerIdle, 'peer: resume probe');
  const userMessage = { id: randomUUID(), role: 'user', parts: [{ type: 'text', text: TEXT }] };
  peerSocket.send(
    JSON.stringify({
      id: 'req-1',
      init: { method: 'POST', body: JSON.stringify({ messages: [userMessage], trigger: 'submit-message' }) },
      type: 'cf_agent_use_chat_request',
    }),
  );

  await until(() => oursDeltas >= 3 && peerDeltas >= 3, 'three deltas on each side');
  const pids = workerdChildren();
  if (pids.length === 0) throw new Error('no workerd child process found');
  for (const pid of pids) process.kill(pid, 'SIGKILL');
  console.log(`killed workerd (pid ${pids.join(', ')}) with SIGKILL; deltas received before: ours ${oursDeltas}, peer ${peerDeltas}`);
  oursStream.close();
  peerSocket.terminate();
  await oursPump;
  await runtime.mf.dispose().catch(() => undefined);

  runtime = await startPeerRuntime(bundle, persist);
  const restartedAt = Date.now();
  console.log(`new workerd on the same storage; no client connected for ${WAIT_MS} ms`);
  const seen = new Set<string>();
  const watchModelCalls = async (ms: number): Promise<void> => {
    const until = Date.now() + ms;
    while (Date.now() < until) {
      const calls = (await (await fetch(new URL('/bench/model-calls', runtime.url))).json()) as ModelCall[];
      for (const call of calls) {
        const key = `${call.side}-${call.at}-${call.afterTool}`;
        if (seen.has(key)) continue;
        seen.add(key);
        console.log(
          `  ${call.side}: model called ${((call.at - restartedAt) / 1000).toFixed(1)} s after the restart (${call.afterTool ? 'after the tool result' : 'first call of the turn'})`,
        );
      }
      await sleep(250);
    }
  };
  await watchModelCalls(WAIT_MS);
  if (![...seen].some((key) => key.startsWith('ours-'))) console.log('  ours: no model call');
  if (![...seen].some((key) => key.startsWith('peer-'))) console.log('  peer: no model call');

  // What each side has stored now.
  const events = (await (
    await fetch(new URL(`/v1/sessions/${sessionId}/events?limit=1000`, runtime.url), { headers: { authorization: `Bearer ${ADMIN}` } })
  ).json()) as { events: Array<{ type: string; data?: { reason?: string } }> };
  console.log(`ours, event log: ${events.events.map((event) => (event.data?.reason === undefined ? event.type : `${event.type}(${event.data.reason})`)).join(', ')}`);
  const status = (await (
    await fetch(new URL(`/v1/sessions/${sessionId}/agent`, runtime.url), { headers: { authorization: `Bearer ${ADMIN}` } })
  ).json()) as { state: string };
  console.log(`ours, agent state: ${status.state}`);
  const stored = await fetch(new URL(`/agents/peer-chat-agent/${peerName}/get-messages`, runtime.url));
  const storedText = await stored.text();
  if (!stored.ok) {
    console.log(`peer, stored messages: HTTP ${stored.status} ${storedText.slice(0, 300)}`);
  } else {
    const messages = JSON.parse(storedText) as Array<{ role: string; parts: Array<{ type: string; text?: string; state?: string }> }>;
    for (const message of messages) {
      const parts = message.parts.map((part) =>
        part.type === 'text'
          ? `text(${(part.text ?? '').split(' ').filter(Boolean).length} words)`
          : part.state === undefined
            ? part.type
            : `${part.type}(${part.state})`,
      );
      console.log(`peer, stored ${message.role} message: ${parts.join(', ')}`);
    }
  }

  // The clients reconnecting.
  const again = new AgentSessionClient({ baseUrl: runtime.url, sessionId, token: ADMIN });
  const replay = again.stream({ after: null });
  const replayed: string[] = [];
  for await (const item of replay as AsyncIterable<AgentStreamItem>) {
    if (item.type === 'caught_up') break;
    if (item.type === 'event') replayed.push(item.event.type);
  }
  replay.close();
  console.log(`ours, a client reconnecting from the start: ${replayed.length} events, the last ${replayed.at(-1) ?? 'none'}`);
  const socket = new WebSocket(`${runtime.url.href.replace(/^http/, 'ws')}agents/peer-chat-agent/${peerName}`);
  const frames: string[] = [];
  let resumedDeltas = 0;
  let acked = false;
  socket.on('message', (data: WebSocket.RawData) => {
    const frame = JSON.parse(String(data)) as { type?: string; id?: string; messages?: unknown[]; reason?: string; body?: string; done?: boolean };
    if (frame.type === 'cf_agent_use_chat_response') {
      if (frame.body?.includes('"type":"text-delta"') === true) resumedDeltas++;
      if (frame.done === true) frames.push(`cf_agent_use_chat_response(done, ${resumedDeltas} text deltas)`);
      return;
    }
    frames.push(
      frame.type === 'cf_agent_chat_messages'
        ? `${frame.type}(${frame.messages?.length ?? 0} messages)`
        : frame.reason === undefined
          ? String(frame.type)
          : `${frame.type}(${frame.reason})`,
    );
    // As the browser client does: acknowledge the offered resume to get the stream's chunks.
    if (frame.type === 'cf_agent_stream_resuming' && frame.id !== undefined && !acked) {
      acked = true;
      socket.send(JSON.stringify({ type: 'cf_agent_stream_resume_ack', id: frame.id }));
    }
  });
  await new Promise<void>((resolve) => socket.once('open', () => resolve()));
  socket.send(JSON.stringify({ type: 'cf_agent_stream_resume_request', probeId: 'probe-2' }));
  console.log(`peer, a client reconnects and acknowledges the resume; watching ${WAIT_MS} ms more`);
  await watchModelCalls(WAIT_MS);
  socket.close();
  console.log(`peer, what the reconnected client got: ${frames.join(', ')}`);
  const after = await fetch(new URL(`/agents/peer-chat-agent/${peerName}/get-messages`, runtime.url));
  const afterText = await after.text();
  if (!after.ok) {
    console.log(`peer, stored messages after: HTTP ${after.status} ${afterText.slice(0, 300)}`);
  } else {
    for (const message of JSON.parse(afterText) as Array<{ role: string; parts: Array<{ type: string; text?: string; state?: string }> }>) {
      const parts = message.parts.map((part) =>
        part.type === 'text'
          ? `text(${(part.text ?? '').split(' ').filter(Boolean).length} words)`
          : part.state === undefined
            ? part.type
            : `${part.type}(${part.state})`,
      );
      console.log(`peer, stored ${message.role} message after: ${parts.join(', ')}`);
    }
  }
} finally {
  await runtime.mf.dispose().catch(() => undefined);
  rmSync(dir, { recursive: true, force: true });
}
