/**
 * Benchmark-only routes of the bench Worker (`bench-worker.ts`), under `/bench/`.
 *
 * - `POST /bench/rpc` runs a timed loop inside the Worker, so no HTTP round trip sits between
 *   the calls being compared. Body: {@link RpcLoopRequest}. The loop makes `iterations`
 *   sequential calls, each addressing the object afresh (`idFromName` + `get`, as a real Worker
 *   handling one request would):
 *   - `subject`: `DurableObjectEventStore.append(object, <batch drafts>)` (SessionObject RPC);
 *   - `subject-json`: `SessionObject.appendJson` on the stub with the drafts' JSON text made
 *     before the clock starts: the store's RPC without its work in the Worker (for the breakdown);
 *   - `bare`: `BareObject.insertOne(rowBody)` (batch 1) or `insertMany(batch x rowBody)`;
 *   - `bare-broadcast`: `BareObject.insertAndBroadcast(rowBody)`;
 *   - `profile:<stage>`: `ProfileObject.<stage>(<batch drafts, as objects or JSON text>)` (the
 *     breakdown; see `profile-object.ts`).
 *   Every payload is built before the clock starts. It answers {@link RpcLoopResult}. Workers
 *   clocks only move on I/O; every iteration is an RPC, so the elapsed time is real.
 * - `/bench/bare/<name>` (any method) is passed as is to the BareObject `<name>`: a POST body is
 *   inserted as one row (the bare Worker->object fetch), a WebSocket upgrade becomes a bare
 *   subscriber.
 * Nothing here checks tokens: the bench Worker listens on loopback only.
 */
import { DurableObjectEventStore, sessionObjectRpc } from '../../../src/adapters/durable-object/durable-object-store.js';
import { unwrapRpcResult, type RpcAppendReceipt } from '../../../src/adapters/durable-object/rpc.js';
import type { DurableEventDraft } from '../../../src/protocol/events.js';
import { SessionId } from '../../../src/protocol/ids.js';
import type { Env } from '../../../worker/env.js';
import type { BareObject } from './bare-object.js';
import { benchDraft } from '../bench-event.js';
import type { ProfileObject } from './profile-object.js';
import { PROFILE_STAGE_INFO, PROFILE_STAGES, type ProfileStage } from '../profile-stages.js';

/** Bindings of the bench Worker: the real ones plus the baseline object. */
export interface BenchEnv extends Env {
  BARE: DurableObjectNamespace<BareObject>;
  PROFILE: DurableObjectNamespace<ProfileObject>;
}

/** What a timed loop calls. */
export type LoopKind = 'subject' | 'subject-json' | 'bare' | 'bare-broadcast' | `profile:${ProfileStage}`;

const LOOP_KINDS = new Set<string>(['subject', 'subject-json', 'bare', 'bare-broadcast']);

/** The ProfileObject stub as the profile loop calls it. */
type ProfileRpc = Record<ProfileStage, (input: string | readonly DurableEventDraft[]) => Promise<unknown>>;

const PROFILE_KINDS = new Set<string>(PROFILE_STAGES.map((stage) => `profile:${stage}`));

/** What `POST /bench/rpc` runs. */
export interface RpcLoopRequest {
  kind: LoopKind;
  /** Session id (subject) or object name (bare). */
  object: string;
  iterations: number;
  /** Events (subject) or rows (bare) per call. */
  batch: number;
  /** The row a bare call inserts: a stored envelope of the subject's, so sizes match. */
  rowBody: string;
}

/** What `POST /bench/rpc` answers. */
export interface RpcLoopResult {
  elapsedMs: number;
  iterations: number;
  batch: number;
}

function badRequest(message: string): Response {
  return Response.json({ error: message }, { status: 400 });
}

function parseLoop(value: unknown): RpcLoopRequest | string {
  if (typeof value !== 'object' || value === null) return 'body must be an object';
  const v = value as Partial<RpcLoopRequest>;
  const kind = v.kind;
  if (!LOOP_KINDS.has(kind ?? '') && !PROFILE_KINDS.has(kind ?? '')) return 'bad kind';
  if (typeof v.object !== 'string' || v.object === '') return 'bad object';
  if (typeof v.iterations !== 'number' || !Number.isSafeInteger(v.iterations) || v.iterations < 1) return 'bad iterations';
  if (typeof v.batch !== 'number' || !Number.isSafeInteger(v.batch) || v.batch < 1) return 'bad batch';
  if (typeof v.rowBody !== 'string') return 'bad rowBody';
  // SAFETY: checked against every LoopKind just above.
  return { kind: kind as LoopKind, object: v.object, iterations: v.iterations, batch: v.batch, rowBody: v.rowBody };
}

