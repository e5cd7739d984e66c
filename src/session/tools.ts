/**
 * Tool attempts: scheduling, permission round trips, execution, outcomes.
 *
 * `driveTool` moves one attempt from the state the log holds to a terminal outcome:
 *   scheduled --(needs permission)--> permission_requested --host--> permission_resolved
 *     allow -> tool_started (as non_idempotent: the projector's rule after a permission round trip)
 *     deny / cancel -> tool_cancelled, in the same command as the decision
 *   scheduled (no permission) -> tool_started -> execute -> tool_completed | tool_failed
 *   started, pure or idempotent (restored in place) -> tool_outcome_unknown (`process_restart`)
 *     -> execute again -> outcome
 *   outcome_unknown (restored in place) -> tool_failed (`TOOL_OUTCOME_UNKNOWN`), not executed
 * Every execution of a handler follows an event this Session committed for it: `tool_started`
 * for the first, the `tool_outcome_unknown` mark for the one retry an attempt allows (the
 * projector lets an attempt start once and become unknown once, so a second retry could leave no
 * trace; the model sees the failure and may call the tool again, under a new attempt with its own
 * `tool_started`). Both are committed with `commitBeforeEffect`: a Session whose commit meets
 * another writer's progress stops (`superseded`) without running the handler. The lease is
 * validated between the commit and the handler. A handler that ends because its signal aborted
 * is recorded as `tool_cancelled` (abort, `now` Request); during a handoff a `non_idempotent` one
 * is recorded conservatively as `tool_outcome_unknown`, a retry-safe one is left `started` (the
 * successor marks its retry). A lost lease writes nothing.
 */
import { createDurabilityPort } from '../core/durability/port.js';
import { isDurabilityRecordStore, type DurabilityRecordStore } from '../core/durability/record-contract.js';
import type { DurabilityPort, DurabilityPortLike } from '../core/durability/port-types.js';
import { checkDurabilityScope } from '../core/durability/record-validation.js';
import { toolCallScope } from '../core/durability/scope.js';
import type { DurableCommandEventDraft } from '../core/journal/journal-options.js';
import { entriesOf, ownEntry } from '../core/projector/frozen-data.js';
import type { DurableActiveTurnView, DurableToolAttemptView } from '../core/projector/projection-types.js';
import { isAbortError, SessionDurableRecorderError } from '../protocol/errors.js';
import type { DurableErrorInfo, DurableReason, InterruptBehavior, ModelToolCall, PermissionDecision } from '../protocol/event-payloads.js';
import { PermissionRequestId, ToolAttemptId, type ModelAttemptId, type RequestId, type TurnId } from '../protocol/ids.js';
import { isLosslessJson, type JsonValue } from '../protocol/json.js';
import { commit, commitBeforeEffect, ExecutionStopped, validateOwnership, type SessionCore } from './core.js';
import type { RequestRun } from './run.js';
import type { AnySessionTool, SessionPermissionDecision, SessionToolContext } from './types.js';

function currentTurn(core: SessionCore, run: RequestRun): DurableActiveTurnView {
  const turn = core.journal.getProjection().activeRequest?.activeTurn ?? null;
  if (turn === null) throw new SessionDurableRecorderError(`Request ${run.requestId} has no active Turn`);
  return turn;
}

function toolOf(core: SessionCore, name: string): AnySessionTool | undefined {
  return Object.hasOwn(core.settings.tools, name) ? core.settings.tools[name] : undefined;
}

/** `tool_scheduled` drafts for the calls of `modelAttemptId` not scheduled yet. */
export function scheduleDrafts(
  core: SessionCore,
  run: RequestRun,
  turn: DurableActiveTurnView,
  modelAttemptId: ModelAttemptId,
  calls: readonly ModelToolCall[],
): DurableCommandEventDraft[] {
  const known = new Set(
    entriesOf(turn.toolAttempts)
      .filter((tool) => tool.modelAttemptId === modelAttemptId)
      .map((tool) => tool.toolCallId),
  );
  const drafts: DurableCommandEventDraft[] = [];
  for (const call of calls) {
    if (known.has(call.id)) continue;
    known.add(call.id);
    const tool = toolOf(core, call.name);
    let input: JsonValue = call.arguments;
    if (tool?.repairInput !== undefined) {
      try {
        const repaired: unknown = tool.repairInput(call.arguments);
        if (isLosslessJson(repaired)) input = repaired;
      } catch {
        // An input the repair refuses runs as the model wrote it; the handler decides.
      }
    }
    drafts.push({
      type: 'tool_scheduled',
      requestId: run.requestId,
      turnId: turn.turnId,
      modelAttemptId,
      toolAttemptId: ToolAttemptId(core.newId('tool_attempt')),
      data: {
        toolCallId: call.id,
        toolName: call.name,
        modelInput: call.arguments,
        input,
        sideEffect: tool?.sideEffect ?? 'pure',
        interruptBehavior: tool?.interruptBehavior ?? 'cancel',
      },
    });
  }
  return drafts;
}

