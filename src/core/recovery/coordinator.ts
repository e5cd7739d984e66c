/**
 * DurableSessionRecoveryCoordinator: the constrained repairs that take a session from the
 * projector's recovery plan back to a state a writer can continue.
 *
 * Every mutating operation runs, one at a time per instance, as:
 * 1. check the argument strictly (no store call on a malformed input);
 * 2. refuse at once when the execution lease (if any) is already lost;
 * 3. refresh the journal, so the decision sees every writer's progress;
 * 4. build the command from that state: resolve the target, check the caller's observed facts
 *    (IDs, Turn number, applied inputs, anchor event), produce the drafts (pure functions in
 *    `outcomes.ts` and `rollover.ts`);
 * 5. commit it as ONE journal command pinned to the observed head (`expectedHeadSequence`), so a
 *    competitor's write in between makes it fail instead of committing a stale decision; the
 *    journal carries the lease fence on the append;
 * 6. when step 4 fails (or the caller's pinned head is stale) the call may be a retry of a command
 *    already in the log: the coordinator finds the state that command was decided on
 *    (`command-baseline.ts`), rebuilds it there, and lets the journal compare it with the stored
 *    copy: identical -> `reconciled`, different -> `DurableCommandConflictError`, absent -> the
 *    original error;
 * 7. a result that appended nothing (`reconciled`) confirms with the lease store that this
 *    coordinator still owns the session before it hands work back (fence before dispatch).
 * Nothing here retries a model call or a non_idempotent tool: unknown outcomes are only ever
 * recorded as the caller establishes them.
 */
import { DurableSessionJournal } from '../journal/journal.js';
import type { DurableCommitResult, DurableCommandEventDraft } from '../journal/journal-options.js';
import { planDurableRecovery } from '../projector/recovery-plan.js';
import type { DurableRecoveryPlan, DurableSessionProjection } from '../projector/projection-types.js';
import type { DurableEventStore } from '../store.js';
import {
  DurableCommandConflictError,
  DurableEventSequenceConflictError,
  isDurableEventSequenceConflictError,
  isDurableSessionRecoveryError,
} from '../../protocol/errors.js';
import type { CommandId, EventSequence, SessionId } from '../../protocol/ids.js';
import { findCommandBaseline } from './command-baseline.js';
import { checkLeaseSignal, confirmOwnership, resolveSettings, type CoordinatorSettings } from './coordinator-settings.js';
import type {
  DurableRecoveryCallOptions,
  DurableRecoveryCommandResult,
  DurableRecoveryView,
  DurableResumeDecision,
  DurableSessionRecoveryCoordinatorOptions,
  DurableStartToolAttemptResult,
  DurableTurnRecoveryResult,
  PrepareRequestRecoveryInput,
  PrepareTurnRecoveryInput,
  ReconcileModelOutcomeInput,
  ReconcileRequestOutcomeInput,
  ReconcileToolOutcomeInput,
  ResolvePermissionInput,
  StartToolAttemptInput,
} from './coordinator-types.js';
import { checkDrafts } from './input-checks.js';
import {
  buildReconcileModelOutcome,
  buildReconcileRequestOutcome,
  buildReconcileToolOutcome,
  buildResolvePermission,
  buildStartToolAttempt,
  parseReconcileModelOutcome,
  parseReconcileRequestOutcome,
  parseReconcileToolOutcome,
  parseResolvePermission,
  parseStartToolAttempt,
} from './outcomes.js';
import { buildRequestRecovery, buildTurnRecovery, parsePrepareRequestRecovery, parsePrepareTurnRecovery } from './rollover.js';
import { ownValue } from './targets.js';

/** A command built against one view, plus what the operation hands back besides the commit result. */
interface BuiltCommand<E> {
  events: DurableCommandEventDraft[];
  extra: E;
}

type Builder<I, E> = (input: I, view: DurableRecoveryView) => BuiltCommand<E>;

function drafts<I>(build: (input: I, view: DurableRecoveryView) => DurableCommandEventDraft[]): Builder<I, undefined> {
  return (input, view) => ({ events: build(input, view), extra: undefined });
}

