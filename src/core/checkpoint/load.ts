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
 *
 * A store that keeps live checkpoints (`live.ts`) is asked for a live one first; it passes the same
 * checks 2 and 3 (it cannot be corrupt: it never left the process), and then every ID used before
 * it is known exactly. Without one, the store's encoded record is read as on any other store.
 */
import type { EventId, EventSequence, SessionId } from '../../protocol/ids.js';
import type { DurableReadResult } from '../store.js';
import { CommandIndex } from '../command-index.js';
import { PersistentKeySet } from '../projector/persistent-key-set.js';
import { DURABLE_PROJECTOR_VERSION, DurableSessionProjector } from '../projector/projector.js';
import { anchorOf, decodeCheckpoint, type CheckpointExtent } from './codec.js';
import { isCheckpointStore, type DurableCheckpointRecord } from './contract.js';
import type { RunningHashState } from '../hash.js';
import type { HashedKeyFilter } from '../projector/key-filter.js';
import { keepsLiveCheckpoints, type DurableLiveCheckpoint } from './live.js';

/** What happened to the checkpoint when a journal or projector opened. */
export type DurableCheckpointOutcome =
  | { readonly status: 'none' }
  | { readonly status: 'used'; readonly sequence: EventSequence }
  | { readonly status: 'discarded'; readonly reason: string }
  | { readonly status: 'rebuilt'; readonly reason: string };

/** A checkpoint that passed every check, ready to continue folding after `sequence`. */
export interface LoadedCheckpoint {
  readonly sequence: EventSequence;
  readonly eventId: EventId;
  readonly anchor: number;
  readonly digest: RunningHashState;
  readonly projector: DurableSessionProjector;
  readonly index: CommandIndex;
  /**
   * The encoded record it came from (a writer may extend its bytes; see `codec.ts`), or `null`
   * for a live checkpoint.
   */
  readonly record: { readonly data: Uint8Array; readonly keys: HashedKeyFilter; readonly extent: CheckpointExtent } | null;
}

/** What checks 2 and 3 look at, in a record or a live checkpoint. */
type CheckedFields = Pick<DurableLiveCheckpoint, 'sessionId' | 'sequence' | 'eventId' | 'projectorVersion' | 'anchor'>;

/** Reads one page; the loader reads only the event at the checkpoint's sequence. */
type CheckpointPageReader = (after: EventSequence | undefined, limit: number) => Promise<DurableReadResult>;

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
  const discard = (reason: string) => ({ loaded: null, outcome: { status: 'discarded', reason } as const });
  let stored;
  try {
    stored = await readStored(store, sessionId, signal);
  } catch (error) {
    signal?.throwIfAborted();
    return discard(`reading it failed: ${String(error)}`);
  }
  if (stored === null) return { loaded: null, outcome: { status: 'none' } };
  if (!('data' in stored)) {
    const live = stored;
    const refused = await refusal(live, sessionId, readPage);
    if (refused !== null) return discard(refused);
    // The stored set is never added to: this journal adds to a fork of it.
    const projector = DurableSessionProjector.fromCheckpointState({ sessionId }, live.state, live.ids.fork());
    return {
      loaded: { ...positionOf(live), projector, index: CommandIndex.fromCheckpoint(live.commands), record: null },
      outcome: { status: 'used', sequence: live.sequence },
    };
  }
  const record = stored;
  const decoded = decodeCheckpoint(record);
  if (typeof decoded === 'string') return discard(decoded);
  const refused = await refusal(decoded, sessionId, readPage);
  if (refused !== null) return discard(refused);
  const ids = PersistentKeySet.restored(decoded.keys);
  const projector = DurableSessionProjector.fromCheckpointState({ sessionId }, decoded.state, ids);
  return {
    loaded: {
      ...positionOf(decoded),
      projector,
      index: CommandIndex.fromCheckpoint(decoded.commands),
      record: { data: record.data, keys: decoded.keys, extent: decoded.extent },
    },
    outcome: { status: 'used', sequence: decoded.sequence },
  };
}

/** The stored checkpoint: a live one first (on a store that keeps them), else the record, else `null`. */
async function readStored(
  store: unknown,
  sessionId: SessionId,
  signal: AbortSignal | undefined,
): Promise<DurableLiveCheckpoint | DurableCheckpointRecord | null> {
  if (keepsLiveCheckpoints(store)) {
    const live = await store.readLiveCheckpoint(sessionId, { signal });
    if (live !== null) return live;
  }
  return isCheckpointStore(store) ? store.readCheckpoint(sessionId, { signal }) : null;
}

/** Where a checkpoint stands and the hashes a writer continues from. */
function positionOf(checkpoint: Pick<LoadedCheckpoint, 'sequence' | 'eventId' | 'anchor' | 'digest'>) {
  return { sequence: checkpoint.sequence, eventId: checkpoint.eventId, anchor: checkpoint.anchor, digest: checkpoint.digest };
}

/** Why checks 2 and 3 refuse `checkpoint`, or `null` when it may be used. */
async function refusal(checkpoint: CheckedFields, sessionId: SessionId, readPage: CheckpointPageReader): Promise<string | null> {
  if (checkpoint.projectorVersion !== DURABLE_PROJECTOR_VERSION) {
    return `stale: projector version ${checkpoint.projectorVersion}, this is ${DURABLE_PROJECTOR_VERSION}`;
  }
  if (checkpoint.sessionId !== sessionId) return `foreign: written for session ${checkpoint.sessionId}`;
  const sequence = checkpoint.sequence;
  const page = await readPage(sequence > 1 ? ((sequence - 1) as EventSequence) : undefined, 1).catch((error: unknown) => {
    // A read "after" beyond the head is refused by some stores: that is a checkpoint ahead of the log.
    if (typeof error === 'object' && error !== null && (error as { code?: unknown }).code === 'DURABLE_EVENT_INVALID_CURSOR') {
      return null;
    }
    throw error;
  });
  const event = page?.events[0];
  if (event === undefined || event.sequence !== sequence) return `ahead of the head: the log has no event at sequence ${sequence}`;
  if (event.eventId !== checkpoint.eventId || anchorOf(event) !== checkpoint.anchor || event.sessionId !== sessionId) {
    return `replaced log: the event at sequence ${sequence} is not the one the checkpoint covers`;
  }
  return null;
}
