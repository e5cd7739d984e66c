/**
 * DurableSessionJournal: the way production code commits lifecycle events.
 *
 * The journal keeps, in memory, the session's projection and a command index, both folded from
 * the store's log page by page (`journal-log.ts`). A commit runs, one at a time
 * per instance (a promise chain):
 * 1. validate the command and stamp its `commandId` on every draft;
 * 2. if the command ID is already in the log: identical content in one contiguous range ->
 *    `replayed` (no head check, nothing written); anything else -> `DurableCommandConflictError`;
 * 3. with `expectedHeadSequence`, the head must be exactly that (after a refresh, so an external
 *    writer's progress counts) -> else `DurableEventSequenceConflictError`;
 * 4. preview the drafts on a fork of the projector: an invariant violation, or an unanchored or
 *    stale-boundary Request terminal event, rejects the command and nothing is written;
 * 5. append with `expectedLastSequence` = the head (compare-and-append) and the lease fence;
 * 6. on an explicit conflict: refresh; the command now in the log -> `reconciled`; otherwise
 *    re-preview and retry, at most `maxConflictRetries` times (never when the head was pinned);
 * 7. on a failure that does not prove nothing was written (a write failure, a timeout, an
 *    unavailable backend): refresh; the command fully in the log -> `reconciled`; otherwise the
 *    command becomes *uncertain*, the call throws `DurableCommandOutcomeUnknownError`, and the
 *    journal refuses every other command. Resubmitting the uncertain command only reconciles by
 *    reading again; it is never retried automatically, because a write that succeeded but is not
 *    yet visible would be duplicated.
 * Every store call is bounded by `storeTimeoutMs` (and the caller's signal); an append that hits
 * the deadline has an unknown outcome.
 */
import { throwIfAborted, withDeadline } from '../abort.js';
import type { DurableRecoveryPlan, DurableSessionProjection } from '../projector/projection-types.js';
import type { DurableAppendResult, DurableEventStore } from '../store.js';
import {
  DurableCommandConflictError,
  DurableCommandOutcomeUnknownError,
  DurableEventSequenceConflictError,
  DurableExecutionLeaseError,
  DurableExecutionLeaseTimeoutError,
  isDurableCommandConflictError,
  isDurableEventSequenceConflictError,
} from '../../protocol/errors.js';
import type { DurableEventEnvelope } from '../../protocol/events.js';
import { describeInvalidId, type CommandId, type EventSequence, type SessionId } from '../../protocol/ids.js';
import { appendFailureProvesNothingWritten } from './append-outcome.js';
import type { CommandRange } from '../command-index.js';
import { findCommandMismatch } from './command-matching.js';
import { previewCommand } from './command-preview.js';
import { JournalLog, journalError } from './journal-log.js';
import { isCheckpointInconclusive } from '../projector/key-filter.js';
import type { DurableCheckpointOutcome } from '../checkpoint/load.js';
import {
  prepareCommand,
  resolveJournalOptions,
  type DurableCommitResult,
  type DurableCommitStatus,
  type DurableJournalCallOptions,
  type DurableJournalCommand,
  type DurableSessionJournalOptions,
  type JournalSettings,
  type PreparedCommand,
} from './journal-options.js';

/**
 * Commits lifecycle commands to one session's log with preview, idempotency, compare-and-append
 * retries and read-after-failure reconciliation.
 *
 * An uncertain command (see {@link DurableSessionJournal.getUncertainCommandId}) fences this
 * instance: only resubmitting that same command is accepted, and it only reconciles by reading.
 * If the command stays absent, the caller (or a recovery coordinator) must decide at a higher
 * level, for instance by checking the backend, and then open a new journal, which starts from
 * the log as it is.
 *
 * @example
 * const journal = await DurableSessionJournal.open(store, sessionId);
 * const committed = await journal.commit({
 *   commandId: CommandId('create-session-123'),
 *   events: [{ type: DurableEventType.SESSION_CREATED, data: { source: 'create' } }],
 * });
 * committed.status; // 'committed' (or 'replayed' / 'reconciled' on a retry)
 * journal.getProjection().status; // 'open'
 */
export class DurableSessionJournal {
  /** The session this journal writes. */
  readonly sessionId: SessionId;
  readonly #store: DurableEventStore;
  readonly #settings: JournalSettings;
  readonly #log: JournalLog;
  #uncertain: CommandId | null = null;
  /** Set when an append result could not be trusted: the next commit refreshes first. */
  #stale = false;
  #queue: Promise<unknown> = Promise.resolve();

