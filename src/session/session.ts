/**
 * `createSession`, `resumeSession` and the Session object.
 *
 * Opening a Session:
 * 1. resolve options (the store, or an in-memory one; the clock; the ID generator; deadlines);
 * 2. acquire the execution lease when asked to (the stricter of `durableStoreTimeoutMs` and the
 *    lease's own store deadline bounds its calls);
 * 3. open the journal over a read tap that folds every event it loads into the history, so the
 *    log is read once for both the projection and the message history;
 * 4. create: commit `session_created` on an empty log. Resume: act on the recovery plan
 *    (`recovery.ts`), then continue the Request it leaves (if any) on the next macrotask.
 *
 * The Session object queues Requests (one runs at a time; `now` interrupts the running one),
 * forwards steering inputs to the running Request, fans frames out to `stream()` iterators, and
 * turns the loss of the lease into a local stop without a durable terminal event.
 */
import { newAbortError, withDeadline } from '../core/abort.js';
import { isTimeSource, systemTime, type TimeSource } from '../core/time.js';
import { DurableSessionJournal } from '../core/journal/journal.js';
import { DurableExecutionLease } from '../core/lease/execution-lease.js';
import type { DurableCheckpointPolicy } from '../core/checkpoint/policy.js';
import type { DurableAppendOptions, DurableEventStore, DurableExecutionLeaseStore } from '../core/store.js';
import { DurableEventStoreError, DurableExecutionLeaseError, SessionDurableRecorderError } from '../protocol/errors.js';
import type { DurableInput, ModelSelection, Priority } from '../protocol/event-payloads.js';
import { InputId, SessionId, WorkerId, type EventSequence, type RequestId } from '../protocol/ids.js';
import { DEFAULT_STORE_TIMEOUT_MS, MAX_DURABLE_STORE_TIMEOUT_MS, MAX_READ_LIMIT } from '../protocol/limits.js';
import type { JsonObject, JsonValue } from '../protocol/json.js';
import { commit, ExecutionStopped, selectionOf, type SessionCore, type SessionSettings } from './core.js';
import { FrameHub } from './frames.js';
import { HistoryProjection } from './history.js';
import { isSessionLanguageModel, unsupportedModelMessage } from './model-port.js';
import { applyRecoveryPolicy, AUTO_RECOVERY_POLICY, MAX_MODEL_RECALLS_PER_TURN, recallModelOnUnknownOutcome, recoveryPlanOf, SAFE_RECOVERY_POLICY } from './recovery.js';
import { driveRequest } from './request-driver.js';
import { SentRequests, snapshotKey, steerIdentity } from './request-ids.js';
import { RequestRun, type PendingSteer } from './run.js';
import type {
  ResumeSessionOptions,
  Session,
  SessionHandoff,
  SessionHistoryMessage,
  SessionIdKind,
  SessionLanguageModel,
  SessionOptions,
  SessionRequestHandle,
  SessionRequestResult,
  SessionSendOptions,
  SessionState,
  SessionSteerHandle,
  SessionSteerOptions,
  SessionStreamFrame,
  SessionStreamOptions,
  SessionTool,
} from './types.js';

export { SAFE_RECOVERY_POLICY, AUTO_RECOVERY_POLICY, MAX_MODEL_RECALLS_PER_TURN, recallModelOnUnknownOutcome, recoveryPlanOf };

/** Default `maxTurns` of a Request. */
const DEFAULT_MAX_TURNS = 20;
/** Largest `maxTurns` the protocol accepts. */
const MAX_TURNS_LIMIT = 10_000;

const ID_PREFIX: Readonly<Record<SessionIdKind, string>> = {
  session: 'session',
  request: 'req',
  input: 'in',
  turn: 'turn',
  model_attempt: 'ma',
  tool_attempt: 'ta',
  permission: 'perm',
};

function defaultId(kind: SessionIdKind): string {
  return `${ID_PREFIX[kind]}-${crypto.randomUUID()}`;
}

function invalid(message: string): SessionDurableRecorderError {
  return new SessionDurableRecorderError(message);
}

function checkMaxTurns(value: unknown, label: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1 || value > MAX_TURNS_LIMIT) {
    throw invalid(`${label} must be an integer in 1..${MAX_TURNS_LIMIT}, got ${String(value)}`);
  }
  return value;
}

