/**
 * The journal and recovery coordinator a SessionObject runs over its own store.
 *
 * How a call runs (one at a time per object, in arrival order):
 * 1. Lease gate. With an `executionFence`, the fence must name the session's current lease
 *    (checked synchronously against the object's storage); without one, a session that has
 *    lease state is refused with `DURABLE_EXECUTION_LEASE_REQUIRED` (the lease rule is sticky,
 *    and a replayed command appends nothing, so the append's own fence check would not catch it).
 *    Read-only calls (`projection`, `planResume`) need no fence.
 * 2. Cached instances. The object keeps one `DurableSessionJournal` and one
 *    `DurableSessionRecoveryCoordinator` per fence: one unfenced pair, and one pair for the most
 *    recent fence (a new fence replaces it). Each is opened once, from the start of the log, and
 *    afterwards only refreshed, which reads the pages appended since (by RPC appends, the
 *    durability runtime or other fences) — never the whole log again.
 * 3. The call runs on that instance; the journal's append goes through the object's
 *    `SqlDurableEventStore`, whose commit listener is the object's `afterCommit`, so subscribers
 *    get journal-committed events exactly like RPC appends.
 * 4. After a failure that can leave an instance unusable (an unknown command outcome, a lost
 *    lease, an unexpected error) the instance is dropped; the next call reopens it from the
 *    log, which inside the object is authoritative (a failed SQL transaction wrote nothing).
 */
import type { PlanResumeResult, RpcJournalCallOptions } from '../adapters/durable-object/journal-rpc.js';
import type { SqlDurableEventStore } from '../adapters/sql/sql-store.js';
import { DurableSessionJournal } from '../core/journal/journal.js';
import type {
  DurableCommitResult,
  DurableJournalCommand,
  DurableJournalExecutionLease,
} from '../core/journal/journal-options.js';
import type { SessionProjectionResult } from '../core/operations/journal-rows.js';
import { DurableSessionRecoveryCoordinator } from '../core/recovery/coordinator.js';
import type { DurableExecutionFence } from '../core/store.js';
import {
  DurableEventStoreError,
  DurableExecutionLeaseError,
  isDurableCommandOutcomeUnknownError,
  isDurableError,
} from '../protocol/errors.js';
import type { SessionId } from '../protocol/ids.js';
import { PLAN_RESUME_OPERATION, isRecoveryMutation, isRecoveryOperation } from '../protocol/recovery-operations.js';

/** One journal + coordinator pair, bound to one fence (or to none). */
interface Slot {
  /** `''` for the unfenced slot, else the fence's identity. */
  readonly key: string;
  readonly lease: DurableJournalExecutionLease | undefined;
  /** Aborted when the slot is discarded, so a dropped fenced instance can never commit again. */
  readonly controller: AbortController;
  journal: DurableSessionJournal | null;
  coordinator: DurableSessionRecoveryCoordinator | null;
}

function invalidInput(message: string): DurableEventStoreError {
  return new DurableEventStoreError('DURABLE_EVENT_INVALID_INPUT', message);
}

function newSlot(key: string, fence: DurableExecutionFence | undefined): Slot {
  const controller = new AbortController();
  return {
    key,
    lease: fence === undefined ? undefined : { fence, signal: controller.signal },
    controller,
    journal: null,
    coordinator: null,
  };
}

/** The `executionFence` of untrusted call options (`undefined` when absent). */
function fenceOf(options: unknown): unknown {
  if (options === undefined || options === null) return undefined;
  if (typeof options !== 'object' || Array.isArray(options)) throw invalidInput('options must be an object');
  for (const key of Object.keys(options)) {
    if (key !== 'executionFence') throw invalidInput(`options has an unknown key "${key}"`);
  }
  return (options as RpcJournalCallOptions).executionFence;
}

/** Only the three fence fields reach the gate (a lease record carries more). */
function fenceFields(fence: unknown): unknown {
  if (typeof fence !== 'object' || fence === null || Array.isArray(fence)) return fence;
  const { leaseId, ownerId, fencingToken } = fence as DurableExecutionFence;
  return { leaseId, ownerId, fencingToken };
}

/**
 * The input and the call options of a row's input (an untrusted shape over RPC): its optional
 * `executionFence` is split off, because the journal's and the coordinator's inputs are strict.
 */