function draftBatches(loop: RpcLoopRequest): DurableEventDraft[][] {
  return Array.from({ length: loop.iterations }, (_, i) =>
    Array.from({ length: loop.batch }, (_, j) => benchDraft(i * loop.batch + j)),
  );
}

async function subjectLoop(env: BenchEnv, loop: RpcLoopRequest): Promise<number> {
  const store = new DurableObjectEventStore(env.SESSIONS);
  const sessionId = SessionId(loop.object);
  const batches = draftBatches(loop);
  const started = Date.now();
  for (const drafts of batches) {
    const result = await store.append(sessionId, drafts);
    if (result.events.length !== drafts.length) throw new Error('subject append stored a wrong count');
  }
  return Date.now() - started;
}

async function subjectJsonLoop(env: BenchEnv, loop: RpcLoopRequest): Promise<number> {
  const texts = draftBatches(loop).map((drafts) => JSON.stringify(drafts));
  const started = Date.now();
  for (const text of texts) {
    const receipt = unwrapRpcResult<RpcAppendReceipt>(await sessionObjectRpc(env.SESSIONS, loop.object).appendJson(loop.object, text));
    if (receipt.lastSequence - (receipt.previousSequence ?? 0) !== loop.batch) throw new Error('subject append stored a wrong count');
  }
  return Date.now() - started;
}

async function bareLoop(env: BenchEnv, loop: RpcLoopRequest): Promise<number> {
  const rows = Array.from({ length: loop.batch }, () => loop.rowBody);
  const started = Date.now();
  for (let i = 0; i < loop.iterations; i++) {
    const stub = env.BARE.get(env.BARE.idFromName(loop.object));
    let written: number;
    if (loop.kind === 'bare-broadcast') written = (await stub.insertAndBroadcast(loop.rowBody)) >= 0 ? 1 : 0;
    else if (loop.batch === 1) written = await stub.insertOne(loop.rowBody);
    else written = await stub.insertMany(rows);
    if (written !== loop.batch) throw new Error(`bare call wrote ${written} rows, expected ${loop.batch}`);
  }
  return Date.now() - started;
}

async function profileLoop(env: BenchEnv, loop: RpcLoopRequest, stage: ProfileStage): Promise<number> {
  const json = PROFILE_STAGE_INFO[stage].input === 'json';
  // Inputs are made before the clock starts: a JSON stage is sent the text the store would send.
  const inputs = draftBatches(loop).map((drafts) => ({ count: drafts.length, input: json ? JSON.stringify(drafts) : drafts }));
  const started = Date.now();
  for (const { count, input } of inputs) {
    // SAFETY: every stage is a public method of ProfileObject taking its input; the precise
    // Workers stub type of an indexed method is too deep for the compiler (TS2589).
    const stub = env.PROFILE.get(env.PROFILE.idFromName(loop.object)) as unknown as ProfileRpc;
    const result = await stub[stage](input);
    const answer = result as { events?: unknown[]; eventIds?: string };
    const answered = typeof result === 'number' ? result : (answer.events?.length ?? answer.eventIds?.split('\n').length);
    // `noop` of a JSON stage answers the text's length: proof that it arrived whole.
    const expected = json && stage === 'noop' ? input.length : count;
    if (answered !== expected) throw new Error(`profile ${stage} answered ${String(answered)}, expected ${expected}`);
  }
  return Date.now() - started;
}

function runLoop(env: BenchEnv, loop: RpcLoopRequest): Promise<number> {
  if (loop.kind === 'subject') return subjectLoop(env, loop);
  if (loop.kind === 'subject-json') return subjectJsonLoop(env, loop);
  if (loop.kind === 'bare' || loop.kind === 'bare-broadcast') return bareLoop(env, loop);
  // SAFETY: the remaining kinds are `profile:<stage>` (parseLoop checked them).
  return profileLoop(env, loop, loop.kind.slice('profile:'.length) as ProfileStage);
}

/** Answers a `/bench/...` request, or `null` when the path is not a bench route. */
export async function handleBenchRequest(request: Request, env: BenchEnv): Promise<Response | null> {
  const url = new URL(request.url);
  const bare = /^\/bench\/bare\/([^/]+)$/.exec(url.pathname);
  if (bare?.[1] !== undefined) {
    const name = decodeURIComponent(bare[1]);
    return env.BARE.get(env.BARE.idFromName(name)).fetch(request);
  }
  if (url.pathname !== '/bench/rpc') return null;
  if (request.method !== 'POST') return badRequest('POST only');
  const loop = parseLoop(await request.json());
  if (typeof loop === 'string') return badRequest(loop);
  const elapsedMs = await runLoop(env, loop);
  return Response.json({ elapsedMs, iterations: loop.iterations, batch: loop.batch } satisfies RpcLoopResult);
}
