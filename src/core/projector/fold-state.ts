/**
 * The projector's internal state and the helpers the transition modules share.
 *
 * `FoldState` is immutable: each event produces a new state that shares every untouched part of
 * the previous one. The only mutable part is the {@link PersistentKeySet} of used IDs, which is
 * owned by one projector instance and forked (copy-on-write) by `clone()`.
 *
 * Used IDs live in one set, each kind under its own prefix (`ID_SPACE`, stored by kind: `ID_KIND`),
 * so that a Request and a Turn may share a spelling without colliding.
 */
import type { DurableReason } from '../../protocol/event-payloads.js';
import type { DurableEventType } from '../../protocol/event-types.js';
import type { DurableEventEnvelope } from '../../protocol/events.js';
import type { CommandId, EventId, EventSequence, RequestId, SessionId, TurnId } from '../../protocol/ids.js';
import { seal, withEntry } from './frozen-data.js';
import { KEY_PREFIXES, type KeyKind, type PersistentKeySet } from './persistent-key-set.js';
import { projectionViolation, type DurableProjectionRule } from './projection-errors.js';
import type {
  DurableActiveRequestView,
  DurableActiveTurnView,
  DurableRequestSummary,
  DurableSessionStatus,
  DurableToolAttemptView,
} from './projection-types.js';

/** What the provenance check needs to know about one of the last few events. */
export interface RecentEvent {
  readonly type: DurableEventType;
  readonly commandId: CommandId | undefined;
  readonly requestId: RequestId | undefined;
  readonly turnId: TurnId | undefined;
  /** `data.turn` of Turn events. */
  readonly turn: number | undefined;
}

/** How many trailing events {@link FoldState.recent} keeps (the longest rollover pattern). */
export const RECENT_EVENT_WINDOW = 3;

/** Immutable folded state of a log prefix. */
export interface FoldState {
  readonly sessionId: SessionId | null;
  readonly status: DurableSessionStatus;
  readonly headSequence: EventSequence | null;
  readonly lastEventId: EventId | null;
  readonly activeRequest: DurableActiveRequestView | null;
  readonly completedRequests: number;
  readonly lastRequest: DurableRequestSummary | null;
  readonly closedReason: DurableReason | undefined;
  /** `commandId` of the previous event (a command may only continue from there). */
  readonly previousCommandId: CommandId | undefined;
  /** The last {@link RECENT_EVENT_WINDOW} events, oldest first. */
  readonly recent: readonly RecentEvent[];
}

/** The state before any event. */
export const EMPTY_FOLD_STATE: FoldState = seal({
  sessionId: null,
  status: 'empty',
  headSequence: null,
  lastEventId: null,
  activeRequest: null,
  completedRequests: 0,
  lastRequest: null,
  closedReason: undefined,
  previousCommandId: undefined,
  recent: seal([]),
});

/** Kind of each ID inside the used-ID set (an index of `KEY_PREFIXES`). */
export const ID_KIND = {
  event: 0,
  request: 1,
  turn: 2,
  modelAttempt: 3,
  toolAttempt: 4,
  permission: 5,
  command: 6,
  appliedInput: 7,
} as const satisfies Record<string, KeyKind>;

type IdSpace = keyof typeof ID_KIND;

/** Prefixes of each ID kind inside the used-ID set: a key is spelled prefix + ID. */
export const ID_SPACE = {
  event: KEY_PREFIXES[ID_KIND.event],
  request: KEY_PREFIXES[ID_KIND.request],
  turn: KEY_PREFIXES[ID_KIND.turn],
  modelAttempt: KEY_PREFIXES[ID_KIND.modelAttempt],
  toolAttempt: KEY_PREFIXES[ID_KIND.toolAttempt],
  permission: KEY_PREFIXES[ID_KIND.permission],
  command: KEY_PREFIXES[ID_KIND.command],
  appliedInput: KEY_PREFIXES[ID_KIND.appliedInput],
} as const satisfies Record<IdSpace, string>;

/** One event being folded, with the used-ID set it may claim IDs in. */
export interface FoldContext {
  readonly event: DurableEventEnvelope;
  readonly ids: PersistentKeySet;
}

/** Throws the projection error for `rule`, located at the current event. */
export function reject(ctx: FoldContext, rule: DurableProjectionRule, message: string): never {
  throw projectionViolation(ctx.event, rule, message);
}

/** True when `id` of kind `kind` (see `ID_KIND`) was used earlier in the log. */
export function isUsed(ctx: FoldContext, kind: KeyKind, id: string): boolean {
  return ctx.ids.hasKey(kind, id);
}

/** Records `id` of kind `kind` (see `ID_KIND`), rejecting a reuse. */
export function claimId(ctx: FoldContext, kind: KeyKind, id: string, label: string): void {
  if (!ctx.ids.addKey(kind, id)) reject(ctx, 'id_reused', `${label} ${id} was already used in this session`);
}

/** The active Request named by the event, or a rejection. */
export function requireActiveRequest(state: FoldState, ctx: FoldContext, requestId: RequestId): DurableActiveRequestView {
  const request = state.activeRequest;
  if (request === null) reject(ctx, 'request_lifecycle', `no Request is active (event names ${requestId})`);
  if (request.requestId !== requestId) {
    reject(ctx, 'correlation', `event names Request ${requestId} but the active Request is ${request.requestId}`);
  }
  return request;
}

