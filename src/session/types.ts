/**
 * Public types of the agent Session: options, the Session itself, tools, the host permission
 * callback, the recovery policy and the stream frames.
 *
 * A Session runs an agent loop (model call -> tool calls -> next model call) and writes every
 * lifecycle fact through `DurableSessionJournal`, in the order the recovery plan relies on. The
 * model port is the AI SDK provider specification (`LanguageModelV4` of `@ai-sdk/provider` 4.x, and
 * `LanguageModelV3` of 3.x), so any AI SDK provider plugs in unchanged; only `model-port.ts` knows
 * the specification.
 *
 * Everything here is runtime-neutral: a Session runs on Node and inside a Durable Object.
 */
import type { LanguageModelV3, LanguageModelV3CallOptions, LanguageModelV4 } from '@ai-sdk/provider';
import type { DurableCheckpointPolicy } from '../core/checkpoint/policy.js';
import type { DurabilityPortLike } from '../core/durability/port-types.js';
import type { DurableExecutionLease } from '../core/lease/execution-lease.js';
import type { TimeSource } from '../core/time.js';
import type {
  DurableModelAttemptView,
  DurableRecoveryPlan,
  DurableToolAttemptView,
  DurableActiveRequestView,
  DurablePermissionView,
} from '../core/projector/projection-types.js';
import type {
  DurableModelOutcome,
  DurableRequestOutcome,
  DurableToolOutcome,
} from '../core/recovery/coordinator-types.js';
import type {
  DurableExecutionFence,
  DurableEventStore,
  DurableExecutionLeaseStore,
} from '../core/store.js';
import type {
  DurableErrorInfo,
  DurableInput,
  DurableReason,
  InterruptBehavior,
  ModelIdentity,
  ModelResponse,
  ModelSelection,
  PermissionDecision,
  Priority,
  RequestUsage,
  SideEffect,
} from '../protocol/event-payloads.js';
import type { DurableEventEnvelope } from '../protocol/events.js';
import type {
  EventSequence,
  InputId,
  ModelAttemptId,
  RequestId,
  SessionId,
  ToolAttemptId,
  TurnId,
  WorkerId,
} from '../protocol/ids.js';
import type { JsonObject, JsonValue } from '../protocol/json.js';

// ---------------------------------------------------------------------------------------------
// Injectable clock and identifiers
// ---------------------------------------------------------------------------------------------

/** What an identifier is generated for (see {@link SessionOptions.generateId}). */
export type SessionIdKind = 'session' | 'request' | 'input' | 'turn' | 'model_attempt' | 'tool_attempt' | 'permission';

/**
 * Generates a fresh identifier. It must never return the same value twice for one session (the
 * projector refuses reused IDs). Command IDs are derived from these, so a retry of one commit
 * reuses its command ID and reconciles instead of writing twice.
 */
export type SessionIdGenerator = (kind: SessionIdKind) => string;

/** Epoch milliseconds; stamps `occurredAt` and drives the durability port's deadlines. */
export type SessionClock = () => number;

// ---------------------------------------------------------------------------------------------
// Tools
// ---------------------------------------------------------------------------------------------

/**
 * What a tool handler receives next to its input. A tool runs in one of two ways: the model calls
 * it in a Request of a Session, or (inside a session object, `docs/edge-agents.md`) it is started
 * as a run over `POST .../runs/:runId/tool-calls`. The Request's IDs are `undefined` in a run.
 */
export interface SessionToolContext {
  readonly sessionId: SessionId;
  /** The durability run the call belongs to: the Request's ID, or the run's ID in a run. */
  readonly runId: string;
  readonly requestId: RequestId | undefined;
  readonly turnId: TurnId | undefined;
  readonly toolAttemptId: ToolAttemptId | undefined;
  /** The tool call ID (the model's, or the run's): stable across a retry or replay of the call. */
  readonly toolCallId: string;
  readonly toolName: string;
  /**
   * Aborts when the Session cancels the tool: `abort()`, `close()`, a `now` input that interrupts
   * (tools with `interruptBehavior: 'cancel'`), `suspendForHandoff()`, or the loss of the lease.
   */
  readonly signal: AbortSignal;
  /**
   * The fence of the execution lease this worker holds (undefined without a lease). A tool that
   * writes to an external system should pass `fencingToken` along, so that system can refuse
   * writes from a worker that lost the session: the ledger cannot fence foreign resources.
   */
  readonly executionFence: DurableExecutionFence | undefined;
  /** The Request's runtime context (as persisted in `request_accepted`); `{}` in a run. */
  readonly context: JsonObject;
  /**
   * Durability port scoped to `(runId, toolName, toolCallId)`: `step` results, `sleep`
   * deadlines and `waitFor` deliveries survive a crash and are replayed by a retry of the call.
   * `undefined` when the store does not implement the durability records.
   */
  readonly step: DurabilityPortLike['step'] | undefined;
  readonly sleep: DurabilityPortLike['sleep'] | undefined;
  readonly waitFor: DurabilityPortLike['waitFor'] | undefined;
  /** Emits a transient `tool_progress` frame on the Session's stream (never persisted; nothing in a run). */
  progress(data: JsonValue): void;
}

