/**
 * Worker of the edge-agent benchmark (`bench/edge-agent.bench.ts`; bundled with esbuild, run on
 * local workerd through Miniflare). Never deployed. Exports are entry points only.
 *
 * - `SessionObject`: the ledger's object with a bench agent mounted. Its model answers the user
 *   text `stream` with an endless run of `tok ` deltas, one per {@link BenchAgentObject.tick};
 *   `turn` with one tool call (`calc`, pure) and then `done`.
 * - `BareObject`: the baseline: hibernatable sockets and a raw `broadcast(text)`.
 * Routes: `/bench/bare/:name` (WebSocket to the bare object), `POST /bench/bare-send/:name` (body
 * sent to its sockets), `POST /bench/tick/:name` (one delta of the streaming request),
 * `GET /bench/turns?pairs=N&per=K`: N pairs of (K one-tool turns in a warm object) and (the same
 * event batches appended by another warm object through its own store, one awaited append per
 * batch), timed in this Worker around one RPC each, per turn; everything else goes to the real app.
 */
import { DurableObject } from 'cloudflare:workers';
import type { LanguageModelV3, LanguageModelV3StreamPart } from '@ai-sdk/provider';
import { createApp } from '../../src/app/app.js';
import type { Env } from '../../worker/env.js';
import type { SessionAgentMount } from '../../src/adapters/durable-object/agent-rpc.js';
import { SessionObject as LedgerSessionObject } from '../../src/edge/session-object.js';
import { createScriptedModel } from '../../src/session/scripted-model.js';
import { createSession, defineTool } from '../../src/session/session.js';
import type { Session } from '../../src/session/types.js';
import type { DurableEventDraft, DurableEventEnvelope } from '../../src/protocol/events.js';
import type { EventId } from '../../src/protocol/ids.js';
import { DurableSessionJournal } from '../../src/core/journal/journal.js';
import { commitThroughJournal, type RecordedBatches } from '../journal-floor.js';

/** One timed turn's committed batches (as drafts) and the event IDs they got. */
interface TurnRecord extends RecordedBatches {
  batches: DurableEventDraft[][];
  eventIds: string[][];
}

interface BenchEnv extends Env {
  BARE: DurableObjectNamespace<BareObject>;
}
/** The baseline's RPC surface. */
interface BareStub {
  broadcast(text: string): Promise<number>;
  fetch(request: Request): Promise<Response>;
}
function bareStub(env: BenchEnv, name: string): BareStub {
  // SAFETY: BARE binds BareObject.
  return env.BARE.get(env.BARE.idFromName(name)) as unknown as BareStub;
}

const STREAM_DELTAS = 100_000;

function userText(prompt: ReadonlyArray<{ role: string; content: unknown }>): string {
  const last = [...prompt].reverse().find((message) => message.role === 'user');
  const parts = Array.isArray(last?.content) ? (last.content as Array<{ type: string; text?: string }>) : [];
  return parts.map((part) => part.text ?? '').join('');
}

/** The ledger's object with the bench agent (see the module header). */
export class SessionObject extends LedgerSessionObject {
  #ticks: Array<() => void> = [];
  #pending = 0;
  #batches: DurableEventDraft[][] = [];
  #eventIds: string[][] = [];
  #completed: (() => void) | null = null;

  constructor(ctx: DurableObjectState, env: unknown) {
    super(ctx, env);
    this.eventLog.onCommit(({ result }) => {
      this.#batches.push(result.events.map(toDraft));
      this.#eventIds.push(result.events.map((event) => event.eventId));
      if (result.events.some((event) => event.type === 'request_completed')) this.#completed?.();
    });
  }

