/**
 * A small state machine that drives {@link JournalBuilder} through random valid lifecycles, and an
 * independent, deliberately naive model of what recovery should say about the result.
 *
 * `simulate(choices)` starts with `session_created` + `request_accepted`, then, for each choice,
 * lists the steps that are legal in the current abstract state and picks one by weight with the
 * choice (the quotient picks parameters such as side-effect classes and permission decisions). The abstract
 * state is tracked from the steps taken, never from the projector, so `expectedPlan` is a second
 * derivation of the recovery decision to compare the projector against.
 */
import type { ModelToolCall, SideEffect } from '../../src/protocol/event-payloads.js';
import { InputId, PermissionRequestId, type ModelAttemptId, type ToolAttemptId } from '../../src/protocol/ids.js';
import { JournalBuilder } from './journal-builder.js';

type ToolStatus = 'scheduled' | 'awaiting' | 'allowed' | 'denied' | 'started' | 'unknown' | 'completed' | 'failed' | 'cancelled';

interface SimTool {
  id: ToolAttemptId;
  model: ModelAttemptId;
  declared: SideEffect;
  effective: SideEffect;
  status: ToolStatus;
  resumed: boolean;
  permission?: PermissionRequestId;
}

interface SimModel {
  id: ModelAttemptId;
  status: 'started' | 'completed' | 'failed' | 'aborted';
  /** Tool calls of the confirmed response not scheduled yet. */
  unscheduled: ModelToolCall[];
}

interface SimTurn {
  models: SimModel[];
  tools: SimTool[];
}

/** Abstract state of the simulated session. */
export interface Simulation {
  b: JournalBuilder;
  phase: 'none' | 'accepted' | 'started' | 'closed';
  initialInput: InputId | undefined;
  applied: InputId[];
  inputSinceTurnEnd: boolean;
  lastTurn: number;
  turn: SimTurn | null;
  steps: string[];
}

const SIDE_EFFECTS: readonly SideEffect[] = ['pure', 'idempotent', 'non_idempotent'];
const TERMINAL: ReadonlySet<ToolStatus> = new Set(['completed', 'failed', 'cancelled']);

type Step = [name: string, run: (param: number) => void];

/** Steps that end a Request, Turn or session are taken less often, so runs reach deep states. */
const RARE_STEPS: ReadonlySet<string> = new Set([
  'session_closed',
  'request_interrupted',
  'request_completed',
  'request_failed',
  'rollover_pre_turn',
  'rollover_active_turn',
  'turn_completed',
  'turn_aborted',
  'model_failed',
  'model_aborted',
  'steer',
  'input_extra',
  'tool_cancelled',
]);
const COMMON_WEIGHT = 4;
/** Starting a new Request after one ended is preferred over closing the session. */
const ACCEPT_WEIGHT = 16;

function weightOf(step: Step): number {
  if (step[0] === 'request_accepted') return ACCEPT_WEIGHT;
  return RARE_STEPS.has(step[0]) ? 1 : COMMON_WEIGHT;
}

/** Picks a step by weight with `choice`; returns it and the leftover parameter. */
function pickStep(steps: readonly Step[], choice: number): [Step, number] {
  const total = steps.reduce((sum, step) => sum + weightOf(step), 0);
  let slot = choice % total;
  for (const step of steps) {
    slot -= weightOf(step);
    if (slot < 0) return [step, Math.floor(choice / total)];
  }
  throw new Error('unreachable');
}

function pick<T>(items: readonly T[], param: number): T {
  // SAFETY: callers pass non-empty lists.
  return items[param % items.length] as T;
}

function newRequest(sim: Simulation): void {
  sim.phase = 'accepted';
  sim.initialInput = sim.b.inputId;
  sim.applied = [];
  sim.inputSinceTurnEnd = false;
  sim.lastTurn = 0;
  sim.turn = null;
}

function turnCanEnd(turn: SimTurn): boolean {
  return turn.models.every((m) => m.status !== 'started') && turn.tools.every((t) => TERMINAL.has(t.status));
}