/**
 * A tool the model may call.
 *
 * @example
 * const getWeather = defineTool({
 *   description: 'Current weather for a city',
 *   inputSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
 *   sideEffect: 'pure',
 *   execute: async ({ city }: { city: string }) => ({ city, celsius: 21 }),
 * });
 */
export interface SessionTool<I = JsonValue, O extends JsonValue = JsonValue> {
  /** Shown to the model. */
  description?: string;
  /** JSON Schema of the input, shown to the model (default: any object). */
  inputSchema?: JsonObject;
  /**
   * Whether running it again is safe: `pure` (no effect), `idempotent` (same effect twice is one
   * effect), `non_idempotent` (never replayed automatically; an unknown outcome needs a human).
   * In a run, a `non_idempotent` call is executed once: no retry after a throw, no replay after
   * an interruption (recorded failed with `TOOL_OUTCOME_UNKNOWN`).
   */
  sideEffect: SideEffect;
  /** What a `now` input does to a running call: `cancel` aborts its signal, `block` lets it finish (default `cancel`). */
  interruptBehavior?: InterruptBehavior;
  /** Ask the host permission callback before the tool starts (default `false`); such a call is refused as a run. */
  needsPermission?: boolean | ((input: I) => boolean);
  /** Message shown with the permission request. */
  permissionMessage?: (input: I) => string;
  /**
   * Repairs the model's arguments into the execution input (default: the arguments as parsed).
   * Both are persisted: `tool_scheduled.modelInput` (original) and `tool_scheduled.input` (repaired).
   */
  repairInput?: (modelInput: JsonValue) => I;
  /** Runs the tool. A returned value is `tool_completed`; a thrown error is `tool_failed`. */
  execute(input: I, context: SessionToolContext): O | Promise<O>;
}

/**
 * Any tool, whatever its input type: what a tool record holds. Parameters are `never` and results
 * `unknown`, so every `SessionTool<I, O>` fits; the Session passes each tool the input persisted for it.
 */
export interface AnySessionTool {
  description?: string;
  inputSchema?: JsonObject;
  sideEffect: SideEffect;
  interruptBehavior?: InterruptBehavior;
  needsPermission?: boolean | ((input: never) => boolean);
  permissionMessage?: (input: never) => string;
  repairInput?: (modelInput: JsonValue) => unknown;
  execute(input: never, context: SessionToolContext): unknown;
}

// ---------------------------------------------------------------------------------------------
// Permissions
// ---------------------------------------------------------------------------------------------

/** A permission the host is asked to decide. */
export interface SessionPermissionRequest {
  readonly sessionId: SessionId;
  readonly requestId: RequestId;
  readonly turnId: TurnId;
  readonly toolAttemptId: ToolAttemptId;
  readonly permissionRequestId: string;
  readonly toolCallId: string;
  readonly toolName: string;
  readonly input: JsonValue;
  readonly message?: string;
  /** True when the request is presented again after a restart (`resolve_permissions` recovery). */
  readonly restored: boolean;
  /** Aborts when the Session stops waiting (abort, close, handoff, lease loss). */
  readonly signal: AbortSignal;
}

/** The host's answer: a decision, optionally with a message stored in `permission_resolved`. */
export type SessionPermissionDecision = PermissionDecision | { decision: PermissionDecision; message?: string };

/**
 * Host permission callback. `allow` runs the tool; `deny` and `cancel` commit
 * `permission_resolved` and `tool_cancelled` in one batch. Without a callback, a tool that needs
 * permission is cancelled.
 */
export type SessionPermissionHandler = (request: SessionPermissionRequest) => Promise<SessionPermissionDecision> | SessionPermissionDecision;

// ---------------------------------------------------------------------------------------------
// Recovery policy
// ---------------------------------------------------------------------------------------------

