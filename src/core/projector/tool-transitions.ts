/**
 * Tool-attempt and permission transitions.
 *
 * State machine of one tool attempt (anything else is rejected):
 *
 *   scheduled --permission_requested--> awaiting_permission
 *   awaiting_permission --permission_resolved(allow)--> permission_allowed
 *   awaiting_permission --permission_resolved(deny|cancel)--> permission_denied
 *   scheduled | permission_allowed --tool_started--> started
 *   started --tool_outcome_unknown--> outcome_unknown
 *   started | outcome_unknown --tool_completed / tool_failed--> completed / failed
 *   scheduled | permission_allowed | permission_denied | started | outcome_unknown
 *     --tool_cancelled--> cancelled
 *
 * Every tool event names an attempt of the active Turn and repeats its tool identity. A tool is
 * scheduled from a running or completed model attempt of the same Turn (never a failed or aborted
 * one) and may not start once that attempt failed or was aborted. `tool_started` may not weaken
 * the scheduled side-effect class, and a tool resumed after a permission round trip must start as
 * `non_idempotent`.
 */
import type { SideEffect } from '../../protocol/event-payloads.js';
import type { DurableEventEnvelopeOf } from '../../protocol/events.js';
import { appended, detach, entriesOf, ownEntry, seal, withEntry, withoutEntry } from './frozen-data.js';
import {
  ID_KIND,
  claimId,
  reject,
  requireActiveTurn,
  updateTurn,
  withTool,
  withTurn,
  type FoldContext,
  type FoldState,
} from './fold-state.js';
import type {
  DurableActiveRequestView,
  DurableActiveTurnView,
  DurablePermissionView,
  DurableToolAttemptView,
} from './projection-types.js';
import { checkToolCallMatches } from './tool-call-match.js';

/** Strength of a side-effect class: a tool may only start with an equal or stronger one. */
const SIDE_EFFECT_RANK: Readonly<Record<SideEffect, number>> = { pure: 0, idempotent: 1, non_idempotent: 2 };

type ToolEvent = DurableEventEnvelopeOf<
  | 'tool_started'
  | 'tool_completed'
  | 'tool_failed'
  | 'tool_cancelled'
  | 'tool_outcome_unknown'
  | 'permission_requested'
  | 'permission_resolved'
>;

interface ToolScope {
  request: DurableActiveRequestView;
  turn: DurableActiveTurnView;
  tool: DurableToolAttemptView;
}

function requireTool(state: FoldState, ctx: FoldContext, event: ToolEvent): ToolScope {
  const { request, turn } = requireActiveTurn(state, ctx, event.requestId, event.turnId);
  const tool = ownEntry(turn.toolAttempts, event.toolAttemptId);
  if (tool === undefined) {
    reject(ctx, 'correlation', `tool attempt ${event.toolAttemptId} is not an attempt of the active Turn`);
  }
  if ('toolCallId' in event.data && (event.data.toolCallId !== tool.toolCallId || event.data.toolName !== tool.toolName)) {
    reject(
      ctx,
      'correlation',
      `tool identity ${event.data.toolCallId}/${event.data.toolName} differs from attempt ${tool.toolAttemptId}'s ${tool.toolCallId}/${tool.toolName}`,
    );
  }
  return { request, turn, tool };
}

