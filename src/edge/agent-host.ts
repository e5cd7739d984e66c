/**
 * The agent Session running inside a SessionObject: requests, steering, abort, permissions,
 * eviction and crash recovery.
 *
 * The object's owner mounts one agent (`SessionObject.sessionAgent()`: an AI SDK model, tools,
 * recovery policy). This host runs it as the session's single writer:
 * 1. Requests: `submitRequest` stores the request in `agent_requests` (idempotent by
 *    `commandId`; the IDs are chosen here and stored with it), puts the agent watchdog timer in
 *    the same transaction, and arms the alarm before anything else happens — so an eviction at
 *    any later point is followed by an alarm. Then the request is handed to the Session (one at a
 *    time: the host keeps the queue, `now` interrupts the running request at once).
 * 2. The Session writes through the object's own store (`durableEventStore`), under an execution
 *    lease it acquires (`executionLease` settings, renewed while it runs). Each instance is a new
 *    lease owner; a new instance first releases the lease of the instance before it (the runtime
 *    runs one instance of an object at a time, so that one is gone), which bumps the fencing
 *    token: a late commit of the old instance carries the old fence and is refused.
 * 3. Recovery: a new instance with work left (the `agent_meta` row `active`) calls
 *    `resumeSession` with the mount's recovery policy (default `EDGE_RECOVERY_POLICY`) from its
 *    constructor and from the alarm. A plan the policy may not act on (an unknown model outcome
 *    unless the mount asks for `EDGE_AUTO_RECOVERY_POLICY`, a started non_idempotent tool...)
 *    parks the host (`needs_recovery`, with the plan): nothing is replayed; the plan is on the
 *    projection route, and a recovery operation through the object (`recover`) wakes the host to
 *    try again. While parked, a new request is refused (`DurableSessionRecoveryRequiredError`
 *    with the plan and what unblocks it) instead of being queued behind the parked one.
 * 4. Permissions: the Session's permission callback returns a stored answer
 *    (`agent_permissions`) or waits for one; while it waits the watchdog is removed (nothing is
 *    due until a human answers). `answerPermission` stores the answer (first answer wins), re-arms
 *    the watchdog, and either settles the waiting callback or wakes the host, whose
 *    `resumeSession` presents the pending permission again and finds the stored answer. A wait
 *    presented again by a new instance's resume comes before its Session exists: a steering
 *    input is stored for the waiting Request (and steered once the resume returns), an abort
 *    answers the wait `cancel` and interrupts the Request as soon as the Session exists.
 * 5. Streams: see `agent-stream.ts` (the model and the tools are wrapped before the Session
 *    gets them).
 * 6. Steering (`submitInput`): the input is stored in `agent_inputs` (with an ID chosen here)
 *    before the Session takes it, so the answer means it survives an eviction; `input_applied`
 *    (which carries the text) deletes the row. A new instance that resumes the Request steers
 *    the stored inputs again with their IDs (an input already applied is not applied twice).
 *    Inputs whose Request ended, or was rolled over to a new Request, before applying them are
 *    dropped.
 */
import type {
  AgentAbortResult,
  AgentPermissionAnswer,
  AgentPermissionReceipt,
  AgentRequestAccepted,
  AgentRequestInput,
  AgentRequestStatus,
  AgentStatus,
  AgentSteerAccepted,
  AgentSteerInput,
  SessionAgentMount,
} from '../adapters/durable-object/agent-rpc.js';
import type { SqlDurableEventStore } from '../adapters/sql/sql-store.js';
import type { DurableRecoveryPlan } from '../core/projector/projection-types.js';
import { createSession, recallModelOnUnknownOutcome, resumeSession, SAFE_RECOVERY_POLICY, recoveryPlanOf } from '../session/session.js';
import type {
  Session,
  SessionIdKind,
  SessionLanguageModel,
  SessionPermissionDecision,
  SessionPermissionRequest,
  SessionRecoveryPolicy,
} from '../session/types.js';
import {
  DurableCommandConflictError,
  DurableEventStoreError,
  DurableSessionRecoveryError,
  DurableSessionRecoveryRequiredError,
  isDurableError,
} from '../protocol/errors.js';
import type { DurableInput, PermissionDecision, Priority } from '../protocol/event-payloads.js';
import type { DurableEventEnvelope } from '../protocol/events.js';
import { isValidId, type SessionId } from '../protocol/ids.js';
import { canonicalJson, type JsonObject, type JsonValue } from '../protocol/json.js';
import { RECOVERY_OPERATIONS } from '../protocol/recovery-operations.js';
import { AgentLiveStream } from './agent-stream.js';
import { TIMER_KINDS, type TimerTable } from './timers.js';

/**
 * The recovery policy of an agent in a session object unless its mount names one: the safe policy,
 * but an interrupted Turn continues in place — scheduled tools start (asking permission where
 * needed, so an answer given across an eviction is honoured), pure and idempotent tools that were
 * cut off run again, a non_idempotent one is never repeated (the plan parks it first).
 */
export const EDGE_RECOVERY_POLICY: Readonly<SessionRecoveryPolicy> = Object.freeze({
  ...SAFE_RECOVERY_POLICY,
  resumeTurn: 'in_place',
});