/** What a recovery callback can read. */
export interface SessionRecoveryContext {
  readonly sessionId: SessionId;
  readonly plan: DurableRecoveryPlan;
  readonly request: DurableActiveRequestView | null;
  /** The last confirmed model response of the active Request, from the log. */
  readonly lastResponse: ModelResponse | undefined;
}

/**
 * How `resumeSession` acts on a recovery plan it may not act on alone. Each field maps one plan
 * action to recovery-coordinator calls; an action without a mapping (or a callback returning
 * `undefined`) raises `DurableSessionRecoveryRequiredError` carrying the plan. Whatever the policy,
 * a `non_idempotent` tool or a model call with an unknown outcome is never run again: only a
 * callback that states the outcome (as established outside the log) moves such a session on.
 */
export interface SessionRecoveryPolicy {
  /**
   * `rollover_request` (a Request started, applied exactly its initial input, and ran no Turn):
   * roll it over with `prepareRequestRecovery`, the prepared input being the original input. Sound
   * for Sessions without input preparation hooks (this Session has none).
   */
  rolloverRequest?: boolean;
  /**
   * `resume_turn` (the active Turn's model outcome is known and no tool is unsafe):
   * - `rollover`: `prepareTurnRecovery` (cancels unfinished retry-safe tools, continues in a new
   *   Request carrying the recovery facts); fails closed when a non_idempotent tool already ran;
   * - `in_place`: continue the same Turn: start scheduled tools (asking permission where needed),
   *   run retryable pure/idempotent tools again, then carry on;
   * - `rollover_or_in_place`: `rollover`, and `in_place` only when the coordinator refuses the
   *   rollover because a non_idempotent tool already has a terminal outcome (which in place never repeats).
   */
  resumeTurn?: 'rollover' | 'in_place' | 'rollover_or_in_place';
  /**
   * `reconcile_request_outcome` after a Turn that ended with tool calls (the model had not
   * answered yet): start the next Turn in place. Nothing is repeated: the next model call is a new
   * call over durable results. A Turn that ended without tool calls is never continued this way.
   */
  continueAfterToolTurn?: boolean;
  /** `resolve_permissions`: ask the host permission callback again, or decide `deny` / `cancel` for every pending one. */
  resolvePermissions?: 'ask' | 'deny' | 'cancel';
  /** `reconcile_tool_outcomes`: the outcome of each started non_idempotent tool, established with the external system. */
  reconcileToolOutcome?: (tool: DurableToolAttemptView, context: SessionRecoveryContext) => Promise<DurableToolOutcome | undefined> | DurableToolOutcome | undefined;
  /** `reconcile_model_outcome`: the outcome of the started model call, from provider or application records. */
  reconcileModelOutcome?: (
    attempt: DurableModelAttemptView,
    context: SessionRecoveryContext,
  ) => Promise<DurableModelOutcome | undefined> | DurableModelOutcome | undefined;
  /** `reconcile_request_inputs`: the final prepared input of the Request, after checking its preparation. */
  reconcileRequestInputs?: (
    request: DurableActiveRequestView,
    context: SessionRecoveryContext,
  ) => Promise<DurableInput | undefined> | DurableInput | undefined;
  /** `reconcile_request_outcome`: the final outcome of a Request whose last Turn ended without one. */
  reconcileRequestOutcome?: (
    request: DurableActiveRequestView,
    context: SessionRecoveryContext,
  ) => Promise<DurableRequestOutcome | undefined> | DurableRequestOutcome | undefined;
}

// ---------------------------------------------------------------------------------------------
// Options
// ---------------------------------------------------------------------------------------------

/** Lease settings the Session acquires (and releases) itself. */
export interface SessionExecutionLeaseOptions {
  ownerId: WorkerId | string;
  ttlMs: number;
  heartbeatIntervalMs?: number;
  /** Deadline of each lease store call (default and cap: `durableStoreTimeoutMs`). */
  storeTimeoutMs?: number;
  /** Pass the `leaseId` of a `DurableExecutionLeaseTimeoutError` to reconcile an uncertain acquisition. */
  leaseId?: string;
}

/**
 * A model the Session accepts: an AI SDK `LanguageModelV4` (`@ai-sdk/provider` 4.x, AI SDK 7) or
 * `LanguageModelV3` (3.x, AI SDK 6). Any other `specificationVersion` is refused (`SESSION_DURABLE_RECORDER_INVALID`).
 */
export type SessionLanguageModel = LanguageModelV4 | LanguageModelV3;

