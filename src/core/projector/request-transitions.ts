/**
 * Request-scope transitions: `request_accepted`, `request_started`, the three Request terminal
 * events and `input_applied`.
 *
 * A Request is `accepted`, then `started`, then leaves the projection with a terminal event. Each
 * persisted boundary (accepted, started, input applied, Turn terminal) becomes the Request's
 * `latestBoundaryEventId`, which an anchored Request terminal event must name. A rollover Request
 * (`data.recovery`) is only accepted right after the rollover pattern of the same command; the
 * shape of that pattern decides its `recoveryKind`.
 */
import type { DurableEventEnvelopeOf } from '../../protocol/events.js';
import { appended, detach, seal } from './frozen-data.js';
import {
  ID_KIND,
  claimId,
  reject,
  requireActiveRequest,
  updateRequest,
  withRequest,
  type FoldContext,
  type FoldState,
} from './fold-state.js';
import type { DurableActiveRequestView, DurableRecoveryKind, DurableRequestTerminalStatus } from './projection-types.js';

/** Folds `request_accepted`. */
export function foldRequestAccepted(
  state: FoldState,
  ctx: FoldContext,
  event: DurableEventEnvelopeOf<'request_accepted'>,
): FoldState {
  if (state.activeRequest !== null) {
    reject(ctx, 'request_lifecycle', `Request ${state.activeRequest.requestId} is still active`);
  }
  claimId(ctx, ID_KIND.request, event.requestId, 'Request');
  const data = event.data;
  const recoveryKind = data.recovery === undefined ? undefined : checkRecoveryProvenance(state, ctx, event);
  const request: DurableActiveRequestView = seal({
    requestId: event.requestId,
    commandId: event.commandId,
    inputId: data.inputId,
    input: detach(data.input),
    priority: data.priority,
    ...(data.maxTurns === undefined ? {} : { maxTurns: data.maxTurns }),
    ...(data.model === undefined ? {} : { model: detach(data.model) }),
    ...(data.context === undefined ? {} : { context: detach(data.context) }),
    ...(data.recovery === undefined ? {} : { recovery: detach(data.recovery) }),
    ...(recoveryKind === undefined ? {} : { recoveryKind }),
    status: 'accepted',
    acceptedEventId: event.eventId,
    latestBoundaryEventId: event.eventId,
    appliedInputIds: seal([]),
    inputAppliedSinceLastTurn: false,
    lastTurn: 0,
    activeTurn: null,
  });
  return withRequest(state, request);
}

/**
 * A rollover Request must be the last event of its command's rollover pattern:
 * `[turn_started] -> turn_aborted -> request_interrupted -> request_accepted`, all adjacent, all
 * carrying this event's `commandId`, naming the source Request/Turn/turn number of `recovery`.
 * With the synthetic `turn_started` of that Turn in the same command it is a pre-Turn rollover.
 */
function checkRecoveryProvenance(
  state: FoldState,
  ctx: FoldContext,
  event: DurableEventEnvelopeOf<'request_accepted'>,
): DurableRecoveryKind {
  // SAFETY: only called when data.recovery is present.
  const recovery = event.data.recovery as NonNullable<typeof event.data.recovery>;
  const recent = state.recent;
  const interrupted = recent[recent.length - 1];
  const aborted = recent[recent.length - 2];
  const started = recent[recent.length - 3];
  const sameCommand = (commandId: unknown): boolean => commandId === event.commandId;
  if (
    interrupted === undefined ||
    interrupted.type !== 'request_interrupted' ||
    interrupted.requestId !== recovery.requestId ||
    !sameCommand(interrupted.commandId)
  ) {
    reject(
      ctx,
      'recovery_provenance',
      `recovery of Request ${recovery.requestId} must directly follow its request_interrupted in the same command`,
    );
  }
  if (
    aborted === undefined ||
    aborted.type !== 'turn_aborted' ||
    aborted.requestId !== recovery.requestId ||
    aborted.turnId !== recovery.turnId ||
    aborted.turn !== recovery.turn ||
    !sameCommand(aborted.commandId)
  ) {
    reject(
      ctx,
      'recovery_provenance',
      `recovery of Turn ${recovery.turnId} (turn ${recovery.turn}) must follow its turn_aborted in the same command`,
    );
  }
  const synthetic =
    started !== undefined &&
    started.type === 'turn_started' &&
    started.turnId === recovery.turnId &&
    sameCommand(started.commandId);
  return synthetic ? 'pre_turn_request' : 'active_turn';
}

/** Folds `request_started`: only once, only from `accepted`. */
export function foldRequestStarted(
  state: FoldState,
  ctx: FoldContext,
  event: DurableEventEnvelopeOf<'request_started'>,
): FoldState {
  const request = requireActiveRequest(state, ctx, event.requestId);
  if (request.status !== 'accepted') reject(ctx, 'request_lifecycle', `Request ${request.requestId} already started`);
  return withRequest(
    state,
    updateRequest(request, { status: 'started', startedEventId: event.eventId, latestBoundaryEventId: event.eventId }),
  );
}

const TERMINAL_STATUS = {
  request_completed: 'completed',
  request_failed: 'failed',
  request_interrupted: 'interrupted',
} as const satisfies Record<string, DurableRequestTerminalStatus>;

/**
 * Folds a Request terminal event. The Request must have no active Turn, and a present
 * `causationEventId` must name its latest persisted boundary.
 */
export function foldRequestTerminal(
  state: FoldState,
  ctx: FoldContext,
  event: DurableEventEnvelopeOf<'request_completed' | 'request_failed' | 'request_interrupted'>,
): FoldState {
  const request = requireActiveRequest(state, ctx, event.requestId);
  if (request.activeTurn !== null) {
    reject(ctx, 'request_lifecycle', `Turn ${request.activeTurn.turnId} is still active`);
  }
  if (event.causationEventId !== undefined && event.causationEventId !== request.latestBoundaryEventId) {
    reject(
      ctx,
      'request_causation',
      `causation ${event.causationEventId} is not the Request's latest boundary ${request.latestBoundaryEventId}`,
    );
  }
  return {
    ...state,
    activeRequest: null,
    completedRequests: state.completedRequests + 1,
    lastRequest: seal({
      requestId: request.requestId,
      status: TERMINAL_STATUS[event.type],
      terminalEventId: event.eventId,
      lastTurn: request.lastTurn,
    }),
  };
}

/**
 * Folds `input_applied`: the input was never applied before in this session, and a `turnId`, when
 * present, names the active Turn. An input applied outside a Turn marks the Request as having
 * inputs since its last Turn.
 */
export function foldInputApplied(
  state: FoldState,
  ctx: FoldContext,
  event: DurableEventEnvelopeOf<'input_applied'>,
): FoldState {
  const request = requireActiveRequest(state, ctx, event.requestId);
  if (event.turnId !== undefined) {
    if (request.activeTurn === null) {
      reject(ctx, 'input_applied', `input_applied names Turn ${event.turnId} but no Turn is active`);
    }
    if (request.activeTurn.turnId !== event.turnId) {
      reject(ctx, 'input_applied', `input_applied names Turn ${event.turnId}, not the active ${request.activeTurn.turnId}`);
    }
  }
  claimId(ctx, ID_KIND.appliedInput, event.data.inputId, 'applied Input');
  return withRequest(
    state,
    updateRequest(request, {
      appliedInputIds: appended(request.appliedInputIds, event.data.inputId),
      inputAppliedSinceLastTurn: request.activeTurn === null ? true : request.inputAppliedSinceLastTurn,
      latestBoundaryEventId: event.eventId,
    }),
  );
}