/**
 * Types a tool definition (input inferred from `execute`).
 *
 * @example
 * const add = defineTool({
 *   sideEffect: 'pure',
 *   inputSchema: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } } },
 *   execute: ({ a, b }: { a: number; b: number }) => ({ sum: a + b }),
 * });
 */
export function defineTool<I, O extends JsonValue>(tool: SessionTool<I, O>): SessionTool<I, O> {
  return tool;
}

/** `value` if the model port accepts it (`LanguageModelV4` or `LanguageModelV3`), else `SESSION_DURABLE_RECORDER_INVALID`. */
function checkedModel(value: unknown): SessionLanguageModel {
  if (!isSessionLanguageModel(value)) throw invalid(unsupportedModelMessage(value));
  return value;
}

function resolveSettings(options: SessionOptions): SessionSettings {
  if (typeof options !== 'object' || options === null) throw invalid('session options must be an object');
  const time = options.time ?? systemTime;
  if (!isTimeSource(time)) throw invalid('time must be a TimeSource');
  const model = checkedModel(options.model);
  return {
    model,
    modelIdentity: options.modelIdentity,
    resolveModel: options.resolveModel,
    callSettings: options.callSettings,
    streaming: options.streaming ?? true,
    system: options.system,
    tools: options.tools ?? {},
    maxTurns: options.maxTurns === undefined ? DEFAULT_MAX_TURNS : checkMaxTurns(options.maxTurns, 'maxTurns'),
    onPermission: options.onPermission,
    clock: options.clock ?? ((): number => time.wallNow()),
    time,
    durability: options.durability ?? true,
  };
}

/** A store's methods bound to it, by method (see `tapStore`). */
const boundMethods = new WeakMap<DurableEventStore, WeakMap<object, unknown>>();

/**
 * The store as the journal sees it: reads fold each loaded event into the history once; under a
 * lease, each append's deadline is also capped to what is left of the lease window (the stricter
 * of `durableStoreTimeoutMs`, which the journal applies, and the lease deadline wins).
 */
function tapStore(
  store: DurableEventStore,
  history: HistoryProjection,
  lease: DurableExecutionLease | undefined,
  storeTimeoutMs: number,
  time: TimeSource,
): DurableEventStore {
  const read = async (...args: Parameters<DurableEventStore['read']>): ReturnType<DurableEventStore['read']> => {
    const page = await store.read(...args);
    history.apply(page.events);
    return page;
  };
  const cappedAppend = (
    sessionId: SessionId,
    drafts: Parameters<DurableEventStore['append']>[1],
    options: DurableAppendOptions = {},
  ): ReturnType<DurableEventStore['append']> => {
    // SAFETY: only installed when a lease exists (see `get` below).
    const leftMs = Math.floor((lease as DurableExecutionLease).remainingMs());
    if (leftMs < 1) {
      return Promise.reject(new DurableExecutionLeaseError('DURABLE_EXECUTION_LEASE_LOST', 'no time left in the lease window for the append'));
    }
    // The journal's own deadline (`storeTimeoutMs`, armed just before this call) ends first.
    if (leftMs >= storeTimeoutMs) return store.append(sessionId, drafts, options);
    return withDeadline(
      leftMs,
      options.signal,
      (signal) => store.append(sessionId, drafts, { ...options, signal }),
      () => new DurableEventStoreError('DURABLE_EVENT_IO_TIMEOUT', `append exceeded the ${leftMs} ms left in the lease window`),
      time,
    );
  };
  // Methods bound once per store, for every Session over it (the journal reads `store.append`
  // on every commit; a host opens a Session per conversation over one store).
  let bound = boundMethods.get(store);
  if (bound === undefined) {
    bound = new WeakMap();
    boundMethods.set(store, bound);
  }
  const methods = bound;
  return new Proxy(store, {
    get(target, property) {
      if (property === 'read') return read;
      if (property === 'append' && lease !== undefined) return cappedAppend;
      const value: unknown = Reflect.get(target, property, target);
      if (typeof value !== 'function') return value;
      let method = methods.get(value);
      if (method === undefined) {
        method = (value as (...a: unknown[]) => unknown).bind(target);
        methods.set(value, method);
      }
      return method;
    },
  });
}

/**
 * The journal's checkpoint policy. `createSession` only proceeds on an empty log, which no
 * checkpoint can cover, so it skips the checkpoint read (a file or storage round trip on most
 * stores); `resumeSession` reads as the policy says.
 */
