/**
 * The fold of one event, with every lifecycle invariant the projector enforces.
 *
 * `foldEvent` checks the envelope, then dispatches on `type` to the transition modules
 * (`request-transitions.ts`, `turn-transitions.ts`, `tool-transitions.ts`). Any broken rule throws
 * a `DurableEventProjectionError` whose `details.rule` names it; the projector then stays failed.
 *
 * Invariants (rule name in brackets):
 * - Every envelope passes the strict v4 schema [schema].
 * - Sequences start at 1 and grow by exactly 1, across pages too [sequence].
 * - Every event carries the session's ID (the one configured, else the first event's)
 *   [session_mismatch]; event IDs are unique [duplicate_event_id].
 * - `causationEventId` names an earlier event of this log [causation_unknown].
 * - A command ID covers one contiguous range of events: it may repeat only on the event right
 *   after one carrying it [command_range]. Events without `commandId` are allowed.
 * - The first event is `session_created`, which happens once; nothing follows `session_closed`;
 *   a session closes only without an active Request [session_lifecycle].
 * - At most one active Request: `request_accepted` only when none is active; `request_started`
 *   once, from `accepted`; a Request ends only with no active Turn [request_lifecycle].
 * - Request, Turn, model attempt, tool attempt, permission request, command and applied-input IDs
 *   are never reused [id_reused].
 * - Events name the active Request / Turn, tool events a tool attempt of the active Turn with the
 *   same tool identity, model events a model attempt of the active Turn [correlation].
 * - A Turn starts only in a started Request with no active Turn [turn_lifecycle]; Turn numbers run
 *   1, 2, 3... within each Request and terminal Turn events repeat the active number [turn_number].
 * - A Turn ends (completed or aborted) only when no model attempt is `started` and every tool
 *   attempt is completed, failed or cancelled [turn_blocked].
 * - A Request terminal event's `causationEventId`, when present, is the Request's latest boundary
 *   (accepted, started, input applied, or a terminal Turn event) [request_causation].
 * - Model attempts of a Turn run one at a time and settle once [model_lifecycle].
 * - Tool attempts follow the state machine of `tool-transitions.ts` [tool_lifecycle]; a tool
 *   scheduled under a confirmed response matches one of its tool calls by ID, name and canonical
 *   arguments, checked when either side arrives last [tool_call_mismatch].
 * - Permissions are requested before a tool starts; a pending permission blocks `tool_started`
 *   and `tool_cancelled`; a denied or cancelled one allows only `tool_cancelled`; a resolution
 *   names a pending permission of that tool [permission].
 * - `tool_started` never weakens the scheduled side effect, and a tool resumed after a permission
 *   round trip starts as `non_idempotent` [side_effect].
 * - `input_applied.turnId`, when present, is the active Turn [input_applied].
 * - `request_accepted.recovery` is valid only as the end of its command's adjacent rollover
 *   pattern `[turn_started] -> turn_aborted -> request_interrupted -> request_accepted`
 *   [recovery_provenance].
 *
 * Memory: besides the active Request, the projector keeps every event ID and every domain ID of
 * the session in a copy-on-write string set (about one short string per event) for the reuse and
 * causation checks; nothing else grows with the length of the log.
 */
import { fastParseEnvelope } from '../../protocol/draft-fast-path.js';
import { safeParseDurableEventEnvelope, type DurableEventEnvelope } from '../../protocol/events.js';
import type { RequestId, SessionId, TurnId } from '../../protocol/ids.js';
import { seal } from './frozen-data.js';
import {
  RECENT_EVENT_WINDOW,
  ID_KIND,
  claimId,
  isUsed,
  reject,
  type FoldContext,
  type FoldState,
  type RecentEvent,
} from './fold-state.js';
import type { PersistentKeySet } from './persistent-key-set.js';
import { projectionViolation, type EventLocation } from './projection-errors.js';
import {
  foldInputApplied,
  foldRequestAccepted,
  foldRequestStarted,
  foldRequestTerminal,
} from './request-transitions.js';
import {
  foldPermissionRequested,
  foldPermissionResolved,
  foldToolOutcome,
  foldToolScheduled,
  foldToolStarted,
} from './tool-transitions.js';
import { foldModelStarted, foldModelTerminal, foldTurnStarted, foldTurnTerminal } from './turn-transitions.js';

function locationOf(raw: unknown): EventLocation {
  return typeof raw === 'object' && raw !== null ? (raw as EventLocation) : {};
}

/**
 * Folds one event into `state`, claiming its IDs in `ids`. Returns the new state or throws a
 * `DurableEventProjectionError`. `ids` may be partially updated when it throws.
 */
export function foldEvent(
  state: FoldState,
  ids: PersistentKeySet,
  raw: unknown,
  expectedSessionId: SessionId | undefined,
): FoldState {
  // The fast path returns exactly what zod would, or declines; zod then decides (and names the problem).
  let event = fastParseEnvelope(raw);
  if (event === undefined) {
    const parsed = safeParseDurableEventEnvelope(raw);
    if (!parsed.ok) throw projectionViolation(locationOf(raw), 'schema', parsed.problem);
    event = parsed.value;
  }
  return foldParsed(state, ids, event, expectedSessionId);
}

/**
 * {@link foldEvent} without the envelope schema check, for an envelope the caller built from
 * strictly parsed parts (the journal's preview); every other rule still applies.
 */
