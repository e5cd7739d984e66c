/**
 * Drives one Request from whatever state the log holds to its terminal event.
 *
 * The driver reads the journal's projection at every step and does the next thing, so the same
 * code runs a fresh Request and continues one restored in place:
 * 1. `request_started` (if still accepted), then `input_applied` for the initial input, both
 *    before any preparation;
 * 2. with no active Turn: the last Turn ended without tool calls -> `request_completed` (output =
 *    the last confirmed response); `maxTurns` reached -> `request_interrupted` (`max_turns`);
 *    else `turn_started`;
 * 3. in the Turn: no usable model attempt -> call the model (`tools.ts` runs the tools); a failed
 *    model call ends the Turn and the Request (`turn_aborted` + `request_failed`);
 * 4. steering inputs are applied (`input_applied` with the Turn) before `turn_completed`; they
 *    force another Turn.
 * Stopping on purpose (abort, a `now` Request, handoff) throws out of the step in progress after
 * that step recorded its own outcome; `interruptRequest` then closes the Turn and the Request.
 */
import { entriesOf } from '../core/projector/frozen-data.js';
import type { DurableActiveRequestView, DurableActiveTurnView, DurableModelAttemptView } from '../core/projector/projection-types.js';
import type { DurableCommandEventDraft } from '../core/journal/journal-options.js';
import type { DurableErrorInfo, DurableReason, ModelToolCall } from '../protocol/event-payloads.js';
import { SessionDurableRecorderError } from '../protocol/errors.js';
import { ModelAttemptId, type InputId, type RequestId, type TurnId } from '../protocol/ids.js';
import { commit, commitBeforeEffect, ExecutionStopped, RequestEnded, validateOwnership, type SessionCore } from './core.js';
import { responseText } from './history.js';
import { callLanguageModel, ModelCallError, modelIdentityOf, toPrompt, toTools } from './model-port.js';
import type { RequestRun } from './run.js';
import { cancelUnstartedTools, driveTool, scheduleDrafts } from './tools.js';

function activeRequest(core: SessionCore, requestId: RequestId): DurableActiveRequestView {
  const request = core.journal.getProjection().activeRequest;
  if (request === null || request.requestId !== requestId) {
    throw new SessionDurableRecorderError(`Request ${requestId} is not the active Request of session ${core.sessionId}`);
  }
  return request;
}

function activeTurn(core: SessionCore, requestId: RequestId): DurableActiveTurnView {
  const turn = activeRequest(core, requestId).activeTurn;
  if (turn === null) throw new SessionDurableRecorderError(`Request ${requestId} has no active Turn`);
  return turn;
}

function latestAttempt(turn: DurableActiveTurnView): DurableModelAttemptView | undefined {
  const attempts = entriesOf(turn.modelAttempts);
  return attempts[attempts.length - 1];
}

/** Throws out of the current step when the run is being stopped. */
function throwIfStopping(run: RequestRun): void {
  if (run.stop === null) return;
  if (run.stop.kind === 'lost') throw new ExecutionStopped('lease_lost', 'the execution lease was lost', { cause: run.stop.error });
  throw run.stopError();
}

/** Runs the Request to its end (see the module header). Resolves or rejects `run.result`. */
export async function driveRequest(core: SessionCore, run: RequestRun): Promise<void> {
  try {
    await startRequest(core, run);
    for (;;) {
      throwIfStopping(run);
      const request = activeRequest(core, run.requestId);
      if (request.activeTurn === null) {
        await applySteering(core, run, undefined);
        const facts = core.history.facts(run.requestId);
        if (request.lastTurn > 0 && !facts.lastTurnHadToolCalls && !run.steeredSinceTurn) {
          await completeRequest(core, run);
          return;
        }
        if (request.lastTurn >= run.maxTurns) {
          await endRequest(core, run, 'interrupt', [
            {
              type: 'request_interrupted',
              requestId: run.requestId,
              causationEventId: activeRequest(core, run.requestId).latestBoundaryEventId,
              data: { reason: 'max_turns' },
            },
          ]);
          run.settle({ requestId: run.requestId, status: 'interrupted', reason: 'max_turns' });
          return;
        }
        run.steeredSinceTurn = false;
        const turnId = core.newId('turn');
        await commit(core, `turn:${turnId}`, [
          { type: 'turn_started', requestId: run.requestId, turnId: turnId as TurnId, data: { turn: request.lastTurn + 1, model: run.selection } },
        ]);
      }
      await driveTurn(core, run);
    }
  } catch (error) {
    await finishAfterError(core, run, error);
  }
}

