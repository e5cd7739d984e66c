/**
 * DurableSessionProjector: folds a session's log, page by page, into a projection and a recovery
 * plan, rechecking every lifecycle invariant (listed in `invariants.ts`).
 *
 * 1. `apply(page)` folds each event into a new immutable state; the state is committed only when
 *    the whole page folded. Pages must continue the sequence where the previous one stopped.
 * 2. The first violation fails the instance for good: every later `apply`, `snapshot`,
 *    `recoveryPlan` and `clone` throws that same error. Discard it, repair the log, replay.
 * 3. `snapshot()` hands out the immutable state (O(1)); `recoveryPlan()` classifies it.
 * 4. `clone()` shares the immutable state and forks the grow-only ID set in O(layers), so a
 *    journal can preview a command on a clone per commit without replaying history.
 */
import { DurableEventProjectionError } from '../../protocol/errors.js';
import type { DurableEventEnvelope } from '../../protocol/events.js';
import type { EventSequence, SessionId } from '../../protocol/ids.js';
import { seal } from './frozen-data.js';
import { isCheckpointInconclusive, type DurableCheckpointInconclusiveError } from './key-filter.js';
import { EMPTY_FOLD_STATE, type FoldState } from './fold-state.js';
import { foldEvent, foldParsed } from './invariants.js';
import { PersistentKeySet } from './persistent-key-set.js';
import type { DurableRecoveryPlan, DurableSessionProjection } from './projection-types.js';
import { planDurableRecovery } from './recovery-plan.js';

/**
 * Version of the fold rules. A projection checkpoint written under another version is discarded
 * (and the log folded from the start): bump it whenever a rule, the fold state or the recovery
 * classification changes.
 */
export const DURABLE_PROJECTOR_VERSION = 1;

/** Options of {@link DurableSessionProjector}. */
export interface DurableSessionProjectorOptions {
  /** When set, every event must carry this session ID (otherwise the first event's is used). */
  sessionId?: SessionId | undefined;
}

/**
 * Fail-closed lifecycle projector of one session's event log.
 *
 * @example
 * const projector = new DurableSessionProjector({ sessionId });
 * let after: EventSequence | undefined;
 * for (;;) {
 *   const page = await store.read(sessionId, { after, limit: 100 });
 *   projector.apply(page.events);
 *   if (!page.hasMore) break;
 *   after = page.nextCursor ?? undefined;
 * }
 * const plan = projector.recoveryPlan();
 */
export class DurableSessionProjector {
  private readonly expectedSessionId: SessionId | undefined;
  private state: FoldState;
  private ids: PersistentKeySet;
  private failure: DurableEventProjectionError | null = null;
  private inconclusive: DurableCheckpointInconclusiveError | null = null;
  private cachedSnapshot: DurableSessionProjection | null = null;

  constructor(options: DurableSessionProjectorOptions = {}) {
    this.expectedSessionId = options.sessionId;
    this.state = EMPTY_FOLD_STATE;
    this.ids = PersistentKeySet.empty();
  }

  /** Sequence of the last event applied successfully, `null` before any. */
  get headSequence(): EventSequence | null {
    return this.state.headSequence;
  }

  /** True once a violation failed this instance. */
  get failed(): boolean {
    return this.failure !== null;
  }

  /**
   * True once a projector restored from a checkpoint met a key only the full log can judge
   * (`DurableCheckpointInconclusiveError`): discard it and fold the log from the start. Never
   * true for a projector that folded from the first event.
   */
  get needsFullFold(): boolean {
    return this.inconclusive !== null;
  }

  /** The error that failed this instance, if any. */
  get error(): DurableEventProjectionError | null {
    return this.failure;
  }

  /**
   * Folds one page of events, which must continue the sequence (the first page starts at 1).
   * Throws `DurableEventProjectionError` on any violation and stays failed afterwards.
   */
  apply(events: readonly DurableEventEnvelope[]): void {
    this.#apply(events, foldEvent);
  }

  /**
   * `apply` for envelopes the caller built from strictly parsed drafts plus well-formed store
   * fields (internal: the journal's preview), or that a store parsed in full in this process
   * (`markParsedEnvelopes`); skips only the envelope schema check.
   */
  applyParsed(events: readonly DurableEventEnvelope[]): void {
    this.#apply(events, foldParsed);
  }

  #apply(events: readonly DurableEventEnvelope[], fold: typeof foldParsed): void {
    this.throwIfFailed();
    try {
      if (!Array.isArray(events)) {
        throw new DurableEventProjectionError('apply() expects an array of event envelopes', {
          details: { rule: 'schema', sequence: null, eventId: null, type: null },
        });
      }
      let state = this.state;
      for (const event of events) state = fold(state, this.ids, event, this.expectedSessionId);
      if (state !== this.state) {
        this.state = state;
        this.cachedSnapshot = null;
      }
    } catch (error) {
      if (isCheckpointInconclusive(error)) {
        this.inconclusive = error;
        throw error;
      }
      this.failure =
        error instanceof DurableEventProjectionError
          ? error
          : new DurableEventProjectionError(`projection failed unexpectedly: ${String(error)}`, { cause: error });
      throw this.failure;
    }
  }

  /** The current projection: immutable plain data, shared until the next `apply`. */
  snapshot(): DurableSessionProjection {
    this.throwIfFailed();
    if (this.cachedSnapshot === null) {
      const state = this.state;
      this.cachedSnapshot = seal({
        sessionId: state.sessionId ?? this.expectedSessionId ?? null,
        status: state.status,
        headSequence: state.headSequence,
        lastEventId: state.lastEventId,
        activeRequest: state.activeRequest,
        completedRequests: state.completedRequests,
        lastRequest: state.lastRequest,
        ...(state.closedReason === undefined ? {} : { closedReason: state.closedReason }),
      });
    }
    return this.cachedSnapshot;
  }

  /** The recovery classification of the current projection (see `recovery-plan.ts`). */
  recoveryPlan(): DurableRecoveryPlan {
    return planDurableRecovery(this.snapshot());
  }

  /** An independent projector at the same position; applying to one never affects the other. */
  clone(): DurableSessionProjector {
    this.throwIfFailed();
    const copy = new DurableSessionProjector({ sessionId: this.expectedSessionId });
    copy.state = this.state;
    copy.ids = this.ids.fork();
    copy.cachedSnapshot = this.cachedSnapshot;
    return copy;
  }

  /**
   * The fold state and used-ID set, for the checkpoint writer (internal: not part of the public
   * surface; the state is immutable and the set must not be modified).
   */
  checkpointState(): { state: FoldState; ids: PersistentKeySet } {
    this.throwIfFailed();
    return { state: this.state, ids: this.ids };
  }

  /** A projector positioned where a checkpoint stands (internal: used by the checkpoint reader). */
  static fromCheckpointState(
    options: DurableSessionProjectorOptions,
    state: FoldState,
    ids: PersistentKeySet,
  ): DurableSessionProjector {
    const projector = new DurableSessionProjector(options);
    projector.state = state;
    projector.ids = ids;
    return projector;
  }

  private throwIfFailed(): void {
    if (this.failure !== null) throw this.failure;
    if (this.inconclusive !== null) throw this.inconclusive;
  }
}
