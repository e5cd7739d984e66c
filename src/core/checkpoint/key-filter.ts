/**
 * The used-ID memory a checkpoint carries: a sorted array of 53-bit key hashes.
 *
 * A full fold remembers every ID string a session ever used (reuse and causation checks). Saving
 * and reloading millions of strings would cost as much as the fold it replaces, so a checkpoint
 * keeps 8 bytes per key instead, in a sorted `Float64Array` (53-bit hashes are exact doubles;
 * the native typed-array sort and a binary search do the rest).
 *
 * The filter answers "certainly never used" or "maybe used". "Maybe" is never taken as the
 * answer: the projector throws {@link DurableCheckpointInconclusiveError} and its owner folds the
 * log from the start, which gives the exact answer a full fold gives. A false "maybe" for a fresh
 * key has probability about keys / 2^53 per lookup (2e-10 at two million keys), so in practice
 * the rebuild happens only for a log that really reuses an old ID, i.e. an invalid one.
 */
import { hashString } from './hash.js';

/** Thrown by a checkpoint-restored projector when only the full log can answer. */
export class DurableCheckpointInconclusiveError extends Error {
  override readonly name = 'DurableCheckpointInconclusiveError';
  constructor(readonly key: string) {
    super(`the checkpoint cannot tell whether ${key} was used before it; fold the log from the start`);
  }
}

/** True when `error` is a {@link DurableCheckpointInconclusiveError}. */
export function isCheckpointInconclusive(error: unknown): error is DurableCheckpointInconclusiveError {
  return error instanceof DurableCheckpointInconclusiveError;
}

/** An immutable sorted set of 53-bit key hashes. */
export class HashedKeyFilter {
  private constructor(readonly hashes: Float64Array) {}

  /** The empty filter. */
  static readonly EMPTY = new HashedKeyFilter(new Float64Array(0));

  /** A filter over already sorted hashes (decoded from a checkpoint; checked sorted). */
  static fromSorted(hashes: Float64Array): HashedKeyFilter | null {
    for (let index = 1; index < hashes.length; index++) {
      // SAFETY: indices are within bounds.
      if ((hashes[index - 1] as number) > (hashes[index] as number)) return null;
    }
    return new HashedKeyFilter(hashes);
  }

  /** Number of hashes. */
  get size(): number {
    return this.hashes.length;
  }

  /** True when `key` may have been used (its hash is present). */
  mightContain(key: string): boolean {
    const target = hashString(key);
    const hashes = this.hashes;
    let low = 0;
    let high = hashes.length - 1;
    while (low <= high) {
      const middle = (low + high) >>> 1;
      // SAFETY: middle is within bounds.
      const value = hashes[middle] as number;
      if (value === target) return true;
      if (value < target) low = middle + 1;
      else high = middle - 1;
    }
    return false;
  }

  /** A new filter holding this one's hashes plus those of `keys`. */
  withKeys(keys: Iterable<string>): HashedKeyFilter {
    const added: number[] = [];
    for (const key of keys) added.push(hashString(key));
    if (added.length === 0) return this;
    const fresh = Float64Array.from(added).sort();
    const old = this.hashes;
    const merged = new Float64Array(old.length + fresh.length);
    let i = 0;
    let j = 0;
    let k = 0;
    while (i < old.length && j < fresh.length) {
      // SAFETY: i and j are within bounds.
      const a = old[i] as number;
      const b = fresh[j] as number;
      if (a <= b) {
        merged[k++] = a;
        i++;
      } else {
        merged[k++] = b;
        j++;
      }
    }
    while (i < old.length) merged[k++] = old[i++] as number;
    while (j < fresh.length) merged[k++] = fresh[j++] as number;
    return new HashedKeyFilter(merged);
  }
}
