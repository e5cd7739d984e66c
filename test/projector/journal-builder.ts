/**
 * JournalBuilder: builds valid v4 envelope sequences for tests, one lifecycle step per call.
 *
 * Store fields (`sequence`, `eventId`, timestamps) come from {@link EnvelopeSequencer}; the builder
 * remembers the current Request, Turn, model attempt and tools, so most calls need no arguments.
 * Every ID can be overridden, and the builder never validates: tests that need a broken journal
 * pass wrong IDs or edit `events` afterwards. `command(id, fn)` stamps one commandId on every
 * event `fn` produces; outside it, only `request_accepted` gets a (fresh) commandId.
 *
 * @example
 * const b = new JournalBuilder();
 * b.createSession();
 * b.acceptRequest();
 * b.startRequest();
 * b.applyInput();
 * b.startTurn();
 * b.modelStarted();
 * b.modelCompleted({ toolCalls: [{ id: 'call-1', name: 'read', arguments: { path: 'a' } }] });
 * b.scheduleTool({ toolCallId: 'call-1' });
 * projector.apply(b.events);
 */
import type {
  DurableReason,
  InterruptBehavior,
  ModelToolCall,
  PermissionDecision,
  RequestRecovery,
  SideEffect,
} from '../../src/protocol/event-payloads.js';
import type { DurableEventDraft } from '../../src/protocol/events.js';
import {
  CommandId,
  InputId,
  ModelAttemptId,
  PermissionRequestId,
  RequestId,
  ToolAttemptId,
  TurnId,
} from '../../src/protocol/ids.js';
import type { JsonValue } from '../../src/protocol/json.js';
import { EnvelopeSequencer, type EnvelopeOverrides } from './envelope-sequencer.js';

export { draftOf, EnvelopeSequencer, type EnvelopeOverrides } from './envelope-sequencer.js';

interface ToolRecord {
  toolAttemptId: ToolAttemptId;
  toolCallId: string;
  toolName: string;
  modelAttemptId: ModelAttemptId;
}

/** Options of the tool event helpers: the attempt (default: the last scheduled) and its scope. */
export type ToolEventOptions = { toolAttemptId?: ToolAttemptId; turnId?: TurnId; requestId?: RequestId } & EnvelopeOverrides;

/** Builds envelope sequences; see the module header. */
export class JournalBuilder extends EnvelopeSequencer {
  requestId: RequestId | undefined;
  inputId: InputId | undefined;
  turnId: TurnId | undefined;
  turn = 0;
  modelAttemptId: ModelAttemptId | undefined;
  readonly tools = new Map<ToolAttemptId, ToolRecord>();
  readonly permissionTools = new Map<PermissionRequestId, ToolAttemptId>();
  private readonly responses = new Map<ModelAttemptId, ModelToolCall[]>();
  private readonly scheduledCalls = new Map<ModelAttemptId, ModelToolCall[]>();

  private req(requestId?: RequestId): RequestId {
    const id = requestId ?? this.requestId;
    if (id === undefined) throw new Error('no current Request');
    return id;
  }

  private turnScope(o: { requestId?: RequestId; turnId?: TurnId }): { requestId: RequestId; turnId: TurnId } {
    const turnId = o.turnId ?? this.turnId;
    if (turnId === undefined) throw new Error('no current Turn');
    return { requestId: this.req(o.requestId), turnId };
  }

  private tool(toolAttemptId: ToolAttemptId | undefined): ToolRecord {
    const id = toolAttemptId ?? [...this.tools.keys()].at(-1);
    const record = id === undefined ? undefined : this.tools.get(id);
    if (record === undefined) throw new Error(`unknown tool attempt ${String(id)}`);
    return record;
  }

  // ---- session ----

  createSession(): this {
    this.push({ type: 'session_created', data: { source: 'create' } });
    return this;
  }

  closeSession(reason: DurableReason = 'completed'): this {
    this.push({ type: 'session_closed', data: { reason } });
    return this;
  }

  // ---- request ----

