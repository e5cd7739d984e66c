/**
 * Per-event content digests: the optional store capability that lets `verify` see an edit of a
 * stored event after the latest checkpoint (see `docs/checkpoints.md`).
 *
 * A store with a row per event keeps, next to each event and written in the same transaction,
 * {@link eventDigest} of the envelope it appended: the digest step of checkpoint format 6
 * (`chainDigest`, the event's whole canonical content) started from the initial state, finished to
 * a 53-bit integer. `verify` recomputes it from the event as the store serves it and reports any
 * row whose stored digest differs. The digest is not cryptographic: it catches a changed byte, not
 * a writer who recomputes it (whoever can rewrite a row can rewrite its digest).
 */
import type { DurableEventEnvelope } from '../../protocol/events.js';
import type { SessionId } from '../../protocol/ids.js';
import type { DurableStoreCallOptions } from '../store.js';
import { chainDigest } from './codec.js';
import { finishHash, INITIAL_HASH_STATE } from '../hash.js';

/** The content digest of one event (a safe integer below 2^53); equal for equal canonical content. */
export function eventDigest(event: DurableEventEnvelope): number {
  return finishHash(chainDigest(INITIAL_HASH_STATE, event));
}

/** The stored digest of one event row: `null` for a row written before the store kept digests. */
export interface DurableEventDigestRow {
  sequence: number;
  digest: number | null;
}

/** Options of {@link DurableEventDigestStore.readEventDigests}. */
export interface DurableEventDigestReadOptions extends DurableStoreCallOptions {
  /** Rows after this sequence (default 0: from the first). */
  after?: number;
  /** At most this many rows, in sequence order. */
  limit: number;
}

/**
 * The optional capability: the stored per-event digests of a session, in sequence order, one entry
 * per stored row (whatever the head says: a row beyond it is still listed).
 */
export interface DurableEventDigestStore {
  readEventDigests(sessionId: SessionId, options: DurableEventDigestReadOptions): Promise<DurableEventDigestRow[]>;
}

/** True when `store` keeps per-event digests. */
export function isEventDigestStore(store: unknown): store is DurableEventDigestStore {
  return typeof store === 'object' && store !== null && typeof (store as Partial<DurableEventDigestStore>).readEventDigests === 'function';
}
