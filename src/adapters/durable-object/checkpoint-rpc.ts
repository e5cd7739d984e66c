/**
 * The SessionObject's projection checkpoint RPC (see `docs/checkpoints.md`), shared by the
 * object and its clients. Bytes cross RPC as `Uint8Array` (structured clone).
 */
import type { DurableCheckpointRecord } from '../../core/checkpoint/contract.js';
import type { RpcResult } from './rpc.js';

/** Checkpoint methods of the per-session Durable Object. */
export interface SessionObjectCheckpointRpc {
  /** The session's latest projection checkpoint, or `null`. */
  readCheckpoint(sessionId: string): Promise<RpcResult<DurableCheckpointRecord | null>>;
  /** Replaces the session's projection checkpoint (the object also writes them itself). */
  writeCheckpoint(sessionId: string, record: DurableCheckpointRecord): Promise<RpcResult<null>>;
}
