/**
 * The state a committed command was decided on.
 *
 * A recovery command is derived from the projection its caller observed, and it changes that
 * projection (the tool it settles is no longer open, the Turn it rolls over is gone). A retry of
 * the same command therefore cannot be rebuilt from the current state. Instead:
 * 1. read the log from the start, folding events into a fresh projector, until the first event
 *    that carries the command's ID;
 * 2. the projection just before it is the state the command was decided on, because every
 *    recovery command pins the head it observed;
 * 3. the coordinator rebuilds the command against that state and hands it to the journal, which
 *    compares it with the stored copy: identical -> reconciled, different -> command conflict.
 * This runs only when a call's preconditions fail against the current state, so an ordinary
 * call never pays for the scan.
 */
import { withDeadline } from '../abort.js';
import { DurableSessionProjector } from '../projector/projector.js';
import type { DurableEventStore } from '../store.js';
import { DurableEventStoreError } from '../../protocol/errors.js';
import type { CommandId, EventSequence, SessionId } from '../../protocol/ids.js';
import type { DurableRecoveryView } from './coordinator-types.js';

/** Settings of a baseline scan. */
interface BaselineScanOptions {
  pageSize: number;
  storeTimeoutMs: number;
  signal: AbortSignal | undefined;
}

/**
 * The view just before the first event of `commandId`, or `null` when the log does not hold it.
 * Each read is bounded by `storeTimeoutMs`; a log that breaks an invariant fails as it does for
 * the journal (`DurableEventProjectionError`).
 */
export async function findCommandBaseline(
  store: DurableEventStore,
  sessionId: SessionId,
  commandId: CommandId,
  options: BaselineScanOptions,
): Promise<DurableRecoveryView | null> {
  const projector = new DurableSessionProjector({ sessionId });
  let after: EventSequence | undefined;
  for (;;) {
    const page = await withDeadline(
      options.storeTimeoutMs,
      options.signal,
      (signal) => store.read(sessionId, { after, limit: options.pageSize, signal }),
      () =>
        new DurableEventStoreError(
          'DURABLE_EVENT_IO_TIMEOUT',
          `recovery coordinator read exceeded its deadline of ${options.storeTimeoutMs} ms`,
          { details: { timeoutMs: options.storeTimeoutMs, sessionId } },
        ),
    );
    const index = page.events.findIndex((event) => event.commandId === commandId);
    projector.apply(index === -1 ? page.events : page.events.slice(0, index));
    if (index !== -1) {
      return { projection: projector.snapshot(), plan: projector.recoveryPlan(), head: projector.headSequence };
    }
    if (!page.hasMore || page.events.length === 0) return null;
    after = projector.headSequence ?? undefined;
  }
}