/** Options of {@link createSession}. */
export interface SessionOptions {
  /** The session's ID (default: generated). */
  sessionId?: SessionId | string;
  /** The model every Request uses unless it names another one. */
  model: SessionLanguageModel;
  /** Provider identity recorded on `model_request_started` (default `{ provider: model.provider, api: 'ai-sdk.language-model.<specificationVersion>' }`, e.g. `ai-sdk.language-model.v4`). */
  modelIdentity?: ModelIdentity;
  /** Maps a persisted model selection back to a model on resume (default: `model` when provider and ID match). */
  resolveModel?: (selection: ModelSelection) => SessionLanguageModel | undefined;
  /** Provider call settings passed on every model call (temperature, maxOutputTokens, ...). */
  callSettings?: Omit<LanguageModelV3CallOptions, 'prompt' | 'tools' | 'abortSignal'>;
  /** Use `doStream` (default `true`); `false` uses `doGenerate`. */
  streaming?: boolean;
  /** System prompt. */
  system?: string;
  /** Tools by name. */
  tools?: Readonly<Record<string, AnySessionTool>>;
  /** Default `maxTurns` of a Request (default 20, at most 10 000). */
  maxTurns?: number;
  /**
   * Where the lifecycle is written. Without it the Session runs in memory (an internal
   * `MemoryDurableEventStore`), with the same rules and nothing durable.
   */
  durableEventStore?: DurableEventStore;
  /** Lease store (usually the same object as `durableEventStore`); needed with `executionLease`. */
  durableExecutionLeaseStore?: DurableExecutionLeaseStore;
  /** A held lease handle, or settings for the Session to acquire one. */
  executionLease?: DurableExecutionLease | SessionExecutionLeaseOptions;
  /** Deadline of every store call in ms (default 15 000); with a lease the stricter of both wins. */
  durableStoreTimeoutMs?: number;
  /** Host permission callback. */
  onPermission?: SessionPermissionHandler;
  /** Clock in epoch ms stamped on events (default: `time.wallNow`). */
  clock?: SessionClock;
  /**
   * Clocks and timers (default {@link systemTime}): the tools' `sleep` / `waitFor` timers, the
   * execution lease the Session acquires (heartbeats, deadlines) and the lease-window cap on
   * appends. Tests pass a `ManualTimeSource` to drive them without waiting.
   */
  time?: TimeSource;
  /** ID generator (default: `crypto.randomUUID()` with a kind prefix). */
  generateId?: SessionIdGenerator;
  /** Give tools a durability port when the store has a stream of durability records (default `true`). */
  durability?: boolean;
  /**
   * Projection checkpoints of the Session's journal (default: the journal's policy, when the store
   * supports them); `false` neither reads nor writes them. The message history is read from the
   * log either way.
   */
  checkpoints?: DurableCheckpointPolicy | false;
}

/** Options of {@link resumeSession}. */
export interface ResumeSessionOptions extends SessionOptions {
  sessionId: SessionId | string;
  /** What to do with plans that need more than an automatic resume (default: nothing; see `SAFE_RECOVERY_POLICY`). */
  recoveryPolicy?: SessionRecoveryPolicy;
}

// ---------------------------------------------------------------------------------------------
// Requests
// ---------------------------------------------------------------------------------------------

/** Options of {@link Session.send}. */
export interface SessionSendOptions {
  /**
   * When the Request runs if another is active: `now` interrupts the active one
   * (`request_interrupted` with `byInputId`); `next` and `later` queue it (default `next`).
   */
  priority?: Priority;
  /** Most Turns this Request may take (default: the Session's). */
  maxTurns?: number;
  /** A model other than the Session's (must be resolvable on resume, see `resolveModel`). */
  model?: SessionLanguageModel;
  /** Runtime context persisted with the Request and handed to tools. */
  context?: JsonObject;
  /**
   * The Request's ID (default: a fresh one from `generateId`). Lets the caller know the ID before
   * `send` resolves and makes `send` idempotent, like a `commandId`: sending again with an ID
   * already used returns a handle on that same Request — nothing new is accepted — when input,
   * priority, maxTurns, model and context are the same (its `result` settles from the running
   * Request, or at once from its terminal event in the log); with anything else it fails with
   * `DurableCommandConflictError`. A malformed ID fails with `SessionDurableRecorderError`.
   */
  requestId?: string;
  /**
   * The ID of the Request's initial input (default: a fresh one). Part of the idempotency check
   * when given; an ID another Request or steering input already used is a `DurableCommandConflictError`.
   */
  inputId?: string;
}

