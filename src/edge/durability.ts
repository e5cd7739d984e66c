/**
 * Durable tool calls inside a SessionObject, resumed by the object's alarm.
 *
 * A run is a call of a tool of the object's one mount (`SessionObject.sessionAgent()`: the same
 * `defineTool` tools its model calls). Its durability port is the one a model's call gets, over
 * the object's own SQL store and scoped to `toolCallScope(runId, toolName, toolCallId)`, so
 * `step` / `sleep` / `waitFor` write the session's durability records in the events' transaction
 * domain. A run has no Request (the context leaves its IDs out); a tool that needs permission is
 * refused, and a `non_idempotent` one is executed once (no retry, no replay). On top of that:
 * 1. Start: `startToolCall` stores the call in `tool_runs` (what a replay needs) and runs the
 *    tool in the object, without holding the request. The outcome becomes a `run_event`
 *    record `run` (completed with `{ result }`, failed with `{ error, attempts }`; see
 *    `outcomes.ts`).
 * 2. Deadlines: the transaction that records a `sleep` (or a `wait` with a timeout) of a call
 *    the object runs also inserts a timer row; after commit the alarm is armed to the earliest row
 *    (`timers.ts`). The handler itself waits locally while the object lives.
 * 3. Alarm: each due row is consumed in the transaction that records its fact — `run_event`
 *    `sleep-elapsed-<sleep sequence>` for a sleep, `wait_timeout` for a wait — so a duplicate
 *    alarm finds nothing (and the record identities are idempotent anyway). If no execution of
 *    the call is in memory (the object was evicted or restarted), the call is resumed by replay
 *    (the tool runs again with the same scope): recorded steps return their results, the elapsed
 *    sleep returns at once, the rest runs. A `non_idempotent` call is recorded failed
 *    (`TOOL_OUTCOME_UNKNOWN`) instead.
 * 4. Failure: a handler that throws records `run_event` `attempt-<n>` (failed) and gets a retry
 *    timer; after `maxAttempts` executions (one for `non_idempotent`) the call is recorded failed.
 *    Completion and failure remove the call's pending timers in the same transaction.
 * 5. Deliveries: `deliver` records the delivery (idempotent by id), which wakes live waiters,
 *    and resumes the run's idle calls by replay (an evicted waiter).
 * 6. Wake-up: a new instance re-arms the alarm and resumes running calls that have no pending
 *    deadline (interrupted mid-step); calls with a deadline wait for it. Without any wake-up, a
 *    `durability.resume` check one minute after a call's start or last step does the same (it is
 *    dropped while a sleep or wait is pending, and when the check finds the call running).
 * 7. Progress: every created record is sent to the session's WebSocket subscribers as a
 *    `{ "type": "durability", "record": ... }` frame after commit (`frames.ts`).
 */
import type {
  RunDeliveryInput,
  RunDeliveryReceipt,
  RunState,
  StartToolCallInput,
  ToolCallAccepted,
  ToolCallState,
} from '../core/operations/durability-rows.js';
import { DEFAULT_AGENT_NAME, type SessionAgentMount } from '../adapters/durable-object/agent-rpc.js';
import type { SqlDurableEventStore } from '../adapters/sql/sql-store.js';
import { deliverDurably } from '../core/durability/deliver.js';
import type { DurabilityRecord } from '../core/durability/record-contract.js';
import { checkDurabilityKey, checkDurabilityValue } from '../core/durability/record-engine.js';
import { toolCallScope } from '../core/durability/scope.js';
import { createDurabilityPort } from '../core/durability/port.js';
import type { DurabilityPort } from '../core/durability/port-types.js';
import type { TimeSource } from '../core/time.js';
import { DurabilityError } from '../protocol/errors.js';
import type { SessionId } from '../protocol/ids.js';
import { canonicalJson, type JsonValue } from '../protocol/json.js';
import { needsPermission } from '../session/tools.js';
import type { AnySessionTool, SessionToolContext } from '../session/types.js';
import { broadcastDurability } from './frames.js';
import {
  checkedPolicy,
  describeError,
  RUN_OUTCOME_KEY,
  runEventIdentity,
  runStatus,
  toolCallState,
  type RunRetryPolicy,
} from './outcomes.js';
import { runInput, ToolRunTable, type ToolRunRow } from './runs.js';
import { parseRunTimerPayload, TIMER_KINDS, TimerTable, type TimerRow, type UserTimer } from './timers.js';

