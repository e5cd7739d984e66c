/**
 * Side by side with the peer: `node --import tsx bench/peer-agent.bench.ts` (or `npm run bench -- bench peer-agent`).
 *
 * Bundles `bench/peer-agent/worker.ts` with wrangler (`deploy --dry-run`; `bench/peer-agent/runtime.ts`) and runs it on one local workerd through Miniflare (loopback only, SQLite
 * storage on disk, `CLOUDFLARE_CF_FETCH_ENABLED=false`): the ledger's SessionObject with an agent
 * mounted ("ours") and Cloudflare's `AIChatAgent` of `@cloudflare/ai-chat` ("peer"), in the same
 * Worker script. Both run the same turn: the same hand-written model (20 text deltas and a call of
 * the pure `lookup` tool, then 40 text deltas and a stop; no network, no delay) and the same tool.
 *
 * Each side is driven from this process as its own browser client drives it:
 * - ours: `AgentSessionClient` (`src/agent-client`): `stream()` (`GET .../subscribe?frames=all`,
 *   Server-Sent Events over a streamed fetch) opened once per conversation, then per turn `send()`
 *   (`POST .../requests`); first delta = the first `text_delta` frame, finished = the
 *   `request_completed` event frame.
 * - peer: its WebSocket chat protocol as `useAgentChat` speaks it (`ws` client): connect to
 *   `/agents/peer-chat-agent/:name`, the stream-resume probe, then per turn one
 *   `cf_agent_use_chat_request` carrying the whole conversation (the client keeps it: the
 *   assistant message is rebuilt from the turn's chunks with `readUIMessageStream`, after the turn
 *   is timed); first delta = the first `cf_agent_use_chat_response` whose chunk is a `text-delta`,
 *   finished = the one with `done: true`.
 * Timed from just before the client sends the turn. Every conversation is fresh on both sides;
 * its first turn (the object's first turn, lazy setup included) is reported apart, as
 * information; the later turns of the conversation are the measured ones. Turns alternate between
 * the sides (which goes first alternates too). Targets (ours / peer, p50): first delta <= 0.7x,
 * finished turn <= 0.7x; p90 ratios are printed for information.
 *
 * `PEER_BENCH_CONVERSATIONS` (default 40) conversations per side, `PEER_BENCH_TURNS` (default 4)
 * turns each; `PEER_AI=6` bundles the peer (and the model, as `LanguageModelV3`) against `ai` 6
 * (the `ai-v6` alias) instead of the repository's `ai` 7; `PEER_BENCH_DEFLATE=0`: the peer's socket
 * without permessage-deflate (on by default, as a browser offers it and workerd accepts it).
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { readUIMessageStream, type UIMessage, type UIMessageChunk } from 'ai';
import WebSocket from 'ws';
import { AgentSessionClient, type AgentStreamItem } from '../src/agent-client/index.js';
import { PEER_BENCH_ADMIN as ADMIN, bundlePeerWorker, startPeerRuntime } from './peer-agent/runtime.js';

const CONVERSATIONS = Number(process.env['PEER_BENCH_CONVERSATIONS'] ?? '40');
const TURNS = Number(process.env['PEER_BENCH_TURNS'] ?? '4');
const WARMUP_CONVERSATIONS = 3;
const PEER_AI = process.env['PEER_AI'] === '6' ? 6 : 7;
/** The peer's socket offers permessage-deflate, as browsers do (workerd accepts it); `PEER_BENCH_DEFLATE=0` turns it off. */
const PEER_DEFLATE = process.env['PEER_BENCH_DEFLATE'] !== '0';
const TARGET = 0.7;
const TURN_TIMEOUT_MS = 30_000;
/** Text deltas of one turn (20 before the tool call, 40 after; see the Worker), checked on both sides. */
const TURN_DELTAS = 60;

/** One timed turn, milliseconds from the send. */
interface TurnTiming {
  firstDelta: number;
  finished: number;
}

/** A conversation of one side, as its client holds it. */
interface Conversation {
  turn(text: string): Promise<TurnTiming>;
  close(): void;
}

function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  const rank = (sorted.length - 1) * p;
  const low = Math.floor(rank);
  const high = Math.ceil(rank);
  return (sorted[low] ?? 0) + ((sorted[high] ?? 0) - (sorted[low] ?? 0)) * (rank - low);
}

