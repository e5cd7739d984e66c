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
 *
 * Every filter also carries `sum`, the order-independent {@link addWords} sum of its 8-byte
 * entries: a merge updates it from the added hashes alone, so the checkpoint's checksum covers the
 * whole filter without walking it on every write (`codec.ts`).
 */
import { addWords, EMPTY_WORD_SUM, hashKey, hashKeyRange, type WordSum } from './hash.js';

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
  private constructor(
    readonly hashes: Float64Array,
    /** {@link addWords} of the bytes of `hashes`. */
    readonly sum: WordSum,
  ) {}

  /** The empty filter. */
  static readonly EMPTY = new HashedKeyFilter(new Float64Array(0), EMPTY_WORD_SUM);

  /**
   * A filter over already sorted hashes (decoded from a checkpoint): `null` unless they are
   * ascending (which also rejects NaN).
   */
  static fromSorted(hashes: Float64Array): HashedKeyFilter | null {
    for (let index = 1; index < hashes.length; index++) {
      // SAFETY: indices are within bounds.
      if (!((hashes[index - 1] as number) <= (hashes[index] as number))) return null;
    }
    if (hashes.length === 1 && Number.isNaN(hashes[0])) return null;
    return new HashedKeyFilter(hashes, addWords(EMPTY_WORD_SUM, wordsOf(hashes)));
  }

  /** Number of hashes. */
  get size(): number {
    return this.hashes.length;
  }

  /** True when `key` may have been used (its hash is present). */
  mightContain(key: string): boolean {
    const target = hashKey(key);
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
    const fresh = sortedHashes(keys);
    if (fresh.length === 0) return this;
    return this.#mergeInto(fresh, new Float64Array(this.hashes.length + fresh.length));
  }

  /**
   * Like {@link withKeys}, but merges straight into storage that `allocate(count)` provides
   * (exactly `count` float64 slots), so an encoder can place the merged filter in its output
   * buffer without a second copy. The returned filter views that storage: keep it read-only.
   */
  withKeysInto(keys: Iterable<string>, allocate: (count: number) => Float64Array): HashedKeyFilter {
    const fresh = sortedHashes(keys);
    return this.#mergeInto(fresh, allocate(this.hashes.length + fresh.length));
  }

  #mergeInto(fresh: Float64Array, merged: Float64Array): HashedKeyFilter {
    const old = this.hashes;
    if (fresh.length === 0) {
      merged.set(old);
      return new HashedKeyFilter(merged, this.sum);
    }
    const sum = addWords(this.sum, wordsOf(fresh));
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
    // The tails are already sorted: copy them natively.
    if (i < old.length) merged.set(old.subarray(i), k);
    else if (j < fresh.length) merged.set(fresh.subarray(j), k);
    return new HashedKeyFilter(merged, sum);
  }
}

/**
 * Scratch space for the sorted hashes of a merge (used synchronously, then dropped): a fresh
 * array per checkpoint cost more in first-touch page faults than hashing did.
 */
let scratch = new Float64Array(0);

/** Keys joined per flat string when hashing a drained array (about 20 KB of text: young generation). */
const JOIN_CHUNK = 512;

/** The hashes of `keys`, sorted (a view of `scratch` when `keys` is an array). */
function sortedHashes(keys: Iterable<string>): Float64Array {
  if (Array.isArray(keys)) {
    // The journal drains an array: fill the scratch array directly, no intermediate list.
    const list = keys as readonly string[];
    if (scratch.length < list.length) scratch = new Float64Array(Math.max(list.length, 2 * scratch.length));
    const hashes = scratch.subarray(0, list.length);
    // The drained IDs are mostly concatenations (`prefix + id`): reading one of those flattens it
    // (a copy per key, scattered in the heap). Joining a few hundred at a time copies them into
    // one flat string natively, and each key is hashed in place there (same hash as `hashKey`).
    for (let first = 0; first < list.length; first += JOIN_CHUNK) {
      const last = Math.min(list.length, first + JOIN_CHUNK);
      const joined = list.slice(first, last).join('');
      let start = 0;
      for (let index = first; index < last; index++) {
        // SAFETY: index < length.
        const end = start + (list[index] as string).length;
        hashes[index] = hashKeyRange(joined, start, end);
        start = end;
      }
    }
    return sortHashes(hashes);
  }
  const added: number[] = [];
  for (const key of keys) added.push(hashKey(key));
  return Float64Array.from(added).sort();
}

