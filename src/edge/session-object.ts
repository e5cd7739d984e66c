/**
 * SessionObject: the Durable Object that owns one session's log.
 *
 * One object per session (`idFromName(sessionId)`), SQLite-backed. Its storage holds the event
 * log and the execution lease in the shared SQL schema, driven by the same `SqlEventLog` the Node
 * SQLite store uses, so compare-and-append and fence checks run inside one `transactionSync` (or
 * inside the one INSERT statement that is the whole write, see `singleWriter`). The object is the
 * session's single writer, so its log remembers the head and lease between calls; the
 * runtime's output gate holds every reply until the write it follows is durable.
 * Appends arrive through the one append RPC, `appendJson` (drafts as JSON text, a compact receipt
 * back), from `DurableObjectEventStore`, `sessionClient` and the HTTP route alike.
 *
 * - RPC: every store operation is a typed method returning an `RpcResult` envelope (errors keep
 *   their class and code across RPC). The object records the session it serves on the first call
 *   and refuses any other session.
 * - Subscribers: WebSocket upgrades on `fetch` (`?sessionId=...&after=<cursor>`) become
 *   hibernatable sockets (see `sockets.ts`); `ping` is answered by the runtime.
 * - After every committed append, whatever ran it (an RPC append, or later code running inside
 *   the object over `this.store`), `afterCommit` pushes the events to sockets and settles long
 *   polls. Subclasses and later features add methods that use `this.store` / `this.eventLog`.
 * - One mount (`sessionAgent()`, overridden by a subclass): a model and `defineTool` tools. The
 *   model calls the tools in agent requests (`agent-host.ts`); `startToolCall` runs one as a run
 *   (`durability.ts`). In both, `step` / `sleep` / `waitFor` write the session's durability
 *   records, and the object's alarm — shared through the `timers` table with the owner's
 *   `scheduleTimer` / `onTimer` — resumes the work after an eviction.
 */
import { DurableObject } from 'cloudflare:workers';
import {
  toRpcResult,
  type RpcResult,
  type SessionObjectPositionalRpc,
  type SessionObjectRpc,
} from '../adapters/durable-object/rpc.js';
import type { RpcDurabilityReadOptions } from '../core/operations/durability-rows.js';
import { SUBSCRIBER_ACK_PARAM, SUBSCRIBER_PING, SUBSCRIBER_PONG } from '../protocol/frames.js';
import { DurableObjectSqlDriver } from '../adapters/durable-object/storage-sql-driver.js';
import type { SqlEventLog, SqlStoreTestHooks } from '../adapters/sql/sql-event-log.js';
import { SqlDurableEventStore } from '../adapters/sql/sql-store.js';
import { checkSessionId } from '../core/log-engine.js';
import { systemTime, type TimeSource } from '../core/time.js';
import { DurableEventStoreError } from '../protocol/errors.js';
import type { DurableEventEnvelope } from '../protocol/events.js';
import type { SessionId } from '../protocol/ids.js';
import type { JsonValue } from '../protocol/json.js';
import { SessionDurability } from './durability.js';
import { OBJECT_SCHEMA } from './schema.js';
import { migrateSqlSchema } from '../adapters/sql/schema.js';
import { DEFAULT_RUN_RETRY_POLICY, type RunRetryPolicy } from './outcomes.js';
import { checkDueMs, checkTimerKey, TIMER_KINDS, type UserTimer } from './timers.js';
import { HeadWaiters } from './waiters.js';
import { SessionSockets } from './sockets.js';
import { pacingFromEnv, type SubscriberPacingLimits } from './socket-pacing.js';
import { SessionJournalHost } from './journal.js';
import { CheckpointHost, ObjectCheckpoints } from './checkpoints.js';
import { CheckpointUploads } from './checkpoint-uploads.js';
import { isRecoveryOperation, type RecoveryOperation } from '../protocol/recovery-operations.js';
import { recoveryHost } from './recovery-host.js';
import type {
  RecoveryInputs,
  RecoveryResults,
  RpcJournalCallOptions,
  SessionObjectJournalRpc,
} from '../adapters/durable-object/journal-rpc.js';
import type { SessionAgentMount } from '../adapters/durable-object/agent-rpc.js';
import { SessionAgentHost } from './agent-host.js';
import { EventLogHost } from './log-host.js';
import {
  isOperationName,
  recoveryRowInput,
  SESSION_OPERATIONS,
  type OperationHosts,
  type OperationName,
} from '../core/operations/operations.js';

