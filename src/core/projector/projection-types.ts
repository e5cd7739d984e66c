/**
 * The shapes the projector exposes: the session projection and the recovery plan.
 *
 * Everything here is plain, JSON-like data (no class instances, no Maps). Collections keyed by ID
 * are plain records; read them with `Object.hasOwn` (IDs such as `"constructor"` are legal).
 * Objects returned by the projector are deeply frozen and shared between snapshots, so taking a
 * snapshot is O(1) and callers cannot corrupt the projector by mutating what they receive.
 */
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
  RequestRecovery,
  SideEffect,
} from '../../protocol/event-payloads.js';
import type {
  CommandId,
  EventId,
  EventSequence,
  InputId,
  ModelAttemptId,
  PermissionRequestId,
  RequestId,
  SessionId,
  ToolAttemptId,
  TurnId,
} from '../../protocol/ids.js';
import type { JsonObject, JsonValue } from '../../protocol/json.js';

/** Lifecycle of the session: no event yet, created, or closed. */
export type DurableSessionStatus = 'empty' | 'open' | 'closed';

/** An active Request is `accepted` until `request_started`, then `started`. */
export type DurableActiveRequestStatus = 'accepted' | 'started';

/**
 * How an active Request came from a rollover (only set when `recovery` is present):
 * - `pre_turn_request`: the source Request was rolled over before (or between) Turns; the rollover
 *   command wrote a synthetic `turn_started` for the source, then aborted it;
 * - `active_turn`: a real active Turn of the source Request was aborted and rolled over.
 */
export type DurableRecoveryKind = 'pre_turn_request' | 'active_turn';

/** Status of one model attempt. */
export type DurableModelAttemptStatus = 'started' | 'completed' | 'failed' | 'aborted';

/**
 * Status of one tool attempt.
 * - `scheduled`: persisted, not started, no permission asked;
 * - `awaiting_permission`: a permission request is pending;
 * - `permission_allowed`: the permission was granted, the tool has not started yet;
 * - `permission_denied`: the permission was denied or cancelled; only `tool_cancelled` may follow;
 * - `started`: the tool crossed its execution boundary, no outcome yet;
 * - `outcome_unknown`: the writer recorded that it does not know the outcome;
 * - `completed` / `failed` / `cancelled`: terminal.
 */
export type DurableToolAttemptStatus =
  | 'scheduled'
  | 'awaiting_permission'
  | 'permission_allowed'
  | 'permission_denied'
  | 'started'
  | 'completed'
  | 'failed'
  | 'cancelled'
  | 'outcome_unknown';

/** Terminal statuses of a Request. */
export type DurableRequestTerminalStatus = 'completed' | 'failed' | 'interrupted';

/** One model attempt of the active Turn. */
export interface DurableModelAttemptView {
  readonly modelAttemptId: ModelAttemptId;
  readonly status: DurableModelAttemptStatus;
  /** Model name from `model_request_started`. */
  readonly model: string;
  /** Provider identity, when the writer recorded it. */
  readonly modelIdentity?: ModelIdentity;
  readonly streaming: boolean;
  /** The confirmed response (only when `completed`). */
  readonly response?: ModelResponse;
  /** The failure (only when `failed`). */
  readonly error?: DurableErrorInfo;
  /** Why it was aborted (only when `aborted`). */
  readonly reason?: DurableReason;
  readonly startedEventId: EventId;
  /** Every event of this attempt, in log order. */
  readonly eventIds: readonly EventId[];
}

/** One tool attempt of the active Turn. */
export interface DurableToolAttemptView {
  readonly toolAttemptId: ToolAttemptId;
  readonly toolCallId: string;
  readonly toolName: string;
  /** The model attempt whose response produced this call. */
  readonly modelAttemptId: ModelAttemptId;
  /** The provider's original arguments. */
  readonly modelInput: JsonValue;
  /** The input as scheduled (possibly repaired). */
  readonly scheduledInput: JsonValue;
  /** The effective input: scheduled, then the permission request's, then `tool_started`'s. */
  readonly input: JsonValue;
  /** Side-effect class as scheduled. */
  readonly scheduledSideEffect: SideEffect;
  /** Effective side-effect class (the one `tool_started` resolved, once started). */
  readonly sideEffect: SideEffect;
  readonly interruptBehavior: InterruptBehavior;
  readonly status: DurableToolAttemptStatus;
  /** True once a permission was granted for this attempt (it then starts as `non_idempotent`). */
  readonly resumedAfterPermission: boolean;
  /** The attempt's permission request, if it had one. */
  readonly permissionRequestId?: PermissionRequestId;
  /** The decision of that permission request, once resolved. */
  readonly permissionDecision?: PermissionDecision;
  /** Tool result (only when `completed`). */
  readonly result?: JsonValue;
  /** Tool failure (only when `failed`). */
  readonly error?: DurableErrorInfo;
  /** Reason of `tool_cancelled` / `tool_outcome_unknown`. */
  readonly reason?: DurableReason;
  /** Sequence of `tool_scheduled` (orders attempts deterministically). */
  readonly scheduledSequence: EventSequence;
  readonly scheduledEventId: EventId;
  /** Every event of this attempt (including its permission events), in log order. */
  readonly eventIds: readonly EventId[];
}

/** A pending permission request of the active Turn. */
export interface DurablePermissionView {
  readonly permissionRequestId: PermissionRequestId;
  readonly toolAttemptId: ToolAttemptId;
  readonly toolCallId: string;
  readonly toolName: string;
  readonly input: JsonValue;
  readonly message?: string;
  readonly requestedEventId: EventId;
}