/**
 * {@link EDGE_RECOVERY_POLICY} plus `recallModelOnUnknownOutcome`, for a mount that asks for it
 * (`recoveryPolicy: EDGE_AUTO_RECOVERY_POLICY`): a model call cut off by an eviction or a restart
 * is recorded as `model_request_aborted` (`process_restart`) and the model is called again as a
 * new attempt of the same Request and Turn, so the answer continues without an operator (at the
 * price of a possibly billed duplicate call). A started non_idempotent tool still parks.
 */
export const EDGE_AUTO_RECOVERY_POLICY: Readonly<SessionRecoveryPolicy> = Object.freeze({
  ...EDGE_RECOVERY_POLICY,
  reconcileModelOutcome: recallModelOnUnknownOutcome,
});

/**
 * How often the alarm checks on a running agent. The watch row is never further ahead than this
 * while a request runs, so after an eviction or a restart of the runtime the object's first
 * wake-up (this alarm, when no client request comes first) is at most this long after the
 * runtime is back, and the request continues from there. Each check is one alarm invocation of a
 * live instance that only moves the row (no log read).
 */
export const AGENT_WATCH_MS = 3_000;
/** Default execution lease TTL of the object's Session. */
export const DEFAULT_AGENT_LEASE_TTL_MS = 30_000;
/** Prefix of the lease owner IDs of session object instances. */
export const OBJECT_LEASE_OWNER_PREFIX = 'session-object:';
/** Key of the agent watchdog row in the `timers` table. */
const WATCH_KEY = 'agent';

const SCHEMA = [
  `CREATE TABLE IF NOT EXISTS agent_requests (
     command_id TEXT PRIMARY KEY,
     position INTEGER NOT NULL,
     request_id TEXT NOT NULL UNIQUE,
     input_id TEXT NOT NULL,
     body TEXT NOT NULL,
     status TEXT NOT NULL
   )`,
  // The run loop's queue and the end-of-work check look rows up by status (the table keeps every request).
  `CREATE INDEX IF NOT EXISTS agent_requests_by_status ON agent_requests (status)`,
  `CREATE TABLE IF NOT EXISTS agent_permissions (
     permission_request_id TEXT PRIMARY KEY,
     decision TEXT NOT NULL,
     message TEXT
   )`,
  `CREATE TABLE IF NOT EXISTS agent_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)`,
  // Steering inputs taken but not applied yet (`input_applied` deletes the row): re-steered after an eviction.
  `CREATE TABLE IF NOT EXISTS agent_inputs (
     input_id TEXT PRIMARY KEY,
     request_id TEXT NOT NULL,
     body TEXT NOT NULL
   )`,
];

interface RequestRow {
  command_id: string;
  position: number;
  request_id: string;
  input_id: string;
  body: string;
  status: string;
}

/** A steering input as stored in `agent_inputs` until it is applied. */
interface StoredSteer {
  input: DurableInput;
  priority: 'now' | 'next';
}

interface StoredBody {
  input: DurableInput;
  priority: Priority;
  maxTurns?: number;
  model?: string;
  context?: JsonObject;
}

const PRIORITY_ORDER: Readonly<Record<Priority, number>> = { now: 0, next: 1, later: 2 };
const TERMINAL_STATUS: Readonly<Record<string, AgentRequestStatus>> = {
  request_completed: 'completed',
  request_failed: 'failed',
  request_interrupted: 'interrupted',
};

function invalid(message: string): DurableEventStoreError {
  return new DurableEventStoreError('DURABLE_EVENT_INVALID_INPUT', message);
}

function checkId(value: unknown, label: string): string {
  if (!isValidId(value)) throw invalid(`${label} must be a non-empty ID without control characters`);
  return value;
}

/** Field `key` of an RPC input, which may be any value. */
function fieldOf(input: unknown, key: string): unknown {
  return typeof input === 'object' && input !== null ? (input as Record<string, unknown>)[key] : undefined;
}

/**
 * What unblocks a parked host: the recovery routes whose operation acts on the plan's action,
 * under the execution lease (see docs/edge-agents.md, Eviction and crashes).
 */
function unblockHint(sessionId: string, plan: DurableRecoveryPlan | null): string {
  const base = `/v1/sessions/${sessionId}`;
  const routes = Object.values(RECOVERY_OPERATIONS)
    .filter((operation) => operation.mutates && plan !== null && (operation.planActions as readonly string[]).includes(plan.action))
    .map((operation) => `POST ${base}/recovery/${operation.segment}`);
  const act = routes.length > 0 ? routes.join(' or ') : `the recovery routes under ${base}/recovery/ (the plan is on GET ${base}/projection)`;
  const model = plan?.action === 'reconcile_model_outcome' ? '; or mount EDGE_AUTO_RECOVERY_POLICY, which calls the model again by itself' : '';
  return (
    `decide it with ${act} under the execution lease (POST ${base}/lease/acquire before, POST ${base}/lease/release after)${model}; ` +
    'the object then resumes and takes new requests'
  );
}

/** What the object lends to its agent host. */
interface AgentHostDeps {
  readonly store: SqlDurableEventStore;
  readonly timers: TimerTable;
  /** The owner's mount (`SessionObject.sessionAgent()`, which the object reads once per instance). */
  mount(): SessionAgentMount | undefined;
  /** Frames to every subscribed socket. */
  broadcast(frame: string): void;
  /** The session this object serves, when it is bound. */
  boundSession(): SessionId | null;
  /** Permission request IDs the log shows pending (projection of the object's journal). */
  pendingPermissions(sessionId: SessionId): Promise<string[]>;
}