export function foldParsed(
  state: FoldState,
  ids: PersistentKeySet,
  event: DurableEventEnvelope,
  expectedSessionId: SessionId | undefined,
): FoldState {
  const ctx: FoldContext = { event, ids };
  checkEnvelope(state, ctx, expectedSessionId);
  const next = dispatch(state, ctx, event);
  claimId(ctx, ID_KIND.event, event.eventId, 'event ID');
  // Every field spelled out, in the order of EMPTY_FOLD_STATE (checkpoints serialise it).
  return {
    sessionId: event.sessionId,
    status: next.status,
    headSequence: event.sequence,
    lastEventId: event.eventId,
    activeRequest: next.activeRequest,
    completedRequests: next.completedRequests,
    lastRequest: next.lastRequest,
    closedReason: next.closedReason,
    previousCommandId: event.commandId,
    recent: remember(state.recent, event),
  };
}

function checkEnvelope(state: FoldState, ctx: FoldContext, expectedSessionId: SessionId | undefined): void {
  const event = ctx.event;
  const expectedSequence = (state.headSequence ?? 0) + 1;
  if (event.sequence !== expectedSequence) {
    reject(ctx, 'sequence', `expected sequence ${expectedSequence}, got ${event.sequence}`);
  }
  const sessionId = expectedSessionId ?? state.sessionId;
  if (sessionId !== null && event.sessionId !== sessionId) {
    reject(ctx, 'session_mismatch', `event belongs to session ${event.sessionId}, not ${sessionId}`);
  }
  if (isUsed(ctx, ID_KIND.event, event.eventId)) reject(ctx, 'duplicate_event_id', `event ID ${event.eventId} repeats`);
  if (event.causationEventId !== undefined && !isUsed(ctx, ID_KIND.event, event.causationEventId)) {
    reject(ctx, 'causation_unknown', `causation ${event.causationEventId} is not an earlier event of this log`);
  }
  if (state.status === 'empty' && event.type !== 'session_created') {
    reject(ctx, 'session_lifecycle', 'the first event must be session_created');
  }
  if (state.status === 'closed') reject(ctx, 'session_lifecycle', 'the session is closed; no event may follow');
  const commandId = event.commandId;
  if (commandId !== undefined && commandId !== state.previousCommandId) {
    // `addKey` is false exactly when the command was used before (and claims it otherwise).
    if (!ctx.ids.addKey(ID_KIND.command, commandId)) {
      reject(ctx, 'command_range', `command ${commandId} already ended; one command is one contiguous range`);
    }
  }
}

function dispatch(state: FoldState, ctx: FoldContext, event: DurableEventEnvelope): FoldState {
  switch (event.type) {
    case 'session_created':
      if (state.status !== 'empty') reject(ctx, 'session_lifecycle', 'session_created may only be the first event');
      return { ...state, status: 'open' };
    case 'session_closed':
      if (state.activeRequest !== null) {
        reject(ctx, 'session_lifecycle', `Request ${state.activeRequest.requestId} is still active`);
      }
      return { ...state, status: 'closed', closedReason: event.data.reason };
    case 'request_accepted':
      return foldRequestAccepted(state, ctx, event);
    case 'request_started':
      return foldRequestStarted(state, ctx, event);
    case 'request_completed':
    case 'request_failed':
    case 'request_interrupted':
      return foldRequestTerminal(state, ctx, event);
    case 'input_applied':
      return foldInputApplied(state, ctx, event);
    case 'turn_started':
      return foldTurnStarted(state, ctx, event);
    case 'turn_completed':
    case 'turn_aborted':
      return foldTurnTerminal(state, ctx, event);
    case 'model_request_started':
      return foldModelStarted(state, ctx, event);
    case 'model_request_completed':
    case 'model_request_failed':
    case 'model_request_aborted':
      return foldModelTerminal(state, ctx, event);
    case 'tool_scheduled':
      return foldToolScheduled(state, ctx, event);
    case 'permission_requested':
      return foldPermissionRequested(state, ctx, event);
    case 'permission_resolved':
      return foldPermissionResolved(state, ctx, event);
    case 'tool_started':
      return foldToolStarted(state, ctx, event);
    case 'tool_completed':
    case 'tool_failed':
    case 'tool_cancelled':
    case 'tool_outcome_unknown':
      return foldToolOutcome(state, ctx, event);
  }
}

function remember(recent: readonly RecentEvent[], event: DurableEventEnvelope): readonly RecentEvent[] {
  const type = event.type;
  // SAFETY: plain reads; an envelope type without `requestId` / `turnId` reads `undefined`, as `in` would.
  const fields = event as { readonly requestId?: RequestId; readonly turnId?: TurnId };
  const entry: RecentEvent = seal({
    type,
    commandId: event.commandId,
    requestId: fields.requestId,
    turnId: fields.turnId,
    turn: type === 'turn_started' || type === 'turn_completed' || type === 'turn_aborted' ? event.data.turn : undefined,
  });
  const length = recent.length;
  // The last RECENT_EVENT_WINDOW - 1 entries plus this one, in one new array.
  const kept: RecentEvent[] = [];
  for (let index = Math.max(0, length - RECENT_EVENT_WINDOW + 1); index < length; index++) {
    kept.push(recent[index] as RecentEvent);
  }
  kept.push(entry);
  return seal(kept);
}
