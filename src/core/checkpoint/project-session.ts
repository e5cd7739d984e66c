/**
 * projectDurableSession: the one-shot convenience over {@link DurableSessionProjector}.
 *
 * Reads the session's log from the start with `store.read`, one page at a time (so memory stays
 * bounded by the page size plus the projection), applies each page, and stops at the first page
 * without `hasMore`. A store page that claims more events but returns none, or whose final head
 * disagrees with the events returned, is a broken contract and fails closed.
 *
 * When the store keeps projection checkpoints (`readCheckpoint`), the fold starts from the latest
 * valid one and reads only the events after it; if the checkpoint cannot decide on an ID that may
 * be older than it, the whole log is folded from the first event instead. The result is the same
 * either way (`docs/checkpoints.md`).
 */
import { DurableEventProjectionError } from '../../protocol/errors.js';
import type { EventSequence, SessionId } from '../../protocol/ids.js';
import { DEFAULT_READ_LIMIT } from '../../protocol/limits.js';
import { throwIfAborted } from '../abort.js';
import type { DurableEventStore } from '../store.js';
import { DurableSessionProjector } from '../projector/projector.js';
import { isCheckpointInconclusive } from '../projector/key-filter.js';
import { loadCheckpoint, type DurableCheckpointOutcome } from './load.js';
import type { DurableRecoveryPlan, DurableSessionProjection } from '../projector/projection-types.js';

/** Options of {@link projectDurableSession}. */
export interface ProjectDurableSessionOptions {
  /** Events per `store.read` (1..1000, default 100). */
  pageSize?: number | undefined;
  /** Aborts between and during reads. */
  signal?: AbortSignal | undefined;
  /** Start from the store's latest valid projection checkpoint, when it has one (default true). */
  checkpoints?: boolean | undefined;
}

/** Result of {@link projectDurableSession}. */
export interface ProjectedDurableSession {
  projection: DurableSessionProjection;
  recoveryPlan: DurableRecoveryPlan;
  /** Head the projection reflects (`null` for an empty log). */
  headSequence: EventSequence | null;
  /**
   * The projector positioned at `headSequence`, to keep applying later pages. When it started
   * from a checkpoint, a later `apply` may throw `DurableCheckpointInconclusiveError` (an ID that
   * may be older than the checkpoint): then project again with `checkpoints: false`.
   */
  projector: DurableSessionProjector;
  /** What happened to the projection checkpoint. */
  checkpoint: DurableCheckpointOutcome;
}

function brokenPage(message: string): DurableEventProjectionError {
  return new DurableEventProjectionError(`store read contract violated: ${message}`);
}

/**
 * Projects a whole session log and classifies its recovery.
 *
 * @example
 * const { projection, recoveryPlan } = await projectDurableSession(store, sessionId, { pageSize: 500 });
 * if (recoveryPlan.action !== 'none') console.log(recoveryPlan.reason);
 */
export async function projectDurableSession(
  store: DurableEventStore,
  sessionId: SessionId,
  options: ProjectDurableSessionOptions = {},
): Promise<ProjectedDurableSession> {
  const limit = options.pageSize ?? DEFAULT_READ_LIMIT;
  const signal = options.signal;
  if (options.checkpoints !== false) {
    const { loaded, outcome } = await loadCheckpoint(
      store,
      sessionId,
      (after, pageLimit) => store.read(sessionId, { after, limit: pageLimit, signal }),
      signal,
    );
    if (loaded === null) return foldFrom(store, sessionId, new DurableSessionProjector({ sessionId }), limit, signal, outcome);
    try {
      return await foldFrom(store, sessionId, loaded.projector, limit, signal, outcome);
    } catch (error) {
      if (!isCheckpointInconclusive(error)) throw error;
      const rebuilt: DurableCheckpointOutcome = { status: 'rebuilt', reason: error.message };
      return foldFrom(store, sessionId, new DurableSessionProjector({ sessionId }), limit, signal, rebuilt);
    }
  }
  return foldFrom(store, sessionId, new DurableSessionProjector({ sessionId }), limit, signal, { status: 'none' });
}

async function foldFrom(
  store: DurableEventStore,
  sessionId: SessionId,
  projector: DurableSessionProjector,
  limit: number,
  signal: AbortSignal | undefined,
  checkpoint: DurableCheckpointOutcome,
): Promise<ProjectedDurableSession> {
  let after: EventSequence | undefined = projector.headSequence ?? undefined;
  for (;;) {
    throwIfAborted(signal);
    const page = await store.read(sessionId, { after, limit, signal });
    throwIfAborted(signal);
    projector.apply(page.events);
    if (!page.hasMore) {
      if (page.headSequence !== null && page.headSequence !== projector.headSequence) {
        throw brokenPage(`last page ends at ${String(projector.headSequence)} but the head is ${page.headSequence}`);
      }
      break;
    }
    if (page.events.length === 0 || projector.headSequence === null) {
      throw brokenPage('a page with hasMore returned no events');
    }
    after = projector.headSequence;
  }
  return {
    projection: projector.snapshot(),
    recoveryPlan: projector.recoveryPlan(),
    headSequence: projector.headSequence,
    projector,
    checkpoint,
  };
}