/** `ledger_meta` key holding the session this object serves. */
const SESSION_KEY = 'session_id';

function invalidInput(message: string): DurableEventStoreError {
  return new DurableEventStoreError('DURABLE_EVENT_INVALID_INPUT', message);
}

/**
 * The per-session Durable Object. Mount it in a Worker with a `new_sqlite_classes` migration and
 * a namespace binding, and talk to it through `DurableObjectEventStore` or its RPC methods.
 *
 * To run an agent or durable tools inside it, subclass it, override
 * {@link SessionObject.sessionAgent}, and export and bind the SUBCLASS (its name goes in
 * `class_name` and `new_sqlite_classes`).
 *
 * @example
 * export class MySessionObject extends SessionObject {
 *   protected override sessionAgent(): SessionAgentMount {
 *     return {
 *       name: 'billing',
 *       tools: {
 *         refund: defineTool({
 *           sideEffect: 'idempotent',
 *           execute: async (input: { orderId: string }, ctx) => {
 *             const refund = await ctx.step!('refund', () => payments.refund(input.orderId));
 *             await ctx.sleep!('settle', 10 * 60_000); // survives eviction: the alarm resumes it
 *             return ctx.step!('notify', () => notify(refund));
 *           },
 *         }),
 *       },
 *     };
 *   }
 * }
 */
// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging -- its positional operation methods are installed below
export class SessionObject
  extends DurableObject<unknown>
  implements
    SessionObjectRpc,
    SessionObjectJournalRpc
{
  /**
   * Test-only fault injection shared by every instance in this isolate (the workerd test pool runs
   * tests and objects in one isolate). Never set it in production.
   */
  static testHooks: SqlStoreTestHooks | undefined;

  readonly #store: SqlDurableEventStore;
  readonly #waiters = new HeadWaiters();
  readonly #sockets: SessionSockets;
  readonly #durability: SessionDurability;
  #sessionId: SessionId | null = null;
  /** Journal and recovery coordinator over this object's store (`journal.ts`), made on first use. */
  #journals: SessionJournalHost | undefined;
  /** The agent Session this object runs (`agent-host.ts`). */
  readonly #agent: SessionAgentHost;
  /** The owner's mount, read once per instance (`null`: none). */
  #mount: SessionAgentMount | null | undefined;

  constructor(ctx: DurableObjectState, env: unknown) {
    super(ctx, env);
    // Schema migration is synchronous and runs before any event is delivered to the object.
    // The object is its storage's only writer: the store may remember the head and lease.
    this.#store = new SqlDurableEventStore(new DurableObjectSqlDriver(ctx.storage), {
      singleWriter: true,
      testHooks: { beforeCommit: (sessionId) => SessionObject.testHooks?.beforeCommit?.(sessionId) },
      onDurabilityCreateWithin: (record) => this.#durability.withinCreate(record),
    });
    // The object's own tables (timers, tool runs), through the event log's driver so a failure
    // is seen by its single-writer memory.
    migrateSqlSchema(this.#store.eventLog.driver, OBJECT_SCHEMA);
    this.#sockets = new SessionSockets(ctx, this.#store.eventLog, {
      limits: () => this.subscriberPacing(),
      partialFrame: () => this.#agent.live.partialFrame(),
    });
    this.#durability = new SessionDurability({
      ctx,
      store: this.#store,
      mount: () => this.#mounted(),
      retryPolicy: () => this.retryPolicy(),
      time: () => this.time(),
      onTimer: (timer) => this.onTimer(timer),
      onAgentWatch: () => this.#agent.onWatch(),
    });
    this.#agent = new SessionAgentHost({
      store: this.#store,
      timers: this.#durability.timers,
      mount: () => this.#mounted(),
      broadcast: (frame) => this.#sockets.broadcastTransient(frame),
      boundSession: () => this.#storedSession(),
      pendingPermissions: async (sessionId) =>
        (await this.#journalHost().projection(sessionId)).recoveryPlan.pendingPermissions.map((p) => p.permissionRequestId),
    });
    this.#store.eventLog.onCommit(({ sessionId, result }) => this.#afterCommit(sessionId, result.events));
    this.#store.durability.onCreated((record) => this.#durability.afterCreate(record));
    ctx.setWebSocketAutoResponse(new WebSocketRequestResponsePair(SUBSCRIBER_PING, SUBSCRIBER_PONG));
    // After the subclass constructor finished (sessionAgent() may use its fields): re-arm the alarm and
    // resume calls an eviction interrupted.
    queueMicrotask(() => {
      this.#durability.wake();
      this.#agent.wake();
    });
  }

  // ---- extension points ---------------------------------------------------------------------

  /**
   * The agent this object runs, if any: its model and its tools. Override it in a subclass. With
   * a model, the object serves the agent routes (`POST /v1/sessions/:sessionId/requests`, inputs,
   * abort, permissions): it runs the Session loop inside itself, as the session's single writer,
   * streams token deltas and tool progress to its subscribers, and resumes the run from its alarm
   * after an eviction. Each tool can also be started as a run (`POST .../runs/:runId/tool-calls`
   * naming the mount's `name`), with the same durability port. Called once per instance, on first
   * use (after the constructor: it may read `this.env`). The default runs no agent (the agent
   * routes answer 400, `startToolCall` refuses every call).
   *
   * @example
   * protected override sessionAgent(): SessionAgentMount {
   *   return { model: workersai('@cf/meta/llama-3.1-8b-instruct'), tools: { lookup } };
   * }
   */
  protected sessionAgent(): SessionAgentMount | undefined {
    return undefined;
  }

  #mounted(): SessionAgentMount | undefined {
    if (this.#mount === undefined) this.#mount = this.sessionAgent() ?? null;
    return this.#mount ?? undefined;
  }

  /**
   * The clock of the object's timers and durable tool calls: when a timer (its own, a user's from
   * {@link SessionObject.scheduleTimer}, a run's retry or sleep) is due, the deadline a tool's
   * `sleep` records and waits for, a run's start time, the expiry of a checkpoint upload. Default:
   * the host's clock (`systemTime`). A test overrides it with a `ManualTimeSource` to move time
   * without waiting; then it fires the alarm itself (`runDurableObjectAlarm` of `cloudflare:test`),
   * since the runtime's alarm follows the real clock. Read on every use, so an override may switch
   * sources at run time. Execution leases keep the store's own clock.
   */
  protected time(): TimeSource {
    return systemTime;
  }

  /** How often a throwing run runs before it is recorded failed (default: 3 times, 2 s / 4 s apart). */
  protected retryPolicy(): RunRetryPolicy {
    return DEFAULT_RUN_RETRY_POLICY;
  }

  /**
   * Runs when a timer set with {@link SessionObject.scheduleTimer} is due (from the object's
   * alarm). At least once: the timer is removed after this resolves; if it throws, it runs again
   * 5 s later. Rescheduling the same key from here (to another time) keeps the new schedule.
   */
  protected onTimer(timer: UserTimer): void | Promise<void> {
    void timer;
  }

  /**
   * Schedules (or moves) the owner's timer `key` to `dueMs` (epoch ms); {@link SessionObject.onTimer}
   * receives it. It shares the object's one alarm with durable sleeps and waits: do not call
   * `ctx.storage.setAlarm` yourself, and do not override `alarm()`.
   */
  async scheduleTimer(key: string, dueMs: number, payload: JsonValue = null): Promise<void> {
    const timers = this.#durability.timers;
    timers.put(TIMER_KINDS.user, checkTimerKey(key), checkDueMs(dueMs), payload);
    await timers.arm();
  }

  /** Removes the owner's timer `key`; returns whether it was scheduled. */
  async cancelTimer(key: string): Promise<boolean> {
    return this.#durability.timers.delete(TIMER_KINDS.user, checkTimerKey(key));
  }

  /** The owner's pending timers, earliest first. */
  async listTimers(): Promise<UserTimer[]> {
    return this.#durability.timers.list(TIMER_KINDS.user).map(({ key, dueMs, payload }) => ({ key, dueMs, payload }));
  }

  /** The alarm serves every timer (sleeps, waits, retries, the owner's); see `timers.ts`. */
  override async alarm(): Promise<void> {
    await this.#durability.alarm();
  }

  /** The session's store (async contract), for journal/recovery code running inside the object. */
  protected get store(): SqlDurableEventStore {
    return this.#store;
  }

  /** The synchronous core of {@link SessionObject.store}. */
  protected get eventLog(): SqlEventLog {
    return this.#store.eventLog;
  }

  /**
   * Validates `sessionId` and binds the object to it on first use (persisted); a call naming
   * another session is refused with `DURABLE_EVENT_INVALID_INPUT`.
   */
  protected bindSession(sessionId: unknown): SessionId {
    const id = checkSessionId(sessionId);
    if (this.#sessionId === null) {
      const driver = this.eventLog.driver;
      this.#sessionId = driver.transaction(() => {
        const rows = driver.query<{ value: string }>('SELECT value FROM ledger_meta WHERE key = ?', SESSION_KEY);
        const stored = rows[0]?.value;
        if (stored !== undefined) return checkSessionId(stored);
        driver.exec('INSERT INTO ledger_meta (key, value) VALUES (?, ?)', SESSION_KEY, id);
        return id;
      });
    }
    if (this.#sessionId !== id) {
      throw invalidInput(`this session object serves session ${this.#sessionId}, not ${id}`);
    }
    return id;
  }

  /** The session stored by an earlier {@link SessionObject.bindSession}, if any. */
  #storedSession(): SessionId | null {
    if (this.#sessionId !== null) return this.#sessionId;
    const stored = this.eventLog.driver.query<{ value: string }>('SELECT value FROM ledger_meta WHERE key = ?', SESSION_KEY)[0]?.value;
    return stored === undefined ? null : this.bindSession(stored);
  }

  /** Runs after every committed append: pushes to subscribers, settles long polls. Never throws. */
  #afterCommit(sessionId: SessionId, events: readonly DurableEventEnvelope[]): void {
    const last = events[events.length - 1];
    if (last === undefined) return;
    this.#waiters.notify(last.sequence);
    this.#sockets.broadcast(sessionId, events);
    this.#checkpoints.afterCommit(sessionId, events.length);
    this.#agent.observe(events);
  }

  // ---- RPC: the session operations (SESSION_OPERATIONS, one row each; see core/operations/) ----

  /** The hosts that serve the rows of `SESSION_OPERATIONS`, by the row's `host`. */
  readonly #hosts: OperationHosts = {
    log: new EventLogHost(
      () => this.eventLog,
      this.#waiters,
      // A parked agent may be able to go on now (its operator finished a recovery under the lease).
      () => this.#agent.afterRecovery(),
    ),
    // Projection checkpoints (derived data; the object also writes them itself), and the whole
    // records a client writes in slices (`checkpoint-uploads.ts`).
    checkpoint: new CheckpointHost(
      () => this.#store,
      new CheckpointUploads(() => this.time().wallNow()),
    ),
    // The recovery coordinator's operations, run by the journal host next to the store.
    recovery: recoveryHost(
      () => this.#journalHost(),
      () => this.#agent.afterRecovery(),
    ),
    // Commands and the projection, by the journal host next to the store.
    journal: {
      commit: (sessionId, input) => this.#journalHost().commit(sessionId, input),
      projection: (sessionId) => this.#journalHost().projection(sessionId),
    },
    // The durability records (the store's), and the durable tool calls the object runs (`durability.ts`).
    durability: {
      recordDurability: (sessionId, draft) => this.#store.durability.record(sessionId, draft),
      readDurability: (sessionId, options: unknown) => {
        if (options !== undefined && (typeof options !== 'object' || options === null)) {
          throw invalidInput('readDurability options must be an object');
        }
        const { after, limit } = (options ?? {}) as RpcDurabilityReadOptions;
        return this.#store.durability.read(sessionId, { after, limit });
      },
      startToolCall: (sessionId, input) => this.#durability.startToolCall(sessionId, input),
      runToolCall: (sessionId, input) => this.#durability.runToolCall(sessionId, input),
      deliver: (sessionId, input) => this.#durability.deliver(sessionId, input),
      getRun: (sessionId, input) => this.#durability.getRun(sessionId, (input as { runId?: unknown } | null)?.runId),
    },
    // The agent Session running in the object (made in the constructor, after these fields).
    agent: {
      submitRequest: (sessionId, input) => this.#agent.submitRequest(sessionId, input),
      submitInput: (sessionId, input) => this.#agent.submitInput(sessionId, input),
      abortRequest: (sessionId, input) => this.#agent.abortRequest(sessionId, input),
      answerPermission: (sessionId, input) => this.#agent.answerPermission(sessionId, input),
      agentStatus: (sessionId) => this.#agent.agentStatus(sessionId),
    },
  };

  /**
   * Runs session operation `name` (a row of `SESSION_OPERATIONS`) with `input` on its host.
   * Call it through `callOperation`; rows with `rpcArgs` also have a positional method of their
   * name (see {@link installPositionalOperations}).
   */
  async operation(sessionId: string, name: string, input: unknown): Promise<RpcResult<unknown>> {
    return toRpcResult(() => {
      const id = this.bindSession(sessionId);
      if (!isOperationName(name)) throw invalidInput(`unknown session operation ${JSON.stringify(String(name).slice(0, 64))}`);
      const host = this.#hosts[SESSION_OPERATIONS[name].host] as Record<OperationName, (sessionId: SessionId, input: unknown) => unknown>;
      return host[name]!(id, input);
    });
  }

  // ---- RPC: recovery (see journal.ts) -------------------------------------------------------

  /**
   * Runs one recovery operation: the row `operation` of `SESSION_OPERATIONS` (host `recovery`),
   * with `options.executionFence` beside the input (see `recoveryRowInput`).
   */
  async recover<O extends RecoveryOperation>(
    sessionId: string,
    operation: O,
    input: RecoveryInputs[O],
    options?: RpcJournalCallOptions,
  ): Promise<RpcResult<RecoveryResults[O]>> {
    const checked = await toRpcResult(() => {
      this.bindSession(sessionId);
      if (!isRecoveryOperation(operation)) {
        throw invalidInput(`unknown recovery operation ${JSON.stringify(String(operation).slice(0, 64))}`);
      }
      return recoveryRowInput(input, options);
    });
    if (!checked.ok) return checked;
    // SAFETY: the recovery host runs the coordinator method `operation`, whose result this is.
    return (await this.operation(sessionId, operation, checked.value)) as RpcResult<RecoveryResults[O]>;
  }

  /** Writes projection checkpoints after enough appends, off their critical path (`checkpoints.ts`). */
  readonly #checkpoints = new ObjectCheckpoints((sessionId, force) =>
    this.#journalHost().maintainCheckpoints(sessionId, force),
  );

  #journalHost(): SessionJournalHost {
    return (this.#journals ??= new SessionJournalHost(this.#store));
  }

  // ---- WebSocket subscribers ----------------------------------------------------------------

  /**
   * Accepts a WebSocket subscription at any path: `?sessionId=<id>&after=<encoded cursor>`.
   * Anything that is not a WebSocket upgrade is answered 426.
   */
  override async fetch(request: Request): Promise<Response> {
    if (request.headers.get('Upgrade')?.toLowerCase() !== 'websocket') {
      return new Response('expected a WebSocket upgrade', { status: 426, headers: { Upgrade: 'websocket' } });
    }
    const url = new URL(request.url);
    const { 0: client, 1: server } = new WebSocketPair();
    this.#sockets.accept(
      server,
      () => this.bindSession(url.searchParams.get('sessionId')),
      url.searchParams.get('after'),
      url.searchParams.get(SUBSCRIBER_ACK_PARAM) === '1',
    );
    return new Response(null, { status: 101, webSocket: client });
  }

  /**
   * Flow-control bounds of this object's WebSocket subscribers (see `socket-pacing.ts` and
   * docs/http-api.md). Override to tune; read at each use. Default: `DEFAULT_SUBSCRIBER_PACING`,
   * with the Worker vars `SUBSCRIBER_WINDOW_BYTES`, `SUBSCRIBER_OBJECT_WINDOW_BYTES` and
   * `SUBSCRIBER_STALL_MS` when set.
   */
  subscriberPacing(): Partial<SubscriberPacingLimits> {
    return pacingFromEnv(this.env);
  }

  override webSocketMessage(ws: WebSocket, message: string | ArrayBuffer): void {
    // Acks move the socket's flow-control window (and may resume its replay).
    if (typeof message === 'string' && this.#sockets.receive(ws, message)) return;
    // Otherwise only `ping`, which the runtime usually answers without waking us.
    if (message === SUBSCRIBER_PING) {
      try {
        ws.send(SUBSCRIBER_PONG);
      } catch {
        this.#sockets.drop(ws);
      }
    }
  }

  override webSocketClose(ws: WebSocket, code: number, reason: string): void {
    this.#sockets.drop(ws);
    try {
      // Complete the closing handshake (codes 1005/1006 are reserved and cannot be sent back).
      ws.close(code === 1005 || code === 1006 ? 1000 : code, reason);
    } catch {
      // Already closed.
    }
  }

  override webSocketError(ws: WebSocket): void {
    this.#sockets.drop(ws);
  }
}

/**
 * The positional RPC methods of the rows with `rpcArgs` (`acquireExecutionLease(sessionId,
 * options)`...), installed on the prototype so that Workers RPC exposes them: each turns its
 * arguments into the row's input and runs {@link SessionObject.operation}.
 */
function installPositionalOperations(prototype: SessionObject): void {
  for (const [name, row] of Object.entries(SESSION_OPERATIONS)) {
    if (!('rpcArgs' in row)) continue;
    const toInput = row.rpcArgs as (...args: unknown[]) => unknown;
    Object.defineProperty(prototype, name, {
      configurable: true,
      writable: true,
      value: async function (this: SessionObject, sessionId: string, ...args: unknown[]) {
        // Arguments the row refuses (unknown options...) are answered with an envelope too.
        const input = await toRpcResult(() => toInput(...args));
        return input.ok ? this.operation(sessionId, name, input.value) : input;
      },
    });
  }
}
installPositionalOperations(SessionObject.prototype);

// The methods installed above, for the compiler.
// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging -- the class declares them through installPositionalOperations
export interface SessionObject extends SessionObjectPositionalRpc {}