  private constructor(store: DurableEventStore, sessionId: SessionId, settings: JournalSettings) {
    this.#store = store;
    this.sessionId = sessionId;
    this.#settings = settings;
    this.#log = new JournalLog(store, sessionId, settings.pageSize, settings.storeTimeoutMs, settings.checkpoints);
  }

  /**
   * Loads the session's log and returns a journal positioned at its head. When the events it
   * folded after the stored checkpoint (all of them, without one) reach the checkpoint policy's
   * period, it writes a checkpoint at the head before returning, so that a process that exits
   * right after (a CLI call, a serverless invocation) leaves it for the next open; a failed write
   * goes to `onWriteError` and does not fail the open.
   *
   * @throws DurableSessionJournalError for bad options or a store page that breaks the read contract
   * @throws DurableEventProjectionError when the log breaks a lifecycle invariant
   * @throws DurableExecutionLeaseError (`DURABLE_EXECUTION_LEASE_REQUIRED`) when `executionLeaseStore`
   *   says the session needs a lease and none was given
   */
  static async open(
    store: DurableEventStore,
    sessionId: SessionId,
    options?: DurableSessionJournalOptions,
  ): Promise<DurableSessionJournal> {
    const settings = resolveJournalOptions(options);
    const problem = describeInvalidId(sessionId);
    if (problem !== undefined) throw journalError(`sessionId ${problem}`);
    const signal = options?.signal;
    throwIfAborted(signal);
    const journal = new DurableSessionJournal(store, sessionId, settings);
    const leaseStore = settings.executionLeaseStore;
    if (leaseStore !== undefined && settings.executionLease === undefined) {
      const required = await withDeadline(
        settings.storeTimeoutMs,
        signal,
        (callSignal) => leaseStore.requiresExecutionLease(sessionId, { signal: callSignal }),
        () => new DurableExecutionLeaseTimeoutError(`requiresExecutionLease exceeded ${settings.storeTimeoutMs} ms`),
      );
      if (required) {
        throw new DurableExecutionLeaseError(
          'DURABLE_EXECUTION_LEASE_REQUIRED',
          `session ${sessionId} has execution lease state; open the journal with an executionLease`,
        );
      }
    }
    await journal.#log.load(signal);
    return journal;
  }

  /**
   * Commits one command (see the module header for every rule).
   *
   * @throws DurableSessionJournalError for an invalid command
   * @throws DurableCommandConflictError when the command ID is in the log with other content or in separate ranges
   * @throws DurableEventSequenceConflictError when the pinned head is stale, or conflicts outlast `maxConflictRetries`
   * @throws DurableEventProjectionError when the command would break a lifecycle invariant (nothing is written)
   * @throws DurableCommandOutcomeUnknownError when a failed write could not be reconciled, or another command is uncertain
   * @throws DurableExecutionLeaseError when the lease is lost or the store refuses the fence
   */
  commit(command: DurableJournalCommand, options?: DurableJournalCallOptions): Promise<DurableCommitResult> {
    return this.#enqueue(() => this.#commit(command, options?.signal));
  }

