/**
 * projectDurableSession: the one-shot convenience over {@link DurableSessionProjector}.
 *
 * Reads the session's log from the start with `store.read`, one page at a time (so memory stays
 * bounded by the page size plus the projection), applies each page, and stops at the first page
 * without `hasMore`. A store page that claims more events but returns none, or whose final head
 * disagrees with the events returned, is a broken contract and fails closed.
 */
import { DurableEventProjectionError } from '../../protocol/errors.js';
import type { EventSequence, SessionId } from '../../protocol/ids.js';
import { DEFAULT_READ_LIMIT } from '../../protocol/limits.js';
import { throwIfAborted } from '../abort.js';
import type { DurableEventStore } from '../store.js';
import { DurableSessionProjector } from './projector.js';
import type { DurableRecoveryPlan, DurableSessionProjection } from './projection-types.js';

/** Options of {@link projectDurableSession}. */
export interface ProjectDurableSessionOptions {
  /** Events per `store.read` (1..1000, default 100). */
  pageSize?: number | undefined;
  /** Aborts between and during reads. */
  signal?: AbortSignal | undefined;
}

/** Result of {@link projectDurableSession}. */
export interface ProjectedDurableSession {
  projection: DurableSessionProjection;
  recoveryPlan: DurableRecoveryPlan;
  /** Head the projection reflects (`null` for an empty log). */
  headSequence: EventSequence | null;
  /** The projector positioned at `headSequence`, to keep applying later pages. */
  projector: DurableSessionProjector;
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
  const projector = new DurableSessionProjector({ sessionId });
  let after: EventSequence | undefined;
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
  };
}
