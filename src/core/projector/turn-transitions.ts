/**
 * Turn-scope transitions: `turn_started`, `turn_completed`, `turn_aborted` and the four
 * `model_request_*` events.
 *
 * A Turn starts only inside a started Request with no other active Turn, numbered one past the
 * Request's last Turn. It may end (completed or aborted alike) only when no model attempt is still
 * `started` and every tool attempt has a terminal event; the terminal event becomes the Request's
 * `lastTurnEventId` and latest boundary. Model attempts run one at a time within a Turn and settle
 * exactly once; a completed response is checked against the tools already scheduled from it.
 */
import type { DurableEventEnvelopeOf } from '../../protocol/events.js';
import { appended, detach, entriesOf, ownEntry, seal, withEntry } from './frozen-data.js';
import {
  ID_KIND,
  claimId,
  reject,
  requireActiveRequest,
  requireActiveTurn,
  updateRequest,
  updateTurn,
  withRequest,
  withTurn,
  type FoldContext,
  type FoldState,
} from './fold-state.js';
import type { DurableActiveTurnView, DurableModelAttemptView, DurableToolAttemptStatus } from './projection-types.js';
import { checkToolCallMatches } from './tool-call-match.js';

/** Tool statuses a Turn may end with. */
const TERMINAL_TOOL_STATUSES: ReadonlySet<DurableToolAttemptStatus> = new Set(['completed', 'failed', 'cancelled']);

/** Folds `turn_started`. */
export function foldTurnStarted(
  state: FoldState,
  ctx: FoldContext,
  event: DurableEventEnvelopeOf<'turn_started'>,
): FoldState {
  const request = requireActiveRequest(state, ctx, event.requestId);
  if (request.status !== 'started') {
    reject(ctx, 'turn_lifecycle', `Request ${request.requestId} has not started, so no Turn may start`);
  }
  if (request.activeTurn !== null) {
    reject(ctx, 'turn_lifecycle', `Turn ${request.activeTurn.turnId} is still active`);
  }
  if (event.data.turn !== request.lastTurn + 1) {
    reject(ctx, 'turn_number', `turn ${event.data.turn} does not follow the last Turn number ${request.lastTurn}`);
  }
  claimId(ctx, ID_KIND.turn, event.turnId, 'Turn');
  const turn: DurableActiveTurnView = seal({
    turnId: event.turnId,
    turn: event.data.turn,
    ...(event.data.model === undefined ? {} : { model: detach(event.data.model) }),
    startedEventId: event.eventId,
    modelAttempts: seal({}),
    toolAttempts: seal({}),
    permissions: seal({}),
  });
  return withRequest(state, updateRequest(request, { activeTurn: turn, inputAppliedSinceLastTurn: false }));
}

/** Folds `turn_completed` / `turn_aborted`: the same blocking rules apply to both. */
export function foldTurnTerminal(
  state: FoldState,
  ctx: FoldContext,
  event: DurableEventEnvelopeOf<'turn_completed' | 'turn_aborted'>,
): FoldState {
  const { request, turn } = requireActiveTurn(state, ctx, event.requestId, event.turnId);
  if (event.data.turn !== turn.turn) {
    reject(ctx, 'turn_number', `event names turn ${event.data.turn} but Turn ${turn.turnId} is turn ${turn.turn}`);
  }
  const activeModel = entriesOf(turn.modelAttempts).find((attempt) => attempt.status === 'started');
  if (activeModel !== undefined) {
    reject(ctx, 'turn_blocked', `model attempt ${activeModel.modelAttemptId} has no terminal event`);
  }
  const openTool = entriesOf(turn.toolAttempts).find((tool) => !TERMINAL_TOOL_STATUSES.has(tool.status));
  if (openTool !== undefined) {
    reject(ctx, 'turn_blocked', `tool attempt ${openTool.toolAttemptId} is ${openTool.status}, not terminal`);
  }
  return withRequest(
    state,
    updateRequest(request, {
      activeTurn: null,
      lastTurn: turn.turn,
      lastTurnEventId: event.eventId,
      latestBoundaryEventId: event.eventId,
    }),
  );
}

/** Folds `model_request_started`: a fresh ID, and no other attempt of the Turn still running. */
export function foldModelStarted(
  state: FoldState,
  ctx: FoldContext,
  event: DurableEventEnvelopeOf<'model_request_started'>,
): FoldState {
  const { request, turn } = requireActiveTurn(state, ctx, event.requestId, event.turnId);
  const running = entriesOf(turn.modelAttempts).find((attempt) => attempt.status === 'started');
  if (running !== undefined) {
    reject(ctx, 'model_lifecycle', `model attempt ${running.modelAttemptId} of this Turn is still running`);
  }
  claimId(ctx, ID_KIND.modelAttempt, event.modelAttemptId, 'model attempt');
  const attempt: DurableModelAttemptView = seal({
    modelAttemptId: event.modelAttemptId,
    status: 'started',
    model: event.data.model,
    ...(event.data.modelIdentity === undefined ? {} : { modelIdentity: detach(event.data.modelIdentity) }),
    streaming: event.data.streaming,
    startedEventId: event.eventId,
    eventIds: seal([event.eventId]),
  });
  return withTurn(state, request, updateTurn(turn, { modelAttempts: withEntry(turn.modelAttempts, attempt.modelAttemptId, attempt) }));
}

/** Folds a model terminal event: the attempt belongs to the active Turn and is still `started`. */
export function foldModelTerminal(
  state: FoldState,
  ctx: FoldContext,
  event: DurableEventEnvelopeOf<'model_request_completed' | 'model_request_failed' | 'model_request_aborted'>,
): FoldState {
  const { request, turn } = requireActiveTurn(state, ctx, event.requestId, event.turnId);
  const attempt = ownEntry(turn.modelAttempts, event.modelAttemptId);
  if (attempt === undefined) {
    reject(ctx, 'correlation', `model attempt ${event.modelAttemptId} is not an attempt of the active Turn`);
  }
  if (attempt.status !== 'started') {
    reject(ctx, 'model_lifecycle', `model attempt ${attempt.modelAttemptId} already ended as ${attempt.status}`);
  }
  const eventIds = appended(attempt.eventIds, event.eventId);
  let settled: DurableModelAttemptView;
  switch (event.type) {
    case 'model_request_completed': {
      const response = detach(event.data.response);
      for (const tool of entriesOf(turn.toolAttempts)) {
        if (tool.modelAttemptId === attempt.modelAttemptId) checkToolCallMatches(ctx, response, tool);
      }
      settled = seal({ ...attempt, status: 'completed', response, eventIds });
      break;
    }
    case 'model_request_failed':
      settled = seal({ ...attempt, status: 'failed', error: detach(event.data.error), eventIds });
      break;
    case 'model_request_aborted':
      settled = seal({ ...attempt, status: 'aborted', reason: event.data.reason, eventIds });
      break;
  }
  return withTurn(state, request, updateTurn(turn, { modelAttempts: withEntry(turn.modelAttempts, settled.modelAttemptId, settled) }));
}