export function splitFence(input: unknown): { input: unknown; options: RpcJournalCallOptions } {
  if (typeof input !== 'object' || input === null || Array.isArray(input) || !('executionFence' in input)) {
    return { input, options: {} };
  }
  const { executionFence, ...rest } = input as Record<string, unknown>;
  // SAFETY: the gate checks the fence's shape at run time (DURABLE_EXECUTION_LEASE_INVALID).
  const fence = fenceFields(executionFence) as DurableExecutionFence | undefined;
  return { input: rest, options: fence === undefined ? {} : { executionFence: fence } };
}

/** Identity of a fence (only ever compared with other fence keys). */
function fenceKey(fence: DurableExecutionFence): string {
  return JSON.stringify([fence.leaseId, fence.ownerId, fence.fencingToken]);
}

/** True for an empty `planResume` input (`undefined`, `null` or `{}`). */
function isEmptyInput(input: unknown): boolean {
  if (input === undefined || input === null) return true;
  return typeof input === 'object' && !Array.isArray(input) && Object.keys(input).length === 0;
}

/**
 * Runs journal commits, projections and recovery operations for the one session a SessionObject
 * serves, over that object's store. See the module header for the rules.
 */
export class SessionJournalHost {
  readonly #store: SqlDurableEventStore;
  #sessionId: SessionId | null = null;
  #unfenced: Slot = newSlot('', undefined);
  #fenced: Slot | null = null;
  #queue: Promise<unknown> = Promise.resolve();

  constructor(store: SqlDurableEventStore) {
    this.#store = store;
  }