function journalCheckpoints(policy: SessionOptions['checkpoints'], resuming: boolean): DurableCheckpointPolicy | false {
  if (policy === false) return false;
  return resuming ? (policy ?? {}) : { ...policy, read: false };
}

/** Session options with the store chosen (the public entry supplies the in-memory default). */
type WithStore<T extends SessionOptions> = T & { durableEventStore: DurableEventStore };

interface Opened {
  core: SessionCore;
  ownsLease: boolean;
  leaseStore: DurableExecutionLeaseStore | undefined;
  storeTimeoutMs: number;
}

async function openCore(options: WithStore<SessionOptions>, sessionIdRequired: boolean): Promise<Opened> {
  const settings = resolveSettings(options);
  const newId = options.generateId ?? defaultId;
  if (sessionIdRequired && options.sessionId === undefined) throw invalid('resumeSession needs a sessionId');
  const sessionId = SessionId(options.sessionId ?? newId('session'));
  const store = options.durableEventStore;
  const storeTimeoutMs = options.durableStoreTimeoutMs ?? DEFAULT_STORE_TIMEOUT_MS;
  if (!Number.isSafeInteger(storeTimeoutMs) || storeTimeoutMs < 1 || storeTimeoutMs > MAX_DURABLE_STORE_TIMEOUT_MS) {
    throw invalid(`durableStoreTimeoutMs must be an integer in 1..${MAX_DURABLE_STORE_TIMEOUT_MS}`);
  }
  const leaseStore = options.durableExecutionLeaseStore;
  let lease: DurableExecutionLease | undefined;
  let ownsLease = false;
  const leaseOption = options.executionLease;
  if (leaseOption instanceof DurableExecutionLease) {
    lease = leaseOption;
  } else if (leaseOption !== undefined) {
    if (leaseStore === undefined) throw invalid('executionLease settings need durableExecutionLeaseStore');
    lease = await DurableExecutionLease.acquire(leaseStore, sessionId, {
      ownerId: WorkerId(leaseOption.ownerId),
      ttlMs: leaseOption.ttlMs,
      ...(leaseOption.heartbeatIntervalMs === undefined ? {} : { heartbeatIntervalMs: leaseOption.heartbeatIntervalMs }),
      storeTimeoutMs: Math.min(storeTimeoutMs, leaseOption.storeTimeoutMs ?? storeTimeoutMs),
      ...(leaseOption.leaseId === undefined ? {} : { leaseId: leaseOption.leaseId }),
      time: settings.time,
    });
    ownsLease = true;
  }
  const history = new HistoryProjection();
  try {
    const journal = await DurableSessionJournal.open(tapStore(store, history, lease, storeTimeoutMs, settings.time), sessionId, {
      storeTimeoutMs,
      // Resuming reads the whole log once: the largest pages make that cheapest.
      pageSize: MAX_READ_LIMIT,
      checkpoints: journalCheckpoints(options.checkpoints, sessionIdRequired),
      ...(lease === undefined ? {} : { executionLease: lease }),
      ...(leaseStore === undefined ? {} : { executionLeaseStore: leaseStore }),
    });
    // A journal opened from a projection checkpoint folded only the tail: read the rest for the history.
    await history.catchUp(store, sessionId, journal.getHeadSequence(), MAX_READ_LIMIT);
    const core: SessionCore = { sessionId, store, journal, lease, history, hub: new FrameHub(), settings, newId };
    return { core, ownsLease, leaseStore, storeTimeoutMs };
  } catch (error) {
    if (ownsLease) await lease?.release().catch(() => undefined);
    throw error;
  }
}

/**
 * Creates a new session: commits `session_created` on an empty log and returns an idle Session.
 * The public entry (`agent-ledger/session`) fills in a `MemoryDurableEventStore` when
 * `durableEventStore` is left out, so this layer imports no adapter.
 *
 * @throws SessionDurableRecorderError when the log already holds events (use `resumeSession`)
 *
 * @example
 * const session = await createSession({ model, tools, durableEventStore: store });
 * const result = await session.run('Summarize the deployment log');
 */
export async function createSession(options: WithStore<SessionOptions>): Promise<Session> {
  const opened = await openCore(options, false);
  const { core } = opened;
  try {
    if (core.journal.getHeadSequence() !== null) {
      throw invalid(`session ${core.sessionId} already has events; use resumeSession`);
    }
    await commit(core, `create:${core.sessionId}`, [{ type: 'session_created', data: { source: 'create' } }]);
  } catch (error) {
    if (opened.ownsLease) await core.lease?.release().catch(() => undefined);
    throw error;
  }
  return new SessionImpl(opened, null);
}

