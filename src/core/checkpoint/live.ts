/**
 * Live checkpoints: a projection checkpoint kept as the journal's own immutable objects by a store
 * that lives in the journal's process (the memory store), instead of as encoded bytes.
 *
 * Why: a checkpoint is derived data kept in the log's durability domain. For a store in the
 * process's heap that domain is the heap itself, so encoding the projection into bytes only to keep
 * them next to the objects they came from is pure cost on the append path (hashing every new ID,
 * merging the key filter, serialising the state; the share of the memory store's throughput is in
 * docs/performance-history.md). The fold state and the command ranges are immutable values, and the
 * projector's used-ID set forks in O(log n), so capturing them costs a few references. Opening a
 * journal on the same store then adopts them as they are, with every used ID known exactly (no key
 * filter, so never a fold of the whole log because a filter could not decide).
 *
 * The same checks as for a record decide whether a live checkpoint may be used (projector
 * version, session, an event at its sequence whose ID and canonical bytes match its anchor; see
 * `load.ts`), and it carries the same digest. Whoever asks the store for bytes
 * (`readCheckpoint`: a tool, a test, a copy to another store) gets them encoded on demand by
 * {@link encodeLiveCheckpoint}, in the format of every other store.
 */
import type { SessionId } from '../../protocol/ids.js';
import type { PersistentKeySet } from '../projector/persistent-key-set.js';
import type { DurableStoreCallOptions } from '../store.js';
import { encodeCompacted, type CheckpointContent } from './codec.js';
import type { DurableCheckpointRecord } from './contract.js';
import { sortedHashes } from '../projector/key-filter.js';

/**
 * A checkpoint as the journal's objects (internal to the process that wrote it): the content of a
 * record (position, projector version, anchor, digest, fold state, command ranges) and, instead
 * of a key filter, the used-ID set itself.
 */
export interface DurableLiveCheckpoint extends CheckpointContent {
  /**
   * Every ID used up to `sequence`: a fork nobody adds to (readers fork it again). Keys of its
   * `base` are known by hash only (a journal that opened from an encoded record).
   */
  readonly ids: PersistentKeySet;
}

/**
 * The optional capability of a store in the journal's process: keeping checkpoints live. A journal
 * on such a store writes {@link DurableLiveCheckpoint}s and reads them first when opening; it
 * falls back to the store's encoded record when no live one is held.
 */
export interface DurableLiveCheckpointStore {
  /** True when the store keeps live checkpoints (a store may turn it off by option). */
  readonly liveCheckpoints: boolean;
  /** Replaces the session's checkpoint (live or encoded) by `checkpoint`, kept by reference. */
  writeLiveCheckpoint(sessionId: SessionId, checkpoint: DurableLiveCheckpoint, options?: DurableStoreCallOptions): Promise<void>;
  /** The session's live checkpoint, or `null` (none, or the latest one is an encoded record). */
  readLiveCheckpoint(sessionId: SessionId, options?: DurableStoreCallOptions): Promise<DurableLiveCheckpoint | null>;
}

/** True when `store` keeps live checkpoints. */
export function keepsLiveCheckpoints(store: unknown): store is DurableLiveCheckpointStore {
  return (
    typeof store === 'object' &&
    store !== null &&
    (store as Partial<DurableLiveCheckpointStore>).liveCheckpoints === true &&
    typeof (store as Partial<DurableLiveCheckpointStore>).writeLiveCheckpoint === 'function' &&
    typeof (store as Partial<DurableLiveCheckpointStore>).readLiveCheckpoint === 'function'
  );
}

/**
 * The record of a live checkpoint: one compacted frame whose key filter holds the hashes of its
 * `base` and of every exact ID, exactly what a journal writing bytes at the same sequence holds.
 * O(IDs): hashes and sorts every exact ID.
 */
export function encodeLiveCheckpoint(checkpoint: DurableLiveCheckpoint): DurableCheckpointRecord {
  const { ids, ...content } = checkpoint;
  // sortedHashes of an iterator (not an array) returns an array of its own, not shared scratch.
  const exact = sortedHashes(ids.exactKeys());
  return encodeCompacted(content, [...ids.base.runs, exact], (bytes) => new ArrayBuffer(bytes)).record;
}
