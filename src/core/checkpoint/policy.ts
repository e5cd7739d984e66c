/**
 * When the journal writes a projection checkpoint.
 */
import { DurableSessionJournalError } from '../../protocol/errors.js';

/** Checkpoint settings of a journal (`checkpoints` option); `false` turns them off entirely. */
export interface DurableCheckpointPolicy {
  /** Write after this many events since the last checkpoint (default 4096). */
  everyEvents?: number;
  /** ...or after this many bytes of canonical event JSON, whichever comes first (default 8 MiB). */
  everyBytes?: number;
  /**
   * ...but, on a store that rewrites the whole record on every write (no `checkpointExtension`:
   * the HTTP and RPC clients), never more often than once per `head / spacingDivisor` events
   * (default 64): such a write costs O(record) and a record grows with the session, so spacing
   * them in proportion keeps the amortised cost per appended event constant. A store that keeps
   * extensions appends O(new IDs + header) per write and compacts only when a third of the record
   * is dead, so it is not spaced: the events an open folds after the checkpoint stay bounded by
   * `everyEvents`/`everyBytes` however long the session.
   */
  spacingDivisor?: number;
  /** Command ranges kept exactly in a checkpoint (default 1024); older ones are found by a full fold. */
  keepCommands?: number;
  /** Read the latest checkpoint when opening (default true). */
  read?: boolean;
  /** Write checkpoints (default true when the store supports them). */
  write?: boolean;
  /** Called with every checkpoint write failure (checkpoints are derived data: nothing else happens). */
  onWriteError?: (error: unknown) => void;
  /** Called after every successful checkpoint write with its size and what it cost (metrics). */
  onWrite?: (write: DurableCheckpointWriteInfo) => void;
}

/**
 * One checkpoint write, as reported to `onWrite`. Times are milliseconds of the host's monotonic
 * clock (`performance.now`); a Cloudflare Worker's clock does not advance during synchronous work,
 * so there the synchronous parts read 0. A live checkpoint (a store that declares
 * `liveCheckpoints`: the memory store) is not encoded: `bytes` and `encodeMs` are 0 and `keys`
 * counts the IDs its set holds.
 */
export interface DurableCheckpointWriteInfo {
  /** Sequence the checkpoint stands at. */
  readonly sequence: number;
  /** Size of the record's bytes. */
  readonly bytes: number;
  /** Key hashes in its filter... */
  readonly keys: number;
  /** ...of which this write added (IDs used since the previous checkpoint this journal wrote or loaded). */
  readonly addedKeys: number;
  /** Synchronous work on the commit path when the write was due (draining new IDs, command ranges, anchor). */
  readonly captureMs: number;
  /** Hashing the new IDs, merging them into the filter and encoding, in the later task. */
  readonly encodeMs: number;
  /** From calling the store's `writeCheckpoint` until it settled (includes waiting for I/O). */
  readonly storeMs: number;
}

/** Resolved {@link DurableCheckpointPolicy}. */
export interface CheckpointSettings {
  everyEvents: number;
  everyBytes: number;
  spacingDivisor: number;
  keepCommands: number;
  read: boolean;
  write: boolean;
  onWriteError: ((error: unknown) => void) | undefined;
  onWrite: ((write: DurableCheckpointWriteInfo) => void) | undefined;
}

export const DEFAULT_CHECKPOINT_EVERY_EVENTS = 4096;
const DEFAULT_CHECKPOINT_EVERY_BYTES = 8 * 1024 * 1024;
export const DEFAULT_CHECKPOINT_SPACING_DIVISOR = 64;
const DEFAULT_CHECKPOINT_KEEP_COMMANDS = 1024;

function positive(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || value < 1) {
    throw new DurableSessionJournalError(`checkpoints.${name} must be a positive integer`);
  }
  return value;
}

/** Validates a policy (`false`: neither read nor write). */
export function resolveCheckpointPolicy(policy: DurableCheckpointPolicy | false | undefined): CheckpointSettings {
  const p = policy === false ? { read: false, write: false } : (policy ?? {});
  return {
    everyEvents: positive('everyEvents', p.everyEvents, DEFAULT_CHECKPOINT_EVERY_EVENTS),
    everyBytes: positive('everyBytes', p.everyBytes, DEFAULT_CHECKPOINT_EVERY_BYTES),
    spacingDivisor: positive('spacingDivisor', p.spacingDivisor, DEFAULT_CHECKPOINT_SPACING_DIVISOR),
    keepCommands: positive('keepCommands', p.keepCommands, DEFAULT_CHECKPOINT_KEEP_COMMANDS),
    read: p.read ?? true,
    write: p.write ?? true,
    onWriteError: p.onWriteError,
    onWrite: p.onWrite,
  };
}

/**
 * True when a checkpoint is due after `events` / `bytes` since the last one at `head`; `spaced`
 * when the store rewrites whole records (see {@link DurableCheckpointPolicy.spacingDivisor}).
 */
export function checkpointDue(settings: CheckpointSettings, head: number, events: number, bytes: number, spaced: boolean): boolean {
  if (spaced && events < Math.ceil(head / settings.spacingDivisor)) return false;
  return events >= settings.everyEvents || bytes >= settings.everyBytes;
}