function withTimeout<T>(promise: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer in ${TURN_TIMEOUT_MS} ms`)), TURN_TIMEOUT_MS);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

async function start(): Promise<{ url: URL; bundleBytes: number; stop(): Promise<void> }> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'peer-agent-bench-'));
  let runtime: Awaited<ReturnType<typeof startPeerRuntime>>;
  let bundle: ReturnType<typeof bundlePeerWorker>;
  try {
    bundle = bundlePeerWorker(dir, PEER_AI);
    runtime = await startPeerRuntime(bundle, path.join(dir, 'do'));
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  return {
    url: runtime.url,
    bundleBytes: bundle.bytes,
    async stop() {
      await runtime.mf.dispose();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Ours: one session through `AgentSessionClient`, its stream open for the whole conversation. */
async function openOurs(base: URL): Promise<Conversation> {
  const client = new AgentSessionClient({ baseUrl: base, sessionId: `ours-${randomUUID()}`, token: ADMIN });
  const stream = client.stream({ after: null });
  let caughtUp: (() => void) | undefined;
  const ready = new Promise<void>((resolve) => {
    caughtUp = resolve;
  });
  let current:
    | { startedAt: number; firstDelta?: number; deltas: number; toolDone: boolean; resolve(timing: TurnTiming): void; reject(error: Error): void }
    | undefined;
  const onItem = (item: AgentStreamItem): void => {
    if (item.type === 'caught_up') caughtUp?.();
    if (current === undefined) return;
    if (item.type === 'text_delta') {
      current.firstDelta ??= performance.now() - current.startedAt;
      current.deltas++;
    } else if (item.type === 'event') {
      const type = item.event.type;
      if (type === 'tool_completed') current.toolDone = true;
      if (type === 'request_completed') {
        const finished = performance.now() - current.startedAt;
        const turn = current;
        current = undefined;
        if (turn.deltas !== TURN_DELTAS || !turn.toolDone) turn.reject(new Error(`ours: ${turn.deltas} deltas, tool completed: ${turn.toolDone}`));
        else turn.resolve({ firstDelta: turn.firstDelta ?? Number.NaN, finished });
      } else if (type === 'request_failed' || type === 'request_interrupted') {
        current.reject(new Error(`ours: ${type}`));
        current = undefined;
      }
    }
  };
  const pump = (async () => {
    for await (const item of stream) onItem(item);
  })();
  pump.catch((error: unknown) => current?.reject(error instanceof Error ? error : new Error(String(error))));
  await withTimeout(ready, 'ours: caught_up');
  return {
    async turn(text) {
      const done = new Promise<TurnTiming>((resolve, reject) => {
        current = { startedAt: performance.now(), deltas: 0, toolDone: false, resolve, reject };
      });
      const accepted = client.send(text);
      const [timing] = await Promise.all([withTimeout(done, 'ours: turn'), accepted]);
      return timing;
    },
    close() {
      stream.close();
    },
  };
}

/** Peer: one `AIChatAgent` instance over its WebSocket chat protocol, as `useAgentChat` speaks it. */
async function openPeer(base: URL): Promise<Conversation> {
  const ws = new WebSocket(`${base.href.replace(/^http/, 'ws')}agents/peer-chat-agent/peer-${randomUUID()}`, { perMessageDeflate: PEER_DEFLATE });
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  const messages: UIMessage[] = [];
  let listener: ((data: string) => void) | undefined;
  ws.on('message', (data: WebSocket.RawData) => listener?.(String(data)));
  // The client's stream-resume probe after connecting; an idle agent answers `resume_none`.
  const probeId = randomUUID().slice(0, 8);
  await withTimeout(
    new Promise<void>((resolve) => {
      listener = (data) => {
        const frame = JSON.parse(data) as { type?: string };
        if (frame.type === 'cf_agent_stream_resume_none') resolve();
      };
      ws.send(JSON.stringify({ type: 'cf_agent_stream_resume_request', probeId }));
    }),
    'peer: resume probe',
  );
  return {
    async turn(text) {
      const id = randomUUID().slice(0, 8);
      messages.push({ id: randomUUID(), role: 'user', parts: [{ type: 'text', text }] });
      const chunks: UIMessageChunk[] = [];
      let startedAt = 0;
      const timing = await withTimeout(
        new Promise<TurnTiming>((resolve, reject) => {
          let firstDelta: number | undefined;
          let deltas = 0;
          let toolDone = false;
          listener = (data) => {
            const frame = JSON.parse(data) as { type?: string; id?: string; body?: string; done?: boolean; error?: boolean };
            if (frame.type !== 'cf_agent_use_chat_response' || frame.id !== id) return;
            if (frame.error === true) {
              reject(new Error(`peer: ${frame.body ?? 'stream error'}`));
              return;
            }
            if (frame.body !== undefined && frame.body.trim() !== '') {
              const chunk = JSON.parse(frame.body) as UIMessageChunk;
              chunks.push(chunk);
              if (chunk.type === 'text-delta') {
                firstDelta ??= performance.now() - startedAt;
                deltas++;
              } else if (chunk.type === 'tool-output-available') {
                toolDone = true;
              }
            }
            if (frame.done === true) {
              const finished = performance.now() - startedAt;
              if (deltas !== TURN_DELTAS || !toolDone) reject(new Error(`peer: ${deltas} deltas, tool completed: ${toolDone}`));
              else resolve({ firstDelta: firstDelta ?? Number.NaN, finished });
            }
          };
          startedAt = performance.now();
          ws.send(
            JSON.stringify({
              id,
              init: { method: 'POST', body: JSON.stringify({ messages, trigger: 'submit-message' }) },
              type: 'cf_agent_use_chat_request',
            }),
          );
        }),
        'peer: turn',
      );
      listener = undefined;
      // The client's copy of the assistant message (what useChat builds from the same chunks).
      let assistant: UIMessage | undefined;
      const source = new ReadableStream<UIMessageChunk>({
        start(controller) {
          for (const chunk of chunks) controller.enqueue(chunk);
          controller.close();
        },
      });
      for await (const message of readUIMessageStream({ stream: source })) assistant = message;
      if (assistant === undefined) throw new Error('peer: the turn streamed no assistant message');
      messages.push(assistant);
      return timing;
    },
    close() {
      ws.close();
    },
  };
}

type Side = 'ours' | 'peer';

interface Samples {
  first: Record<Side, TurnTiming[]>;
  later: Record<Side, TurnTiming[]>;
}

async function runConversations(base: URL, count: number, samples: Samples | undefined): Promise<void> {
  for (let index = 0; index < count; index++) {
    const order: Side[] = index % 2 === 0 ? ['ours', 'peer'] : ['peer', 'ours'];
    const conversations = {} as Record<Side, Conversation>;
    for (const side of order) conversations[side] = side === 'ours' ? await openOurs(base) : await openPeer(base);
    try {
      for (let turn = 0; turn < TURNS; turn++) {
        const sides = turn % 2 === 0 ? order : [...order].reverse();
        for (const side of sides) {
          const timing = await conversations[side].turn(`Please look up alpha (${turn + 1}).`);
          if (samples !== undefined) (turn === 0 ? samples.first : samples.later)[side].push(timing);
        }
      }
    } finally {
      for (const side of order) conversations[side].close();
    }
  }
}

function row(label: string, ours: readonly number[], peer: readonly number[], target: number | undefined): boolean {
  const o50 = percentile(ours, 0.5);
  const p50 = percentile(peer, 0.5);
  const o90 = percentile(ours, 0.9);
  const p90 = percentile(peer, 0.9);
  const ratio = o50 / p50;
  const pass = target === undefined || ratio <= target;
  console.log(
    `${label}\n  ours p50 ${o50.toFixed(2)} ms p90 ${o90.toFixed(2)} ms  peer p50 ${p50.toFixed(2)} ms p90 ${p90.toFixed(2)} ms  ` +
      `ratio ours/peer p50 ${ratio.toFixed(2)}x (p90 ${(o90 / p90).toFixed(2)}x)` +
      (target === undefined ? '  information' : `  target <= ${target}x  ${pass ? 'PASS' : 'MISS'}`),
  );
  return pass;
}

const runtime = await start();
let failed = false;
try {
  console.log(
    `peer-agent bench on ${os.cpus()[0]?.model ?? 'unknown CPU'} (${os.cpus().length} cores), Node ${process.version}, ` +
      `load ${os.loadavg().map((value) => value.toFixed(2)).join(' ')}; peer @cloudflare/ai-chat with ai ${PEER_AI}, ` +
      `peer socket ${PEER_DEFLATE ? 'with' : 'without'} permessage-deflate, ` +
      `bundle ${(runtime.bundleBytes / 1024).toFixed(0)} KiB`,
  );
  await runConversations(runtime.url, WARMUP_CONVERSATIONS, undefined);
  const samples: Samples = { first: { ours: [], peer: [] }, later: { ours: [], peer: [] } };
  await runConversations(runtime.url, CONVERSATIONS, samples);
  const pick = (side: Side, which: 'first' | 'later', key: keyof TurnTiming): number[] => samples[which][side].map((timing) => timing[key]);
  const turns = samples.later.ours.length;
  const firstPass = row(
    `time to the first text delta, turns 2-${TURNS} of ${CONVERSATIONS} conversations (${turns} turns per side)`,
    pick('ours', 'later', 'firstDelta'),
    pick('peer', 'later', 'firstDelta'),
    TARGET,
  );
  const finishedPass = row(`time to the finished turn, the same turns`, pick('ours', 'later', 'finished'), pick('peer', 'later', 'finished'), TARGET);
  failed = !firstPass || !finishedPass;
  row(`first turn of a fresh conversation: first text delta (${CONVERSATIONS} per side)`, pick('ours', 'first', 'firstDelta'), pick('peer', 'first', 'firstDelta'), undefined);
  row(`first turn of a fresh conversation: finished turn`, pick('ours', 'first', 'finished'), pick('peer', 'first', 'finished'), undefined);
  console.log(`load after: ${os.loadavg().map((value) => value.toFixed(2)).join(' ')}`);
} finally {
  await runtime.stop();
}
process.exitCode = failed ? 1 : 0;