/** The active Request and Turn named by the event, or a rejection. */
export function requireActiveTurn(
  state: FoldState,
  ctx: FoldContext,
  requestId: RequestId,
  turnId: TurnId,
): { request: DurableActiveRequestView; turn: DurableActiveTurnView } {
  const request = requireActiveRequest(state, ctx, requestId);
  const turn = request.activeTurn;
  if (turn === null) reject(ctx, 'turn_lifecycle', `Request ${requestId} has no active Turn (event names ${turnId})`);
  if (turn.turnId !== turnId) {
    reject(ctx, 'correlation', `event names Turn ${turnId} but the active Turn is ${turn.turnId}`);
  }
  return { request, turn };
}

/** A state whose active Request is replaced. */
export function withRequest(state: FoldState, request: DurableActiveRequestView | null): FoldState {
  return { ...state, activeRequest: request };
}

/** The fields of an active Request view a transition may replace. */
interface RequestChanges {
  readonly status?: DurableActiveRequestView['status'];
  readonly startedEventId?: DurableActiveRequestView['startedEventId'];
  readonly latestBoundaryEventId?: DurableActiveRequestView['latestBoundaryEventId'];
  readonly appliedInputIds?: DurableActiveRequestView['appliedInputIds'];
  readonly inputAppliedSinceLastTurn?: DurableActiveRequestView['inputAppliedSinceLastTurn'];
  readonly lastTurn?: DurableActiveRequestView['lastTurn'];
  readonly lastTurnEventId?: DurableActiveRequestView['lastTurnEventId'];
  readonly activeTurn?: DurableActiveRequestView['activeTurn'];
}

/**
 * A new frozen Request view: `request` with `changes` (a field absent or `undefined` in `changes`
 * keeps its value). Equal to `seal({ ...request, ...changes })`, key order included, but spelled
 * out: spreading a frozen object is several times slower in V8, and a Request view is copied on
 * nearly every event. The key order is the one every Request view has: the `request_accepted`
 * fields (optional ones where present), then `startedEventId` (added by `request_started`), then
 * `lastTurnEventId` (added by the first terminal Turn event, which always comes later).
 * `test/projector/view-key-order.test.ts` checks that order on random lifecycles.
 */
export function updateRequest(request: DurableActiveRequestView, changes: RequestChanges): DurableActiveRequestView {
  const view: { -readonly [K in keyof DurableActiveRequestView]: DurableActiveRequestView[K] } = {
    requestId: request.requestId,
    commandId: request.commandId,
    inputId: request.inputId,
    input: request.input,
    priority: request.priority,
    // SAFETY: the remaining fields are assigned below, in key order, before the view is returned.
  } as DurableActiveRequestView;
  if (request.maxTurns !== undefined) view.maxTurns = request.maxTurns;
  if (request.model !== undefined) view.model = request.model;
  if (request.context !== undefined) view.context = request.context;
  if (request.recovery !== undefined) view.recovery = request.recovery;
  if (request.recoveryKind !== undefined) view.recoveryKind = request.recoveryKind;
  view.status = changes.status ?? request.status;
  view.acceptedEventId = request.acceptedEventId;
  view.latestBoundaryEventId = changes.latestBoundaryEventId ?? request.latestBoundaryEventId;
  view.appliedInputIds = changes.appliedInputIds ?? request.appliedInputIds;
  view.inputAppliedSinceLastTurn = changes.inputAppliedSinceLastTurn ?? request.inputAppliedSinceLastTurn;
  view.lastTurn = changes.lastTurn ?? request.lastTurn;
  view.activeTurn = changes.activeTurn === undefined ? request.activeTurn : changes.activeTurn;
  const startedEventId = changes.startedEventId ?? request.startedEventId;
  if (startedEventId !== undefined) view.startedEventId = startedEventId;
  const lastTurnEventId = changes.lastTurnEventId ?? request.lastTurnEventId;
  if (lastTurnEventId !== undefined) view.lastTurnEventId = lastTurnEventId;
  return seal(view);
}

/** The fields of an active Turn view a transition may replace. */
interface TurnChanges {
  readonly modelAttempts?: DurableActiveTurnView['modelAttempts'];
  readonly toolAttempts?: DurableActiveTurnView['toolAttempts'];
  readonly permissions?: DurableActiveTurnView['permissions'];
}

/** A new frozen Turn view: `seal({ ...turn, ...changes })`, spelled out (see {@link updateRequest}). */
export function updateTurn(turn: DurableActiveTurnView, changes: TurnChanges): DurableActiveTurnView {
  return seal(
    turn.model === undefined
      ? {
          turnId: turn.turnId,
          turn: turn.turn,
          startedEventId: turn.startedEventId,
          modelAttempts: changes.modelAttempts ?? turn.modelAttempts,
          toolAttempts: changes.toolAttempts ?? turn.toolAttempts,
          permissions: changes.permissions ?? turn.permissions,
        }
      : {
          turnId: turn.turnId,
          turn: turn.turn,
          model: turn.model,
          startedEventId: turn.startedEventId,
          modelAttempts: changes.modelAttempts ?? turn.modelAttempts,
          toolAttempts: changes.toolAttempts ?? turn.toolAttempts,
          permissions: changes.permissions ?? turn.permissions,
        },
  );
}

/** A state whose active Turn (of the active Request) is replaced. */
export function withTurn(state: FoldState, request: DurableActiveRequestView, turn: DurableActiveTurnView): FoldState {
  return withRequest(state, updateRequest(request, { activeTurn: turn }));
}

/** A state whose tool attempt `tool` (of the active Turn) is replaced. */
export function withTool(
  state: FoldState,
  request: DurableActiveRequestView,
  turn: DurableActiveTurnView,
  tool: DurableToolAttemptView,
): FoldState {
  return withTurn(state, request, updateTurn(turn, { toolAttempts: withEntry(turn.toolAttempts, tool.toolAttemptId, tool) }));
}