async function startRequest(core: SessionCore, run: RequestRun): Promise<void> {
  let request = activeRequest(core, run.requestId);
  if (request.status === 'accepted') {
    await commit(core, `start:${run.requestId}`, [{ type: 'request_started', requestId: run.requestId, data: {} }]);
    request = activeRequest(core, run.requestId);
  }
  if (!request.appliedInputIds.includes(request.inputId)) {
    await commit(core, `apply:${request.inputId}`, [
      { type: 'input_applied', requestId: run.requestId, data: { inputId: request.inputId, priority: request.priority } },
    ]);
  }
}

/** Commits `input_applied` for every steering input waiting; they reach the next model call. */
async function applySteering(core: SessionCore, run: RequestRun, turnId: TurnId | undefined): Promise<void> {
  while (run.steering.length > 0) {
    const steer = run.steering[0];
    if (steer === undefined) break;
    await commit(core, `apply:${steer.inputId}`, [
      {
        type: 'input_applied',
        requestId: run.requestId,
        ...(turnId === undefined ? {} : { turnId }),
        data: { inputId: steer.inputId as InputId, priority: steer.priority, input: steer.input },
      },
    ]);
    run.steering.shift();
    run.steeredSinceTurn = true;
    steer.resolve();
  }
}

async function driveTurn(core: SessionCore, run: RequestRun): Promise<void> {
  for (;;) {
    throwIfStopping(run);
    const turn = activeTurn(core, run.requestId);
    let attempt = latestAttempt(turn);
    if (attempt?.status === 'started') {
      throw new SessionDurableRecorderError(`model attempt ${attempt.modelAttemptId} has no outcome; the plan is reconcile_model_outcome`);
    }
    if (attempt === undefined || attempt.status !== 'completed') {
      if (attempt !== undefined) {
        // Restored in place after a failed or aborted attempt: its tool calls are void.
        const cancels = cancelUnstartedTools(run.requestId, turn, attempt.modelAttemptId, 'recovery');
        if (cancels.length > 0) await commit(core, `void:${attempt.modelAttemptId}`, cancels);
      }
      await applySteering(core, run, turn.turnId);
      const next = await callModel(core, run, activeTurn(core, run.requestId));
      if (next === null) continue; // a `now` steering input aborted the call: call again with it
      attempt = next;
    }
    const response = attempt.response;
    const calls = response?.toolCalls ?? [];
    const scheduled = scheduleDrafts(core, run, activeTurn(core, run.requestId), attempt.modelAttemptId, calls);
    if (scheduled.length > 0) await commit(core, `schedule:${attempt.modelAttemptId}`, scheduled);
    const tools = entriesOf(activeTurn(core, run.requestId).toolAttempts)
      .filter((tool) => tool.modelAttemptId === attempt.modelAttemptId)
      .sort((a, b) => a.scheduledSequence - b.scheduledSequence);
    for (const tool of tools) {
      throwIfStopping(run);
      await driveTool(core, run, tool.toolAttemptId);
    }
    throwIfStopping(run);
    await applySteering(core, run, turn.turnId);
    await commit(core, `turn-end:${turn.turnId}`, [
      { type: 'turn_completed', requestId: run.requestId, turnId: turn.turnId, data: { turn: turn.turn, hasToolCalls: calls.length > 0 } },
    ]);
    return;
  }
}

function errorInfo(error: unknown): DurableErrorInfo {
  if (error instanceof ModelCallError) return { code: 'MODEL_CALL_FAILED', message: error.message, retryable: error.retryable };
  return { code: 'MODEL_CALL_FAILED', message: error instanceof Error ? error.message : String(error) };
}