/**
 * Commits recovery decisions for one session: reconcile unknown outcomes, resolve permissions,
 * start tools from persisted facts, and roll unfinished Requests or Turns over into recovery
 * Requests. See the module header for the rules every operation follows.
 *
 * @example
 * const coordinator = await DurableSessionRecoveryCoordinator.open(store, sessionId);
 * const decision = coordinator.planResume();
 * if (decision.action === 'recovery_required' && decision.plan.action === 'reconcile_tool_outcomes') {
 *   await coordinator.reconcileToolOutcome({
 *     commandId: CommandId('reconcile-deploy-42'),
 *     toolAttemptId: ToolAttemptId('attempt-42'),
 *     outcome: { status: 'completed', result: { deploymentId: 'dep-42' } },
 *   });
 * }
 */
export class DurableSessionRecoveryCoordinator {
  /** The session this coordinator repairs. */
  readonly sessionId: SessionId;
  readonly #store: DurableEventStore;
  readonly #journal: DurableSessionJournal;
  readonly #settings: CoordinatorSettings;
  #queue: Promise<unknown> = Promise.resolve();

  private constructor(store: DurableEventStore, journal: DurableSessionJournal, settings: CoordinatorSettings) {
    this.sessionId = journal.sessionId;
    this.#store = store;
    this.#journal = journal;
    this.#settings = settings;
  }

  /**
   * Loads the session and returns a coordinator positioned at its head.
   *
   * @throws DurableExecutionLeaseError `DURABLE_EXECUTION_LEASE_REQUIRED` when `executionLeaseStore`
   *   says the session needs a lease and none was given; `DURABLE_EXECUTION_LEASE_LOST` when the
   *   given lease is no longer current
   * @throws DurableEventProjectionError when the log breaks a lifecycle invariant
   */
  static async open(
    store: DurableEventStore,
    sessionId: SessionId,
    options: DurableSessionRecoveryCoordinatorOptions = {},
  ): Promise<DurableSessionRecoveryCoordinator> {
    const settings = resolveSettings(store, options);
    const journal = await DurableSessionJournal.open(store, sessionId, {
      ...(options.storeTimeoutMs === undefined ? {} : { storeTimeoutMs: options.storeTimeoutMs }),
      ...(options.maxConflictRetries === undefined ? {} : { maxConflictRetries: options.maxConflictRetries }),
      ...(options.executionLease === undefined ? {} : { executionLease: options.executionLease }),
      ...(options.executionLeaseStore === undefined ? {} : { executionLeaseStore: options.executionLeaseStore }),
      ...(options.signal === undefined ? {} : { signal: options.signal }),
      ...(options.pageSize === undefined ? {} : { pageSize: options.pageSize }),
      ...(options.checkpoints === undefined ? {} : { checkpoints: options.checkpoints }),
    });
    const coordinator = new DurableSessionRecoveryCoordinator(store, journal, settings);
    await coordinator.#confirmOwnership(options.signal);
    return coordinator;
  }

  /** The projection as of the last load, refresh or operation. */
  getProjection(): DurableSessionProjection {
    return this.#journal.getProjection();
  }

  /** The recovery plan of {@link getProjection}. */
  getRecoveryPlan(): DurableRecoveryPlan {
    return this.#journal.getRecoveryPlan();
  }

  /** The head of {@link getProjection} (`null` for an empty log). */
  getHeadSequence(): EventSequence | null {
    return this.#journal.getHeadSequence();
  }