/** Folds `tool_scheduled`. */
export function foldToolScheduled(
  state: FoldState,
  ctx: FoldContext,
  event: DurableEventEnvelopeOf<'tool_scheduled'>,
): FoldState {
  const { request, turn } = requireActiveTurn(state, ctx, event.requestId, event.turnId);
  const model = ownEntry(turn.modelAttempts, event.modelAttemptId);
  if (model === undefined) {
    reject(ctx, 'correlation', `model attempt ${event.modelAttemptId} is not an attempt of the active Turn`);
  }
  if (model.status !== 'started' && model.status !== 'completed') {
    reject(ctx, 'tool_lifecycle', `model attempt ${model.modelAttemptId} ${model.status}; its tool calls are void`);
  }
  const data = event.data;
  const sibling = entriesOf(turn.toolAttempts).find(
    (tool) => tool.modelAttemptId === model.modelAttemptId && tool.toolCallId === data.toolCallId,
  );
  if (sibling !== undefined) {
    reject(ctx, 'tool_lifecycle', `tool call ${data.toolCallId} was already scheduled as ${sibling.toolAttemptId}`);
  }
  claimId(ctx, ID_KIND.toolAttempt, event.toolAttemptId, 'tool attempt');
  const modelInput = detach(data.modelInput);
  if (model.response !== undefined) {
    checkToolCallMatches(ctx, model.response, {
      toolAttemptId: event.toolAttemptId,
      toolCallId: data.toolCallId,
      toolName: data.toolName,
      modelInput,
    });
  }
  const input = detach(data.input);
  const tool: DurableToolAttemptView = seal({
    toolAttemptId: event.toolAttemptId,
    toolCallId: data.toolCallId,
    toolName: data.toolName,
    modelAttemptId: event.modelAttemptId,
    modelInput,
    scheduledInput: input,
    input,
    scheduledSideEffect: data.sideEffect,
    sideEffect: data.sideEffect,
    interruptBehavior: data.interruptBehavior,
    status: 'scheduled',
    resumedAfterPermission: false,
    scheduledSequence: event.sequence,
    scheduledEventId: event.eventId,
    eventIds: seal([event.eventId]),
  });
  return withTool(state, request, turn, tool);
}

/** Folds `permission_requested`: only for a `scheduled` tool, with a fresh permission ID. */
export function foldPermissionRequested(
  state: FoldState,
  ctx: FoldContext,
  event: DurableEventEnvelopeOf<'permission_requested'>,
): FoldState {
  const { request, turn, tool } = requireTool(state, ctx, event);
  if (tool.status !== 'scheduled') {
    reject(ctx, 'permission', `tool attempt ${tool.toolAttemptId} is ${tool.status}; permission may only precede its start`);
  }
  const data = event.data;
  claimId(ctx, ID_KIND.permission, data.permissionRequestId, 'permission request');
  const input = detach(data.input);
  const permission: DurablePermissionView = seal({
    permissionRequestId: data.permissionRequestId,
    toolAttemptId: tool.toolAttemptId,
    toolCallId: tool.toolCallId,
    toolName: tool.toolName,
    input,
    ...(data.message === undefined ? {} : { message: data.message }),
    requestedEventId: event.eventId,
  });
  const updated = seal({
    ...tool,
    status: 'awaiting_permission' as const,
    input,
    permissionRequestId: data.permissionRequestId,
    eventIds: appended(tool.eventIds, event.eventId),
  });
  return withTurn(
    state,
    request,
    updateTurn(turn, {
      toolAttempts: withEntry(turn.toolAttempts, updated.toolAttemptId, updated),
      permissions: withEntry(turn.permissions, permission.permissionRequestId, permission),
    }),
  );
}

/** Folds `permission_resolved`: the permission is pending and belongs to the named tool attempt. */
export function foldPermissionResolved(
  state: FoldState,
  ctx: FoldContext,
  event: DurableEventEnvelopeOf<'permission_resolved'>,
): FoldState {
  const { request, turn, tool } = requireTool(state, ctx, event);
  const data = event.data;
  const permission = ownEntry(turn.permissions, data.permissionRequestId);
  if (permission === undefined) {
    reject(ctx, 'permission', `permission request ${data.permissionRequestId} is not pending in the active Turn`);
  }
  if (permission.toolAttemptId !== tool.toolAttemptId) {
    reject(
      ctx,
      'correlation',
      `permission request ${permission.permissionRequestId} belongs to tool attempt ${permission.toolAttemptId}`,
    );
  }
  const allowed = data.decision === 'allow';
  const updated = seal({
    ...tool,
    status: allowed ? ('permission_allowed' as const) : ('permission_denied' as const),
    resumedAfterPermission: allowed,
    permissionDecision: data.decision,
    eventIds: appended(tool.eventIds, event.eventId),
  });
  return withTurn(
    state,
    request,
    updateTurn(turn, {
      toolAttempts: withEntry(turn.toolAttempts, updated.toolAttemptId, updated),
      permissions: withoutEntry(turn.permissions, permission.permissionRequestId),
    }),
  );
}

