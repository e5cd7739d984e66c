/**
 * Reading the latest projection checkpoint and deciding whether it may be trusted.
 *
 * A checkpoint is used only when every check passes, otherwise it is discarded and the caller
 * folds the log from the first event:
 * 1. the bytes decode (magic, checksum, layout, state shape): else *corrupt*;
 * 2. the projector version and the session ID are this projector's: else *stale* / *foreign*;
 * 3. the log holds an event at the checkpoint's sequence (else *ahead of the head*, e.g. a log
 *    restored from an older backup) whose event ID and canonical bytes hash to the checkpoint's
 *    anchor (else *replaced log*).
 * The events after the checkpoint are then folded by the ordinary fail-closed projector, with the
 * checkpoint's key filter standing for the IDs used before it (see `key-filter.ts`).
 */
import type { EventSequence, SessionId } from '../../protocol/ids.js';
import type { DurableReadResult } from '../store.js';
import { CommandIndex } from '../journal/command-index.js';
import { PersistentKeySet } from '../projector/persistent-key-set.js';
import { DURABLE_PROJECTOR_VERSION, DurableSessionProjector } from '../projector/projector.js';
import { anchorOf, decodeCheckpoint, type DecodedCheckpoint } from './codec.js';
import { isCheckpointStore } from './contract.js';

/** What happened to the checkpoint when a journal or projector opened. */
export type DurableCheckpointOutcome =
  | { readonly status: 'none' }
  | { readonly status: 'used'; readonly sequence: EventSequence }
  | { readonly status: 'discarded'; readonly reason: string }
  | { readonly status: 'rebuilt'; readonly reason: string };

/** A checkpoint that passed every check, ready to continue folding after `decoded.sequence`. */
export interface LoadedCheckpoint {
  readonly decoded: DecodedCheckpoint;
  readonly projector: DurableSessionProjector;
  readonly index: CommandIndex;
  /** The record's bytes (a writer may extend them; see `codec.ts`). */
  readonly data: Uint8Array;
}

/** Reads one page; the loader reads only the event at the checkpoint's sequence. */
export type CheckpointPageReader = (after: EventSequence | undefined, limit: number) => Promise<DurableReadResult>;

/**
 * The latest usable checkpoint of `sessionId`, or why there is none. Store failures while reading
 * the checkpoint itself count as "none" (the log remains the source of truth); failures reading
 * the log propagate.
 */
export async function loadCheckpoint(
  store: unknown,
  sessionId: SessionId,
  readPage: CheckpointPageReader,
  signal: AbortSignal | undefined,
): Promise<{ loaded: LoadedCheckpoint | null; outcome: DurableCheckpointOutcome }> {
  if (!isCheckpointStore(store)) return { loaded: null, outcome: { status: 'none' } };
  let record;
  try {
    record = await store.readCheckpoint(sessionId, { signal });
  } catch (error) {
    signal?.throwIfAborted();
    return { loaded: null, outcome: { status: 'discarded', reason: `reading it failed: ${String(error)}` } };
  }
  if (record === null) return { loaded: null, outcome: { status: 'none' } };
  const decoded = decodeCheckpoint(record);
  const discard = (reason: string) => ({ loaded: null, outcome: { status: 'discarded', reason } as const });
  if (typeof decoded === 'string') return discard(decoded);
  if (decoded.projectorVersion !== DURABLE_PROJECTOR_VERSION) {
    return discard(`stale: projector version ${decoded.projectorVersion}, this is ${DURABLE_PROJECTOR_VERSION}`);
  }
  if (decoded.sessionId !== sessionId) return discard(`foreign: written for session ${decoded.sessionId}`);
  const sequence = decoded.sequence;
  const page = await readPage(sequence > 1 ? ((sequence - 1) as EventSequence) : undefined, 1).catch((error: unknown) => {
    // A read "after" beyond the head is refused by some stores: that is a checkpoint ahead of the log.
    if (typeof error === 'object' && error !== null && (error as { code?: unknown }).code === 'DURABLE_EVENT_INVALID_CURSOR') {
      return null;
    }
    throw error;
  });
  const event = page?.events[0];
  if (event === undefined || event.sequence !== sequence) {
    return discard(`ahead of the head: the log has no event at sequence ${sequence}`);
  }
  if (event.eventId !== decoded.eventId || anchorOf(event) !== decoded.anchor || event.sessionId !== sessionId) {
    return discard(`replaced log: the event at sequence ${sequence} is not the one the checkpoint covers`);
  }
  const ids = PersistentKeySet.restored(decoded.keys);
  const projector = DurableSessionProjector.fromCheckpointState({ sessionId }, decoded.state, ids);
  return {
    loaded: { decoded, projector, index: CommandIndex.fromCheckpoint(decoded.commands), data: record.data },
    outcome: { status: 'used', sequence },
  };
}