function turnSteps(sim: Simulation, turn: SimTurn): Step[] {
  const b = sim.b;
  const steps: Step[] = [];
  const running = turn.models.find((m) => m.status === 'started');
  if (running === undefined) {
    steps.push(['model_started', () => turn.models.push({ id: b.modelStarted().modelAttemptId!, status: 'started', unscheduled: [] })]);
  } else {
    steps.push(['model_completed', (param) => {
      const scheduled = turn.tools.filter((t) => t.model === running.id).map((t) => b.tools.get(t.id)!);
      const calls: ModelToolCall[] = scheduled.map((t) => ({ id: t.toolCallId, name: t.toolName, arguments: { call: t.toolCallId } }));
      const extra: ModelToolCall[] = [];
      for (let index = 0; index < param % 3; index++) {
        const id = b.fresh('call');
        extra.push({ id, name: 'echo', arguments: { call: id, n: index } });
      }
      b.modelCompleted({ modelAttemptId: running.id, toolCalls: [...calls, ...extra] });
      running.status = 'completed';
      running.unscheduled = extra;
    }]);
    steps.push(['model_failed', () => { b.modelFailed({ modelAttemptId: running.id }); running.status = 'failed'; }]);
    steps.push(['model_aborted', () => { b.modelAborted({ modelAttemptId: running.id }); running.status = 'aborted'; }]);
    steps.push(['schedule_streamed', (param) => {
      const declared = pick(SIDE_EFFECTS, param);
      b.scheduleTool({ modelAttemptId: running.id, sideEffect: declared });
      const id = [...b.tools.keys()].at(-1)!;
      turn.tools.push({ id, model: running.id, declared, effective: declared, status: 'scheduled', resumed: false });
    }]);
  }
  for (const model of turn.models) {
    const call = model.unscheduled[0];
    if (model.status !== 'completed' || call === undefined) continue;
    steps.push(['schedule_confirmed', (param) => {
      model.unscheduled.shift();
      const declared = pick(SIDE_EFFECTS, param);
      b.scheduleTool({ modelAttemptId: model.id, toolCallId: call.id, sideEffect: declared });
      const id = [...b.tools.keys()].at(-1)!;
      turn.tools.push({ id, model: model.id, declared, effective: declared, status: 'scheduled', resumed: false });
    }]);
  }
  for (const tool of turn.tools) {
    const modelStatus = turn.models.find((m) => m.id === tool.model)!.status;
    const startable = modelStatus === 'started' || modelStatus === 'completed';
    const t = { toolAttemptId: tool.id };
    if (tool.status === 'scheduled') {
      steps.push(['permission_requested', () => {
        tool.permission = PermissionRequestId(b.fresh('perm'));
        b.requestPermission({ ...t, permissionRequestId: tool.permission });
        tool.status = 'awaiting';
      }]);
    }
    if (tool.status === 'awaiting') {
      steps.push(['permission_resolved', (param) => {
        const decision = pick(['allow', 'deny', 'cancel'] as const, param);
        b.resolvePermission({ ...t, permissionRequestId: tool.permission!, decision });
        tool.status = decision === 'allow' ? 'allowed' : 'denied';
        tool.resumed = decision === 'allow';
      }]);
    }
    if ((tool.status === 'scheduled' || tool.status === 'allowed') && startable) {
      steps.push(['tool_started', (param) => {
        const allowed = SIDE_EFFECTS.slice(SIDE_EFFECTS.indexOf(tool.declared));
        const effective = tool.resumed ? 'non_idempotent' : pick(allowed, param);
        b.startTool({ ...t, sideEffect: effective });
        tool.effective = effective;
        tool.status = 'started';
      }]);
    }
    if (tool.status === 'started') {
      steps.push(['tool_outcome_unknown', () => { b.toolOutcomeUnknown(t); tool.status = 'unknown'; }]);
    }
    if (tool.status === 'started' || tool.status === 'unknown') {
      steps.push(['tool_completed', () => { b.completeTool(t); tool.status = 'completed'; }]);
      steps.push(['tool_failed', () => { b.failTool(t); tool.status = 'failed'; }]);
    }
    if (!TERMINAL.has(tool.status) && tool.status !== 'awaiting') {
      steps.push(['tool_cancelled', () => { b.cancelTool(t); tool.status = 'cancelled'; }]);
    }
  }
  steps.push(['steer', () => {
    const inputId = InputId(b.fresh('steer'));
    b.applyInput({ inputId, turnId: b.turnId! });
    sim.applied.push(inputId);
  }]);
  if (turnCanEnd(turn)) {
    const end = (): void => { sim.lastTurn += 1; sim.turn = null; sim.inputSinceTurnEnd = false; };
    steps.push(['turn_completed', () => { b.completeTurn(); end(); }]);
    steps.push(['turn_aborted', () => { b.abortTurn(); end(); }]);
    steps.push(['rollover_active_turn', () => { b.rolloverActiveTurn(); newRequest(sim); }]);
  }
  return steps;
}