/** `tool_cancelled` for every attempt of `modelAttemptId` that never started (its model call is void or the Turn is ending). */
export function cancelUnstartedTools(
  requestId: RequestId,
  turn: DurableActiveTurnView,
  modelAttemptId: ModelAttemptId,
  reason: DurableReason,
): DurableCommandEventDraft[] {
  return entriesOf(turn.toolAttempts)
    .filter(
      (tool) =>
        tool.modelAttemptId === modelAttemptId &&
        (tool.status === 'scheduled' || tool.status === 'permission_allowed' || tool.status === 'permission_denied'),
    )
    .sort((a, b) => a.scheduledSequence - b.scheduledSequence)
    .map((tool) => ({
      type: 'tool_cancelled' as const,
      requestId,
      turnId: turn.turnId,
      toolAttemptId: tool.toolAttemptId,
      data: { toolCallId: tool.toolCallId, toolName: tool.toolName, reason },
    }));
}

/** Correlation of a tool event. */
interface ToolScope {
  requestId: RequestId;
  turnId: TurnId;
  toolAttemptId: ToolAttemptId;
}

/** Whether `tool` asks permission before it runs with `input`. */
export function needsPermission(tool: AnySessionTool | undefined, input: JsonValue): boolean {
  const rule = tool?.needsPermission;
  // SAFETY: the handler's input type is the tool's own; the Session passes the persisted input.
  return typeof rule === 'function' ? (rule as (input: JsonValue) => boolean)(input) : rule === true;
}

function decisionOf(answer: SessionPermissionDecision): { decision: PermissionDecision; message?: string } {
  return typeof answer === 'string' ? { decision: answer } : answer;
}

/** Moves one tool attempt to a terminal outcome (see the module header). */
export async function driveTool(core: SessionCore, run: RequestRun, toolAttemptId: ToolAttemptId): Promise<void> {
  for (;;) {
    const turn = currentTurn(core, run);
    const view = ownEntry(turn.toolAttempts, toolAttemptId);
    if (view === undefined) throw new SessionDurableRecorderError(`tool attempt ${toolAttemptId} is not in the active Turn`);
    const scope = { requestId: run.requestId, turnId: turn.turnId, toolAttemptId };
    const identity = { toolCallId: view.toolCallId, toolName: view.toolName };
    const tool = toolOf(core, view.toolName);
    switch (view.status) {
      case 'completed':
      case 'failed':
      case 'cancelled':
        return;
      case 'scheduled':
        if (tool === undefined) {
          await commit(core, `tool-end:${toolAttemptId}`, [{ type: 'tool_cancelled', ...scope, data: { ...identity, reason: 'error' } }]);
          return;
        }
        if (needsPermission(tool, view.input)) {
          const permissionRequestId = PermissionRequestId(core.newId('permission'));
          const message = tool.permissionMessage === undefined ? undefined : callMessage(tool, view.input);
          await commit(core, `perm:${toolAttemptId}`, [
            {
              type: 'permission_requested',
              ...scope,
              data: { ...identity, permissionRequestId, input: view.input, ...(message === undefined ? {} : { message }) },
            },
          ]);
          continue;
        }
        await startTool(core, run, view, scope, identity, view.sideEffect);
        continue;
      case 'awaiting_permission': {
        const permission = view.permissionRequestId === undefined ? undefined : ownEntry(turn.permissions, view.permissionRequestId);
        if (permission === undefined) throw new SessionDurableRecorderError(`tool attempt ${toolAttemptId} awaits an unknown permission`);
        const answer = await askPermission(core, run, view, permission.permissionRequestId, permission.message, false);
        // A handoff leaves the permission pending: only the host decides, and the successor asks again.
        if (answer === null && run.stop?.kind === 'handoff') throw run.stopError();
        if (answer === null && run.stop?.kind === 'lost') throw new ExecutionStopped('lease_lost', 'the execution lease was lost', { cause: run.stop.error });
        const { decision, message } = answer ?? { decision: 'cancel' as const, message: undefined };
        const events: DurableCommandEventDraft[] = [
          {
            type: 'permission_resolved',
            ...scope,
            data: { permissionRequestId: permission.permissionRequestId, decision, ...(message === undefined ? {} : { message }) },
          },
        ];
        if (decision !== 'allow') {
          events.push({
            type: 'tool_cancelled',
            ...scope,
            data: { ...identity, reason: decision === 'deny' ? 'permission_denied' : 'permission_cancelled' },
          });
        }
        await commit(core, `perm-end:${toolAttemptId}`, events);
        continue;
      }
      case 'permission_allowed':
        await startTool(core, run, view, scope, identity, 'non_idempotent');
        continue;
      case 'permission_denied':
        await commit(core, `tool-end:${toolAttemptId}`, [{ type: 'tool_cancelled', ...scope, data: { ...identity, reason: 'permission_denied' } }]);
        return;
      case 'started':
      case 'outcome_unknown':
        if (view.sideEffect === 'non_idempotent' || tool === undefined) {
          throw new SessionDurableRecorderError(
            `tool attempt ${toolAttemptId} (${view.sideEffect}) started without a trusted outcome; it is never run again automatically`,
          );
        }
        if (view.status === 'outcome_unknown') {
          await commit(core, `tool-end:${toolAttemptId}:${view.eventIds.length}`, [
            {
              type: 'tool_failed',
              ...scope,
              data: {
                ...identity,
                error: {
                  code: 'TOOL_OUTCOME_UNKNOWN',
                  message: 'an execution of this tool attempt ended without a recorded outcome; it is not run again under this attempt',
                },
              },
            },
          ]);
          return;
        }
        // The mark of this retry: the execution cut off by the restart has no outcome, and this one starts.
        await commitBeforeEffect(core, `tool-retry:${toolAttemptId}`, [
          { type: 'tool_outcome_unknown', ...scope, data: { ...identity, reason: 'process_restart' } },
        ]);
        await executeTool(core, run, ownEntry(currentTurn(core, run).toolAttempts, toolAttemptId) ?? view, tool, scope, identity);
        return;
    }
  }
}