type HostState = AgentStatus['state'];

/** A mount with a model: an agent the host runs. */
type ModelMount = SessionAgentMount & { model: SessionLanguageModel };

function hasModel(mount: SessionAgentMount | undefined): mount is ModelMount {
  return mount?.model !== undefined;
}

/** The agent part of a SessionObject (see the module header). */
export class SessionAgentHost {
  readonly live: AgentLiveStream;
  readonly #deps: AgentHostDeps;
  readonly #ownerId = `${OBJECT_LEASE_OWNER_PREFIX}${crypto.randomUUID()}`;
  #session: Session | null = null;
  #opening: Promise<Session | null> | null = null;
  #pumping = false;
  #state: HostState = 'idle';
  #plan: DurableRecoveryPlan | null = null;
  #message: string | null = null;
  #activeRequestId: string | null = null;
  /** The latest arming of the alarm; model and tool I/O wait for it (see `agent-stream.ts`). */
  #armed: Promise<void> = Promise.resolve();
  /** Requests `#send` is running (their terminal commit may close the host, see {@link #closeIfDone}). */
  readonly #sending = new Set<string>();
  /**
   * The `agent_requests` rows still queued or running, by request ID, as this instance wrote or
   * read them (`undefined`: read them first). Only this class writes the table; a host
   * transaction that rolls back forgets this and {@link #lastPosition}.
   */
  #live: Map<string, RequestRow> | undefined;
  /** The largest request position, once read. */
  #lastPosition: number | undefined;
  /** The `agent_meta` `active` flag as this instance last wrote or read it (`undefined`: read it). */
  #active: boolean | undefined;
  /** Permission callbacks waiting for an answer, by permission request ID. */
  readonly #permissionWaiters = new Map<string, (answer: SessionPermissionDecision) => void>();
  /**
   * The Request whose permission wait the resume of this instance presents again
   * (`restored: true`), until `resumeSession` returns: no Session exists yet to steer or abort,
   * so {@link submitInput} stores the input for it and {@link abortRequest} marks it in
   * {@link #abortOnResume}.
   */
  #restoring: string | null = null;
  /** A Request aborted while the resume was under way: interrupted as soon as the Session exists. */
  #abortOnResume: string | null = null;
  /** Called when the resume in flight settles or waits for a permission answer (see {@link #openedOrWaiting}). */
  readonly #onOpenSettled = new Set<() => void>();

  constructor(deps: AgentHostDeps) {
    this.#deps = deps;
    this.live = new AgentLiveStream(
      (frame) => deps.broadcast(frame),
      () => this.#armed,
    );
    const driver = deps.store.eventLog.driver;
    for (const statement of SCHEMA) driver.exec(statement);
  }