/**
 * Resumes a session from its log. `none` -> idle; an accepted Request with a complete snapshot
 * (`resume_accepted_request`) -> continued under the same `requestId`; anything else only as the
 * recovery policy maps it, else `DurableSessionRecoveryRequiredError` carrying the plan.
 *
 * @example
 * const session = await resumeSession({ ...options, sessionId, recoveryPolicy: SAFE_RECOVERY_POLICY });
 * const resumed = session.resumedRequest;
 * if (resumed) console.log((await resumed.result).output);
 */
export async function resumeSession(options: WithStore<ResumeSessionOptions>): Promise<Session> {
  const opened = await openCore(options, true);
  const { core } = opened;
  try {
    const projection = core.journal.getProjection();
    if (projection.status === 'empty') throw invalid(`session ${core.sessionId} has no events; use createSession`);
    if (projection.status === 'closed') throw invalid(`session ${core.sessionId} is closed`);
    const outcome = await applyRecoveryPolicy(core, {
      policy: options.recoveryPolicy ?? {},
      storeTimeoutMs: opened.storeTimeoutMs,
      leaseStore: opened.leaseStore,
    });
    if (outcome.kind === 'idle') return new SessionImpl(opened, null);
    const request = outcome.request;
    const selection = request.model ?? selectionOf(core.settings.model);
    const run = new RequestRun(
      request.requestId,
      request.inputId,
      request.maxTurns ?? core.settings.maxTurns,
      resolveModel(core.settings, selection),
      selection,
      request.context ?? {},
    );
    return new SessionImpl(opened, run);
  } catch (error) {
    if (opened.ownsLease) await core.lease?.release().catch(() => undefined);
    throw error;
  }
}

function resolveModel(settings: SessionSettings, selection: ModelSelection): SessionLanguageModel {
  const resolved = settings.resolveModel?.(selection);
  if (resolved !== undefined) return checkedModel(resolved);
  if (selection.provider === settings.model.provider && selection.model === settings.model.modelId) return settings.model;
  throw invalid(`no model for ${selection.provider}/${selection.model}; pass resolveModel`);
}

interface Queued {
  requestId: RequestId;
  inputId: InputId;
  input: DurableInput;
  priority: Priority;
  maxTurns: number;
  model: SessionLanguageModel;
  context: JsonObject;
  accept(handle: SessionRequestHandle): void;
  refuse(error: unknown): void;
}

/** The Session (see the module header). */
class SessionImpl implements Session {
  readonly sessionId: SessionId;
  readonly resumedRequest: SessionRequestHandle | null;
  readonly #core: SessionCore;
  readonly #ownsLease: boolean;
  #state: SessionState = 'idle';
  #admitting = true;
  #releasing = false;
  readonly #queue: Queued[] = [];
  #current: RequestRun | null = null;
  #driver: Promise<void> | null = null;
  readonly #sent: SentRequests;

  constructor(opened: Opened, resumed: RequestRun | null) {
    this.#core = opened.core;
    this.#sent = new SentRequests(opened.core.history.requests);
    this.sessionId = opened.core.sessionId;
    this.#ownsLease = opened.ownsLease;
    const lease = this.#core.lease;
    if (lease !== undefined) {
      const onLoss = (): void => {
        if (this.#releasing) return;
        this.#current?.requestStop({ kind: 'lost', error: lease.signal.reason });
        this.#stopLocal('lease_lost', 'the execution lease was lost');
      };
      if (lease.signal.aborted) onLoss();
      else lease.signal.addEventListener('abort', onLoss, { once: true });
    }
    if (resumed === null) {
      this.resumedRequest = null;
      return;
    }
    this.resumedRequest = { requestId: resumed.requestId, inputId: resumed.inputId, result: resumed.result };
    this.#current = resumed;
    this.#state = 'running';
    // Start on the next macrotask, so a caller that opens `stream()` right after `await resumeSession()` sees every frame.
    this.#driver = new Promise<void>((resolve) => setTimeout(resolve, 0)).then(() => this.#runAll(resumed));
  }

  get state(): SessionState {
    return this.#state;
  }

  #checkOpen(): void {
    if (!this.#admitting || (this.#state !== 'idle' && this.#state !== 'running')) {
      throw invalid(`session ${this.sessionId} is ${this.#state} and admits no new work`);
    }
  }