  acceptRequest(
    o: {
      requestId?: string;
      inputId?: string;
      input?: string;
      recovery?: RequestRecovery;
      maxTurns?: number;
    } & EnvelopeOverrides = {},
  ): this {
    const requestId = RequestId(o.requestId ?? this.fresh('req'));
    const inputId = InputId(o.inputId ?? this.fresh('input'));
    this.requestId = requestId;
    this.inputId = inputId;
    this.turnId = undefined;
    this.turn = 0;
    this.modelAttemptId = undefined;
    this.push(
      {
        type: 'request_accepted',
        requestId,
        commandId: CommandId(o.commandId ?? this.activeCommand ?? this.fresh('cmd')),
        data: {
          inputId,
          input: o.input ?? 'do the thing',
          priority: 'next',
          ...(o.maxTurns === undefined ? {} : { maxTurns: o.maxTurns }),
          ...(o.recovery === undefined ? {} : { recovery: o.recovery }),
        },
      },
      o,
    );
    return this;
  }

  startRequest(o: { requestId?: RequestId } & EnvelopeOverrides = {}): this {
    this.push({ type: 'request_started', requestId: this.req(o.requestId), data: {} }, o);
    return this;
  }

  /** Applies an input (default: the Request's initial input). */
  applyInput(o: { inputId?: string; requestId?: RequestId; turnId?: TurnId } & EnvelopeOverrides = {}): this {
    this.push(
      {
        type: 'input_applied',
        requestId: this.req(o.requestId),
        ...(o.turnId === undefined ? {} : { turnId: o.turnId }),
        data: { inputId: InputId(o.inputId ?? this.inputId ?? this.fresh('input')), priority: 'next' },
      },
      o,
    );
    return this;
  }

  completeRequest(o: { requestId?: RequestId } & EnvelopeOverrides = {}): this {
    this.push({ type: 'request_completed', requestId: this.req(o.requestId), data: { output: 'done' } }, o);
    return this;
  }

  failRequest(o: { requestId?: RequestId } & EnvelopeOverrides = {}): this {
    this.push(
      { type: 'request_failed', requestId: this.req(o.requestId), data: { error: { code: 'E_TEST', message: 'failed' } } },
      o,
    );
    return this;
  }

  interruptRequest(o: { requestId?: RequestId; reason?: DurableReason } & EnvelopeOverrides = {}): this {
    this.push(
      { type: 'request_interrupted', requestId: this.req(o.requestId), data: { reason: o.reason ?? 'user_abort' } },
      o,
    );
    return this;
  }

  // ---- turn ----

  startTurn(o: { turnId?: string; turn?: number; requestId?: RequestId } & EnvelopeOverrides = {}): this {
    const turnId = TurnId(o.turnId ?? this.fresh('turn'));
    const turn = o.turn ?? this.turn + 1;
    this.turnId = turnId;
    this.turn = turn;
    this.push({ type: 'turn_started', requestId: this.req(o.requestId), turnId, data: { turn } }, o);
    return this;
  }

  completeTurn(o: { turnId?: TurnId; turn?: number; requestId?: RequestId } & EnvelopeOverrides = {}): this {
    this.push(
      { type: 'turn_completed', ...this.turnScope(o), data: { turn: o.turn ?? this.turn, hasToolCalls: this.tools.size > 0 } },
      o,
    );
    return this;
  }

  abortTurn(
    o: { turnId?: TurnId; turn?: number; requestId?: RequestId; reason?: DurableReason } & EnvelopeOverrides = {},
  ): this {
    this.push(
      { type: 'turn_aborted', ...this.turnScope(o), data: { turn: o.turn ?? this.turn, reason: o.reason ?? 'user_abort' } },
      o,
    );
    return this;
  }

  // ---- model attempts ----

  modelStarted(o: { modelAttemptId?: string; turnId?: TurnId; requestId?: RequestId } & EnvelopeOverrides = {}): this {
    const modelAttemptId = ModelAttemptId(o.modelAttemptId ?? this.fresh('model'));
    this.modelAttemptId = modelAttemptId;
    this.push(
      {
        type: 'model_request_started',
        ...this.turnScope(o),
        modelAttemptId,
        data: { model: 'test-model', modelIdentity: { provider: 'test', api: 'messages' }, streaming: false },
      },
      o,
    );
    return this;
  }

  /**
   * Completes the model attempt. Without `toolCalls`, the response carries exactly the calls of
   * the tools already scheduled under the attempt (a streaming writer's view).
   */
  modelCompleted(
    o: { modelAttemptId?: ModelAttemptId; toolCalls?: ModelToolCall[]; turnId?: TurnId; requestId?: RequestId } & EnvelopeOverrides = {},
  ): this {
    const modelAttemptId = o.modelAttemptId ?? this.modelAttemptId;
    if (modelAttemptId === undefined) throw new Error('no current model attempt');
    const toolCalls = o.toolCalls ?? this.scheduledCalls.get(modelAttemptId) ?? [];
    this.responses.set(modelAttemptId, toolCalls);
    this.push(
      {
        type: 'model_request_completed',
        ...this.turnScope(o),
        modelAttemptId,
        data: {
          response: {
            content: 'model says',
            ...(toolCalls.length === 0 ? {} : { toolCalls }),
            stopReason: toolCalls.length === 0 ? 'end_turn' : 'tool_use',
          },
        },
      },
      o,
    );
    return this;
  }

