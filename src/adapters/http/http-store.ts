/**
 * HttpDurableEventStore: the store contract over the Worker's HTTP API.
 *
 * How a call works:
 * 1. Arguments are checked here with the same core validators every store uses (session id,
 *    drafts, `expectedLastSequence`, read options), so a caller gets the same error codes as
 *    locally, and values JSON cannot carry losslessly (NaN, -0, undefined) never leave the process.
 * 2. One `fetch` per call, bounded by `timeoutMs` and the caller's `signal` (an aborted signal
 *    rejects with its reason and never starts a request).
 * 3. A 2xx body is the result. Anything else is problem+json, rebuilt into the same error class
 *    and code (`errorFromProblemResponse`). A request that fails in transit has an unknown
 *    outcome: an append reports `DURABLE_EVENT_WRITE_FAILED` (read the head before retrying, as
 *    the journal does), a lease call `DURABLE_EXECUTION_LEASE_TIMEOUT` (retry with the same
 *    `leaseId` to reconcile), and a deadline `DURABLE_EVENT_IO_TIMEOUT`.
 * 4. `watch` (present only when a WebSocket constructor is available) opens one WebSocket
 *    subscription per listener; see `websocket-watch.ts`.
 * Runtime-neutral: global `fetch`, `URL` and an injected or global `WebSocket`; no `node:*`.
 */
import {
  checkCheckpointRecord,
  checkpointExtensionOf,
  readCheckpointSlices,
  writeWholeCheckpoint,
  type DurableCheckpointRecord,
  type DurableCheckpointStore,
} from '../../core/checkpoint/contract.js';
import type {
  DurableEventDigestReadOptions,
  DurableEventDigestRow,
  DurableEventDigestStore,
} from '../../core/checkpoint/event-digest.js';
import { decodeBase64Url, encodeBase64Url } from '../../protocol/base64url.js';
import { DeadlineExceeded, withDeadline } from '../../core/abort.js';
import { isTimeSource, systemTime, type TimeSource } from '../../core/time.js';
import {
  buildReadPage,
  checkExpectedLastSequence,
  checkSessionId,
  planRead,
  validateDraftBatch,
} from '../../core/log-engine.js';
import type {
  DurableAppendListener,
  DurableAppendOptions,
  DurableAppendResult,
  DurableEventStore,
  DurableExecutionFence,
  DurableExecutionLeaseRecord,
  DurableExecutionLeaseStore,
  DurableLeaseAcquireOptions,
  DurableLeaseRenewOptions,
  DurableReadOptions,
  DurableReadResult,
  DurableStoreCallOptions,
} from '../../core/store.js';
import { DurableEventStoreError, isDurableError } from '../../protocol/errors.js';
import type { DurableEventDraft } from '../../protocol/events.js';
import type { EventId, EventSequence, SessionId } from '../../protocol/ids.js';
import { MAX_DURABLE_STORE_TIMEOUT_MS, MAX_READ_LIMIT } from '../../protocol/limits.js';
import { errorFromProblemResponse } from './problem.js';
import { isRecord, malformed, operationFailures, sessionPath, storeFailures, type FailureKinds } from './request-helpers.js';
import {
  recoveryRowInput,
  SESSION_OPERATIONS,
  type OperationInput,
  type OperationName,
  type OperationOutput,
  type OperationSpec,
} from '../../core/operations/operations.js';
import { HTTP_PATHS } from '../../protocol/http-paths.js';
import { isRecoveryOperation, type RecoveryOperation } from '../../protocol/recovery-operations.js';
import type { DurableCommitResult, DurableJournalCommand } from '../../core/journal/journal-options.js';
import type { RecoveryInputs, RecoveryResults, SessionProjectionResult } from '../durable-object/journal-rpc.js';
import { WebSocketWatch, type WebSocketConstructorLike } from './websocket-watch.js';

/** Default deadline of one HTTP call. */
export const DEFAULT_HTTP_TIMEOUT_MS = 30_000;