  /** Reads events appended since the last load (by anyone) and returns the new head. */
  refresh(options?: DurableJournalCallOptions): Promise<EventSequence | null> {
    return this.#enqueue(async () => {
      await this.#refresh(options?.signal);
      return this.#log.head;
    });
  }

  /** The current projection (an immutable snapshot). */
  getProjection(): DurableSessionProjection {
    return this.#log.projector.snapshot();
  }

  /** The recovery plan of the current projection. */
  getRecoveryPlan(): DurableRecoveryPlan {
    return this.#log.projector.recoveryPlan();
  }

  /**
   * What happened to the projection checkpoint when this journal opened: `none`, `used` (the
   * sequence it stood at), `discarded` (why), or `rebuilt` (the checkpoint could not decide on an
   * ID and the log was folded from the start).
   */
  getCheckpointOutcome(): DurableCheckpointOutcome {
    return this.#log.checkpointOutcome;
  }

  /**
   * Writes a projection checkpoint at the loaded head now (the policy writes them on its own).
   * Resolves `true` once stored, `false` when the store has no checkpoint methods, checkpoint
   * writes are off, or the log is empty. Rejects when the store fails the write.
   */
  writeCheckpoint(): Promise<boolean> {
    return this.#enqueue(() => this.#log.checkpoint(true));
  }

  /** Resolves once every checkpoint write this journal queued has settled. */
  flushCheckpoints(): Promise<void> {
    return this.#log.flushCheckpoints();
  }

  /** The head this journal has loaded (`null` for an empty log). */
  getHeadSequence(): EventSequence | null {
    return this.#log.head;
  }

  /**
   * The command whose write failed with an unknown outcome and could not be reconciled, or
   * `null`. While set, every other command is refused with `DurableCommandOutcomeUnknownError`.
   */
  getUncertainCommandId(): CommandId | null {
    return this.#uncertain;
  }

  #enqueue<T>(run: () => Promise<T>): Promise<T> {
    const result = this.#queue.then(run, run);
    this.#queue = result.catch(() => undefined);
    return result;
  }

  async #refresh(signal: AbortSignal | undefined): Promise<void> {
    await this.#log.refresh(signal);
    this.#stale = false;
  }

  #checkLease(): void {
    const lease = this.#settings.executionLease;
    if (lease?.signal.aborted === true) {
      throw new DurableExecutionLeaseError(
        'DURABLE_EXECUTION_LEASE_LOST',
        `the execution lease of session ${this.sessionId} is lost; this journal can no longer commit`,
        { cause: lease.signal.reason },
      );
    }
  }

  async #commit(command: DurableJournalCommand, signal: AbortSignal | undefined): Promise<DurableCommitResult> {
    throwIfAborted(signal);
    const prepared = prepareCommand(command);
    this.#log.assertHealthy();
    if (this.#uncertain !== null) return this.#reconcileUncertain(prepared, this.#uncertain, signal);
    if (this.#stale) await this.#refresh(signal);

    const known = await this.#log.findCommand(prepared.commandId, signal);
    if (known !== undefined) return this.#matchStored(prepared, known, 'replayed', signal);

    if (prepared.pinned && prepared.expectedHeadSequence !== this.#log.head) {
      // The caller may have observed a newer head than ours (or ours moved): decide on fresh state.
      await this.#refresh(signal);
      const found = await this.#log.findCommand(prepared.commandId, signal);
      if (found !== undefined) return this.#matchStored(prepared, found, 'reconciled', signal);
      if (prepared.expectedHeadSequence !== this.#log.head) {
        throw new DurableEventSequenceConflictError(prepared.expectedHeadSequence, this.#log.head);
      }
    }

    for (let attempt = 0; ; attempt++) {
      const head = this.#log.head;
      try {
        previewCommand(this.#log.projector, prepared.drafts, {
          sessionId: this.sessionId,
          head,
          nowIso: new Date().toISOString(),
        });
      } catch (error) {
        if (!isCheckpointInconclusive(error)) throw error;
        // Only the whole log can judge an ID older than the checkpoint: fold it, then decide again.
        await this.#log.rebuild(signal, error.message);
        const found = await this.#log.findCommand(prepared.commandId, signal);
        if (found !== undefined) return this.#matchStored(prepared, found, 'reconciled', signal);
        continue;
      }
      this.#checkLease();
      throwIfAborted(signal);
      let result: DurableAppendResult;
      try {
        result = await this.#log.call(
          signal,
          (callSignal) =>
            this.#store.append(this.sessionId, prepared.drafts, {
              expectedLastSequence: head,
              executionFence: this.#settings.executionLease?.fence,
              signal: callSignal,
            }),
          'append',
        );
      } catch (error) {
        if (isDurableEventSequenceConflictError(error)) {
          await this.#refresh(signal);
          const found = await this.#log.findCommand(prepared.commandId, signal);
          if (found !== undefined) return this.#matchStored(prepared, found, 'reconciled', signal);
          if (prepared.pinned || attempt >= this.#settings.maxConflictRetries) throw error;
          continue;
        }
        if (appendFailureProvesNothingWritten(error)) throw error;
        return this.#reconcileAfterFailure(prepared, error, signal);
      }
      return this.#acceptAppend(prepared, head, result, signal);
    }
  }

  /** Checks the store's append result against the command, then folds it. */
  async #acceptAppend(
    prepared: PreparedCommand,
    head: EventSequence | null,
    result: DurableAppendResult,
    signal: AbortSignal | undefined,
  ): Promise<DurableCommitResult> {
    const events: DurableEventEnvelope[] = Array.isArray(result?.events) ? result.events : [];
    const base = head ?? 0;
    const last = events[events.length - 1];
    const wellFormed =
      result.previousSequence === head &&
      events.length === prepared.drafts.length &&
      last !== undefined &&
      result.lastSequence === last.sequence &&
      events.every(
        (event, index) =>
          event.sequence === base + index + 1 &&
          event.sessionId === this.sessionId &&
          event.commandId === prepared.commandId,
      ) &&
      findCommandMismatch(prepared.drafts, events) === -1;
    if (!wellFormed || last === undefined) {
      this.#stale = true;
      throw journalError(
        `the store acknowledged command ${prepared.commandId} with a result that does not match it; refresh before deciding anything`,
        { commandId: prepared.commandId },
      );
    }
    try {
      this.#log.fold(events);
      this.#log.maybeCheckpoint();
    } catch (error) {
      if (!isCheckpointInconclusive(error)) throw error;
      await this.#log.rebuild(signal, error.message);
    }
    return this.#result('committed', prepared.commandId, events);
  }

  #result(status: DurableCommitStatus, commandId: CommandId, events: DurableEventEnvelope[]): DurableCommitResult {
    // SAFETY: every result describes a command that is in the log, so the head is not null.
    const headSequence = this.#log.head as EventSequence;
    return { status, commandId, events, headSequence, projection: this.#log.projector.snapshot() };
  }

  /** Compares a command with its stored copy: identical and contiguous -> `status`, else a conflict. */
  async #matchStored(
    prepared: PreparedCommand,
    range: CommandRange,
    status: DurableCommitStatus,
    signal: AbortSignal | undefined,
  ): Promise<DurableCommitResult> {
    if (!range.contiguous) {
      throw new DurableCommandConflictError(
        `command ${prepared.commandId} appears in separate ranges of the log (sequences ${range.firstSequence}..${range.lastSequence})`,
        { details: { commandId: prepared.commandId, firstSequence: range.firstSequence, lastSequence: range.lastSequence } },
      );
    }
    const stored = await this.#log.readRange(range, signal);
    const mismatch = findCommandMismatch(prepared.drafts, stored);
    if (mismatch !== -1) {
      throw new DurableCommandConflictError(
        `command ${prepared.commandId} is already in the log with different content (first difference at event ${mismatch})`,
        {
          details: {
            commandId: prepared.commandId,
            firstSequence: range.firstSequence,
            lastSequence: range.lastSequence,
            eventIndex: mismatch,
          },
        },
      );
    }
    return this.#result(status, prepared.commandId, stored);
  }

  /** After a write whose outcome is unknown: read, and find out. */
  async #reconcileAfterFailure(
    prepared: PreparedCommand,
    failure: unknown,
    signal: AbortSignal | undefined,
  ): Promise<DurableCommitResult> {
    try {
      await this.#refresh(signal);
    } catch (reloadError) {
      this.#uncertain = prepared.commandId;
      throw this.#outcomeUnknown(prepared.commandId, 'the reload after the failure failed', failure, reloadError);
    }
    const found = await this.#log.findCommand(prepared.commandId, signal);
    if (found === undefined) {
      this.#uncertain = prepared.commandId;
      throw this.#outcomeUnknown(prepared.commandId, 'it is not in the log (yet)', failure);
    }
    try {
      return await this.#matchStored(prepared, found, 'reconciled', signal);
    } catch (error) {
      if (isDurableCommandConflictError(error)) throw error;
      this.#uncertain = prepared.commandId;
      throw this.#outcomeUnknown(prepared.commandId, 'reading it back failed', failure, error);
    }
  }

  /** A resubmission while a command is uncertain: only that command, and only a read. */
  async #reconcileUncertain(
    prepared: PreparedCommand,
    uncertain: CommandId,
    signal: AbortSignal | undefined,
  ): Promise<DurableCommitResult> {
    if (prepared.commandId !== uncertain) {
      throw new DurableCommandOutcomeUnknownError(
        `command ${uncertain} has an unknown outcome; resubmit it to reconcile before committing ${prepared.commandId}`,
        { details: { uncertainCommandId: uncertain, commandId: prepared.commandId } },
      );
    }
    try {
      await this.#refresh(signal);
    } catch (error) {
      throw this.#outcomeUnknown(uncertain, 'the reload failed', error);
    }
    const found = await this.#log.findCommand(uncertain, signal);
    if (found === undefined) throw this.#outcomeUnknown(uncertain, 'it is still not in the log', undefined);
    try {
      const result = await this.#matchStored(prepared, found, 'reconciled', signal);
      this.#uncertain = null;
      return result;
    } catch (error) {
      if (isDurableCommandConflictError(error)) {
        this.#uncertain = null;
        throw error;
      }
      throw this.#outcomeUnknown(uncertain, 'reading it back failed', error);
    }
  }

  #outcomeUnknown(commandId: CommandId, why: string, cause: unknown, reloadError?: unknown): DurableCommandOutcomeUnknownError {
    const describe = (error: unknown): string | null =>
      error === undefined ? null : error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    return new DurableCommandOutcomeUnknownError(
      `the outcome of command ${commandId} is unknown (${why}); only resubmitting it reconciles, nothing is retried automatically`,
      {
        cause: cause ?? reloadError,
        details: { commandId, failure: describe(cause), reloadFailure: describe(reloadError) },
      },
    );
  }
}
