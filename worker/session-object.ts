/**
 * SessionObject: the Durable Object that owns one session's ledger.
 *
 * One object per session (`idFromName(sessionId)`), SQLite-backed. Its storage holds the event
 * log and the execution lease in the shared SQL schema, driven by the same `SqlLedger` the Node
 * SQLite store uses, so compare-and-append and fence checks run inside one `transactionSync`.
 * The object is the session's single writer; the runtime's output gate holds every reply until
 * the write it follows is durable.
 *
 * - RPC: every store operation is a typed method returning an `RpcResult` envelope (errors keep
 *   their class and code across RPC). The object records the session it serves on the first call
 *   and refuses any other session.
 * - Subscribers: WebSocket upgrades on `fetch` (`?sessionId=...&after=<cursor>`) become
 *   hibernatable sockets (see `session-object-sockets.ts`); `ping` is answered by the runtime.
 * - After every committed append, whatever ran it (an RPC append, or later code running inside
 *   the object over `this.store`), `afterCommit` pushes the events to sockets and settles long
 *   polls. Subclasses and later features add methods that use `this.store` / `this.ledger`.
 */
import { DurableObject } from 'cloudflare:workers';
import {
  MAX_WAIT_FOR_EVENTS_MS,
  toRpcResult,
  type RpcAppendOptions,
  type RpcLeaseAcquireOptions,
  type RpcReadOptions,
  type RpcResult,
  type RpcWaitResult,
  type SessionObjectRpc,
} from '../src/adapters/durable-object/rpc.js';
import { SUBSCRIBER_PING, SUBSCRIBER_PONG } from '../src/adapters/durable-object/socket-protocol.js';
import { DurableObjectSqlDriver } from '../src/adapters/durable-object/storage-sql-driver.js';
import type { SqlLedger, SqlStoreTestHooks } from '../src/adapters/sql/sql-ledger.js';
import { SqlDurableEventStore } from '../src/adapters/sql/sql-store.js';
import { checkSessionId } from '../src/core/log-engine.js';
import type {
  DurableAppendResult,
  DurableExecutionFence,
  DurableExecutionLeaseRecord,
  DurableReadResult,
} from '../src/core/store.js';
import { DurableEventStoreError } from '../src/protocol/errors.js';
import type { DurableEventDraft, DurableEventEnvelope } from '../src/protocol/events.js';
import type { EventSequence, SessionId } from '../src/protocol/ids.js';
import { HeadWaiters, isPast } from './session-object-waiters.js';
import { SessionSockets } from './session-object-sockets.js';

/** `ledger_meta` key holding the session this object serves. */
const SESSION_KEY = 'session_id';

function invalidInput(message: string): DurableEventStoreError {
  return new DurableEventStoreError('DURABLE_EVENT_INVALID_INPUT', message);
}

/** Keeps only the two append options that exist (RPC arguments are untrusted shapes). */
function appendOptions(options: RpcAppendOptions | undefined): RpcAppendOptions {
  if (options === undefined || options === null) return {};
  if (typeof options !== 'object') throw invalidInput('append options must be an object');
  return {
    ...(options.expectedLastSequence === undefined ? {} : { expectedLastSequence: options.expectedLastSequence }),
    ...(options.executionFence === undefined ? {} : { executionFence: options.executionFence }),
  };
}

/**
 * The per-session Durable Object. Mount it in a Worker with a `new_sqlite_classes` migration and
 * a namespace binding, and talk to it through `DurableObjectEventStore` or its RPC methods.
 */
export class SessionObject extends DurableObject<unknown> implements SessionObjectRpc {
  /**
   * Test-only fault injection shared by every instance in this isolate (the workerd test pool runs
   * tests and objects in one isolate). Never set it in production.
   */
  static testHooks: SqlStoreTestHooks | undefined;

  readonly #store: SqlDurableEventStore;
  readonly #waiters = new HeadWaiters();
  readonly #sockets: SessionSockets;
  #sessionId: SessionId | null = null;