/** The active Turn of the active Request. */
export interface DurableActiveTurnView {
  readonly turnId: TurnId;
  /** Turn number within the Request (1, 2, ...). */
  readonly turn: number;
  readonly model?: ModelSelection;
  readonly startedEventId: EventId;
  readonly modelAttempts: Readonly<Record<string, DurableModelAttemptView>>;
  readonly toolAttempts: Readonly<Record<string, DurableToolAttemptView>>;
  /** Pending permission requests only (resolved ones are removed). */
  readonly permissions: Readonly<Record<string, DurablePermissionView>>;
}

/** The Request that has been accepted and has no terminal event yet. */
export interface DurableActiveRequestView {
  readonly requestId: RequestId;
  /** The command that accepted it. */
  readonly commandId: CommandId;
  /** The initial input's ID. */
  readonly inputId: InputId;
  readonly input: DurableInput;
  readonly priority: Priority;
  readonly maxTurns?: number;
  readonly model?: ModelSelection;
  readonly context?: JsonObject;
  /** Rollover provenance, as persisted. */
  readonly recovery?: RequestRecovery;
  /** What kind of rollover produced this Request (present exactly when `recovery` is). */
  readonly recoveryKind?: DurableRecoveryKind;
  readonly status: DurableActiveRequestStatus;
  readonly acceptedEventId: EventId;
  readonly startedEventId?: EventId;
  /**
   * The latest persisted boundary: `request_accepted`, `request_started`, `input_applied` or a
   * terminal Turn event. A Request terminal event's `causationEventId`, when present, must name it.
   */
  readonly latestBoundaryEventId: EventId;
  /** Inputs applied to this Request (`input_applied`), in log order. */
  readonly appliedInputIds: readonly InputId[];
  /** True when an input was applied after the last Turn ended (or, with no Turn yet, ever). */
  readonly inputAppliedSinceLastTurn: boolean;
  /** Number of the last finished Turn, 0 if none. */
  readonly lastTurn: number;
  /** The terminal event (`turn_completed` / `turn_aborted`) of the last finished Turn. */
  readonly lastTurnEventId?: EventId;
  readonly activeTurn: DurableActiveTurnView | null;
}

/** The last Request that reached a terminal event. */
export interface DurableRequestSummary {
  readonly requestId: RequestId;
  readonly status: DurableRequestTerminalStatus;
  readonly terminalEventId: EventId;
  readonly lastTurn: number;
}

/** The folded state of one session's log. */
export interface DurableSessionProjection {
  /** `null` only while the projection is empty. */
  readonly sessionId: SessionId | null;
  readonly status: DurableSessionStatus;
  readonly headSequence: EventSequence | null;
  readonly lastEventId: EventId | null;
  readonly activeRequest: DurableActiveRequestView | null;
  /** Requests that reached a terminal event. */
  readonly completedRequests: number;
  readonly lastRequest: DurableRequestSummary | null;
  /** Reason of `session_closed`, once closed. */
  readonly closedReason?: DurableReason;
}

/** The nine recovery actions (see {@link DurableRecoveryPlan}). */
export type DurableRecoveryAction =
  | 'none'
  | 'resume_request'
  | 'rollover_request'
  | 'resume_turn'
  | 'resolve_permissions'
  | 'reconcile_tool_outcomes'
  | 'reconcile_model_outcome'
  | 'reconcile_request_inputs'
  | 'reconcile_request_outcome';

/** Every recovery action, in declaration order. */
export const DURABLE_RECOVERY_ACTIONS: readonly DurableRecoveryAction[] = Object.freeze([
  'none',
  'resume_request',
  'rollover_request',
  'resume_turn',
  'resolve_permissions',
  'reconcile_tool_outcomes',
  'reconcile_model_outcome',
  'reconcile_request_inputs',
  'reconcile_request_outcome',
]);

/** What recovery must do with the unfinished work of a session (see `recovery-plan.ts`). */
export interface DurableRecoveryPlan {
  readonly action: DurableRecoveryAction;
  /** One sentence saying why this action was chosen. */
  readonly reason: string;
  /** The head the plan was derived from (pin it as the CAS precondition of a recovery command). */
  readonly headSequence: EventSequence | null;
  readonly requestId?: RequestId;
  readonly turnId?: TurnId;
  readonly requestStatus?: DurableActiveRequestStatus;
  readonly recoveryKind?: DurableRecoveryKind;
  /** The model attempt still `started` in the active Turn, if any. */
  readonly activeModelAttempt: DurableModelAttemptView | null;
  /** Started / outcome-unknown pure or idempotent tools of a confirmed model response. */
  readonly retryableToolAttempts: readonly DurableToolAttemptView[];
  /** Not-started tools, and retry-safe tools of an unconfirmed model response. */
  readonly cancelableToolAttempts: readonly DurableToolAttemptView[];
  /** Started / outcome-unknown `non_idempotent` tools: reconcile externally, never retry. */
  readonly unknownToolAttempts: readonly DurableToolAttemptView[];
  readonly pendingPermissions: readonly DurablePermissionView[];
  readonly appliedInputIds: readonly InputId[];
  readonly lastTurn: number;
  readonly lastTurnEventId?: EventId;
  /** True when a cancelable tool came from a model response that was never confirmed. */
  readonly discardedUnconfirmedModelResponse: boolean;
}