function callMessage(tool: AnySessionTool, input: JsonValue): string | undefined {
  try {
    // SAFETY: see needsPermission.
    return (tool.permissionMessage as (input: JsonValue) => string)(input);
  } catch {
    return undefined;
  }
}

async function askPermission(
  core: SessionCore,
  run: RequestRun,
  view: DurableToolAttemptView,
  permissionRequestId: string,
  message: string | undefined,
  restored: boolean,
): Promise<{ decision: PermissionDecision; message?: string } | null> {
  const handler = core.settings.onPermission;
  if (handler === undefined) return { decision: 'cancel', message: 'no permission handler is configured' };
  const signal = run.cancel.signal;
  if (signal.aborted) return null;
  const turn = currentTurn(core, run);
  // `null`: the Session stopped waiting (abort, handoff, lease loss); no decision was made.
  const aborted = new Promise<null>((resolve) => {
    signal.addEventListener('abort', () => resolve(null), { once: true });
  });
  const answer = Promise.resolve(
    handler({
      sessionId: core.sessionId,
      requestId: run.requestId,
      turnId: turn.turnId,
      toolAttemptId: view.toolAttemptId,
      permissionRequestId,
      toolCallId: view.toolCallId,
      toolName: view.toolName,
      input: view.input,
      ...(message === undefined ? {} : { message }),
      restored,
      signal,
    }),
  ).then(decisionOf);
  return Promise.race([answer, aborted]);
}

async function startTool(
  core: SessionCore,
  run: RequestRun,
  view: DurableToolAttemptView,
  scope: ToolScope,
  identity: { toolCallId: string; toolName: string },
  sideEffect: DurableToolAttemptView['sideEffect'],
): Promise<void> {
  const tool = toolOf(core, view.toolName);
  if (tool === undefined) throw new SessionDurableRecorderError(`tool ${view.toolName} is not registered`);
  // Spelled out (same keys, same order as `...scope` / `...identity`): a spread in a literal is a generic copy.
  await commitBeforeEffect(core, `tool:${view.toolAttemptId}`, [
    {
      type: 'tool_started',
      requestId: scope.requestId,
      turnId: scope.turnId,
      toolAttemptId: scope.toolAttemptId,
      data: { toolCallId: identity.toolCallId, toolName: identity.toolName, input: view.input, sideEffect },
    },
  ]);
  const started = ownEntry(currentTurn(core, run).toolAttempts, view.toolAttemptId) ?? view;
  await executeTool(core, run, started, tool, scope, identity);
}

function failureOf(error: unknown): DurableErrorInfo {
  if (error instanceof Error) {
    const code = typeof (error as { code?: unknown }).code === 'string' ? String((error as { code?: unknown }).code) : 'TOOL_FAILED';
    return { code, message: error.message };
  }
  return { code: 'TOOL_FAILED', message: String(error) };
}

/**
 * The tool call's durability port, created on the first `step`, `sleep` or `waitFor` (most tools
 * never call one; a port costs an `AbortSignal`, a listener on the tool's signal and an abort
 * event on `close`). Its scope is checked here, when the tool call starts, so a bad scope fails
 * even for a tool that never calls the port; a call after `close()` meets a closed port.
 */