/** Options of {@link HttpDurableEventStore}. */
export interface HttpDurableEventStoreOptions {
  /** Where the Worker answers, e.g. `https://ledger.example.workers.dev` (a path prefix is kept). */
  baseUrl: string | URL;
  /** A fixed bearer token (admin or session token). */
  token?: string;
  /** Returns the bearer token before every request (for refreshing tokens). Wins over `token`. */
  getToken?: () => string | Promise<string>;
  /** `fetch` to use (default: the global one). */
  fetch?: (input: string | URL, init?: RequestInit) => Promise<Response>;
  /**
   * WebSocket constructor for `watch` (default: `globalThis.WebSocket`). Node 20 has none: pass
   * `WebSocket` from the `ws` package. Without any, `watch` is absent and subscriptions poll.
   */
  WebSocket?: WebSocketConstructorLike;
  /** Deadline of one call, in ms (default {@link DEFAULT_HTTP_TIMEOUT_MS}). */
  timeoutMs?: number;
  /** Called with background errors of `watch` connections (they reconnect by themselves). */
  onWatchError?: (error: unknown) => void;
  /**
   * Timers and liveness clock of `watch` connections (coalescing, acks, pings every 30 s, reconnect
   * backoff); default: the host's. Tests pass a `ManualTimeSource`.
   */
  time?: TimeSource;
}

/** Options of the journal and recovery calls of {@link HttpDurableEventStore}. */
export interface HttpJournalCallOptions extends DurableStoreCallOptions {
  /** The execution lease the caller holds (required once the session has lease state). */
  executionFence?: DurableExecutionFence | undefined;
}

/** Idle time after which a request first lets the runtime's timers run (stale keep-alive connections). */
const STALE_CONNECTION_IDLE_MS = 1000;

/** What {@link refusedAsInvalid} resolves to when the Worker refused the request as invalid input. */
const REFUSED = Symbol('refused');

/**
 * The answer of a request that uses a field a Worker from before it refuses (checkpoint
 * extensions, sliced uploads), or {@link REFUSED} when it was refused as invalid input.
 */
async function refusedAsInvalid(request: Promise<unknown>): Promise<unknown> {
  try {
    return await request;
  } catch (error) {
    if (error instanceof DurableEventStoreError && error.code === 'DURABLE_EVENT_INVALID_INPUT') return REFUSED;
    throw error;
  }
}

/** Resolves after one 1 ms timer of the runtime, so its pending timers (and socket events) run first. */
const runtimeTimers = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 1));

interface RequestSpec {
  method: 'GET' | 'POST';
  path: string;
  query?: Record<string, string>;
  body?: unknown;
  signal: AbortSignal | undefined;
  failures: FailureKinds;
}

/**
 * The store contract ({@link DurableEventStore} + {@link DurableExecutionLeaseStore}) against an
 * agent-ledger Worker. Journals, subscriptions, leases and the recovery coordinator run on it
 * unchanged.
 *
 * @example
 * import WebSocket from 'ws'; // Node 20 only; browsers and Workers have a global WebSocket
 * const store = new HttpDurableEventStore({ baseUrl: 'https://ledger.example.com', token, WebSocket });
 * const journal = await DurableSessionJournal.open(store, SessionId('session-1'));
 */
