/**
 * Plan items with a safety class: what an operator may leave to automation and what needs them.
 *
 * The projector's recovery plan (`src/core/projector/recovery-plan.ts`) names one action and the
 * attempts it concerns. This module flattens it into items, each classified as:
 * - `safe_to_retry`: recovery may do it without anyone checking anything (resume a Request or a
 *   Turn, rerun a `pure`/`idempotent` tool of a confirmed model response, cancel a tool that never
 *   started or whose model response was never confirmed);
 * - `needs_reconciliation`: an outcome has to be established from records outside the log (the
 *   provider's or the external system's) and written back with a reconcile operation: a model
 *   attempt with no terminal event, a `non_idempotent` tool that crossed its execution boundary,
 *   inputs applied before a Turn, a Request whose last Turn ended without a terminal event;
 * - `needs_person`: a decision only a person can make (a pending permission).
 * Nothing here touches a store: the same classification runs in the CLI, the Worker and the page.
 */
import type { DurableRecoveryAction, DurableRecoveryPlan } from '../../core/projector/projection-types.js';
import type { SideEffect } from '../../protocol/event-payloads.js';

/** The three safety classes of a plan item. */
type PlanItemSafety = 'safe_to_retry' | 'needs_reconciliation' | 'needs_person';

/** What a plan item is about. */
type PlanItemKind =
  | 'request'
  | 'turn'
  | 'model_attempt'
  | 'permission'
  | 'tool_retry'
  | 'tool_cancel'
  | 'tool_unknown';

/** One thing recovery (or an operator) has to do. */
export interface PlanItem {
  kind: PlanItemKind;
  safety: PlanItemSafety;
  /** One line for people. */
  summary: string;
  /** Operation of the recovery API that settles it, when one does. */
  operation?: 'resolve-permission' | 'reconcile-tool-outcome' | 'reconcile-model-outcome' | 'reconcile-request-outcome';
  requestId?: string;
  turnId?: string;
  modelAttemptId?: string;
  toolAttemptId?: string;
  toolCallId?: string;
  toolName?: string;
  sideEffect?: SideEffect;
  permissionRequestId?: string;
  /** The tool input a permission asks about. */
  input?: unknown;
  message?: string;
}

/** The plan with its items. */
export interface ClassifiedPlan {
  action: DurableRecoveryAction;
  reason: string;
  headSequence: number | null;
  items: PlanItem[];
  /** The worst safety of any item (`null` when there is nothing to do). */
  safety: PlanItemSafety | null;
}

const RANK: Record<PlanItemSafety, number> = { safe_to_retry: 0, needs_reconciliation: 1, needs_person: 2 };

/** Human label of a safety class. */
export function safetyLabel(safety: PlanItemSafety): string {
  switch (safety) {
    case 'safe_to_retry':
      return 'safe to retry';
    case 'needs_reconciliation':
      return 'needs reconciliation';
    case 'needs_person':
      return 'needs a person';
  }
}

function requestItem(plan: DurableRecoveryPlan): PlanItem | undefined {
  const ids = {
    ...(plan.requestId === undefined ? {} : { requestId: plan.requestId }),
    ...(plan.turnId === undefined ? {} : { turnId: plan.turnId }),
  };
  switch (plan.action) {
    case 'none':
      return undefined;
    case 'resume_request':
      return { kind: 'request', safety: 'safe_to_retry', summary: `resume Request ${plan.requestId ?? '?'} (accepted, never started)`, ...ids };
    case 'rollover_request':
      return { kind: 'request', safety: 'safe_to_retry', summary: `roll Request ${plan.requestId ?? '?'} over into a recovery Request`, ...ids };
    case 'resume_turn':
      return { kind: 'turn', safety: 'safe_to_retry', summary: `resume Turn ${plan.turnId ?? '?'} of Request ${plan.requestId ?? '?'}`, ...ids };
    case 'reconcile_request_inputs':
      return {
        kind: 'request',
        safety: 'needs_reconciliation',
        summary: `check which inputs Request ${plan.requestId ?? '?'} prepared (${plan.appliedInputIds.length} applied), then roll it over`,
        ...ids,
      };
    case 'reconcile_request_outcome':
      return {
        kind: 'request',
        safety: 'needs_reconciliation',
        summary: `Turn ${plan.lastTurn} of Request ${plan.requestId ?? '?'} ended without a Request outcome: record it`,
        operation: 'reconcile-request-outcome',
        ...ids,
      };
    // The remaining actions are explained by their attempt items.
    case 'resolve_permissions':
    case 'reconcile_tool_outcomes':
    case 'reconcile_model_outcome':
      return undefined;
  }
}