function lazyPort(
  store: DurabilityRecordStore,
  core: SessionCore,
  run: RequestRun,
  view: DurableToolAttemptView,
  behavior: InterruptBehavior,
): DurabilityPortLike & { close(): void } {
  const scope = checkDurabilityScope(toolCallScope(run.requestId, view.toolName, view.toolCallId));
  let port: DurabilityPort | undefined;
  let closed = false;
  const portOf = (): DurabilityPort => {
    if (port === undefined) {
      port = createDurabilityPort({
        store,
        sessionId: core.sessionId,
        runId: run.requestId,
        scope,
        signal: run.toolSignal(behavior),
        clock: core.settings.clock,
        time: core.settings.time,
      });
      if (closed) port.close();
    }
    return port;
  };
  return {
    step: (key, body) => portOf().step(key, body),
    sleep: (key, duration) => portOf().sleep(key, duration),
    waitFor: (key, options) => portOf().waitFor(key, options),
    close: () => {
      closed = true;
      port?.close();
    },
  };
}

async function executeTool(
  core: SessionCore,
  run: RequestRun,
  view: DurableToolAttemptView,
  tool: AnySessionTool,
  scope: ToolScope,
  identity: { toolCallId: string; toolName: string },
): Promise<void> {
  const behavior = view.interruptBehavior;
  await validateOwnership(core);
  const store = core.store;
  const port = core.settings.durability && isDurabilityRecordStore(store) ? lazyPort(store, core, run, view, behavior) : undefined;
  const context: SessionToolContext = {
    sessionId: core.sessionId,
    runId: run.requestId,
    requestId: run.requestId,
    turnId: scope.turnId,
    toolAttemptId: view.toolAttemptId,
    toolCallId: view.toolCallId,
    toolName: view.toolName,
    // The run's signal for this behavior, looked up when the handler reads it (the same object
    // on every read): Node creates an `AbortSignal` on the first read of `controller.signal`
    // (several microseconds), so a handler that never reads its signal costs none.
    get signal(): AbortSignal {
      return run.toolSignal(behavior);
    },
    executionFence: core.lease?.fence,
    context: run.context,
    step: port?.step,
    sleep: port?.sleep,
    waitFor: port?.waitFor,
    progress: (data) => {
      if (core.hub.listening) core.hub.publish({ type: 'tool_progress', ...scope, ...identity, data });
    },
  };
  let outcome: DurableCommandEventDraft;
  try {
    // SAFETY: the handler's input type is the tool's own; the persisted input is what the model
    // (or its repair) produced for this tool.
    const value: unknown = await (tool.execute as (input: JsonValue, ctx: SessionToolContext) => unknown)(view.input, context);
    const result = value === undefined ? null : value;
    outcome = isLosslessJson(result)
      ? {
          type: 'tool_completed',
          requestId: scope.requestId,
          turnId: scope.turnId,
          toolAttemptId: scope.toolAttemptId,
          data: { toolCallId: identity.toolCallId, toolName: identity.toolName, result },
        }
      : { type: 'tool_failed', ...scope, data: { ...identity, error: { code: 'TOOL_RESULT_INVALID', message: 'the tool returned a value that is not lossless JSON' } } };
  } catch (error) {
    if (run.stop?.kind === 'lost') throw new ExecutionStopped('lease_lost', 'the execution lease was lost', { cause: run.stop.error });
    const signal = run.toolSignal(behavior);
    if (signal.aborted && (isAbortError(error) || error === signal.reason)) {
      // A retry-safe tool cut off by a handoff stays `started`: the successor's retry writes its
      // own mark (see the module header), which an earlier `tool_outcome_unknown` would forbid.
      if (run.stop?.kind === 'handoff' && view.sideEffect !== 'non_idempotent') throw run.stopError();
      outcome =
        run.stop?.kind === 'handoff'
          ? { type: 'tool_outcome_unknown', ...scope, data: { ...identity, reason: 'process_restart' } }
          : { type: 'tool_cancelled', ...scope, data: { ...identity, reason: run.stop?.kind === 'interrupt' ? run.stop.reason : 'superseded' } };
    } else {
      outcome = { type: 'tool_failed', ...scope, data: { ...identity, error: failureOf(error) } };
    }
  } finally {
    port?.close();
  }
  if (run.stop?.kind === 'lost') throw new ExecutionStopped('lease_lost', 'the execution lease was lost', { cause: run.stop.error });
  // The attempt's event count makes the command unique per state: an in-place retry after a
  // recorded `tool_outcome_unknown` writes its outcome under a new command ID.
  await commit(core, `tool-end:${view.toolAttemptId}:${view.eventIds.length}`, [outcome]);
}