/** Options of {@link Session.steer}. */
export interface SessionSteerOptions {
  /**
   * `next` (default): applied (`input_applied`) at the next boundary of the running Request — after
   * the running Turn's tools, before `turn_completed` — and shown to the next model call.
   *
   * `now`: additionally aborts the model call in flight, if there is one: that attempt ends with
   * `model_request_aborted` (`superseded`), the input is applied, and the model is called again in
   * the same Turn with it. Nothing else is interrupted: running tools (whatever their
   * `interruptBehavior`) and permission waits go on, and the input is then applied at the same
   * boundary as `next`. To stop the Request itself use `abort()` or `send(input, { priority: 'now' })`.
   */
  priority?: 'now' | 'next';
  /**
   * The steering input's ID (default: a fresh one). Makes `steer` idempotent: steering again with
   * an ID this Session already took for the running Request returns a handle on that input (its
   * `applied` resolves at once when `input_applied` is in the log) and takes nothing new; an ID
   * used by another Request is a `DurableCommandConflictError`; a malformed one a
   * `SessionDurableRecorderError`. A host that stores steering inputs before they are applied
   * re-steers them with their IDs after a restart.
   */
  inputId?: string;
}

/** How a Request ended. */
export interface SessionRequestResult {
  readonly requestId: RequestId;
  readonly status: 'completed' | 'failed' | 'interrupted';
  /** The final answer text (`completed`). */
  readonly output?: string;
  readonly usage?: RequestUsage;
  /** Why it failed (`failed`). */
  readonly error?: DurableErrorInfo;
  /** Why it was interrupted (`interrupted`). */
  readonly reason?: DurableReason;
  /**
   * The Request that continues this one after a rollover (this one `interrupted` with
   * `process_restart`), given when the Request is sent again with its ID: the work was not
   * dropped, so sending it under a new ID would do it twice.
   */
  readonly continuation?: SessionRequestContinuation;
}

/** The Request a rollover accepted to continue another, and its outcome. */
export interface SessionRequestContinuation {
  readonly requestId: RequestId;
  /** The continuation's own result (itself with `continuation` when it was rolled over in turn); absent while it has no terminal event. */
  readonly result?: SessionRequestResult;
}

/** A Request the Session accepted (durably: `request_accepted` is committed). */
export interface SessionRequestHandle {
  readonly requestId: RequestId;
  readonly inputId: InputId;
  /** Settles with the Request's terminal event; rejects when local execution stopped without one (lease loss, handoff). */
  readonly result: Promise<SessionRequestResult>;
}

/** A steering input the Session took (durably applied once `input_applied` is committed). */
export interface SessionSteerHandle {
  readonly inputId: InputId;
  readonly requestId: RequestId;
  /** Resolves once `input_applied` is committed. */
  readonly applied: Promise<void>;
}

// ---------------------------------------------------------------------------------------------
// Stream
// ---------------------------------------------------------------------------------------------

/** A committed durable event (in log order). */
export interface SessionDurableEventFrame {
  readonly type: 'durable_event';
  readonly event: DurableEventEnvelope;
}

/** A token delta of a streaming model call (transient). */
export interface SessionTextDeltaFrame {
  readonly type: 'text_delta';
  readonly requestId: RequestId;
  readonly turnId: TurnId;
  readonly modelAttemptId: ModelAttemptId;
  readonly delta: string;
}

/** A reasoning delta of a streaming model call (transient). */
export interface SessionReasoningDeltaFrame {
  readonly type: 'reasoning_delta';
  readonly requestId: RequestId;
  readonly turnId: TurnId;
  readonly modelAttemptId: ModelAttemptId;
  readonly delta: string;
}

/** Progress reported by a running tool (transient). */
export interface SessionToolProgressFrame {
  readonly type: 'tool_progress';
  readonly requestId: RequestId;
  readonly turnId: TurnId;
  readonly toolAttemptId: ToolAttemptId;
  readonly toolCallId: string;
  readonly toolName: string;
  readonly data: JsonValue;
}

/**
 * Local execution stopped without a durable terminal event: `lease_lost` (another worker may own
 * the session), `handoff` (suspended for a successor), `outcome_unknown` (a commit could not be
 * reconciled), `superseded` (another writer advanced the log right before this Session would have
 * started a tool or a model call; that call did not run here and nothing more was written),
 * `error` (an unexpected failure; the log holds what was committed). Transient.
 */