/**
 * Flattens a recovery plan into classified items, the most urgent first.
 *
 * @example
 * const { items } = classifyRecoveryPlan(projector.recoveryPlan());
 * items.filter((item) => item.safety === 'needs_person');
 */
export function classifyRecoveryPlan(plan: DurableRecoveryPlan): ClassifiedPlan {
  const items: PlanItem[] = [];
  const base = {
    ...(plan.requestId === undefined ? {} : { requestId: plan.requestId }),
    ...(plan.turnId === undefined ? {} : { turnId: plan.turnId }),
  };
  for (const permission of plan.pendingPermissions) {
    items.push({
      kind: 'permission',
      safety: 'needs_person',
      summary: `permission for ${permission.toolName} (${permission.toolCallId}) is waiting for an answer`,
      operation: 'resolve-permission',
      ...base,
      permissionRequestId: permission.permissionRequestId,
      toolAttemptId: permission.toolAttemptId,
      toolCallId: permission.toolCallId,
      toolName: permission.toolName,
      input: permission.input,
      ...(permission.message === undefined ? {} : { message: permission.message }),
    });
  }
  const model = plan.activeModelAttempt;
  if (model !== null) {
    items.push({
      kind: 'model_attempt',
      safety: 'needs_reconciliation',
      summary: `model attempt ${model.modelAttemptId} (${model.model}) started without an outcome: check the provider's records`,
      operation: 'reconcile-model-outcome',
      ...base,
      modelAttemptId: model.modelAttemptId,
    });
  }
  for (const tool of plan.unknownToolAttempts) {
    items.push({
      kind: 'tool_unknown',
      safety: 'needs_reconciliation',
      summary: `${tool.toolName} (${tool.toolCallId}) is non_idempotent and may have run: check the external system, never rerun blindly`,
      operation: 'reconcile-tool-outcome',
      ...base,
      toolAttemptId: tool.toolAttemptId,
      toolCallId: tool.toolCallId,
      toolName: tool.toolName,
      sideEffect: tool.sideEffect,
    });
  }
  for (const tool of plan.retryableToolAttempts) {
    items.push({
      kind: 'tool_retry',
      safety: 'safe_to_retry',
      summary: `${tool.toolName} (${tool.toolCallId}) is ${tool.sideEffect}: running it again is safe`,
      ...base,
      toolAttemptId: tool.toolAttemptId,
      toolCallId: tool.toolCallId,
      toolName: tool.toolName,
      sideEffect: tool.sideEffect,
    });
  }
  for (const tool of plan.cancelableToolAttempts) {
    items.push({
      kind: 'tool_cancel',
      safety: 'safe_to_retry',
      summary: `${tool.toolName} (${tool.toolCallId}) never ran or came from an unconfirmed response: recovery cancels it`,
      ...base,
      toolAttemptId: tool.toolAttemptId,
      toolCallId: tool.toolCallId,
      toolName: tool.toolName,
      sideEffect: tool.sideEffect,
    });
  }
  const request = requestItem(plan);
  if (request !== undefined) items.push(request);
  items.sort((a, b) => RANK[b.safety] - RANK[a.safety]);
  const worst = items[0]?.safety ?? null;
  return { action: plan.action, reason: plan.reason, headSequence: plan.headSequence, items, safety: worst };
}