  modelFailed(o: { modelAttemptId?: ModelAttemptId; turnId?: TurnId } & EnvelopeOverrides = {}): this {
    const modelAttemptId = o.modelAttemptId ?? this.modelAttemptId;
    if (modelAttemptId === undefined) throw new Error('no current model attempt');
    this.push(
      {
        type: 'model_request_failed',
        ...this.turnScope(o),
        modelAttemptId,
        data: { error: { code: 'E_MODEL', message: 'provider failed' } },
      },
      o,
    );
    return this;
  }

  modelAborted(o: { modelAttemptId?: ModelAttemptId; turnId?: TurnId } & EnvelopeOverrides = {}): this {
    const modelAttemptId = o.modelAttemptId ?? this.modelAttemptId;
    if (modelAttemptId === undefined) throw new Error('no current model attempt');
    this.push({ type: 'model_request_aborted', ...this.turnScope(o), modelAttemptId, data: { reason: 'user_abort' } }, o);
    return this;
  }

  // ---- tools ----

  /**
   * Schedules a tool under the current model attempt. When the attempt's response is known and
   * contains `toolCallId`, name and arguments default to that call.
   */
  scheduleTool(
    o: {
      toolAttemptId?: string;
      toolCallId?: string;
      toolName?: string;
      modelInput?: JsonValue;
      input?: JsonValue;
      sideEffect?: SideEffect;
      interruptBehavior?: InterruptBehavior;
      modelAttemptId?: ModelAttemptId;
      turnId?: TurnId;
      requestId?: RequestId;
    } & EnvelopeOverrides = {},
  ): this {
    const modelAttemptId = o.modelAttemptId ?? this.modelAttemptId;
    if (modelAttemptId === undefined) throw new Error('no current model attempt');
    const toolAttemptId = ToolAttemptId(o.toolAttemptId ?? this.fresh('tool'));
    const toolCallId = o.toolCallId ?? this.fresh('call');
    const known = this.responses.get(modelAttemptId)?.find((call) => call.id === toolCallId);
    const toolName = o.toolName ?? known?.name ?? 'echo';
    const modelInput = o.modelInput !== undefined ? o.modelInput : known !== undefined ? known.arguments : { call: toolCallId };
    this.tools.set(toolAttemptId, { toolAttemptId, toolCallId, toolName, modelAttemptId });
    const calls = this.scheduledCalls.get(modelAttemptId) ?? [];
    calls.push({ id: toolCallId, name: toolName, arguments: modelInput });
    this.scheduledCalls.set(modelAttemptId, calls);
    this.push(
      {
        type: 'tool_scheduled',
        ...this.turnScope(o),
        modelAttemptId,
        toolAttemptId,
        data: {
          toolCallId,
          toolName,
          modelInput,
          input: o.input ?? modelInput,
          sideEffect: o.sideEffect ?? 'pure',
          interruptBehavior: o.interruptBehavior ?? 'cancel',
        },
      },
      o,
    );
    return this;
  }

  requestPermission(
    o: { toolAttemptId?: ToolAttemptId; permissionRequestId?: string; input?: JsonValue; turnId?: TurnId } & EnvelopeOverrides = {},
  ): this {
    const tool = this.tool(o.toolAttemptId);
    const permissionRequestId = PermissionRequestId(o.permissionRequestId ?? this.fresh('perm'));
    this.permissionTools.set(permissionRequestId, tool.toolAttemptId);
    this.push(
      {
        type: 'permission_requested',
        ...this.turnScope(o),
        toolAttemptId: tool.toolAttemptId,
        data: {
          permissionRequestId,
          toolCallId: tool.toolCallId,
          toolName: tool.toolName,
          input: o.input ?? { approved: true },
          message: 'May I?',
        },
      },
      o,
    );
    return this;
  }