/** Folds `tool_started`. */
export function foldToolStarted(
  state: FoldState,
  ctx: FoldContext,
  event: DurableEventEnvelopeOf<'tool_started'>,
): FoldState {
  const { request, turn, tool } = requireTool(state, ctx, event);
  if (tool.status === 'awaiting_permission') {
    reject(ctx, 'permission', `tool attempt ${tool.toolAttemptId} still awaits permission ${tool.permissionRequestId ?? ''}`);
  }
  if (tool.status === 'permission_denied') {
    reject(ctx, 'permission', `tool attempt ${tool.toolAttemptId} was denied permission and may only be cancelled`);
  }
  if (tool.status !== 'scheduled' && tool.status !== 'permission_allowed') {
    reject(ctx, 'tool_lifecycle', `tool attempt ${tool.toolAttemptId} is ${tool.status} and cannot start`);
  }
  const model = ownEntry(turn.modelAttempts, tool.modelAttemptId);
  if (model !== undefined && (model.status === 'failed' || model.status === 'aborted')) {
    reject(ctx, 'tool_lifecycle', `model attempt ${model.modelAttemptId} ${model.status}; its tool calls are void`);
  }
  const sideEffect = event.data.sideEffect;
  if (SIDE_EFFECT_RANK[sideEffect] < SIDE_EFFECT_RANK[tool.scheduledSideEffect]) {
    reject(ctx, 'side_effect', `tool_started weakens side effect ${tool.scheduledSideEffect} to ${sideEffect}`);
  }
  if (tool.resumedAfterPermission && sideEffect !== 'non_idempotent') {
    reject(ctx, 'side_effect', `a tool resumed after a permission round trip must start as non_idempotent, not ${sideEffect}`);
  }
  return withTool(
    state,
    request,
    turn,
    seal({
      ...tool,
      status: 'started' as const,
      input: detach(event.data.input),
      sideEffect,
      eventIds: appended(tool.eventIds, event.eventId),
    }),
  );
}

/** Folds the tool outcome events (`completed`, `failed`, `cancelled`, `outcome_unknown`). */
export function foldToolOutcome(
  state: FoldState,
  ctx: FoldContext,
  event: DurableEventEnvelopeOf<'tool_completed' | 'tool_failed' | 'tool_cancelled' | 'tool_outcome_unknown'>,
): FoldState {
  const { request, turn, tool } = requireTool(state, ctx, event);
  const eventIds = appended(tool.eventIds, event.eventId);
  const status = tool.status;
  switch (event.type) {
    case 'tool_completed':
    case 'tool_failed':
      if (status !== 'started' && status !== 'outcome_unknown') {
        reject(ctx, 'tool_lifecycle', `tool attempt ${tool.toolAttemptId} is ${status}; only a started tool has an outcome`);
      }
      return withTool(
        state,
        request,
        turn,
        event.type === 'tool_completed'
          ? seal({ ...tool, status: 'completed' as const, result: detach(event.data.result), eventIds })
          : seal({ ...tool, status: 'failed' as const, error: detach(event.data.error), eventIds }),
      );
    case 'tool_cancelled':
      if (status === 'awaiting_permission') {
        reject(ctx, 'permission', `tool attempt ${tool.toolAttemptId} has a pending permission; resolve it before cancelling`);
      }
      if (status === 'completed' || status === 'failed' || status === 'cancelled') {
        reject(ctx, 'tool_lifecycle', `tool attempt ${tool.toolAttemptId} already ended as ${status}`);
      }
      return withTool(state, request, turn, seal({ ...tool, status: 'cancelled' as const, reason: event.data.reason, eventIds }));
    case 'tool_outcome_unknown':
      if (status !== 'started') {
        reject(ctx, 'tool_lifecycle', `tool attempt ${tool.toolAttemptId} is ${status}; only a started tool can be unknown`);
      }
      return withTool(
        state,
        request,
        turn,
        seal({ ...tool, status: 'outcome_unknown' as const, reason: event.data.reason, eventIds }),
      );
  }
}