/**
 * One model attempt: `model_request_started`, the provider call (tool calls streamed before the
 * terminal event are scheduled as they arrive), then the terminal event. Returns the completed
 * attempt, or `null` when a `now` steering input aborted it.
 */
async function callModel(core: SessionCore, run: RequestRun, turn: DurableActiveTurnView): Promise<DurableModelAttemptView | null> {
  // The prompt of this call includes every steering input applied so far.
  run.steeredSinceTurn = false;
  const modelAttemptId = ModelAttemptId(core.newId('model_attempt'));
  const scope = { requestId: run.requestId, turnId: turn.turnId, modelAttemptId };
  const identity = core.settings.modelIdentity ?? modelIdentityOf(run.model);
  // The happy path's drafts spell out `scope` (same keys, same order): a spread in a literal is a generic copy.
  // Only this Session's own commit of the start licenses the provider call (see `commitBeforeEffect`).
  await commitBeforeEffect(core, `model:${modelAttemptId}`, [
    {
      type: 'model_request_started',
      requestId: run.requestId,
      turnId: turn.turnId,
      modelAttemptId,
      data: { model: run.model.modelId, modelIdentity: identity, streaming: core.settings.streaming },
    },
  ]);
  const controller = run.startModelCall();
  let sessionError: unknown;
  try {
    await validateOwnership(core);
    const response = await callLanguageModel({
      model: run.model,
      streaming: core.settings.streaming,
      prompt: toPrompt(core.settings.system, core.history.messages()),
      tools: toTools(core.settings.tools),
      settings: core.settings.callSettings,
      signal: controller.signal,
      onTextDelta: (delta) => {
        if (core.hub.listening) core.hub.publish({ type: 'text_delta', ...scope, delta });
      },
      onReasoningDelta: (delta) => {
        if (core.hub.listening) core.hub.publish({ type: 'reasoning_delta', ...scope, delta });
      },
      onToolCall: async (call: ModelToolCall) => {
        try {
          const drafts = scheduleDrafts(core, run, activeTurn(core, run.requestId), modelAttemptId, [call]);
          if (drafts.length > 0) await commit(core, `schedule:${modelAttemptId}:${call.id}`, drafts);
        } catch (error) {
          sessionError = error;
          controller.abort(error);
          throw error;
        }
      },
    });
    if (sessionError !== undefined) throw sessionError;
    const result = await commit(core, `model-end:${modelAttemptId}`, [
      { type: 'model_request_completed', requestId: run.requestId, turnId: turn.turnId, modelAttemptId, data: { response } },
    ]);
    const attempt = result.projection.activeRequest?.activeTurn?.modelAttempts[modelAttemptId];
    if (attempt === undefined) throw new SessionDurableRecorderError(`model attempt ${modelAttemptId} vanished after its commit`);
    return attempt;
  } catch (error) {
    if (sessionError !== undefined) throw sessionError;
    if (error instanceof ExecutionStopped) throw error;
    if (run.stop?.kind === 'lost') throw new ExecutionStopped('lease_lost', 'the execution lease was lost', { cause: run.stop.error });
    if (controller.signal.aborted) {
      const reason: DurableReason =
        run.stop === null ? 'superseded' : run.stop.kind === 'handoff' ? 'process_restart' : run.stop.reason;
      const events: DurableCommandEventDraft[] = [{ type: 'model_request_aborted', ...scope, data: { reason } }];
      // A handoff leaves the void calls to the successor's plan; otherwise they end here.
      if (run.stop?.kind !== 'handoff') events.push(...cancelUnstartedTools(run.requestId, activeTurn(core, run.requestId), modelAttemptId, reason));
      await commit(core, `model-end:${modelAttemptId}`, events);
      if (run.stop === null) return null;
      throw run.stopError();
    }
    const info = errorInfo(error);
    await commit(core, `model-end:${modelAttemptId}`, [
      { type: 'model_request_failed', ...scope, data: { error: info } },
      ...cancelUnstartedTools(run.requestId, activeTurn(core, run.requestId), modelAttemptId, 'error'),
    ]);
    await endRequest(core, run, 'fail', [
      { type: 'turn_aborted', requestId: run.requestId, turnId: turn.turnId, data: { turn: turn.turn, reason: 'error' } },
      { type: 'request_failed', requestId: run.requestId, data: { error: info } },
    ]);
    run.settle({ requestId: run.requestId, status: 'failed', error: info });
    throw new RequestEnded();
  } finally {
    run.endModelCall();
  }
}