export class HttpDurableEventStore
  implements DurableEventStore, DurableExecutionLeaseStore, DurableCheckpointStore, DurableEventDigestStore
{
  /** Push notifications over a WebSocket; absent when no WebSocket constructor is available. */
  readonly watch?: (sessionId: SessionId, listener: DurableAppendListener) => () => void;

  readonly #base: URL;
  readonly #fetch: (input: string | URL, init?: RequestInit) => Promise<Response>;
  readonly #getToken: () => string | Promise<string>;
  readonly #timeoutMs: number;
  /**
   * When the last request settled, on the runtime's own clock (`systemTime`, not the injected
   * `time`: this is about the runtime's timers; see `#send`).
   */
  #lastSettledAt = Number.NEGATIVE_INFINITY;
  /** Live watches by session, told directly about appends made through this object. */
  readonly #watches = new Map<string, Set<WebSocketWatch>>();

  constructor(options: HttpDurableEventStoreOptions) {
    const base = new URL(String(options.baseUrl));
    if (!base.pathname.endsWith('/')) base.pathname += '/';
    base.search = '';
    base.hash = '';
    this.#base = base;
    const globalFetch = globalThis.fetch;
    this.#fetch = options.fetch ?? ((input, init) => globalFetch(input, init));
    const { token, getToken } = options;
    if (getToken === undefined && (token === undefined || token === '')) {
      throw new DurableEventStoreError('DURABLE_EVENT_INVALID_OPTIONS', 'HttpDurableEventStore needs `token` or `getToken`');
    }
    this.#getToken = getToken ?? (() => token ?? '');
    const timeoutMs = options.timeoutMs ?? DEFAULT_HTTP_TIMEOUT_MS;
    if (!Number.isSafeInteger(timeoutMs) || timeoutMs < 1 || timeoutMs > MAX_DURABLE_STORE_TIMEOUT_MS) {
      throw new DurableEventStoreError(
        'DURABLE_EVENT_INVALID_OPTIONS',
        `timeoutMs must be an integer in 1..${MAX_DURABLE_STORE_TIMEOUT_MS}`,
      );
    }
    this.#timeoutMs = timeoutMs;
    if (options.time !== undefined && !isTimeSource(options.time)) {
      throw new DurableEventStoreError(
        'DURABLE_EVENT_INVALID_OPTIONS',
        'time must be a TimeSource (wallNow, monotonicNow, setTimer, clearTimer)',
      );
    }
    const time = options.time;
    const WebSocketClass =
      options.WebSocket ?? (globalThis as { WebSocket?: WebSocketConstructorLike }).WebSocket;
    if (WebSocketClass !== undefined) {
      this.watch = (sessionId, listener) => {
        const id = checkSessionId(sessionId);
        sessionPath(HTTP_PATHS.subscribe, id); // refuses a dot-segment id up front
        const watch = WebSocketWatch.start({
          sessionId: id,
          listener,
          WebSocket: WebSocketClass,
          getToken: this.#getToken,
          subscribeUrl: (after) => this.#subscribeUrl(id, after),
          readTail: (signal) => this.#readTail(id, signal),
          ...(options.onWatchError === undefined ? {} : { onError: options.onWatchError }),
          ...(time === undefined ? {} : { time }),
        });
        const set = this.#watches.get(id) ?? new Set<WebSocketWatch>();
        set.add(watch);
        this.#watches.set(id, set);
        return () => {
          watch.close();
          set.delete(watch);
          if (set.size === 0 && this.#watches.get(id) === set) this.#watches.delete(id);
        };
      };
    }
  }

  async append(
    sessionId: SessionId,
    drafts: readonly DurableEventDraft[],
    options: DurableAppendOptions = {},
  ): Promise<DurableAppendResult> {
    const id = checkSessionId(sessionId);
    const events = validateDraftBatch(drafts);
    const expected = checkExpectedLastSequence(options.expectedLastSequence);
    const body: Record<string, unknown> = { events };
    if (expected !== undefined) body['expectedLastSequence'] = expected;
    if (options.executionFence !== undefined) body['executionFence'] = options.executionFence;
    const result = await this.#request({
      method: 'POST',
      path: sessionPath(HTTP_PATHS.events, id),
      body,
      signal: options.signal,
      failures: storeFailures('DURABLE_EVENT_WRITE_FAILED', 'append'),
    });
    if (!isRecord(result) || !Array.isArray(result['events']) || typeof result['lastSequence'] !== 'number') {
      throw new DurableEventStoreError('DURABLE_EVENT_WRITE_FAILED', 'append: unexpected answer; the outcome is unknown');
    }
    // SAFETY: shape checked above; the Worker sends the object's DurableAppendResult unchanged.
    const appended = result as unknown as DurableAppendResult;
    for (const watch of this.#watches.get(sessionId) ?? []) watch.observe(appended.lastSequence);
    return appended;
  }

  async read(sessionId: SessionId, options: DurableReadOptions = {}): Promise<DurableReadResult> {
    const id = checkSessionId(sessionId);
    const plan = planRead(options);
    const query: Record<string, string> = { limit: String(plan.limit) };
    if (plan.after !== undefined) query['after'] = String(plan.after);
    const result = await this.#request({
      method: 'GET',
      path: sessionPath(HTTP_PATHS.events, id),
      query,
      signal: options.signal,
      failures: storeFailures('DURABLE_EVENT_UNAVAILABLE', 'read'),
    });
    if (!isRecord(result) || !Array.isArray(result['events']) || typeof result['hasMore'] !== 'boolean') {
      throw malformed('read');
    }
    // SAFETY: shape checked above; the events are the object's stored envelopes.
    const events = result['events'] as DurableReadResult['events'];
    const headSequence = result['headSequence'];
    if (headSequence !== null && typeof headSequence !== 'number') throw malformed('read');
    // The route's `nextCursor` is the encoded cursor; the store contract's is the sequence.
    const last = events[events.length - 1];
    const page: DurableReadResult = {
      events,
      nextCursor: last?.sequence ?? plan.after ?? null,
      // SAFETY: a number from the Worker's read route is a stored sequence.
      headSequence: headSequence as EventSequence | null,
      hasMore: result['hasMore'],
    };
    // The Worker cuts pages at MAX_READ_PAGE_BYTES; a smaller budget is applied here.
    return options.maxBytes === undefined ? page : buildReadPage(page.events, plan, page.headSequence);
  }

  getHeadSequence(sessionId: SessionId, options: DurableStoreCallOptions = {}): Promise<EventSequence | null> {
    return this.#operation('getHeadSequence', sessionId, {}, options.signal);
  }

  /** The session's latest projection checkpoint, read from its object (`GET .../checkpoint`). */
  async readCheckpoint(sessionId: SessionId, options: DurableStoreCallOptions = {}): Promise<DurableCheckpointRecord | null> {
    const id = checkSessionId(sessionId);
    // In slices (`?offset=`): a record may be larger than one response should be.
    return readCheckpointSlices(async (offset) => {
      const result = await this.#request({
        method: 'GET',
        path: sessionPath(HTTP_PATHS.checkpoint, id),
        ...(offset === 0 ? {} : { query: { offset: String(offset) } }),
        signal: options.signal,
        failures: storeFailures('DURABLE_EVENT_UNAVAILABLE', 'readCheckpoint'),
      });
      const wire = isRecord(result) ? result['checkpoint'] : undefined;
      if (wire === null) return null;
      if (!isRecord(wire) || typeof wire['sequence'] !== 'number' || typeof wire['eventId'] !== 'string' || typeof wire['data'] !== 'string') {
        throw malformed('readCheckpoint');
      }
      const data = decodeBase64Url(wire['data']);
      if (data === undefined) throw malformed('readCheckpoint');
      // A server without slices answers the whole record with neither field.
      const totalBytes = wire['totalBytes'] ?? data.length;
      const at = wire['offset'] ?? 0;
      if (typeof totalBytes !== 'number' || typeof at !== 'number') throw malformed('readCheckpoint');
      // SAFETY: checked above; core checks the checkpoint against the log before using it.
      return { sequence: wire['sequence'] as EventSequence, eventId: wire['eventId'] as EventId, totalBytes, offset: at, data };
    });
  }

  /**
   * The object keeps extended records: a record that extends the stored one sends only its new
   * bytes (`POST .../checkpoint` with `extendsBytes`), and the whole record when the object no
   * longer holds that prefix or the Worker predates extensions.
   */
  readonly checkpointExtension = true;

  /**
   * Replaces the session's projection checkpoint in its object (`POST .../checkpoint`); a record
   * that extends the stored one sends its tail (see {@link checkpointExtension}), a whole record
   * over 16 MiB goes in ordered slices of that size (one request each).
   */
  async writeCheckpoint(sessionId: SessionId, record: DurableCheckpointRecord, options: DurableStoreCallOptions = {}): Promise<void> {
    const id = checkSessionId(sessionId);
    // The caller's array is lent until this call settles: encoded from it, never kept.
    const checked = checkCheckpointRecord(record, false);
    const path = sessionPath(HTTP_PATHS.checkpoint, id);
    const failures = storeFailures('DURABLE_EVENT_UNAVAILABLE', 'writeCheckpoint');
    const extension = checkpointExtensionOf(checked);
    const position = { sequence: checked.sequence, eventId: checked.eventId };
    const post = (body: Record<string, unknown>) => this.#request({ method: 'POST', path, body: { ...position, ...body }, signal: options.signal, failures });
    if (extension !== null) {
      const result = await refusedAsInvalid(post({ extendsBytes: extension.extendsBytes, data: encodeBase64Url(extension.tail) }));
      if (isRecord(result) && result['extended'] === true) return;
    }
    // A whole record over 16 MiB goes as ordered slices (`upload`), one request each.
    await writeWholeCheckpoint(
      checked,
      (whole) => post({ data: encodeBase64Url(whole.data) }),
      async ({ uploadId, totalBytes, offset, data }) => {
        const upload = post({ data: encodeBase64Url(data), upload: { id: uploadId, totalBytes, offset } });
        const result = offset === 0 ? await refusedAsInvalid(upload) : await upload;
        if (result === REFUSED) return null;
        return isRecord(result) && result['complete'] === true;
      },
    );
  }

  acquireExecutionLease(sessionId: SessionId, options: DurableLeaseAcquireOptions): Promise<DurableExecutionLeaseRecord> {
    const input = { ownerId: options.ownerId, leaseId: options.leaseId, ttlMs: options.ttlMs };
    return this.#operation('acquireExecutionLease', sessionId, input, options.signal);
  }

  renewExecutionLease(
    sessionId: SessionId,
    fence: DurableExecutionFence,
    options: DurableLeaseRenewOptions,
  ): Promise<DurableExecutionLeaseRecord> {
    return this.#operation('renewExecutionLease', sessionId, { fence, ttlMs: options.ttlMs }, options.signal);
  }

  async releaseExecutionLease(sessionId: SessionId, fence: DurableExecutionFence, options: DurableStoreCallOptions = {}): Promise<void> {
    await this.#operation('releaseExecutionLease', sessionId, { fence }, options.signal);
  }

  async assertExecutionLease(sessionId: SessionId, fence: DurableExecutionFence, options: DurableStoreCallOptions = {}): Promise<void> {
    await this.#operation('assertExecutionLease', sessionId, { fence }, options.signal);
  }

  async inspectExecutionLease(sessionId: SessionId, options: DurableStoreCallOptions = {}): Promise<DurableExecutionLeaseRecord | null> {
    return (await this.#operation('leaseState', sessionId, {}, options.signal, 'inspectExecutionLease')).lease;
  }

  async requiresExecutionLease(sessionId: SessionId, options: DurableStoreCallOptions = {}): Promise<boolean> {
    return (await this.#operation('leaseState', sessionId, {}, options.signal, 'requiresExecutionLease')).requiresExecutionLease;
  }

  /**
   * The stored per-event digests of the session (`GET .../digests`, pages of at most 1,000 rows),
   * so `agent-ledger verify` over a Worker URL checks every event, not only up to the checkpoint.
   */
  async readEventDigests(sessionId: SessionId, options: DurableEventDigestReadOptions): Promise<DurableEventDigestRow[]> {
    const { limit, after = 0 } = options;
    if (!Number.isSafeInteger(after) || after < 0 || !Number.isSafeInteger(limit) || limit < 1) {
      throw new DurableEventStoreError('DURABLE_EVENT_INVALID_OPTIONS', 'after must be an integer >= 0 and limit an integer >= 1');
    }
    const rows: DurableEventDigestRow[] = [];
    let cursor = after;
    while (rows.length < limit) {
      const input = { after: cursor, limit: Math.min(limit - rows.length, MAX_READ_LIMIT) };
      const { digests } = await this.#operation('readEventDigests', sessionId, input, options.signal);
      rows.push(...digests);
      const last = digests[digests.length - 1];
      if (last === undefined || digests.length < input.limit) break;
      cursor = last.sequence;
    }
    return rows;
  }

  /**
   * Commits one journal command inside the session's object (`POST /commands`): idempotent by
   * `commandId`, previewed, optionally head-pinned. The same answer as `DurableSessionJournal.commit`.
   */
  async commit(
    sessionId: SessionId,
    command: DurableJournalCommand,
    options: HttpJournalCallOptions = {},
  ): Promise<DurableCommitResult> {
    const fence = options.executionFence === undefined ? undefined : { executionFence: options.executionFence };
    // SAFETY: the Worker's route validates the body (the row's input) and answers with its code.
    return this.#operation('commit', sessionId, recoveryRowInput(command, fence) as never, options.signal);
  }

  /** The session's projection, recovery plan and head, computed inside its object (`GET /projection`). */
  async projection(sessionId: SessionId, options: DurableStoreCallOptions = {}): Promise<SessionProjectionResult> {
    return this.#operation('projection', sessionId, {}, options.signal);
  }

  /**
   * Runs one recovery operation (a row of `RECOVERY_OPERATIONS`, and so of `SESSION_OPERATIONS`)
   * inside the session's object, through its route: `POST .../recovery/<segment>` for a command,
   * `GET` for `planResume`.
   */
  async recover<O extends RecoveryOperation>(
    sessionId: SessionId,
    operation: O,
    input: RecoveryInputs[O],
    options: HttpJournalCallOptions = {},
  ): Promise<RecoveryResults[O]> {
    if (!isRecoveryOperation(operation)) {
      throw new DurableEventStoreError('DURABLE_EVENT_INVALID_INPUT', `unknown recovery operation ${JSON.stringify(String(operation))}`);
    }
    // A fence rides in a command's body; `planResume` (a GET) takes none.
    const commands = SESSION_OPERATIONS[operation].kind === 'command';
    const fence = options.executionFence === undefined || !commands ? undefined : { executionFence: options.executionFence };
    const rowInput = recoveryRowInput(isRecord(input) ? input : {}, fence);
    // SAFETY: the route answers with this operation's result (validated by the object).
    return (await this.#operation(operation, sessionId, rowInput as never, options.signal)) as unknown as RecoveryResults[O];
  }

  /**
   * Runs a row of `SESSION_OPERATIONS` through its route: the input as the JSON body (`POST`) or
   * the query string (`GET`), the answer checked with the row's schema, failures by the row's kind.
   */
  async #operation<N extends OperationName>(
    name: N,
    sessionId: SessionId,
    input: OperationInput<N>,
    signal: AbortSignal | undefined,
    what: string = name,
  ): Promise<OperationOutput<N>> {
    const id = checkSessionId(sessionId);
    const row: OperationSpec = SESSION_OPERATIONS[name];
    const http = row.http;
    if (http === undefined) throw new DurableEventStoreError('DURABLE_EVENT_INVALID_INPUT', `${name} has no HTTP route`);
    const query: Record<string, string> = {};
    if (http.method === 'get') {
      for (const [key, value] of Object.entries(input as object)) if (value !== undefined) query[key] = String(value);
    }
    const result = await this.#request({
      method: http.method === 'get' ? 'GET' : 'POST',
      path: sessionPath(http.path, id),
      ...(http.method === 'get' ? (Object.keys(query).length === 0 ? {} : { query }) : { body: input }),
      signal,
      failures: operationFailures(name, input, what),
    });
    const answer = (http.answer?.schema ?? row.output).safeParse(result);
    if (!answer.success) throw malformed(what);
    // SAFETY: checked with the row's own output (or answer) schema just above.
    return (http.answer === undefined ? answer.data : http.answer.toOutput(answer.data)) as OperationOutput<N>;
  }

  #url(path: string, query?: Record<string, string>): URL {
    const url = new URL(path, this.#base);
    for (const [key, value] of Object.entries(query ?? {})) url.searchParams.set(key, value);
    return url;
  }

  #subscribeUrl(sessionId: SessionId, after: string | undefined): URL {
    const url = this.#url(sessionPath(HTTP_PATHS.subscribe, sessionId), after === undefined ? {} : { after });
    url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
    return url;
  }

  /** The last event of the session (for `watch` to subscribe from the head), or `null`. */
  async #readTail(sessionId: SessionId, signal: AbortSignal): Promise<DurableReadResult['events'][number] | null> {
    const head = await this.getHeadSequence(sessionId, { signal });
    if (head === null) return null;
    const page = await this.read(sessionId, {
      ...(head > 1 ? { after: (head - 1) as EventSequence } : {}),
      limit: 1,
      signal,
    });
    return page.events[0] ?? null;
  }

  async #request(spec: RequestSpec): Promise<unknown> {
    return withDeadline(
      this.#timeoutMs,
      spec.signal,
      async (signal) => {
        const token = await this.#getToken();
        const headers: Record<string, string> = { authorization: `Bearer ${token}`, accept: 'application/json' };
        if (spec.body !== undefined) headers['content-type'] = 'application/json';
        const init: RequestInit = {
          method: spec.method,
          headers,
          ...(spec.body === undefined ? {} : { body: JSON.stringify(spec.body) }),
          signal,
        };
        // After an abort or the deadline, its reason wins over whatever the failed step threw.
        const stopped = (): unknown => (signal.reason instanceof DeadlineExceeded ? spec.failures.timeout() : signal.reason);
        try {
          const response = await this.#send(spec, init, signal, stopped);
          if (!response.ok) throw await errorFromProblemResponse(response);
          try {
            return (await response.json()) as unknown;
          } catch (cause) {
            if (signal.aborted) throw stopped();
            if (isDurableError(cause)) throw cause;
            throw spec.failures.transport(cause);
          }
        } finally {
          this.#lastSettledAt = systemTime.monotonicNow();
        }
      },
      () => spec.failures.timeout(),
    );
  }

  /**
   * Sends one request. A pooled keep-alive connection that the server closed while this process
   * could not run its timers (a frozen serverless instance, a long synchronous task) stays marked
   * usable until the fetch implementation's own timers run, and a request sent on it fails. So
   * after an idle spell the runtime's timers run first (one 1 ms timer; measured with wrangler's
   * local runtime: every read after a 5.2 s stall failed without it, none with it), and a read that
   * still fails in transit is sent once more. Anything else has an unknown outcome (see the top).
   */
  async #send(spec: RequestSpec, init: RequestInit, signal: AbortSignal, stopped: () => unknown): Promise<Response> {
    if (systemTime.monotonicNow() - this.#lastSettledAt > STALE_CONNECTION_IDLE_MS) await runtimeTimers();
    const url = this.#url(spec.path, spec.query);
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.#fetch(url, init);
      } catch (cause) {
        if (signal.aborted) throw stopped();
        if (spec.method !== 'GET' || attempt === 2) throw spec.failures.transport(cause);
      }
      await runtimeTimers();
    }
  }
}
