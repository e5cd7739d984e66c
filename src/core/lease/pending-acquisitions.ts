/**
 * Memory of uncertain lease acquisitions, per (store object, session, owner).
 *
 * An acquisition that times out, is cancelled, or fails with an I/O error may still have been
 * granted (or may be granted later by a store that ignored its signal). Retrying it with a new
 * `leaseId` would then conflict with our own lease until it expires. So the attempt's `leaseId`
 * is remembered until the uncertainty has certainly passed (the store deadline plus one TTL from
 * when it was sent): a retry in this process reuses it and the store reconciles the same
 * acquisition. A successful acquisition forgets it, so a second handle never shares a live
 * lease's identity. A definitive refusal (conflict, invalid) keeps an earlier uncertain entry,
 * because that earlier attempt may still land.
 */
import type { SessionId, WorkerId } from '../../protocol/ids.js';

interface PendingAcquisition {
  leaseId: string;
  /** Monotonic time (ms) after which a grant of that attempt has certainly expired. */
  uncertainUntil: number;
}

const byStore = new WeakMap<object, Map<string, PendingAcquisition>>();

function keyOf(sessionId: SessionId, ownerId: WorkerId): string {
  return `${sessionId}\u0000${ownerId}`;
}

/** The remembered `leaseId` of an uncertain acquisition, if its window is still open at `nowMs`. */
export function pendingLeaseId(store: object, sessionId: SessionId, ownerId: WorkerId, nowMs: number): string | undefined {
  const entries = byStore.get(store);
  const key = keyOf(sessionId, ownerId);
  const entry = entries?.get(key);
  if (entry === undefined) return undefined;
  if (entry.uncertainUntil <= nowMs) {
    entries?.delete(key);
    return undefined;
  }
  return entry.leaseId;
}

/** Remembers `leaseId` as uncertain until `uncertainUntil` (monotonic ms); never shortens a window. */
export function rememberPendingLease(
  store: object,
  sessionId: SessionId,
  ownerId: WorkerId,
  leaseId: string,
  uncertainUntil: number,
): void {
  let entries = byStore.get(store);
  if (entries === undefined) {
    entries = new Map();
    byStore.set(store, entries);
  }
  const key = keyOf(sessionId, ownerId);
  const previous = entries.get(key);
  const until = previous?.leaseId === leaseId ? Math.max(previous.uncertainUntil, uncertainUntil) : uncertainUntil;
  entries.set(key, { leaseId, uncertainUntil: until });
}

/** Forgets the uncertain acquisition of (store, session, owner): it was resolved. */
export function forgetPendingLease(store: object, sessionId: SessionId, ownerId: WorkerId): void {
  byStore.get(store)?.delete(keyOf(sessionId, ownerId));
}