  protected override sessionAgent(): SessionAgentMount {
    const scripted = createScriptedModel(
      ({ prompt }) => {
        if (prompt[prompt.length - 1]?.role === 'tool') return { text: 'done' };
        if (userText(prompt) === 'stream') return { deltas: new Array<string>(STREAM_DELTAS).fill('tok '), hang: true };
        return { toolCalls: [{ toolName: 'calc', input: { a: 2, b: 3 } }] };
      },
      { provider: 'bench', modelId: 'bench-model', chunkSize: 1_000 },
    );
    const gate = (): Promise<void> => {
      if (this.#pending > 0) {
        this.#pending--;
        return Promise.resolve();
      }
      return new Promise((resolve) => this.#ticks.push(resolve));
    };
    return {
      model: {
        ...scripted,
        doGenerate: (options) => scripted.doGenerate(options),
        doStream: async (options) => {
          const result = await scripted.doStream(options);
          if (userText(options.prompt) !== 'stream') return result;
          const stream = result.stream.pipeThrough(
            new TransformStream<LanguageModelV3StreamPart, LanguageModelV3StreamPart>({
              async transform(part, controller) {
                if (part.type === 'text-delta') await gate();
                controller.enqueue(part);
              },
            }),
          );
          return { ...result, stream };
        },
      } satisfies LanguageModelV3,
      tools: {
        calc: defineTool({ sideEffect: 'pure', execute: (input: { a: number; b: number }) => ({ sum: input.a + input.b }) }),
      },
    };
  }

  #direct: Session | undefined;

  /**
   * Information row: the same turn through a Session this object creates directly over its store
   * (no agent host, no lease, no stream wrappers), to split the host's cost from the Session's.
   */
  async directTurn(sessionId: string): Promise<number> {
    const id = this.bindSession(sessionId);
    const { model, tools } = this.sessionAgent();
    if (model === undefined) throw new Error('the bench agent mounts no model');
    this.#direct ??= await createSession({ sessionId: id, model, tools: tools ?? {}, durableEventStore: this.store });
    const result = await this.#direct.run('turn');
    return result.status === 'completed' ? 1 : 0;
  }

  /** Releases one delta of the streaming request. */
  tick(): void {
    const next = this.#ticks.shift();
    if (next === undefined) this.#pending++;
    else next();
  }

  /** Runs one `turn` request in this (fresh) object; answers the committed batches as drafts. */
  async benchTurn(sessionId: string, commandId: string): Promise<TurnRecord> {
    this.#batches = [];
    this.#eventIds = [];
    const done = new Promise<void>((resolve) => {
      this.#completed = resolve;
    });
    const accepted = await this.submitRequest(sessionId, { commandId, input: 'turn' });
    if (!accepted.ok) throw new Error(accepted.error.message);
    await done;
    return { batches: this.#batches, eventIds: this.#eventIds };
  }

  /** Runs `count` `turn` requests one after another; answers all their committed batches. */
  async benchTurns(sessionId: string, commandPrefix: string, count: number): Promise<TurnRecord> {
    const batches: DurableEventDraft[][] = [];
    const eventIds: string[][] = [];
    for (let index = 0; index < count; index++) {
      const turn = await this.benchTurn(sessionId, `${commandPrefix}-${index}`);
      batches.push(...turn.batches);
      eventIds.push(...turn.eventIds);
    }
    return { batches, eventIds };
  }

  /** {@link directTurn} `count` times. */
  async directTurns(sessionId: string, count: number): Promise<number> {
    let completed = 0;
    for (let index = 0; index < count; index++) completed += await this.directTurn(sessionId);
    return completed;
  }

  #journal: DurableSessionJournal | undefined;
  #mapped = new Map<string, EventId>();

  /**
   * Information row: the same batches committed through a bare `DurableSessionJournal` on this
   * object's store (see `bench/journal-floor.ts`): the share of the budget the journal itself takes.
   */
  async journalBatches(sessionId: string, turn: TurnRecord): Promise<number> {
    this.#journal ??= await DurableSessionJournal.open(this.store, this.bindSession(sessionId));
    return commitThroughJournal(this.#journal, turn, this.#mapped);
  }

  /**
   * The baseline: the object's own appends of the same batches, one awaited `store.append` per
   * batch in order (the store contract the Session writes through), nothing else.
   */
  async appendBatches(sessionId: string, batches: DurableEventDraft[][]): Promise<number> {
    const id = this.bindSession(sessionId);
    let written = 0;
    for (const batch of batches) written += (await this.store.append(id, batch)).events.length;
    return written;
  }
}

function toDraft(event: DurableEventEnvelope): DurableEventDraft {
  const { schemaVersion: _v, eventId: _e, sequence: _s, sessionId: _i, recordedAt: _r, ...draft } = event;
  // SAFETY: an envelope without its stored fields is the draft it was appended from.
  return draft as unknown as DurableEventDraft;
}

/** The baseline: hibernatable sockets and a raw broadcast. */
export class BareObject extends DurableObject<unknown> {
  broadcast(text: string): number {
    const sockets = this.ctx.getWebSockets();
    for (const ws of sockets) {
      try {
        ws.send(text);
      } catch {
        // Skipped; the bench notices missing receipts.
      }
    }
    return sockets.length;
  }

  override async fetch(): Promise<Response> {
    const { 0: client, 1: server } = new WebSocketPair();
    this.ctx.acceptWebSocket(server);
    return new Response(null, { status: 101, webSocket: client });
  }
}

const app = createApp();

/** The bench methods of the object, as the Worker calls them over RPC. */
interface BenchStub {
  tick(): Promise<void>;
  benchTurn(sessionId: string, commandId: string): Promise<TurnRecord>;
  benchTurns(sessionId: string, commandPrefix: string, count: number): Promise<TurnRecord>;
  directTurns(sessionId: string, count: number): Promise<number>;
  appendBatches(sessionId: string, batches: DurableEventDraft[][]): Promise<number>;
  journalBatches(sessionId: string, turn: TurnRecord): Promise<number>;
  directTurn(sessionId: string): Promise<number>;
}

function sessionStub(env: BenchEnv, name: string): BenchStub {
  // SAFETY: the bench binds SESSIONS to this module's SessionObject, which has these methods.
  return env.SESSIONS.get(env.SESSIONS.idFromName(name)) as unknown as BenchStub;
}

async function turns(
  env: BenchEnv,
  pairs: number,
  perCall: number,
): Promise<{ subject: number[]; baseline: number[]; direct: number[]; journal: number[]; events: number; batches: number }> {
  const direct: number[] = [];
  const journal: number[] = [];
  const subject: number[] = [];
  const baseline: number[] = [];
  let events = 0;
  let batchCount = 0;
  for (let pair = 0; pair < pairs; pair++) {
    // Both objects are warm: the subject ran one turn (and created the session), the baseline
    // appended that turn's batches; then `perCall` more turns and their batches are timed, each
    // side in one RPC (workerd's clock moves only at I/O: a single turn reads as whole milliseconds).
    const name = `turn-${crypto.randomUUID()}`;
    const turnObject = sessionStub(env, name);
    const warm = await turnObject.benchTurn(name, 'warm');
    const startedAt = performance.now();
    const timed = await turnObject.benchTurns(name, 'timed', perCall);
    subject.push((performance.now() - startedAt) / perCall);
    const batches = timed.batches;
    const copy = `append-${crypto.randomUUID()}`;
    const appendObject = sessionStub(env, copy);
    await appendObject.appendBatches(copy, warm.batches);
    const appendAt = performance.now();
    events = (await appendObject.appendBatches(copy, batches)) / perCall;
    baseline.push((performance.now() - appendAt) / perCall);
    batchCount = batches.length / perCall;
    const plain = `direct-${crypto.randomUUID()}`;
    const plainObject = sessionStub(env, plain);
    await plainObject.directTurn(plain);
    const directAt = performance.now();
    await plainObject.directTurns(plain, perCall);
    direct.push((performance.now() - directAt) / perCall);
    const bare = `journal-${crypto.randomUUID()}`;
    const journalObject = sessionStub(env, bare);
    await journalObject.journalBatches(bare, warm);
    const journalAt = performance.now();
    await journalObject.journalBatches(bare, timed);
    journal.push((performance.now() - journalAt) / perCall);
  }
  return { subject, baseline, direct, journal, events, batches: batchCount };
}

export default {
  async fetch(request, env, ctx) {
    const url = new URL(request.url);
    const [, bench, action, name] = url.pathname.split('/');
    if (bench === 'bench') {
      if (action === 'bare' && name !== undefined) return bareStub(env, name).fetch(request);
      if (action === 'bare-send' && name !== undefined) {
        return Response.json(await bareStub(env, name).broadcast(await request.text()));
      }
      if (action === 'tick' && name !== undefined) {
        await sessionStub(env, name).tick();
        return Response.json(true);
      }
      if (action === 'turns') {
        return Response.json(await turns(env, Number(url.searchParams.get('pairs') ?? '10'), Number(url.searchParams.get('per') ?? '1')));
      }
      return new Response('unknown bench route', { status: 404 });
    }
    return app.fetch(request, env, ctx);
  },
} satisfies ExportedHandler<BenchEnv>;