  get #driver() {
    return this.#deps.store.eventLog.driver;
  }

  /** The owner's mount, or `undefined` when the object runs no agent (no mount, or no model). */
  #mounted(): ModelMount | undefined {
    const mount = this.#deps.mount();
    return hasModel(mount) ? mount : undefined;
  }

  #requireMount(): ModelMount {
    const mount = this.#mounted();
    if (mount === undefined) throw invalid('this session object runs no agent (return { model } from SessionObject.sessionAgent())');
    return mount;
  }

  // ---- bookkeeping ----------------------------------------------------------------------------

  #isActive(): boolean {
    this.#active ??= this.#driver.query<{ value: string }>("SELECT value FROM agent_meta WHERE key = 'active'")[0]?.value === '1';
    return this.#active;
  }

  #setActive(active: boolean): void {
    this.#driver.exec("INSERT INTO agent_meta (key, value) VALUES ('active', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value", active ? '1' : '0');
    this.#active = active;
  }

  /** A transaction of this host; a rolled back one leaves the remembered `active` flag unknown. */
  #transaction<T>(fn: () => T): T {
    try {
      return this.#driver.transaction(fn);
    } catch (error) {
      this.#active = undefined;
      this.#live = undefined;
      this.#lastPosition = undefined;
      throw error;
    }
  }

  /**
   * Work is done once the Request the run loop sent ends and nothing else is queued or running:
   * the `active` flag and the watchdog go in the commit of that Request's terminal event (so no
   * transaction of their own follows it). A later Request the Session accepts on its own (a
   * steering input rolled over) brings them back in the commit of its `request_accepted`.
   */
  #closeIfDone(): void {
    if (this.#active === false || this.#liveRows().size > 0) return;
    this.#setActive(false);
    this.#deps.timers.remove(TIMER_KINDS.agent, WATCH_KEY);
  }

  /** A Request accepted while the host was closed (see {@link #closeIfDone}): watched again. */
  #reopenFor(): void {
    if (this.#session === null || this.#isActive()) return;
    this.#setActive(true);
    this.#putWatch();
    void this.#arm().catch(() => undefined);
  }

  #putWatch(): void {
    this.#deps.timers.put(TIMER_KINDS.agent, WATCH_KEY, this.#deps.timers.now() + AGENT_WATCH_MS, null);
  }

  /** Arms the alarm for the watchdog row; model and tool I/O wait for it to be set. */
  #arm(): Promise<void> {
    const armed = this.#deps.timers.arm();
    this.#armed = armed.catch((error: unknown) => {
      console.error(`session object agent: arming the alarm failed: ${String(error)}`);
    });
    return armed;
  }

  #rows(where: string, ...params: string[]): RequestRow[] {
    return this.#driver.query<RequestRow>(
      `SELECT command_id, position, request_id, input_id, body, status FROM agent_requests ${where}`,
      ...params,
    );
  }

  #setStatus(requestId: string, status: AgentRequestStatus): void {
    this.#driver.exec('UPDATE agent_requests SET status = ? WHERE request_id = ?', status, requestId);
    const row = this.#live?.get(requestId);
    if (row === undefined) return;
    if (status === 'queued' || status === 'running') row.status = status;
    else this.#live?.delete(requestId);
  }

  /** See {@link #live}. */
  #liveRows(): Map<string, RequestRow> {
    if (this.#live === undefined) {
      const live = new Map<string, RequestRow>();
      for (const row of this.#rows("WHERE status IN ('queued', 'running')")) live.set(row.request_id, row);
      this.#live = live;
    }
    return this.#live;
  }

  /** Follows committed events (called by the object after every commit). Never throws. */
  observe(events: readonly DurableEventEnvelope[]): void {
    try {
      // Objects without an agent pay nothing per commit.
      if (this.#mounted() === undefined) return;
      this.live.observe(events);
      for (const event of events) {
        const requestId = 'requestId' in event ? event.requestId : undefined;
        if (requestId === undefined) continue;
        if (event.type === 'request_accepted') {
          this.#setStatus(requestId, 'running');
          this.#reopenFor();
        } else if (event.type === 'request_started') this.#activeRequestId = requestId;
        else if (event.type === 'input_applied') this.#driver.exec('DELETE FROM agent_inputs WHERE input_id = ?', event.data.inputId);
        else if (event.type in TERMINAL_STATUS) {
          const status = TERMINAL_STATUS[event.type];
          if (status !== undefined) this.#setStatus(requestId, status);
          if (this.#sending.has(requestId)) this.#closeIfDone();
          // An input the Request ended before applying is not applied (as in the Session).
          this.#driver.exec('DELETE FROM agent_inputs WHERE request_id = ?', requestId);
          if (this.#activeRequestId === requestId) this.#activeRequestId = null;
        }
      }
    } catch (error) {
      console.error(`session object agent: tracking requests failed: ${String(error)}`);
    }
  }

  // ---- RPC ------------------------------------------------------------------------------------

  /** Stores a request (idempotent by `commandId`), arms the alarm, and runs it in the object. */
  async submitRequest(sessionId: SessionId, input: AgentRequestInput): Promise<AgentRequestAccepted> {
    const mount = this.#requireMount();
    if (typeof input !== 'object' || input === null) throw invalid('a request needs { commandId, input }');
    const commandId = checkId(input.commandId, 'commandId');
    const priority: Priority = input.priority ?? 'next';
    if (!(priority in PRIORITY_ORDER)) throw invalid('priority must be now, next or later');
    if (input.model !== undefined && mount.models?.[input.model] === undefined) {
      throw invalid(`no model named ${JSON.stringify(String(input.model).slice(0, 64))} is mounted`);
    }
    const body: StoredBody = {
      input: input.input,
      priority,
      ...(input.maxTurns === undefined ? {} : { maxTurns: input.maxTurns }),
      ...(input.model === undefined ? {} : { model: input.model }),
      ...(input.context === undefined ? {} : { context: input.context }),
    };
    const bodyJson = canonicalJson(body as unknown as JsonObject);
    await this.#refuseIfParked(sessionId, commandId);
    const { row, created } = this.#transaction(() => {
      const existing = this.#rows('WHERE command_id = ?', commandId)[0];
      if (existing !== undefined) {
        if (existing.body !== bodyJson) {
          throw new DurableCommandConflictError(`command ${commandId} was submitted with another request body`, {
            details: { commandId },
          });
        }
        return { row: existing, created: false };
      }
      // Positions grow with insertion, so the last row inserted has the largest (no scan).
      this.#lastPosition ??= this.#driver.query<{ n: number }>('SELECT position AS n FROM agent_requests ORDER BY rowid DESC LIMIT 1')[0]?.n ?? 0;
      const position = this.#lastPosition + 1;
      const fresh: RequestRow = {
        command_id: commandId,
        position,
        request_id: `req-${crypto.randomUUID()}`,
        input_id: `in-${crypto.randomUUID()}`,
        body: bodyJson,
        status: 'queued',
      };
      this.#driver.exec(
        'INSERT INTO agent_requests (command_id, position, request_id, input_id, body, status) VALUES (?, ?, ?, ?, ?, ?)',
        fresh.command_id,
        fresh.position,
        fresh.request_id,
        fresh.input_id,
        fresh.body,
        fresh.status,
      );
      this.#setActive(true);
      this.#putWatch();
      return { row: fresh, created: true };
    });
    if (created) {
      this.#lastPosition = row.position;
      this.#live?.set(row.request_id, { ...row });
    }
    // The alarm is set before any model or tool I/O of this request can start: the model and tool
    // wrappers wait for it, while the request's first commits go ahead.
    const armed = this.#arm();
    if (created) {
      const session = this.#session;
      if (priority === 'now' && this.#pumping && session !== null && session.state === 'running') {
        // Interrupts the running request at once; the run loop picks up after it.
        void this.#send(session, row);
      } else {
        this.#kick(sessionId);
      }
    }
    await armed;
    return {
      commandId,
      requestId: row.request_id,
      inputId: row.input_id,
      created,
      // SAFETY: statuses are only written by this class, from AgentRequestStatus values.
      status: row.status as AgentRequestStatus,
    };
  }

  /**
   * A new request (a `commandId` not stored yet) while the host is parked on a recovery plan is
   * refused with `DurableSessionRecoveryRequiredError` saying why and what unblocks it (the
   * request would otherwise wait, queued, behind the parked one without a word). A resume in
   * flight (a new instance's first wake-up) is waited for first, so its outcome decides.
   */
  async #refuseIfParked(sessionId: SessionId, commandId: string): Promise<void> {
    await this.#openedOrWaiting();
    if (this.#state !== 'needs_recovery') return;
    if (this.#rows('WHERE command_id = ?', commandId)[0] !== undefined) return;
    const plan = this.#plan;
    const why = plan === null ? (this.#message ?? 'the session needs recovery') : `${plan.action}: ${plan.reason}`;
    throw new DurableSessionRecoveryRequiredError(
      `the agent cannot take a new request: request ${plan?.requestId ?? '(unknown)'} is parked on its recovery plan (${why}). ` +
        `To unblock it, ${unblockHint(sessionId, plan)}. This request was not stored; send it again then.`,
      {
        details: {
          // SAFETY: the plan is plain frozen data (IDs, strings, numbers, views of JSON payloads).
          plan: plan as unknown as JsonValue,
          blockedRequestId: plan?.requestId ?? null,
          unblock: unblockHint(sessionId, plan),
        },
      },
    );
  }

  /** Resolves when no resume is in flight, or once it settles or waits for a permission answer. */
  #openedOrWaiting(): Promise<void> {
    const opening = this.#opening;
    if (opening === null || this.#restoring !== null) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const settled = (): void => {
        this.#onOpenSettled.delete(settled);
        resolve();
      };
      this.#onOpenSettled.add(settled);
      void opening.then(settled, settled);
    });
  }

  #openSettled(): void {
    const waiters = [...this.#onOpenSettled];
    this.#onOpenSettled.clear();
    for (const resolve of waiters) resolve();
  }

  /** Steering input for the running request (a new request when none runs). */
  async submitInput(sessionId: SessionId, input: AgentSteerInput): Promise<AgentSteerAccepted> {
    this.#requireMount();
    if (typeof input !== 'object' || input === null) throw invalid('steering needs { input }');
    const priority = input.priority ?? 'next';
    if (priority !== 'now' && priority !== 'next') throw invalid('priority must be now or next');
    const restoring = this.#restoring;
    if (restoring !== null && this.#session === null) return this.#storeForResume(restoring, input.input, priority);
    const session = await this.#open(sessionId);
    if (session === null || this.#activeRequestId === null) {
      const accepted = await this.submitRequest(sessionId, { commandId: `steer-${crypto.randomUUID()}`, input: input.input, priority: 'next' });
      return { inputId: accepted.inputId, requestId: accepted.requestId };
    }
    // Stored before the Session takes it, so the answer (sent after this write is durable) means
    // the input survives an eviction: a new instance re-steers it with the same ID (`#resteer`).
    const inputId = `in-${crypto.randomUUID()}`;
    const steered: StoredSteer = { input: input.input, priority };
    this.#driver.exec(
      'INSERT INTO agent_inputs (input_id, request_id, body) VALUES (?, ?, ?)',
      inputId,
      this.#activeRequestId,
      JSON.stringify(steered),
    );
    try {
      const handle = await session.steer(input.input, { priority, inputId });
      if (handle.requestId !== this.#activeRequestId) {
        this.#driver.exec('UPDATE agent_inputs SET request_id = ? WHERE input_id = ?', handle.requestId, inputId);
      }
      return { inputId: handle.inputId, requestId: handle.requestId };
    } catch (error) {
      this.#driver.exec('DELETE FROM agent_inputs WHERE input_id = ?', inputId);
      throw error;
    }
  }

  /**
   * A steering input taken while the resume presents a permission again (see {@link #restoring}):
   * stored like any other, and steered by {@link #resteer} once `resumeSession` returns (the
   * Session re-reads nothing else: the row is all it needs).
   */
  #storeForResume(requestId: string, input: DurableInput, priority: 'now' | 'next'): AgentSteerAccepted {
    const inputId = `in-${crypto.randomUUID()}`;
    const steered: StoredSteer = { input, priority };
    this.#driver.exec('INSERT INTO agent_inputs (input_id, request_id, body) VALUES (?, ?, ?)', inputId, requestId, JSON.stringify(steered));
    return { inputId, requestId };
  }

  /**
   * After a resume: steers the stored inputs of the resumed Request again, with their IDs (one
   * already applied is recognized and not applied twice); inputs of any other Request are dropped
   * (that Request ended, or was rolled over to a new one, before applying them).
   */
  #resteer(session: Session, requestId: string | null): void {
    const rows = this.#driver.query<{ input_id: string; request_id: string; body: string }>('SELECT input_id, request_id, body FROM agent_inputs');
    for (const row of rows) {
      if (row.request_id !== requestId) {
        this.#driver.exec('DELETE FROM agent_inputs WHERE input_id = ?', row.input_id);
        continue;
      }
      const stored = JSON.parse(row.body) as StoredSteer;
      session.steer(stored.input, { priority: stored.priority, inputId: row.input_id }).catch((error: unknown) => {
        console.error(`session object agent: re-steering input ${row.input_id} failed: ${String(error)}`);
      });
    }
  }

  /** Aborts a request: the running one is interrupted (`user_abort`), a queued one is dropped. */
  async abortRequest(sessionId: SessionId, input: { requestId: string }): Promise<AgentAbortResult> {
    this.#requireMount();
    const requestId = checkId(fieldOf(input, 'requestId'), 'requestId');
    const row = this.#rows('WHERE request_id = ?', requestId)[0];
    if (row === undefined && this.#activeRequestId !== requestId) {
      throw new DurableSessionRecoveryError('DURABLE_RECOVERY_TARGET_NOT_FOUND', `no request ${requestId} in this session`);
    }
    if (row?.status === 'queued') {
      this.#setStatus(requestId, 'cancelled');
      return { requestId, status: 'cancelled' };
    }
    if (this.#session === null && this.#opening !== null && (row?.status === 'running' || this.#restoring === requestId)) {
      // The resume is under way (presenting a permission again, say): the waits of this Request
      // are cancelled, and the Session interrupts it as soon as `resumeSession` returns.
      this.#abortOnResume = requestId;
      if (this.#restoring === requestId) this.#cancelWaits();
      await this.#opening.catch(() => undefined);
    }
    if (this.#activeRequestId === requestId && this.#session !== null) {
      await this.#session.abort('user_abort');
      this.#kick(sessionId);
    }
    const status = this.#rows('WHERE request_id = ?', requestId)[0]?.status;
    // SAFETY: see submitRequest.
    return { requestId, status: (status ?? 'interrupted') as AgentRequestStatus };
  }

  /** Answers every permission wait of this instance with `cancel` (an abort reaches a restored wait this way). */
  #cancelWaits(): void {
    const waiters = [...this.#permissionWaiters.values()];
    this.#permissionWaiters.clear();
    for (const waiter of waiters) waiter('cancel');
  }

  /** Stores a permission answer (first wins) and resumes the run waiting for it. */
  async answerPermission(
    sessionId: SessionId,
    input: { permissionRequestId: string; answer: AgentPermissionAnswer },
  ): Promise<AgentPermissionReceipt> {
    this.#requireMount();
    const permissionRequestId = checkId(fieldOf(input, 'permissionRequestId'), 'permissionRequestId');
    const answer = fieldOf(input, 'answer') as AgentPermissionAnswer | undefined;
    if (typeof answer !== 'object' || answer === null) throw invalid('an answer needs { decision }');
    const decision: PermissionDecision = answer.decision;
    if (decision !== 'allow' && decision !== 'deny' && decision !== 'cancel') throw invalid('decision must be allow, deny or cancel');
    if (answer.message !== undefined && typeof answer.message !== 'string') throw invalid('message must be a string');
    const earlier = this.#storedAnswer(permissionRequestId);
    if (earlier !== undefined) return { permissionRequestId, decision: earlier.decision, created: false };
    if (!this.#permissionWaiters.has(permissionRequestId) && !(await this.#deps.pendingPermissions(sessionId)).includes(permissionRequestId)) {
      throw new DurableSessionRecoveryError('DURABLE_RECOVERY_TARGET_NOT_FOUND', `no pending permission ${permissionRequestId}`);
    }
    this.#transaction(() => {
      this.#driver.exec(
        'INSERT INTO agent_permissions (permission_request_id, decision, message) VALUES (?, ?, ?)',
        permissionRequestId,
        decision,
        answer.message ?? null,
      );
      this.#setActive(true);
      this.#putWatch();
    });
    await this.#arm();
    const waiter = this.#permissionWaiters.get(permissionRequestId);
    if (waiter !== undefined) {
      this.#permissionWaiters.delete(permissionRequestId);
      if (this.#permissionWaiters.size === 0 && this.#state === 'waiting_permission') this.#state = 'running';
      waiter(answer.message === undefined ? decision : { decision, message: answer.message });
    } else {
      this.#kick(sessionId);
    }
    return { permissionRequestId, decision, created: true };
  }

  /** What the agent is doing. */
  agentStatus(sessionId: SessionId): AgentStatus {
    void sessionId;
    return {
      state: this.#state,
      activeRequestId: this.#activeRequestId,
      queued: this.#queued().map((row) => row.request_id),
      pendingPermissions: [...this.#permissionWaiters.keys()],
      plan: this.#plan,
      message: this.#message,
    };
  }

  #storedAnswer(permissionRequestId: string): { decision: PermissionDecision; message?: string } | undefined {
    const row = this.#driver.query<{ decision: PermissionDecision; message: string | null }>(
      'SELECT decision, message FROM agent_permissions WHERE permission_request_id = ?',
      permissionRequestId,
    )[0];
    if (row === undefined) return undefined;
    return row.message === null ? { decision: row.decision } : { decision: row.decision, message: row.message };
  }

  // ---- running ----------------------------------------------------------------------------------

  /** Wake-up of a new instance, the watchdog alarm, or a recovery operation: continue any work left. */
  wake(): void {
    try {
      if (this.#mounted() === undefined || !this.#isActive()) return;
      const sessionId = this.#deps.boundSession();
      if (sessionId === null) return;
      void this.#arm().catch(() => undefined);
      this.#kick(sessionId);
    } catch (error) {
      console.error(`session object agent: wake-up failed: ${String(error)}`);
    }
  }

  /** The watchdog alarm: keeps itself while the agent runs here, resumes it when nothing runs it. */
  async onWatch(): Promise<void> {
    if (this.#state === 'running' && this.#session !== null) {
      this.#putWatch();
      return;
    }
    this.wake();
  }

  /** A recovery operation went through, or a lease was released: a parked host tries again. */
  afterRecovery(): void {
    if (this.#pumping && this.#session !== null) return;
    if (this.#state === 'needs_recovery' || this.#state === 'stopped' || this.#message !== null) {
      this.#state = 'idle';
      this.#plan = null;
      this.#message = null;
      this.#session = null;
    }
    this.wake();
  }

  #kick(sessionId: SessionId): void {
    if (this.#pumping) return;
    this.#pumping = true;
    void this.#pump(sessionId)
      .catch((error: unknown) => {
        console.error(`session object agent: the run loop failed: ${String(error)}`);
        this.#state = 'stopped';
        this.#message = error instanceof Error ? error.message : String(error);
      })
      .finally(() => {
        this.#pumping = false;
      });
  }

  #queued(): RequestRow[] {
    return [...this.#liveRows().values()].filter((row) => row.status === 'queued').sort((a, b) => {
      const pa = PRIORITY_ORDER[(JSON.parse(a.body) as StoredBody).priority];
      const pb = PRIORITY_ORDER[(JSON.parse(b.body) as StoredBody).priority];
      return pa - pb || a.position - b.position;
    });
  }

  async #pump(sessionId: SessionId): Promise<void> {
    const session = await this.#open(sessionId);
    if (session === null) return;
    for (;;) {
      await session.whenIdle();
      if (session.state !== 'idle') {
        this.#stopped(`the session is ${session.state}`);
        return;
      }
      const next = this.#queued()[0];
      if (next === undefined) break;
      this.#state = 'running';
      await this.#send(session, next);
    }
    this.#state = 'idle';
    this.#activeRequestId = null;
    // Nothing left: the watchdog goes (unless the last Request's terminal commit took it, see
    // #closeIfDone); the next request arms it again. Nothing ran since the queue was found empty
    // above (no await in between), so it is still empty.
    if (!this.#isActive()) return;
    this.#transaction(() => {
      this.#setActive(false);
      this.#deps.timers.remove(TIMER_KINDS.agent, WATCH_KEY);
    });
  }

  async #send(session: Session, row: RequestRow): Promise<void> {
    const mount = this.#requireMount();
    const body = JSON.parse(row.body) as StoredBody;
    const model = body.model === undefined ? undefined : mount.models?.[body.model];
    this.#sending.add(row.request_id);
    try {
      // The row's IDs: a re-send of a row whose Request the log already has (accepted before an
      // eviction) finds that Request instead of accepting it twice (see `SessionSendOptions.requestId`).
      const handle = await session.send(body.input, {
        requestId: row.request_id,
        inputId: row.input_id,
        priority: body.priority,
        ...(body.maxTurns === undefined ? {} : { maxTurns: body.maxTurns }),
        ...(model === undefined ? {} : { model: this.#wrapped(model) }),
        ...(body.context === undefined ? {} : { context: body.context }),
      });
      this.#activeRequestId = handle.requestId;
      const result = await handle.result.catch(() => undefined);
      // A re-sent row saw no new events: take its status from the Request's outcome.
      if (result !== undefined && this.#liveRows().get(row.request_id)?.status === 'queued') {
        this.#setStatus(row.request_id, result.status);
      }
    } catch (error) {
      // The request could not be accepted (invalid input, say): it never ran.
      if (this.#liveRows().get(row.request_id)?.status === 'queued') {
        this.#setStatus(row.request_id, 'failed');
      }
      this.#message = error instanceof Error ? error.message : String(error);
    } finally {
      this.#sending.delete(row.request_id);
    }
  }

  readonly #wrappedModels = new WeakMap<SessionLanguageModel, SessionLanguageModel>();

  #wrapped(model: SessionLanguageModel): SessionLanguageModel {
    let wrapped = this.#wrappedModels.get(model);
    if (wrapped === undefined) {
      wrapped = this.live.wrapModel(model);
      this.#wrappedModels.set(model, wrapped);
    }
    return wrapped;
  }

  #stopped(message: string): void {
    this.#state = 'stopped';
    this.#message = message;
    this.#session = null;
    this.live.reset();
  }

  /** Opens (creates or resumes) the Session once per instance; `null` when parked. */
  async #open(sessionId: SessionId): Promise<Session | null> {
    const current = this.#session;
    if (current !== null && (current.state === 'idle' || current.state === 'running')) return current;
    if (this.#state === 'needs_recovery') return null;
    this.#opening ??= this.#openFresh(sessionId).finally(() => {
      this.#opening = null;
    });
    return this.#opening;
  }

  async #openFresh(sessionId: SessionId): Promise<Session | null> {
    const mount = this.#requireMount();
    this.#takeOverLease(sessionId);
    const models = new Map<string, SessionLanguageModel>();
    for (const model of [mount.model, ...Object.values(mount.models ?? {})]) models.set(`${model.provider}\u0000${model.modelId}`, model);
    const options = {
      sessionId,
      model: this.#wrapped(mount.model),
      resolveModel: (selection: { provider: string; model: string }) => {
        const found = models.get(`${selection.provider}\u0000${selection.model}`);
        return found === undefined ? undefined : this.#wrapped(found);
      },
      tools: this.live.wrapTools(mount.tools ?? {}),
      ...(mount.system === undefined ? {} : { system: mount.system }),
      ...(mount.maxTurns === undefined ? {} : { maxTurns: mount.maxTurns }),
      ...(mount.callSettings === undefined ? {} : { callSettings: mount.callSettings }),
      ...(mount.streaming === undefined ? {} : { streaming: mount.streaming }),
      durableEventStore: this.#deps.store,
      durableExecutionLeaseStore: this.#deps.store,
      executionLease: { ownerId: this.#ownerId, ttlMs: mount.leaseTtlMs ?? DEFAULT_AGENT_LEASE_TTL_MS },
      onPermission: (request: SessionPermissionRequest) => this.#askPermission(request),
      generateId: (kind: SessionIdKind) => `${kind}-${crypto.randomUUID()}`,
    };
    this.#state = 'running';
    try {
      const empty = this.#deps.store.eventLog.getHeadSequence(sessionId) === null;
      const session = empty
        ? await createSession(options)
        : await resumeSession({ ...options, recoveryPolicy: mount.recoveryPolicy ?? EDGE_RECOVERY_POLICY });
      this.#restoring = null;
      this.#session = session;
      this.#plan = null;
      this.#message = null;
      const resumed = session.resumedRequest;
      this.#resteer(session, resumed?.requestId ?? null);
      if (resumed !== null) {
        this.#activeRequestId = resumed.requestId;
        // Before the resumed run takes its first step (it starts on the next macrotask).
        if (this.#abortOnResume === resumed.requestId) void session.abort('user_abort').catch(() => undefined);
      }
      this.#abortOnResume = null;
      // The run loop waits for the resumed Request (`whenIdle`); callers of #open get the Session now.
      return session;
    } catch (error) {
      this.#restoring = null;
      this.#abortOnResume = null;
      const plan = recoveryPlanOf(error);
      if (error instanceof DurableSessionRecoveryRequiredError || plan !== undefined) {
        this.#state = 'needs_recovery';
        this.#plan = plan ?? null;
        this.#message = error instanceof Error ? error.message : String(error);
        this.#session = null;
        // Nothing will move without a decision: no watchdog until a recovery operation.
        this.#deps.timers.remove(TIMER_KINDS.agent, WATCH_KEY);
        return null;
      }
      if (isDurableError(error) && error.code === 'DURABLE_EXECUTION_LEASE_CONFLICT') {
        // Someone else (an operator doing recovery) holds the lease: try again when it is released.
        this.#state = 'idle';
        this.#message = `waiting for the execution lease: ${error.message}`;
        return null;
      }
      this.#stopped(isDurableError(error) ? `${error.code}: ${error.message}` : String(error));
      throw error;
    }
  }

  /**
   * Releases a lease an earlier instance of this object left behind (that instance is gone: the
   * runtime runs one instance at a time). The next acquisition bumps the fencing token, so the
   * earlier instance's commits can never land. Leases of other owners are left alone.
   */
  #takeOverLease(sessionId: SessionId): void {
    const eventLog = this.#deps.store.eventLog;
    const lease = eventLog.inspectExecutionLease(sessionId);
    if (lease === null || lease.released || lease.expiresAtMs <= Date.now()) return;
    if (!lease.ownerId.startsWith(OBJECT_LEASE_OWNER_PREFIX) || lease.ownerId === this.#ownerId) return;
    eventLog.releaseExecutionLease(sessionId, { leaseId: lease.leaseId, ownerId: lease.ownerId, fencingToken: lease.fencingToken });
  }

  async #askPermission(request: SessionPermissionRequest): Promise<SessionPermissionDecision> {
    const stored = this.#storedAnswer(request.permissionRequestId);
    if (stored !== undefined) return stored.message === undefined ? stored.decision : stored;
    this.#activeRequestId = request.requestId;
    // An aborted Request's other waits, presented by the same resume, are cancelled too.
    if (this.#abortOnResume === request.requestId) return 'cancel';
    // Presented by the resume (`restored`): no Session exists until the answer (see #restoring).
    if (request.restored && this.#session === null) this.#restoring = request.requestId;
    return new Promise<SessionPermissionDecision>((resolve) => {
      this.#permissionWaiters.set(request.permissionRequestId, resolve);
      this.#state = 'waiting_permission';
      this.#openSettled();
      // Nothing is due until someone answers: no watchdog (the answer wakes the object).
      this.#deps.timers.remove(TIMER_KINDS.agent, WATCH_KEY);
      request.signal.addEventListener(
        'abort',
        () => {
          if (this.#permissionWaiters.get(request.permissionRequestId) === resolve) this.#permissionWaiters.delete(request.permissionRequestId);
          resolve('cancel');
        },
        { once: true },
      );
    });
  }
}