async function completeRequest(core: SessionCore, run: RequestRun): Promise<void> {
  const facts = core.history.facts(run.requestId);
  const output = responseText(facts.lastResponse);
  await endRequest(core, run, 'complete', [
    {
      type: 'request_completed',
      requestId: run.requestId,
      causationEventId: activeRequest(core, run.requestId).latestBoundaryEventId,
      data: { output, usage: { ...facts.usage } },
    },
  ]);
  run.settle({ requestId: run.requestId, status: 'completed', output, usage: { ...facts.usage } });
}

async function endRequest(core: SessionCore, run: RequestRun, kind: string, events: DurableCommandEventDraft[]): Promise<void> {
  await commit(core, `${kind}:${run.requestId}`, events);
}

/**
 * Closes the active Turn and the Request after an interrupt (`abort()`, a `now` Request, close):
 * unstarted tools are cancelled, a pending permission is cancelled, then `turn_aborted` and
 * `request_interrupted`, all in one command.
 */
export async function interruptRequest(core: SessionCore, run: RequestRun, reason: DurableReason, byInputId?: InputId): Promise<void> {
  const request = core.journal.getProjection().activeRequest;
  if (request === null || request.requestId !== run.requestId) return;
  const events: DurableCommandEventDraft[] = [];
  const terminal = { type: 'request_interrupted' as const, requestId: run.requestId, data: { reason, ...(byInputId === undefined ? {} : { byInputId }) } };
  const turn = request.activeTurn;
  if (turn !== null) {
    for (const tool of entriesOf(turn.toolAttempts).sort((a, b) => a.scheduledSequence - b.scheduledSequence)) {
      const scope = { requestId: run.requestId, turnId: turn.turnId, toolAttemptId: tool.toolAttemptId };
      const identity = { toolCallId: tool.toolCallId, toolName: tool.toolName };
      if (tool.status === 'awaiting_permission' && tool.permissionRequestId !== undefined) {
        events.push({ type: 'permission_resolved', ...scope, data: { permissionRequestId: tool.permissionRequestId, decision: 'cancel' } });
      }
      if (tool.status === 'started' || tool.status === 'outcome_unknown') {
        throw new ExecutionStopped('error', `tool attempt ${tool.toolAttemptId} has no trusted outcome; the Turn cannot be aborted`);
      }
      if (tool.status !== 'completed' && tool.status !== 'failed' && tool.status !== 'cancelled') {
        events.push({ type: 'tool_cancelled', ...scope, data: { ...identity, reason } });
      }
    }
    events.push({ type: 'turn_aborted', requestId: run.requestId, turnId: turn.turnId, data: { turn: turn.turn, reason } });
    events.push(terminal);
  } else {
    events.push({ ...terminal, causationEventId: request.latestBoundaryEventId });
  }
  await commit(core, `interrupt:${run.requestId}`, events);
  run.settle({ requestId: run.requestId, status: 'interrupted', reason });
}

async function finishAfterError(core: SessionCore, run: RequestRun, error: unknown): Promise<void> {
  if (error instanceof RequestEnded) return;
  const stop = run.stop;
  if ((error instanceof ExecutionStopped && error.reason !== 'handoff') || stop?.kind === 'lost') {
    run.fail(error);
    return;
  }
  if (stop?.kind === 'handoff') {
    run.fail(new ExecutionStopped('handoff', `Request ${run.requestId} was suspended for a handoff`));
    return;
  }
  if (stop?.kind === 'interrupt') {
    try {
      await interruptRequest(core, run, stop.reason, stop.byInputId);
    } catch (interruptError) {
      run.fail(interruptError);
    }
    return;
  }
  run.fail(error);
}