/** How long after a call's last step (or start) the alarm checks that something still runs it. */
export const RESUME_CHECK_MS = 60_000;
/** A user timer whose `onTimer` threw runs again this much later. */
export const USER_TIMER_RETRY_DELAY_MS = 5_000;

/** What the object lends to its durability part. */
interface DurabilityHost {
  readonly ctx: DurableObjectState;
  readonly store: SqlDurableEventStore;
  /** The object's one mount (`SessionObject.sessionAgent()`). */
  mount(): SessionAgentMount | undefined;
  retryPolicy(): RunRetryPolicy;
  /** The object's clock (`SessionObject.time()`). */
  time(): TimeSource;
  onTimer(timer: UserTimer): void | Promise<void>;
  /** The agent watchdog is due (`agent-host.ts`). */
  onAgentWatch(): void | Promise<void>;
}

type Outcome = { ok: true; value: JsonValue } | { ok: false; error: unknown };

function invalidInput(message: string): DurabilityError {
  return new DurabilityError('DURABILITY_INVALID_INPUT', message);
}

/** A tool's context in a run: the run's identity and durability port, no Request. */
function runContext(run: ToolRunRow, port: DurabilityPort, signal: AbortSignal): SessionToolContext {
  const { sessionId, runId, toolCallId, toolName } = run;
  const request = { requestId: undefined, turnId: undefined, toolAttemptId: undefined, executionFence: undefined, context: {} };
  const ports = { step: port.step.bind(port), sleep: port.sleep.bind(port), waitFor: port.waitFor.bind(port) };
  return { sessionId, runId, ...request, toolCallId, toolName, signal, ...ports, progress: () => undefined };
}

/** Why an interrupted `non_idempotent` call is not executed again. */
function outcomeUnknown(): Error {
  const message = 'an execution of this non_idempotent tool call ended without a recorded outcome; it is never run again automatically';
  return Object.assign(new Error(message), { code: 'TOOL_OUTCOME_UNKNOWN' });
}

/** The durability part of a SessionObject (see the module header). */
export class SessionDurability {
  readonly timers: TimerTable;
  readonly runs: ToolRunTable;
  readonly #host: DurabilityHost;
  readonly #live = new Map<string, Promise<void>>();
  #mounted: { agent: string; tools: Readonly<Record<string, AnySessionTool>> } | undefined;

  constructor(host: DurabilityHost) {
    this.#host = host;
    const driver = host.store.eventLog.driver;
    this.timers = new TimerTable(driver, host.ctx.storage, () => host.time().wallNow());
    this.runs = new ToolRunTable(driver);
  }

  /** True while an execution of `scope` is in this instance's memory. */
  isLive(scope: string): boolean {
    return this.#live.has(scope);
  }