function enabledSteps(sim: Simulation): Step[] {
  const b = sim.b;
  const applyInitial: Step = ['input_initial', () => { b.applyInput({ inputId: sim.initialInput! }); sim.applied.push(sim.initialInput!); sim.inputSinceTurnEnd = true; }];
  const applyExtra: Step = ['input_extra', () => {
    const inputId = InputId(b.fresh('extra'));
    b.applyInput({ inputId });
    sim.applied.push(inputId);
    sim.inputSinceTurnEnd = true;
  }];
  const hasInitial = sim.applied.includes(sim.initialInput!);
  switch (sim.phase) {
    case 'closed':
      return [];
    case 'none':
      return [
        ['request_accepted', () => { b.acceptRequest(); newRequest(sim); }],
        ['session_closed', () => { b.closeSession(); sim.phase = 'closed'; }],
      ];
    case 'accepted':
      return [
        ['request_started', () => { b.startRequest(); sim.phase = 'started'; }],
        ...(hasInitial ? [] : [applyInitial]),
        ['request_interrupted', () => { b.interruptRequest(); sim.phase = 'none'; }],
      ];
    case 'started': {
      if (sim.turn !== null) return turnSteps(sim, sim.turn);
      return [
        ...(hasInitial ? [applyExtra] : [applyInitial, applyExtra]),
        ['turn_started', () => { b.startTurn(); sim.turn = { models: [], tools: [] }; sim.inputSinceTurnEnd = false; }],
        ['request_completed', () => { b.completeRequest(); sim.phase = 'none'; }],
        ['request_failed', () => { b.failRequest(); sim.phase = 'none'; }],
        ['request_interrupted', () => { b.interruptRequest(); sim.phase = 'none'; }],
        ['rollover_pre_turn', () => { b.rolloverPreTurn(); newRequest(sim); }],
      ];
    }
  }
}

/** Runs the state machine over `choices` (see the module header). */
export function simulate(choices: readonly number[]): Simulation {
  const b = new JournalBuilder().createSession().acceptRequest();
  const sim: Simulation = {
    b,
    phase: 'accepted',
    initialInput: b.inputId,
    applied: [],
    inputSinceTurnEnd: false,
    lastTurn: 0,
    turn: null,
    steps: ['session_created', 'request_accepted'],
  };
  for (const choice of choices) {
    const steps = enabledSteps(sim);
    if (steps.length === 0) break;
    const [[name, run], param] = pickStep(steps, choice);
    run(param);
    sim.steps.push(name);
  }
  return sim;
}

/** What the naive model expects the recovery plan to contain. */
export interface ExpectedPlan {
  action: string;
  retryable: number;
  cancelable: number;
  unknown: number;
  permissions: number;
  activeModel: boolean;
  discarded: boolean;
  applied: InputId[];
  lastTurn: number;
}

/** The naive re-derivation of the recovery plan from the simulated state. */
export function expectedPlan(sim: Simulation): ExpectedPlan {
  const base = { retryable: 0, cancelable: 0, unknown: 0, permissions: 0, activeModel: false, discarded: false };
  if (sim.phase === 'none' || sim.phase === 'closed') return { ...base, action: 'none', applied: [], lastTurn: 0 };
  const common = { applied: sim.applied, lastTurn: sim.lastTurn };
  const onlyInitial = sim.applied.length === 1 && sim.applied[0] === sim.initialInput;
  if (sim.phase === 'accepted') {
    return { ...base, ...common, action: sim.applied.length === 0 ? 'resume_request' : 'reconcile_request_inputs' };
  }
  const turn = sim.turn;
  if (turn === null) {
    if (sim.lastTurn === 0) return { ...base, ...common, action: onlyInitial ? 'rollover_request' : 'reconcile_request_inputs' };
    return { ...base, ...common, action: sim.inputSinceTurnEnd ? 'reconcile_request_inputs' : 'reconcile_request_outcome' };
  }
  const confirmed = (tool: SimTool): boolean => turn.models.find((m) => m.id === tool.model)?.status === 'completed';
  const ran = (tool: SimTool): boolean => tool.status === 'started' || tool.status === 'unknown';
  const unknown = turn.tools.filter((t) => ran(t) && t.effective === 'non_idempotent');
  const retryable = turn.tools.filter((t) => ran(t) && t.effective !== 'non_idempotent' && confirmed(t));
  const cancelable = turn.tools.filter(
    (t) => ['scheduled', 'allowed', 'denied'].includes(t.status) || (ran(t) && t.effective !== 'non_idempotent' && !confirmed(t)),
  );
  const permissions = turn.tools.filter((t) => t.status === 'awaiting').length;
  const activeModel = turn.models.some((m) => m.status === 'started');
  const action = activeModel
    ? 'reconcile_model_outcome'
    : permissions > 0
      ? 'resolve_permissions'
      : unknown.length > 0
        ? 'reconcile_tool_outcomes'
        : 'resume_turn';
  return {
    ...common,
    action,
    retryable: retryable.length,
    cancelable: cancelable.length,
    unknown: unknown.length,
    permissions,
    activeModel,
    discarded: cancelable.some((t) => !confirmed(t)),
  };
}