  /** Reads what other writers appended and returns the new state. */
  refresh(options: DurableRecoveryCallOptions = {}): Promise<{
    headSequence: EventSequence | null;
    projection: DurableSessionProjection;
    recoveryPlan: DurableRecoveryPlan;
  }> {
    return this.#enqueue(async () => {
      await this.#journal.refresh(options);
      return { headSequence: this.getHeadSequence(), projection: this.getProjection(), recoveryPlan: this.getRecoveryPlan() };
    });
  }

  /**
   * Whether the session can resume without a recovery command (on the state of {@link getProjection};
   * call {@link refresh} first for the latest). `resume_accepted_request` only for an accepted
   * Request with no `request_started` or `input_applied` boundary and a complete execution
   * snapshot (`maxTurns`, `model` and `context` all persisted); anything unfinished otherwise is
   * `recovery_required`.
   *
   * @throws DurableExecutionLeaseError `DURABLE_EXECUTION_LEASE_LOST` when the configured lease is lost
   */
  planResume(): DurableResumeDecision {
    this.#checkLeaseSignal();
    const plan = this.getRecoveryPlan();
    if (plan.action === 'none') return { action: 'none' };
    const request = this.getProjection().activeRequest;
    if (
      plan.action === 'resume_request' &&
      request !== null &&
      request.status === 'accepted' &&
      request.appliedInputIds.length === 0 &&
      request.maxTurns !== undefined &&
      request.model !== undefined &&
      request.context !== undefined
    ) {
      return {
        action: 'resume_accepted_request',
        request: {
          requestId: request.requestId,
          inputId: request.inputId,
          input: request.input,
          priority: request.priority,
          maxTurns: request.maxTurns,
          model: request.model,
          context: request.context,
          ...(request.recovery === undefined ? {} : { recovery: request.recovery }),
        },
      };
    }
    return { action: 'recovery_required', plan };
  }

  /**
   * Records the outcome of a Tool Attempt still open in the active Turn (as established with the
   * external system). `completed` / `failed` need a started tool; `cancelled` also ends one that
   * never started. Reuse the `commandId` when retrying.
   */
  async reconcileToolOutcome(input: ReconcileToolOutcomeInput, options: DurableRecoveryCallOptions = {}): Promise<DurableRecoveryCommandResult> {
    const parsed = parseReconcileToolOutcome(input);
    return (await this.#execute('reconcileToolOutcome', parsed, drafts(buildReconcileToolOutcome), options.signal)).result;
  }

  /**
   * Records the outcome of a Model Attempt still `started`, bound to its Request and Turn
   * (established from provider or application records).
   */
  async reconcileModelOutcome(input: ReconcileModelOutcomeInput, options: DurableRecoveryCallOptions = {}): Promise<DurableRecoveryCommandResult> {
    const parsed = parseReconcileModelOutcome(input);
    return (await this.#execute('reconcileModelOutcome', parsed, drafts(buildReconcileModelOutcome), options.signal)).result;
  }

  /** Resolves a pending permission; `deny` / `cancel` also cancel its tool in the same command. */
  async resolvePermission(input: ResolvePermissionInput, options: DurableRecoveryCallOptions = {}): Promise<DurableRecoveryCommandResult> {
    const parsed = parseResolvePermission(input);
    return (await this.#execute('resolvePermission', parsed, drafts(buildResolvePermission), options.signal)).result;
  }

  /**
   * Commits `tool_started` for a scheduled or permitted tool of a confirmed model response, from
   * persisted facts only (input and side effect as the log holds them; `non_idempotent` after a
   * permission round trip). Run the returned `toolAttempt.input` only after `committed`.
   */
  async startToolAttempt(input: StartToolAttemptInput, options: DurableRecoveryCallOptions = {}): Promise<DurableStartToolAttemptResult> {
    const parsed = parseStartToolAttempt(input);
    const { result } = await this.#execute('startToolAttempt', parsed, drafts(buildStartToolAttempt), options.signal);
    const turn = result.projection.activeRequest?.activeTurn ?? null;
    const toolAttempt = turn === null ? null : (ownValue(turn.toolAttempts, parsed.toolAttemptId) ?? null);
    return { ...result, toolAttempt };
  }

  /**
   * Rolls a Request that started no Turn (plans `rollover_request` / `reconcile_request_inputs`)
   * into a recovery Request carrying the caller's prepared input, in one command.
   */
  async prepareRequestRecovery(
    input: PrepareRequestRecoveryInput,
    options: DurableRecoveryCallOptions = {},
  ): Promise<DurableRecoveryCommandResult> {
    const parsed = parsePrepareRequestRecovery(input);
    return (await this.#execute('prepareRequestRecovery', parsed, drafts(buildRequestRecovery), options.signal)).result;
  }

  /**
   * Rolls the active Turn (plan `resume_turn`) into a continuation Request, in one command.
   *
   * @throws DurableSessionRecoveryError `DURABLE_RECOVERY_UNSAFE_ROLLOVER` when a non_idempotent
   *   tool of the Turn crossed its execution boundary
   */
  async prepareTurnRecovery(input: PrepareTurnRecoveryInput, options: DurableRecoveryCallOptions = {}): Promise<DurableTurnRecoveryResult> {
    const parsed = parsePrepareTurnRecovery(input);
    const maxBytes = this.#settings.maxContinuationResponseBytes;
    const { result, extra } = await this.#execute(
      'prepareTurnRecovery',
      parsed,
      (command, view) => {
        const built = buildTurnRecovery(command, view, maxBytes);
        return { events: built.events, extra: built.continuation };
      },
      options.signal,
    );
    return { ...result, continuation: extra };
  }

  /**
   * Commits the terminal event of a Request whose last Turn ended without one (plan
   * `reconcile_request_outcome`), anchored to the terminal Turn event the caller inspected.
   */
  async reconcileRequestOutcome(
    input: ReconcileRequestOutcomeInput,
    options: DurableRecoveryCallOptions = {},
  ): Promise<DurableRecoveryCommandResult> {
    const parsed = parseReconcileRequestOutcome(input);
    return (await this.#execute('reconcileRequestOutcome', parsed, drafts(buildReconcileRequestOutcome), options.signal)).result;
  }

  #enqueue<T>(run: () => Promise<T>): Promise<T> {
    const result = this.#queue.then(run, run);
    this.#queue = result.catch(() => undefined);
    return result;
  }

  #view(): DurableRecoveryView {
    return { projection: this.getProjection(), plan: this.getRecoveryPlan(), head: this.getHeadSequence() };
  }

  /** Steps 2-7 of the module header. */
  #execute<I extends { commandId: CommandId; expectedHeadSequence?: EventSequence | null | undefined }, E>(
    operation: string,
    input: I,
    build: Builder<I, E>,
    signal: AbortSignal | undefined,
  ): Promise<{ result: DurableRecoveryCommandResult; extra: E }> {
    return this.#enqueue(async () => {
      this.#checkLeaseSignal();
      await this.#journal.refresh(signal === undefined ? {} : { signal });
      const view = this.#view();
      const pinned = input.expectedHeadSequence === undefined ? view.head : input.expectedHeadSequence;
      let built: BuiltCommand<E>;
      try {
        if (pinned !== view.head) throw new DurableEventSequenceConflictError(pinned, view.head);
        built = build(input, view);
      } catch (error) {
        if (!isDurableSessionRecoveryError(error) && !isDurableEventSequenceConflictError(error)) throw error;
        return this.#reconcileRetry(operation, input, build, error, signal);
      }
      return this.#commit(operation, input.commandId, built, pinned, signal);
    });
  }

  async #commit<E>(
    operation: string,
    commandId: CommandId,
    built: BuiltCommand<E>,
    expectedHeadSequence: EventSequence | null,
    signal: AbortSignal | undefined,
  ): Promise<{ result: DurableRecoveryCommandResult; extra: E }> {
    const events = checkDrafts(operation, commandId, built.events);
    const committed = await this.#journal.commit({ commandId, events, expectedHeadSequence }, signal === undefined ? {} : { signal });
    return { result: await this.#toResult(committed, signal), extra: built.extra };
  }

  /** Step 6: the call may repeat a command already in the log. */
  async #reconcileRetry<I extends { commandId: CommandId }, E>(
    operation: string,
    input: I,
    build: Builder<I, E>,
    failure: unknown,
    signal: AbortSignal | undefined,
  ): Promise<{ result: DurableRecoveryCommandResult; extra: E }> {
    const baseline = await findCommandBaseline(this.#store, this.sessionId, input.commandId, {
      pageSize: this.#settings.pageSize,
      storeTimeoutMs: this.#settings.storeTimeoutMs,
      signal,
    });
    if (baseline === null) throw failure;
    let built: BuiltCommand<E>;
    try {
      built = build(input, baseline);
    } catch (error) {
      if (!isDurableSessionRecoveryError(error)) throw error;
      throw new DurableCommandConflictError(
        `command ${input.commandId} is in the log, but it is not this ${operation}: ${error.message}`,
        { cause: error, details: { commandId: input.commandId, operation } },
      );
    }
    return this.#commit(operation, input.commandId, built, baseline.head, signal);
  }

  async #toResult(committed: DurableCommitResult, signal: AbortSignal | undefined): Promise<DurableRecoveryCommandResult> {
    if (committed.status !== 'committed') await this.#confirmOwnership(signal);
    return {
      status: committed.status === 'committed' ? 'committed' : 'reconciled',
      commandId: committed.commandId,
      events: committed.events,
      headSequence: committed.headSequence,
      projection: committed.projection,
      recoveryPlan: planDurableRecovery(committed.projection),
    };
  }

  #checkLeaseSignal(): void {
    checkLeaseSignal(this.#settings, this.sessionId);
  }

  #confirmOwnership(signal: AbortSignal | undefined): Promise<void> {
    return confirmOwnership(this.#settings, this.sessionId, signal);
  }
}
