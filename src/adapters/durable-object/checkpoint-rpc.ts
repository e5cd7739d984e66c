/**
 * The SessionObject's projection checkpoint RPC (see `docs/checkpoints.md`), shared by the
 * object and its clients. Bytes cross RPC as `Uint8Array` (structured clone). A record may be
 * larger than one RPC value (32 MiB), so reads come in slices (`readCheckpointSlices` joins them),
 * and so do whole writes of such a record (`writeCheckpointSlice`).
 */
import { CHECKPOINT_SLICE_BYTES, type DurableCheckpointExtension, type DurableCheckpointRecord, type DurableCheckpointSlice } from '../../core/checkpoint/contract.js';
import { DurableEventStoreError } from '../../protocol/errors.js';
import type { RpcResult } from './rpc.js';

/** Checkpoint methods of the per-session Durable Object. */
export interface SessionObjectCheckpointRpc {
  /**
   * The slice at `offset` (default 0) of the session's latest projection checkpoint, at most
   * `length` bytes (default and maximum `CHECKPOINT_SLICE_BYTES`), or `null` when none is stored.
   */
  readCheckpoint(sessionId: string, offset?: number, length?: number): Promise<RpcResult<DurableCheckpointSlice | null>>;
  /**
   * Replaces the session's projection checkpoint (the object also writes them itself). The record
   * crosses in one RPC value, so a client can write at most 32 MiB; the object's own writes have
   * no such cap.
   */
  writeCheckpoint(sessionId: string, record: DurableCheckpointRecord): Promise<RpcResult<null>>;
  /**
   * One slice of a whole record larger than one RPC value, in order from offset 0 (see
   * `object/checkpoint-uploads.ts`): `true` once the last slice is in and the record is written.
   */
  writeCheckpointSlice(sessionId: string, slice: CheckpointWriteSlice): Promise<RpcResult<boolean>>;
  /**
   * Appends the new bytes of a record that extends the stored one (`DurableCheckpointExtension`:
   * only its tail crosses, so it is not bounded by one RPC value) when the stored record is exactly
   * the prefix it builds on: `true`; otherwise nothing is written, `false`, and the client sends
   * the whole record with {@link writeCheckpoint}.
   */
  extendCheckpoint(sessionId: string, extension: DurableCheckpointExtension): Promise<RpcResult<boolean>>;
}

/** One slice of a whole record written in several RPC calls. */
export interface CheckpointWriteSlice {
  /** Chosen by the client for one record (1 to 128 characters). */
  readonly uploadId: string;
  readonly sequence: number;
  readonly eventId: string;
  /** Size of the whole record (at most `MAX_CHECKPOINT_BYTES`). */
  readonly totalBytes: number;
  /** Where `data` starts in the record. */
  readonly offset: number;
  /** At most `CHECKPOINT_SLICE_BYTES`, at least one byte. */
  readonly data: Uint8Array;
}

/**
 * The slices of a whole record for `writeCheckpointSlice`, at most `sliceBytes` each: copies,
 * since a view would carry its whole buffer across RPC (structured clone copies the buffer).
 */
export function checkpointWriteSlices(record: DurableCheckpointRecord, uploadId: string, sliceBytes = CHECKPOINT_SLICE_BYTES): CheckpointWriteSlice[] {
  const slices: CheckpointWriteSlice[] = [];
  const total = record.data.length;
  for (let offset = 0; offset < total; offset += sliceBytes) {
    slices.push({
      uploadId,
      sequence: record.sequence,
      eventId: record.eventId,
      totalBytes: total,
      offset,
      data: record.data.slice(offset, Math.min(total, offset + sliceBytes)),
    });
  }
  return slices;
}

/**
 * Writes a whole record through `writeCheckpoint` (`whole`) when it fits one RPC value with room
 * to spare (at most `CHECKPOINT_SLICE_BYTES`), else slice by slice through `writeCheckpointSlice`
 * (`slice`, which resolves `true` once the object wrote the record). Shared by the RPC client and
 * the Worker's HTTP route.
 */
export async function writeWholeCheckpoint(
  record: DurableCheckpointRecord,
  whole: (record: DurableCheckpointRecord) => Promise<unknown>,
  slice: (slice: CheckpointWriteSlice) => Promise<boolean>,
): Promise<void> {
  if (record.data.length <= CHECKPOINT_SLICE_BYTES) {
    await whole(record);
    return;
  }
  const slices = checkpointWriteSlices(record, crypto.randomUUID());
  for (const [index, part] of slices.entries()) {
    const written = await slice(part);
    if (written !== (index === slices.length - 1)) {
      throw new DurableEventStoreError('DURABLE_EVENT_UNAVAILABLE', 'the session object lost the checkpoint upload; the next write starts again');
    }
  }
}