  send(input: DurableInput, options: SessionSendOptions = {}): Promise<SessionRequestHandle> {
    const priority = options.priority ?? 'next';
    let model: SessionLanguageModel;
    let maxTurns: number;
    let ids: ReturnType<SentRequests['ids']>;
    // Idempotency is checked only for caller-chosen IDs (fresh ones cannot have been used).
    let key: string | undefined;
    try {
      this.#checkOpen();
      model = options.model === undefined ? this.#core.settings.model : checkedModel(options.model);
      maxTurns = options.maxTurns === undefined ? this.#core.settings.maxTurns : checkMaxTurns(options.maxTurns, 'maxTurns');
      ids = this.#sent.ids(options, this.#core.newId);
      if (options.requestId !== undefined || options.inputId !== undefined) {
        key = snapshotKey({ input, priority, maxTurns, model: selectionOf(model), context: options.context ?? {} });
        const earlier = this.#sent.earlier(ids, key, this.#current);
        if (earlier !== undefined) return earlier;
      }
    } catch (error) {
      return Promise.reject(error);
    }
    const handle = new Promise<SessionRequestHandle>((accept, refuse) => {
      const queued: Queued = {
        requestId: ids.requestId,
        inputId: ids.inputId,
        input,
        priority,
        maxTurns,
        model,
        context: options.context ?? {},
        accept,
        refuse,
      };
      if (priority === 'now' && this.#current !== null) {
        this.#current.requestStop({ kind: 'interrupt', reason: 'superseded', byInputId: queued.inputId });
        this.#queue.unshift(queued);
      } else {
        this.#queue.push(queued);
      }
      this.#kick();
    });
    if (key !== undefined) this.#sent.track(ids.requestId, ids.inputId, key, handle);
    return handle;
  }

  async run(input: DurableInput, options?: SessionSendOptions): Promise<SessionRequestResult> {
    return (await this.send(input, options)).result;
  }