  /**
   * Commits one journal command (see `DurableSessionJournal.commit`): the row's input, the command
   * with an optional `executionFence` beside its fields.
   */
  commit(sessionId: SessionId, input: unknown): Promise<DurableCommitResult> {
    const { input: command, options } = splitFence(input);
    return this.#enqueue(sessionId, async () => {
      const slot = this.#gate(sessionId, options.executionFence);
      const journal = await this.#journalOf(slot, sessionId);
      // SAFETY: the journal checks the command strictly at run time (DURABLE_SESSION_JOURNAL_INVALID).
      return this.#watch(slot, 'journal', () => journal.commit(command as DurableJournalCommand));
    });
  }

  /**
   * Folds what was appended since the unfenced journal's head; its checkpoint policy then writes
   * a checkpoint when one is due (with `force`: one at the head in any case). Resolves once that
   * write settled. Failures are dropped: a checkpoint is derived data and the next open folds
   * from the previous one.
   */
  maintainCheckpoints(sessionId: SessionId, force: boolean): Promise<void> {
    return this.#enqueue(sessionId, async () => {
      const slot = this.#unfenced;
      const journal = await this.#journalOf(slot, sessionId);
      await this.#watch(slot, 'journal', () => journal.refresh());
      if (force) await journal.writeCheckpoint();
      await journal.flushCheckpoints();
    }).catch(() => undefined);
  }

  /** The projection, plan and head, refreshed to the current head of the log. */
  projection(sessionId: SessionId): Promise<SessionProjectionResult> {
    return this.#enqueue(sessionId, async () => {
      const slot = this.#unfenced;
      const journal = await this.#journalOf(slot, sessionId);
      await this.#watch(slot, 'journal', () => journal.refresh());
      return {
        projection: journal.getProjection(),
        recoveryPlan: journal.getRecoveryPlan(),
        headSequence: journal.getHeadSequence(),
      };
    });
  }

  /** Runs one recovery operation (a row of `RECOVERY_OPERATIONS`) on the session's coordinator. */
  recover(sessionId: SessionId, operation: unknown, input: unknown, options?: RpcJournalCallOptions): Promise<unknown> {
    return this.#enqueue(sessionId, async () => {
      if (!isRecoveryOperation(operation)) {
        throw invalidInput(`unknown recovery operation ${JSON.stringify(String(operation).slice(0, 64))}`);
      }
      if (operation === PLAN_RESUME_OPERATION) {
        if (!isEmptyInput(input)) throw invalidInput('planResume takes no input');
        fenceOf(options);
        return this.#planResume(sessionId);
      }
      if (!isRecoveryMutation(operation)) throw invalidInput(`unknown recovery operation ${operation}`);
      const slot = this.#gate(sessionId, fenceOf(options));
      const coordinator = await this.#coordinatorOf(slot, sessionId);
      // SAFETY: the input is untrusted data; every coordinator method parses its argument strictly
      // at run time and refuses anything malformed before touching the store.
      return this.#watch(slot, 'coordinator', () => coordinator[operation](input as never));
    });
  }

  async #planResume(sessionId: SessionId): Promise<PlanResumeResult> {
    const slot = this.#unfenced;
    const coordinator = await this.#coordinatorOf(slot, sessionId);
    await this.#watch(slot, 'coordinator', () => coordinator.refresh());
    return { ...coordinator.planResume(), headSequence: coordinator.getHeadSequence() };
  }

  #enqueue<T>(sessionId: SessionId, run: () => Promise<T>): Promise<T> {
    const task = async (): Promise<T> => {
      // The object binds itself to one session; this is a second line of defence for the cache.
      if (this.#sessionId !== null && this.#sessionId !== sessionId) {
        throw invalidInput(`this journal host serves session ${this.#sessionId}, not ${sessionId}`);
      }
      this.#sessionId = sessionId;
      return run();
    };
    const result = this.#queue.then(task, task);
    this.#queue = result.catch(() => undefined);
    return result;
  }

  /** Step 1 of the module header: checks the lease and picks the slot of the fence. */
  #gate(sessionId: SessionId, fence: unknown): Slot {
    const eventLog = this.#store.eventLog;
    if (fence === undefined) {
      if (eventLog.requiresExecutionLease(sessionId)) {
        throw new DurableExecutionLeaseError(
          'DURABLE_EXECUTION_LEASE_REQUIRED',
          `session ${sessionId} has execution lease state; journal commands and recovery operations must carry the current lease fence`,
        );
      }
      return this.#unfenced;
    }
    // SAFETY: assertExecutionLease validates the shape at run time (DURABLE_EXECUTION_LEASE_INVALID).
    const claimed = fence as DurableExecutionFence;
    try {
      eventLog.assertExecutionLease(sessionId, claimed);
    } catch (error) {
      // A lost fence never comes back: forget its cached pair (a lost fence has a valid shape).
      if (isDurableError(error) && error.code === 'DURABLE_EXECUTION_LEASE_LOST' && this.#fenced?.key === fenceKey(claimed)) {
        this.#dropFenced();
      }
      throw error;
    }
    const checked: DurableExecutionFence = {
      leaseId: claimed.leaseId,
      ownerId: claimed.ownerId,
      fencingToken: claimed.fencingToken,
    };
    const key = fenceKey(checked);
    if (this.#fenced?.key !== key) {
      this.#discard(this.#fenced);
      this.#fenced = newSlot(key, checked);
    }
    return this.#fenced;
  }

  async #journalOf(slot: Slot, sessionId: SessionId): Promise<DurableSessionJournal> {
    slot.journal ??= await DurableSessionJournal.open(
      this.#store,
      sessionId,
      slot.lease === undefined ? {} : { executionLease: slot.lease },
    );
    return slot.journal;
  }

  async #coordinatorOf(slot: Slot, sessionId: SessionId): Promise<DurableSessionRecoveryCoordinator> {
    slot.coordinator ??= await DurableSessionRecoveryCoordinator.open(
      this.#store,
      sessionId,
      slot.lease === undefined ? {} : { executionLease: slot.lease, executionLeaseStore: this.#store },
    );
    return slot.coordinator;
  }

  /** Runs `call` on a slot's instance and drops what a failure may have left unusable (step 4). */
  async #watch<T>(slot: Slot, which: 'journal' | 'coordinator', call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (error) {
      const code = isDurableError(error) ? error.code : undefined;
      if (code === 'DURABLE_EXECUTION_LEASE_LOST' && slot === this.#fenced) {
        this.#dropFenced();
      } else if (code === undefined || isDurableCommandOutcomeUnknownError(error)) {
        slot[which] = null;
      }
      throw error;
    }
  }

  #dropFenced(): void {
    this.#discard(this.#fenced);
    this.#fenced = null;
  }

  #discard(slot: Slot | null): void {
    if (slot === null) return;
    slot.controller.abort(new Error('this fence was replaced or lost; its journal is closed'));
    slot.journal = null;
    slot.coordinator = null;
  }
}
