/**
 * The SessionObject's projection checkpoint RPC (see `docs/checkpoints.md`), shared by the
 * object and its clients. Bytes cross RPC as `Uint8Array` (structured clone). A record may be
 * larger than one RPC value (32 MiB), so reads come in slices (`readCheckpointSlices` joins them).
 */
import type { DurableCheckpointRecord, DurableCheckpointSlice } from '../../core/checkpoint/contract.js';
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
}