export interface SessionExecutionStoppedFrame {
  readonly type: 'execution_stopped';
  readonly reason: 'lease_lost' | 'handoff' | 'outcome_unknown' | 'superseded' | 'error';
  readonly message: string;
}

/** Everything `stream()` yields: committed durable events and transient frames, one union. */
export type SessionStreamFrame =
  | SessionDurableEventFrame
  | SessionTextDeltaFrame
  | SessionReasoningDeltaFrame
  | SessionToolProgressFrame
  | SessionExecutionStoppedFrame;

/** Options of {@link Session.stream}. */
export interface SessionStreamOptions {
  /** Ends the iterator (also ends at `close()`, handoff and lease loss). */
  signal?: AbortSignal;
}

// ---------------------------------------------------------------------------------------------
// Session
// ---------------------------------------------------------------------------------------------

/** Lifecycle of a Session object. */
export type SessionState =
  | 'idle'
  | 'running'
  | 'closed'
  /** Suspended for a successor worker; nothing more runs here. */
  | 'handed_off'
  /** Local execution stopped without a terminal event (lease loss, unknown outcome, unexpected error). */
  | 'stopped';

/** What {@link Session.suspendForHandoff} returns to give the successor. */
export interface SessionHandoff {
  readonly sessionId: SessionId;
  /** Head of the log after the source finished persisting. */
  readonly headSequence: EventSequence | null;
  /** The recovery plan the successor must act on before (or by) `resumeSession`. */
  readonly recoveryPlan: DurableRecoveryPlan;
}

/** A running agent session. */
export interface Session {
  readonly sessionId: SessionId;
  /** Current state of this object. */
  readonly state: SessionState;
  /**
   * Sends a Request: resolves once `request_accepted` is committed (with the complete execution
   * snapshot: input, maxTurns, model, runtime context). Queued Requests are accepted when they start.
   */
  send(input: DurableInput, options?: SessionSendOptions): Promise<SessionRequestHandle>;
  /** `send` and wait for the Request's terminal event. */
  run(input: DurableInput, options?: SessionSendOptions): Promise<SessionRequestResult>;
  /**
   * Steering input for the running Request: committed as `input_applied` at the next Turn boundary
   * (see {@link SessionSteerOptions.priority} for `now`), with its content in `data.input`, then
   * shown to the model. The input is durable only once `applied` resolves: until then it lives in
   * this process, and a crash, lease loss or handoff drops it (`applied` rejects where the process
   * survives). Without a running Request it is sent as a new Request.
   */
  steer(input: DurableInput, options?: SessionSteerOptions): Promise<SessionSteerHandle>;
  /** Frames from now on (durable events and transient frames), until close, handoff or lease loss. */
  stream(options?: SessionStreamOptions): AsyncIterableIterator<SessionStreamFrame>;
  /** The message history the next model call would start from (a projection of the log). */
  history(): readonly SessionHistoryMessage[];
  /** Aborts the running Request: the model call and cancelable tools stop, then `turn_aborted` and `request_interrupted` (`user_abort`). Queued Requests are dropped. */
  abort(reason?: string): Promise<void>;
  /** Aborts anything running, commits `session_closed`, releases a Session-acquired lease. */
  close(): Promise<void>;
  /**
   * Source-worker barrier before a handoff: stop admitting work, cancel the active execution
   * cooperatively, wait for model and tool settlement and their persistence, finalize unfinished
   * model or tool boundaries conservatively (`model_request_aborted`, `tool_outcome_unknown`),
   * write no `turn_aborted`, `request_interrupted` or `session_closed`, release the lease, and
   * return the head and recovery plan for the successor.
   */
  suspendForHandoff(): Promise<SessionHandoff>;
  /** Resolves when the Session has nothing running and nothing queued. */
  whenIdle(): Promise<void>;
  /** The Request `resumeSession` continues (it starts on the next macrotask, so `stream()` sees it whole); `null` otherwise. */
  readonly resumedRequest: SessionRequestHandle | null;
}

/** One message of the projected history (role-tagged, provider-neutral). */
export type SessionHistoryMessage =
  | { role: 'user'; content: DurableInput }
  | {
      role: 'assistant';
      content: DurableInput;
      toolCalls: ReadonlyArray<{ toolCallId: string; toolName: string; input: JsonValue }>;
    }
  | {
      role: 'tool';
      toolCallId: string;
      toolName: string;
      outcome: 'completed' | 'failed' | 'cancelled';
      result: JsonValue;
    };

/** Re-exported for tool authors. */
export type { DurablePermissionView };