  resolvePermission(
    o: { permissionRequestId?: PermissionRequestId; decision?: PermissionDecision; toolAttemptId?: ToolAttemptId; turnId?: TurnId } & EnvelopeOverrides = {},
  ): this {
    const permissionRequestId = o.permissionRequestId ?? [...this.permissionTools.keys()].at(-1);
    if (permissionRequestId === undefined) throw new Error('no permission request');
    const toolAttemptId = o.toolAttemptId ?? this.permissionTools.get(permissionRequestId);
    if (toolAttemptId === undefined) throw new Error('unknown permission request');
    this.push(
      {
        type: 'permission_resolved',
        ...this.turnScope(o),
        toolAttemptId,
        data: { permissionRequestId, decision: o.decision ?? 'allow' },
      },
      o,
    );
    return this;
  }

  startTool(o: ToolEventOptions & { sideEffect?: SideEffect; input?: JsonValue } = {}): this {
    return this.toolEvent('tool_started', o, { input: o.input ?? { run: true }, sideEffect: o.sideEffect ?? 'pure' });
  }

  completeTool(o: ToolEventOptions & { result?: JsonValue } = {}): this {
    return this.toolEvent('tool_completed', o, { result: o.result ?? { ok: true } });
  }

  failTool(o: ToolEventOptions = {}): this {
    return this.toolEvent('tool_failed', o, { error: { code: 'E_TOOL', message: 'tool failed' } });
  }

  cancelTool(o: ToolEventOptions & { reason?: DurableReason } = {}): this {
    return this.toolEvent('tool_cancelled', o, { reason: o.reason ?? 'user_abort' });
  }

  toolOutcomeUnknown(o: ToolEventOptions = {}): this {
    return this.toolEvent('tool_outcome_unknown', o, { reason: 'process_restart' });
  }

  private toolEvent(
    type: 'tool_started' | 'tool_completed' | 'tool_failed' | 'tool_cancelled' | 'tool_outcome_unknown',
    o: ToolEventOptions,
    payload: Record<string, JsonValue>,
  ): this {
    const tool = this.tool(o.toolAttemptId);
    const data = { toolCallId: tool.toolCallId, toolName: tool.toolName, ...payload };
    // SAFETY: each caller passes exactly the payload fields of its type besides the tool identity.
    const draft = { type, ...this.turnScope(o), toolAttemptId: tool.toolAttemptId, data } as unknown as DurableEventDraft;
    this.push(draft, o);
    return this;
  }

  // ---- rollovers (the recovery coordinator's command shapes) ----

  /**
   * Pre-Turn rollover of the current started Request in one command: synthetic turn_started ->
   * turn_aborted -> request_interrupted -> request_accepted(recovery).
   */
  rolloverPreTurn(o: { commandId?: string; requestId?: string; inputId?: string } = {}): this {
    const source = this.req();
    return this.command(o.commandId ?? this.fresh('cmd-rollover'), () => {
      this.startTurn();
      const recovery: RequestRecovery = { requestId: source, turnId: this.turnScope({}).turnId, turn: this.turn };
      this.abortTurn({ reason: 'process_restart' });
      this.interruptRequest({ reason: 'process_restart' });
      this.acceptRequest({
        recovery,
        ...(o.requestId === undefined ? {} : { requestId: o.requestId }),
        ...(o.inputId === undefined ? {} : { inputId: o.inputId }),
      });
    });
  }

  /** Active-Turn rollover in one command: turn_aborted -> request_interrupted -> request_accepted(recovery). */
  rolloverActiveTurn(o: { commandId?: string; requestId?: string } = {}): this {
    const source = this.req();
    const recovery: RequestRecovery = { requestId: source, turnId: this.turnScope({}).turnId, turn: this.turn };
    return this.command(o.commandId ?? this.fresh('cmd-rollover'), () => {
      this.abortTurn({ reason: 'process_restart' });
      this.interruptRequest({ reason: 'process_restart' });
      this.acceptRequest({ recovery, ...(o.requestId === undefined ? {} : { requestId: o.requestId }) });
    });
  }

  // ---- composites ----

  /** session_created + a started Request with its initial input applied. */
  static startedRequest(options: { sessionId?: string } = {}): JournalBuilder {
    return new JournalBuilder(options).createSession().acceptRequest().startRequest().applyInput();
  }

  /** A whole Request: accepted, started, one Turn with one completed model attempt, completed. */
  simpleRequest(): this {
    return this.acceptRequest().startRequest().applyInput().startTurn().modelStarted().modelCompleted().completeTurn().completeRequest();
  }
}