  /** The tool a call names, if the mount has it (the mount is read once). */
  #toolOf(run: { agent: string; toolName: string }): AnySessionTool | undefined {
    const mount = this.#host.mount();
    this.#mounted ??= { agent: mount?.name ?? DEFAULT_AGENT_NAME, tools: mount?.tools ?? {} };
    const { agent, tools } = this.#mounted;
    return agent === run.agent && Object.hasOwn(tools, run.toolName) ? tools[run.toolName] : undefined;
  }

  // ---- hooks of the store -------------------------------------------------------------------

  /** Inside the transaction that creates `record`: a deadline of a call we run becomes a timer row. */
  withinCreate(record: DurabilityRecord): void {
    if (record.kind === 'delivery' || record.kind === 'run_event') return;
    const { sessionId, scope } = record;
    if (!this.runs.isRunning(sessionId, scope)) return;
    const payload = { sessionId, scope, key: record.key, sequence: record.sequence };
    const timerKey = JSON.stringify([scope, record.key]);
    if (record.kind === 'sleep') {
      this.timers.put(TIMER_KINDS.sleep, timerKey, record.untilMs, payload);
      this.timers.delete(TIMER_KINDS.resume, scope);
    } else if (record.kind === 'wait') {
      // A wait resumes through its delivery, its timeout, or a wake-up: no check needed.
      if (record.deadlineMs !== null) this.timers.put(TIMER_KINDS.wait, timerKey, record.deadlineMs, payload);
      this.timers.delete(TIMER_KINDS.resume, scope);
    } else {
      this.#putResumeCheck(sessionId, scope);
    }
  }

  /** (Re)schedules the check that resumes `scope` if an eviction stops it between steps. */
  #putResumeCheck(sessionId: SessionId, scope: string): void {
    this.timers.put(TIMER_KINDS.resume, scope, this.#host.time().wallNow() + RESUME_CHECK_MS, { sessionId, scope });
  }

  /** After the commit of a created record: push it to subscribers; arm the alarm for a new deadline. */
  afterCreate(record: DurabilityRecord): void {
    broadcastDurability(this.#host.ctx, record);
    if (record.kind === 'sleep' || record.kind === 'wait') this.#arm();
  }

  #arm(): void {
    this.timers.arm().catch((error: unknown) => console.error(`session object: arming the alarm failed: ${String(error)}`));
  }

  // ---- tool calls -----------------------------------------------------------------------------

  /** Starts a call (or resumes an idle, unfinished one): the row `startToolCall`. */
  startToolCall(sessionId: SessionId, input: StartToolCallInput): ToolCallAccepted {
    if (typeof input !== 'object' || input === null) throw invalidInput('startToolCall needs { runId, agent, toolName, toolCallId, input }');
    const runId = checkDurabilityKey(input.runId, 'runId');
    const agent = checkDurabilityKey(input.agent, 'agent');
    const toolName = checkDurabilityKey(input.toolName, 'toolName');
    const toolCallId = checkDurabilityKey(input.toolCallId, 'toolCallId');
    const value = checkDurabilityValue(input.input, 'input');
    const tool = this.#toolOf({ agent, toolName });
    if (tool === undefined) {
      throw invalidInput(`no tool ${JSON.stringify(toolName)} is mounted on agent ${JSON.stringify(agent)} in this session object`);
    }
    if (needsPermission(tool, value)) {
      throw invalidInput(`tool ${JSON.stringify(toolName)} needs permission: it runs only when the model calls it in a request`);
    }
    const scope = toolCallScope(runId, toolName, toolCallId);
    const { run, created } = this.#host.store.eventLog.driver.transaction(() => {
      const existing = this.runs.get(sessionId, scope);
      if (existing === undefined) {
        const inputJson = JSON.stringify(value);
        return { run: this.runs.insert({ sessionId, scope, runId, toolCallId, agent, toolName, inputJson, startedMs: this.#host.time().wallNow() }), created: true };
      }
      if (existing.agent !== agent || canonicalJson(runInput(existing)) !== canonicalJson(value)) {
        throw new DurabilityError('DURABILITY_CONFLICT', `tool call ${toolCallId} of run ${runId} was started with another agent or input`, {
          details: { runId, toolCallId },
        });
      }
      return { run: existing, created: false };
    });
    if (created) this.#execute(run, 'call');
    else if (run.status === 'running') this.#execute(run, 'replay');
    return { runId, toolCallId, status: run.status };
  }

  /**
   * {@link startToolCall}, then waits until the execution in memory settles (completed, failed, or
   * a retry scheduled) and reports the call. For short calls; a call that sleeps holds the caller.
   */
  async runToolCall(sessionId: SessionId, input: StartToolCallInput): Promise<ToolCallState> {
    const accepted = this.startToolCall(sessionId, input);
    const scope = toolCallScope(accepted.runId, input.toolName, accepted.toolCallId);
    await this.#live.get(scope)?.catch(() => undefined);
    const state = this.getRun(sessionId, accepted.runId).toolCalls.find((call) => call.toolCallId === accepted.toolCallId);
    if (state === undefined) throw new DurabilityError('DURABILITY_CORRUPT_RECORD', `tool call ${accepted.toolCallId} vanished`);
    return state;
  }

  /** Runs `run` in the background unless an execution of it is already in memory. */
  #execute(run: ToolRunRow, mode: 'call' | 'replay'): void {
    if (this.#live.has(run.scope)) return;
    if (this.timers.get(TIMER_KINDS.resume, run.scope) === undefined) {
      this.#putResumeCheck(run.sessionId, run.scope);
      this.#arm();
    }
    const task = (async () => {
      let outcome: Outcome;
      let once = false;
      let port: DurabilityPort | undefined;
      try {
        const tool = this.#toolOf(run);
        if (tool === undefined) throw invalidInput(`no tool ${JSON.stringify(run.toolName)} is mounted on agent ${JSON.stringify(run.agent)}`);
        once = tool.sideEffect === 'non_idempotent';
        if (mode === 'replay' && once) throw outcomeUnknown();
        const signal = new AbortController().signal;
        port = createDurabilityPort({ store: this.#host.store, sessionId: run.sessionId, runId: run.runId, scope: run.scope, signal, time: this.#host.time() });
        // SAFETY: the tool's input type is its own; a run passes the input stored for the call.
        const output = await (tool.execute as (input: JsonValue, context: SessionToolContext) => unknown)(runInput(run), runContext(run, port, signal));
        outcome = { ok: true, value: checkDurabilityValue(output === undefined ? null : output, 'the tool output') };
      } catch (error) {
        outcome = { ok: false, error };
      } finally {
        port?.close();
      }
      // Leave the live set and record the outcome in one synchronous turn: nothing can start a
      // second execution in between.
      this.#live.delete(run.scope);
      this.#settle(run, outcome, once);
    })();
    this.#live.set(run.scope, task);
    task.catch((error: unknown) => {
      if (this.#live.get(run.scope) === task) this.#live.delete(run.scope);
      console.error(`session object: recording the outcome of ${run.scope} failed: ${String(error)}`);
    });
  }

  /** Records an execution's outcome; `once`: no retry (a `non_idempotent` tool). */
  #settle(run: ToolRunRow, outcome: Outcome, once: boolean): void {
    const { sessionId, scope } = run;
    const durability = this.#host.store.durability;
    if (outcome.ok) {
      try {
        durability.record(
          sessionId,
          { kind: 'run_event', scope, key: RUN_OUTCOME_KEY, status: 'completed', detail: { result: outcome.value } },
          ({ record }) => this.#finish(run, record),
        );
        return;
      } catch (error) {
        if (!(error instanceof DurabilityError)) throw error;
        // The output cannot be recorded (too large, say): that execution failed.
        outcome = { ok: false, error };
      }
    }
    const policy = once ? { maxAttempts: 1, retryDelayMs: 0 } : checkedPolicy(this.#host.retryPolicy());
    const attempt = (this.runs.get(sessionId, scope)?.attempts ?? run.attempts) + 1;
    const error = describeError(outcome.error);
    if (attempt < policy.maxAttempts) {
      const retryAtMs = this.#host.time().wallNow() + policy.retryDelayMs * attempt;
      durability.record(
        sessionId,
        { kind: 'run_event', scope, key: `attempt-${attempt}`, status: 'failed', detail: { error, attempt, retryAtMs } },
        ({ created }) => {
          if (!created) return;
          this.runs.update(sessionId, scope, 'running', attempt);
          this.timers.put(TIMER_KINDS.retry, scope, retryAtMs, { sessionId, scope });
          this.timers.delete(TIMER_KINDS.resume, scope);
        },
      );
      this.#arm();
      return;
    }
    durability.record(
      sessionId,
      { kind: 'run_event', scope, key: RUN_OUTCOME_KEY, status: 'failed', detail: { error, attempts: attempt } },
      ({ record }) => this.#finish(run, record, attempt),
    );
  }

  /** Inside the outcome's transaction: mirror the recorded outcome, drop the call's timers. */
  #finish(run: ToolRunRow, record: DurabilityRecord, attempts?: number): void {
    const status = record.kind === 'run_event' ? record.status : 'failed';
    const current = this.runs.get(run.sessionId, run.scope);
    this.runs.update(run.sessionId, run.scope, status, attempts ?? current?.attempts ?? run.attempts);
    this.timers.deleteRunTimers(run.scope);
  }

  /** Replays `scope` if it is still running and nothing in memory executes it. Returns whether it did. */
  #resumeIfIdle(sessionId: SessionId, scope: string): boolean {
    const run = this.runs.get(sessionId, scope);
    if (run === undefined || run.status !== 'running' || this.#live.has(scope)) return false;
    this.#execute(run, 'replay');
    return true;
  }

  /** Records a delivery and resumes the run's idle calls: the row `deliver`. */
  async deliver(sessionId: SessionId, input: RunDeliveryInput): Promise<RunDeliveryReceipt> {
    if (typeof input !== 'object' || input === null) throw invalidInput('deliver needs { runId, key, deliveryId, payload }');
    const runId = checkDurabilityKey(input.runId, 'runId');
    const receipt = await deliverDurably(this.#host.store, sessionId, {
      runId,
      key: input.key,
      deliveryId: input.deliveryId,
      payload: input.payload,
    });
    const resumed = this.runs
      .ofRun(sessionId, runId)
      .filter((run) => this.#resumeIfIdle(sessionId, run.scope))
      .map((run) => run.toolCallId);
    return { ...receipt, resumed };
  }

  /** The run's tool calls (the row `getRun`); `runId` is checked here (RPC input is untrusted). */
  getRun(sessionId: SessionId, runId: unknown): RunState {
    const id = checkDurabilityKey(runId, 'runId');
    const toolCalls = this.runs.ofRun(sessionId, id).map((run) => {
      const outcome = run.status === 'running' ? undefined : this.#host.store.durability.find(sessionId, runEventIdentity(run.scope, RUN_OUTCOME_KEY));
      return toolCallState(run, this.#live.has(run.scope), outcome);
    });
    return { runId: id, status: runStatus(toolCalls), toolCalls };
  }

  // ---- alarm and wake-up ----------------------------------------------------------------------

  /** Handles every due timer, then re-arms the alarm for the next one. */
  async alarm(): Promise<void> {
    this.timers.forgetAlarm();
    const nowMs = this.#host.time().wallNow();
    for (const timer of this.timers.due(nowMs)) {
      try {
        await this.#fire(timer, nowMs);
      } catch (error) {
        console.error(`session object: timer ${timer.kind} failed: ${String(error)}`);
      }
    }
    await this.timers.arm();
  }

  async #fire(timer: TimerRow, nowMs: number): Promise<void> {
    if (timer.kind === TIMER_KINDS.user) {
      const userTimer: UserTimer = { key: timer.key, dueMs: timer.dueMs, payload: timer.payload };
      try {
        await this.#host.onTimer(userTimer);
      } catch (error) {
        this.timers.postponeIfUnchanged(timer, nowMs + USER_TIMER_RETRY_DELAY_MS);
        throw error;
      }
      this.timers.deleteIfUnchanged(timer);
      return;
    }
    if (timer.kind === TIMER_KINDS.agent) {
      // Consumed first: the host puts a new one when the agent still runs.
      this.timers.deleteIfUnchanged(timer);
      await this.#host.onAgentWatch();
      return;
    }
    const run = parseRunTimerPayload(timer);
    if (run === undefined || !this.runs.isRunning(run.sessionId, run.scope)) {
      this.timers.deleteIfUnchanged(timer);
      return;
    }
    const consume = (): void => {
      this.timers.deleteIfUnchanged(timer);
    };
    const durability = this.#host.store.durability;
    if (timer.kind === TIMER_KINDS.resume && this.#live.has(run.scope)) {
      // Still running here: the next step schedules the next check.
      consume();
      return;
    }
    if (timer.kind === TIMER_KINDS.sleep && run.key !== undefined) {
      const detail = { key: run.key, untilMs: timer.dueMs };
      const key = `sleep-elapsed-${run.sequence ?? 0}`;
      durability.record(run.sessionId, { kind: 'run_event', scope: run.scope, key, status: 'completed', detail }, consume);
    } else if (timer.kind === TIMER_KINDS.wait && run.key !== undefined) {
      durability.record(run.sessionId, { kind: 'wait_timeout', scope: run.scope, key: run.key }, consume);
    } else {
      consume();
    }
    this.#resumeIfIdle(run.sessionId, run.scope);
  }

  /**
   * Runs once per instance: re-arms the alarm and resumes running calls that no deadline will
   * resume (an eviction interrupted them mid-step, or they wait for a delivery without timeout).
   */
  wake(): void {
    this.#arm();
    try {
      for (const run of this.runs.running()) {
        if (!this.#live.has(run.scope) && !this.timers.hasDeadline(run.scope)) this.#execute(run, 'replay');
      }
    } catch (error) {
      console.error(`session object: resuming interrupted tool calls failed: ${String(error)}`);
    }
  }
}