  async steer(input: DurableInput, options: SessionSteerOptions = {}): Promise<SessionSteerHandle> {
    this.#checkOpen();
    const run = this.#current;
    if (run === null || run.stop !== null) {
      const handle = await this.send(input, { priority: 'next', ...(options.inputId === undefined ? {} : { inputId: options.inputId }) });
      return { inputId: handle.inputId, requestId: handle.requestId, applied: Promise.resolve() };
    }
    const priority = options.priority ?? 'next';
    let inputId: InputId;
    if (options.inputId === undefined) {
      inputId = InputId(this.#core.newId('input'));
    } else {
      const identity = steerIdentity(this.#core.history.requests, options.inputId, input, run);
      if (identity.earlier !== undefined) return { inputId: identity.inputId, requestId: run.requestId, applied: identity.earlier };
      inputId = identity.inputId;
    }
    let pending!: PendingSteer;
    const applied = new Promise<void>((resolve, reject) => {
      pending = { inputId, input, priority, resolve, reject };
    });
    applied.catch(() => undefined);
    pending.applied = applied;
    run.steering.push(pending);
    if (priority === 'now') run.interruptModelCall();
    return { inputId, requestId: run.requestId, applied };
  }

  stream(options: SessionStreamOptions = {}): AsyncIterableIterator<SessionStreamFrame> {
    return this.#core.hub.subscribe(options.signal);
  }

  history(): readonly SessionHistoryMessage[] {
    return this.#core.history.messages();
  }

  async whenIdle(): Promise<void> {
    while (this.#driver !== null) await this.#driver;
  }

  async abort(reason = 'user_abort'): Promise<void> {
    this.#dropQueue(() => newAbortError(`aborted: ${reason}`));
    this.#current?.requestStop({ kind: 'interrupt', reason: 'user_abort' });
    await this.whenIdle();
  }

  async close(): Promise<void> {
    if (this.#state === 'closed') return;
    if (this.#state === 'stopped' || this.#state === 'handed_off') {
      this.#state = 'closed';
      return;
    }
    this.#admitting = false;
    await this.abort('close');
    try {
      // `abort` may have stopped the Session (a lost lease): then nothing more is written.
      if ((this.#state as SessionState) !== 'stopped') {
        await commit(this.#core, `close:${this.sessionId}`, [{ type: 'session_closed', data: { reason: 'completed' } }]);
      }
    } finally {
      await this.#releaseLease(this.#ownsLease);
      this.#state = 'closed';
      this.#core.hub.end();
    }
  }

  async suspendForHandoff(): Promise<SessionHandoff> {
    if (this.#state !== 'idle' && this.#state !== 'running') {
      throw invalid(`session ${this.sessionId} is ${this.#state}; only a live Session can hand off`);
    }
    this.#admitting = false;
    this.#dropQueue(() => invalid('the session is being handed off'));
    this.#current?.requestStop({ kind: 'handoff' });
    await this.whenIdle();
    const head: EventSequence | null = await this.#core.journal.refresh();
    const recoveryPlan = this.#core.journal.getRecoveryPlan();
    await this.#releaseLease(true);
    if (this.#state === 'idle' || this.#state === 'running') this.#state = 'handed_off';
    this.#core.hub.publish({ type: 'execution_stopped', reason: 'handoff', message: 'suspended for a handoff' });
    this.#core.hub.end();
    return { sessionId: this.sessionId, headSequence: head, recoveryPlan };
  }

  async #releaseLease(release: boolean): Promise<void> {
    const lease = this.#core.lease;
    if (lease === undefined || !release) return;
    this.#releasing = true;
    await lease.release();
  }

  /** Refuses every queued request with the error `reason()` builds (built only when one is queued). */
  #dropQueue(reason: () => unknown): void {
    if (this.#queue.length === 0) return;
    const error = reason();
    for (const queued of this.#queue.splice(0)) queued.refuse(error);
  }

  #stopLocal(reason: 'lease_lost' | 'outcome_unknown' | 'superseded' | 'error', message: string): void {
    if (this.#state === 'stopped' || this.#state === 'closed' || this.#state === 'handed_off') return;
    this.#state = 'stopped';
    this.#admitting = false;
    this.#dropQueue(() => new ExecutionStopped(reason, message));
    this.#core.hub.publish({ type: 'execution_stopped', reason, message });
    this.#core.hub.end();
  }

  #kick(): void {
    if (this.#driver !== null) return;
    this.#driver = this.#runAll(null);
  }

  async #runAll(first: RequestRun | null): Promise<void> {
    try {
      if (first !== null) await this.#drive(first);
      for (;;) {
        if (!this.#admitting || this.#state === 'stopped') break;
        const queued = this.#queue.shift();
        if (queued === undefined) break;
        const run = await this.#accept(queued);
        if (run !== null) await this.#drive(run);
      }
    } finally {
      this.#driver = null;
      if (this.#state === 'running') this.#state = 'idle';
    }
  }

  async #accept(queued: Queued): Promise<RequestRun | null> {
    const selection = selectionOf(queued.model);
    try {
      await commit(this.#core, `accept:${queued.requestId}`, [
        {
          type: 'request_accepted',
          requestId: queued.requestId,
          data: {
            inputId: queued.inputId,
            input: queued.input,
            priority: queued.priority,
            maxTurns: queued.maxTurns,
            model: selection,
            context: queued.context,
          },
        },
      ]);
    } catch (error) {
      queued.refuse(error);
      if (error instanceof ExecutionStopped) this.#stopLocal(error.reason === 'handoff' ? 'error' : error.reason, error.message);
      return null;
    }
    const run = new RequestRun(queued.requestId, queued.inputId, queued.maxTurns, queued.model, selection, queued.context);
    // Current from acceptance on: a re-send of its ID, a steer or an abort right after `send` resolves reaches it.
    this.#current = run;
    queued.accept({ requestId: run.requestId, inputId: run.inputId, result: run.result });
    return run;
  }

  async #drive(run: RequestRun): Promise<void> {
    this.#current = run;
    this.#state = 'running';
    try {
      await driveRequest(this.#core, run);
    } finally {
      this.#current = null;
    }
    if (!run.settled) run.fail(invalid(`Request ${run.requestId} ended without an outcome`));
    const failure = await run.result.then(
      () => null,
      (error: unknown) => error,
    );
    if (failure === null) return;
    if (failure instanceof ExecutionStopped) {
      if (failure.reason !== 'handoff') this.#stopLocal(failure.reason, failure.message);
      return;
    }
    this.#stopLocal('error', failure instanceof Error ? failure.message : String(failure));
  }
}