/** Below this many hashes the native sort is as fast as the radix sort and needs no scratch. */
const RADIX_MIN = 1024;
/** Radix digits: 11 bits (2,048 buckets), five passes over a 53-bit hash (32 + 21 bits). */
const DIGIT_BITS = 11;
const BUCKETS = 1 << DIGIT_BITS;
const DIGIT_MASK = BUCKETS - 1;
const counts = new Uint32Array(BUCKETS);
/**
 * Scratch of {@link sortHashes} (16 bytes per hash) is kept between writes up to this many hashes (1 MiB):
 * a period's batch fits; the one-off batch of a first checkpoint over a long log (every ID of the
 * session) is sorted in scratch that is dropped right after, so a Durable Object does not hold tens
 * of megabytes for the rest of its life.
 */
export const RADIX_SCRATCH_KEEP = 65_536;
/** Scratch of {@link sortHashes}: the low and high 32 bits of each hash, and the other side of each pass. */
let radixLow = new Uint32Array(0);
let radixHigh = new Uint32Array(0);
let radixLowOut = new Uint32Array(0);
let radixHighOut = new Uint32Array(0);

/**
 * Sorts 53-bit hashes (non-negative integers, exact doubles) in place, ascending: the order of
 * `Float64Array.prototype.sort`. A checkpoint sorts the few thousand IDs of one period; the native
 * comparison sort took about 85 ns per hash there, a least-significant-digit radix sort over the
 * hashes' two 32-bit halves (five passes of 11-bit digits, stable) takes about half of that.
 */
function sortHashes(hashes: Float64Array): Float64Array {
  const n = hashes.length;
  if (n < RADIX_MIN) return hashes.sort();
  if (radixLow.length < n) {
    const size = n > RADIX_SCRATCH_KEEP ? n : Math.min(RADIX_SCRATCH_KEEP, Math.max(n, 2 * radixLow.length));
    radixLow = new Uint32Array(size);
    radixHigh = new Uint32Array(size);
    radixLowOut = new Uint32Array(size);
    radixHighOut = new Uint32Array(size);
  }
  let low = radixLow;
  let high = radixHigh;
  let lowOut = radixLowOut;
  let highOut = radixHighOut;
  for (let index = 0; index < n; index++) {
    // SAFETY: index < n.
    const value = hashes[index] as number;
    const top = Math.floor(value / 4294967296);
    high[index] = top;
    low[index] = value - top * 4294967296;
  }
  // Passes 0-2 sort by the low half (bits 0-10, 11-21, 22-31), passes 3-4 by the high half.
  for (let pass = 0; pass < 5; pass++) {
    const shift = (pass % 3) * DIGIT_BITS;
    const keys = pass < 3 ? low : high;
    counts.fill(0);
    for (let index = 0; index < n; index++) {
      const digit = ((keys[index] as number) >>> shift) & DIGIT_MASK;
      counts[digit] = (counts[digit] as number) + 1;
    }
    let offset = 0;
    for (let digit = 0; digit < BUCKETS; digit++) {
      const count = counts[digit] as number;
      counts[digit] = offset;
      offset += count;
    }
    for (let index = 0; index < n; index++) {
      const digit = ((keys[index] as number) >>> shift) & DIGIT_MASK;
      const target = counts[digit] as number;
      counts[digit] = target + 1;
      lowOut[target] = low[index] as number;
      highOut[target] = high[index] as number;
    }
    [low, lowOut] = [lowOut, low];
    [high, highOut] = [highOut, high];
  }
  for (let index = 0; index < n; index++) hashes[index] = (high[index] as number) * 4294967296 + (low[index] as number);
  if (radixLow.length > RADIX_SCRATCH_KEEP) {
    radixLow = radixHigh = radixLowOut = radixHighOut = new Uint32Array(0);
  }
  return hashes;
}

/** Hashes of scratch {@link sortHashes} keeps between calls (for tests). */
export function radixScratchSize(): number {
  return radixLow.length;
}

/** The bytes of `hashes` as 32-bit words (for {@link addWords}). */
function wordsOf(hashes: Float64Array): Uint32Array {
  return new Uint32Array(hashes.buffer, hashes.byteOffset, hashes.length * 2);
}
