/**
 * The SessionObject's projection checkpoint RPC (see `docs/checkpoints.md`), shared by the
 * object and its clients. Bytes cross RPC as `Uint8Array` (structured clone). A record may be
 * larger than one RPC value (32 MiB), so reads come in slices (`readCheckpointSlices` joins them),
 * and so do whole writes of such a record (`writeCheckpointSlice`; `writeWholeCheckpoint` in core).
 */
import type { CheckpointWriteSlice, DurableCheckpointExtension, DurableCheckpointRecord, DurableCheckpointSlice } from '../../core/checkpoint/contract.js';
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
   * `src/edge/checkpoint-uploads.ts`): `true` once the last slice is in and the record is written.
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