  constructor(ctx: DurableObjectState, env: unknown) {
    super(ctx, env);
    // Schema migration is synchronous and runs before any event is delivered to the object.
    this.#store = new SqlDurableEventStore(new DurableObjectSqlDriver(ctx.storage), {
      testHooks: { beforeCommit: (sessionId) => SessionObject.testHooks?.beforeCommit?.(sessionId) },
    });
    this.#sockets = new SessionSockets(ctx, this.#store.ledger);
    this.#store.ledger.onCommit(({ sessionId, result }) => this.#afterCommit(sessionId, result.events));
    ctx.setWebSocketAutoResponse(new WebSocketRequestResponsePair(SUBSCRIBER_PING, SUBSCRIBER_PONG));
  }

  /** The session's store (async contract), for journal/recovery code running inside the object. */
  protected get store(): SqlDurableEventStore {
    return this.#store;
  }

  /** The synchronous core of {@link SessionObject.store}. */
  protected get ledger(): SqlLedger {
    return this.#store.ledger;
  }

  /**
   * Validates `sessionId` and binds the object to it on first use (persisted); a call naming
   * another session is refused with `DURABLE_EVENT_INVALID_INPUT`.
   */
  protected bindSession(sessionId: unknown): SessionId {
    const id = checkSessionId(sessionId);
    if (this.#sessionId === null) {
      const driver = this.ledger.driver;
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

  /** Runs after every committed append: pushes to subscribers, settles long polls. Never throws. */
  #afterCommit(sessionId: SessionId, events: readonly DurableEventEnvelope[]): void {
    const last = events[events.length - 1];
    if (last === undefined) return;
    this.#waiters.notify(last.sequence);
    this.#sockets.broadcast(sessionId, events);
  }

  // ---- RPC: the store contract --------------------------------------------------------------

  async append(
    sessionId: string,
    drafts: readonly DurableEventDraft[],
    options?: RpcAppendOptions,
  ): Promise<RpcResult<DurableAppendResult>> {
    return toRpcResult(() => this.ledger.append(this.bindSession(sessionId), drafts, appendOptions(options)));
  }

  async read(sessionId: string, options?: RpcReadOptions): Promise<RpcResult<DurableReadResult>> {
    return toRpcResult(() => {
      const id = this.bindSession(sessionId);
      if (options !== undefined && (typeof options !== 'object' || options === null)) {
        throw invalidInput('read options must be an object');
      }
      return this.ledger.read(id, { after: options?.after, limit: options?.limit });
    });
  }

  async getHeadSequence(sessionId: string): Promise<RpcResult<EventSequence | null>> {
    return toRpcResult(() => this.ledger.getHeadSequence(this.bindSession(sessionId)));
  }

  async waitForEvents(sessionId: string, after: number | null, waitMs: number): Promise<RpcResult<RpcWaitResult>> {
    return toRpcResult(async () => {
      const id = this.bindSession(sessionId);
      if (after !== null && (typeof after !== 'number' || !Number.isSafeInteger(after) || after < 1)) {
        throw new DurableEventStoreError('DURABLE_EVENT_INVALID_CURSOR', 'after must be null or an integer sequence >= 1');
      }
      if (typeof waitMs !== 'number' || !Number.isSafeInteger(waitMs) || waitMs < 0 || waitMs > MAX_WAIT_FOR_EVENTS_MS) {
        throw invalidInput(`waitMs must be an integer in 0..${MAX_WAIT_FOR_EVENTS_MS}`);
      }
      const head = this.ledger.getHeadSequence(id);
      if (after !== null && (head === null || after > head)) {
        throw new DurableEventStoreError('DURABLE_EVENT_INVALID_CURSOR', `cursor ${after} is ahead of the head ${String(head)}`, {
          details: { after, headSequence: head },
        });
      }
      if (isPast(head, after) || waitMs === 0) return { headSequence: head };
      const settled = await this.#waiters.wait(after, waitMs, () => this.ledger.getHeadSequence(id));
      return { headSequence: settled };
    });
  }

  async acquireExecutionLease(
    sessionId: string,
    options: RpcLeaseAcquireOptions,
  ): Promise<RpcResult<DurableExecutionLeaseRecord>> {
    return toRpcResult(() => {
      const id = this.bindSession(sessionId);
      const request = typeof options === 'object' && options !== null ? options : ({} as Partial<RpcLeaseAcquireOptions>);
      // SAFETY: the log engine validates ownerId, leaseId and ttlMs at run time.
      return this.ledger.acquireExecutionLease(id, request as RpcLeaseAcquireOptions);
    });
  }

  async renewExecutionLease(
    sessionId: string,
    fence: DurableExecutionFence,
    options: { ttlMs: number },
  ): Promise<RpcResult<DurableExecutionLeaseRecord>> {
    return toRpcResult(() => {
      const id = this.bindSession(sessionId);
      const ttlMs = typeof options === 'object' && options !== null ? options.ttlMs : undefined;
      // SAFETY: the log engine validates the TTL at run time (an undefined TTL is refused).
      return this.ledger.renewExecutionLease(id, fence, ttlMs as number);
    });
  }

  async releaseExecutionLease(sessionId: string, fence: DurableExecutionFence): Promise<RpcResult<null>> {
    return toRpcResult(() => {
      this.ledger.releaseExecutionLease(this.bindSession(sessionId), fence);
      return null;
    });
  }

  async assertExecutionLease(sessionId: string, fence: DurableExecutionFence): Promise<RpcResult<null>> {
    return toRpcResult(() => {
      this.ledger.assertExecutionLease(this.bindSession(sessionId), fence);
      return null;
    });
  }

  async inspectExecutionLease(sessionId: string): Promise<RpcResult<DurableExecutionLeaseRecord | null>> {
    return toRpcResult(() => this.ledger.inspectExecutionLease(this.bindSession(sessionId)));
  }

  async requiresExecutionLease(sessionId: string): Promise<RpcResult<boolean>> {
    return toRpcResult(() => this.ledger.requiresExecutionLease(this.bindSession(sessionId)));
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
    this.#sockets.accept(server, () => this.bindSession(url.searchParams.get('sessionId')), url.searchParams.get('after'));
    return new Response(null, { status: 101, webSocket: client });
  }

  override webSocketMessage(ws: WebSocket, message: string | ArrayBuffer): void {
    // Subscribers have nothing to say besides `ping`, which the runtime answers without waking us.
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
