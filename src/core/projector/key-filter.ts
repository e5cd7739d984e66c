/**
 * The used-ID memory a checkpoint carries: sorted runs of 48-bit key hashes.
 *
 * A full fold remembers every ID string a session ever used (reuse and causation checks). Saving
 * and reloading millions of strings would cost as much as the fold it replaces, so a checkpoint
 * keeps a hash per key instead, in sorted runs. A run shorter than {@link COMPACT_MIN_RUN} is a
 * `Float64Array` (48-bit hashes are exact doubles; 8 bytes per key). A longer one is a
 * {@link CompactRun}: a directory of 65,537 bucket starts by the top 16 bits, then the low 32
 * bits of each hash (4 bytes per key plus 256 KiB), so the record a long session opens is about
 * half the size. A checkpoint written as an extension of the previous one adds one run of the
 * IDs used since (merged with the smaller runs before it, so a session of n IDs keeps O(log n)
 * runs); a compacted checkpoint holds one run (see `codec.ts`).
 *
 * The filter answers "certainly never used" or "maybe used". "Maybe" is never taken as the
 * answer: the projector throws {@link DurableCheckpointInconclusiveError} and its owner folds the
 * log from the start, which gives the exact answer a full fold gives. A false "maybe" for a fresh
 * key has probability about keys / 2^48 per lookup (7e-9 at two million keys), so in practice
 * the rebuild happens only for a log that really reuses an old ID, i.e. an invalid one.
 */
import { hashKey, hashKeyBytes, hashKeyRange } from '../hash.js';

/** Bits of a key hash (`hashKey`): values are integers in [0, 2^48). */
const KEY_HASH_BITS = 48;
const KEY_HASH_LIMIT = 2 ** KEY_HASH_BITS;
/** A compact run's buckets: the top 16 bits of a hash; it stores the low 32 bits. */
export const COMPACT_BUCKETS = 65_536;
const BUCKET_SCALE = 4_294_967_296;
/**
 * Runs of at least this many hashes are compact (about 5 bytes per hash here, 4.2 at 1.6 million);
 * shorter ones are `Float64Array`s (8 bytes per hash, no fixed directory).
 */
export const COMPACT_MIN_RUN = 262_144;

/**
 * A sorted run of 48-bit hashes stored in two parts: `starts[b]` is the index in `low` of the first
 * hash whose top 16 bits are at least `b` (`starts[65536]` is the length), and `low` holds the low
 * 32 bits of each hash, ascending within a bucket. Both may be views of a checkpoint's buffer.
 */
export class CompactRun {
  constructor(
    readonly starts: Uint32Array,
    readonly low: Uint32Array,
  ) {}

  /** Number of hashes. */
  get length(): number {
    return this.low.length;
  }

  /** A new, empty run of `count` hashes to be filled by a merge. */
  static allocate(count: number): CompactRun {
    return new CompactRun(new Uint32Array(COMPACT_BUCKETS + 1), new Uint32Array(count));
  }
}

/** One sorted run of key hashes. */
export type KeyRun = Float64Array | CompactRun;

/** Bytes a run of `count` hashes takes in a record (a multiple of 8). */
export function runBytes(count: number): number {
  return count < COMPACT_MIN_RUN ? count * 8 : Math.ceil(((COMPACT_BUCKETS + 1 + count) * 4) / 8) * 8;
}

/** The run of `count` hashes stored at `byteOffset` of `buffer` (a multiple of 8), as views. */
export function runView(buffer: ArrayBufferLike, byteOffset: number, count: number): KeyRun {
  if (count < COMPACT_MIN_RUN) return new Float64Array(buffer, byteOffset, count);
  const starts = new Uint32Array(buffer, byteOffset, COMPACT_BUCKETS + 1);
  const low = new Uint32Array(buffer, byteOffset + (COMPACT_BUCKETS + 1) * 4, count);
  return new CompactRun(starts, low);
}

/** A run of `count` hashes in memory of its own. */
function allocateRun(count: number): KeyRun {
  return count < COMPACT_MIN_RUN ? new Float64Array(count) : CompactRun.allocate(count);
}


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

/**
 * True when `run` is ascending and every hash is in [0, 2^48) (which also rules out NaN); for a
 * compact run, when its directory is consistent and every bucket ascending.
 */
export function isSortedRun(run: KeyRun): boolean {
  if (run instanceof CompactRun) return isSortedCompact(run);
  const hashes = run;
  const length = hashes.length;
  if (length === 0) return true;
  if (!((hashes[0] as number) >= 0 && (hashes[length - 1] as number) < KEY_HASH_LIMIT)) return false;
  // SAFETY: length > 0.
  let previous = hashes[0] as number;
  for (let index = 1; index < length; index++) {
    // SAFETY: index < length.
    const value = hashes[index] as number;
    if (!(previous <= value)) return false;
    previous = value;
  }
  return !(length === 1 && Number.isNaN(previous));
}

function isSortedCompact(run: CompactRun): boolean {
  const { starts, low } = run;
  if (starts.length !== COMPACT_BUCKETS + 1 || starts[0] !== 0 || starts[COMPACT_BUCKETS] !== low.length) return false;
  // SAFETY: every index below is < COMPACT_BUCKETS + 1 or < low.length (starts ascend to the length).
  let start = 0;
  for (let bucket = 1; bucket <= COMPACT_BUCKETS; bucket++) {
    const end = starts[bucket] as number;
    if (end < start) return false;
    for (let index = start + 1; index < end; index++) if ((low[index - 1] as number) > (low[index] as number)) return false;
    start = end;
  }
  return true;
}

/** An immutable set of 48-bit key hashes, kept as sorted runs. */
export class HashedKeyFilter {
  /** Total number of hashes over all runs. */
  readonly size: number;

  /** Per run, its bucket directory once a lookup needed it (see {@link RunDirectory}). */
  readonly #directories: (RunDirectory | null | undefined)[];

  private constructor(
    /** The sorted runs (read-only views; they may share a checkpoint's buffer). */
    readonly runs: readonly KeyRun[],
  ) {
    let size = 0;
    for (const run of runs) size += run.length;
    this.size = size;
    this.#directories = new Array<RunDirectory | null | undefined>(runs.length).fill(undefined);
  }

  /** The empty filter. */
  static readonly EMPTY = new HashedKeyFilter([]);

  /** A filter over runs that are each sorted already (decoded from a checkpoint): `null` unless they are. */
  static fromRuns(runs: readonly KeyRun[]): HashedKeyFilter | null {
    for (const run of runs) if (!isSortedRun(run)) return null;
    return new HashedKeyFilter(runs.filter((run) => run.length > 0));
  }

  /**
   * A filter over runs the caller just wrote sorted (merges of sorted runs), without checking them
   * again: a checkpoint write would otherwise re-read every hash of the session.
   */
  static ofWrittenRuns(runs: readonly KeyRun[]): HashedKeyFilter {
    return new HashedKeyFilter(runs.filter((run) => run.length > 0));
  }

  /** A filter over one sorted run (`null` unless it is sorted). */
  static fromSorted(hashes: Float64Array): HashedKeyFilter | null {
    return HashedKeyFilter.fromRuns([hashes]);
  }

  /** True when `key` may have been used (its hash is present). */
  mightContain(key: string): boolean {
    const runs = this.runs;
    if (runs.length === 0) return false;
    return this.mightContainHash(hashKey(key));
  }

  /** True when the hash `target` (a `hashKey` value) is in one of the runs. */
  mightContainHash(target: number): boolean {
    const runs = this.runs;
    const directories = this.#directories;
    for (let run = 0; run < runs.length; run++) {
      // SAFETY: run < length (both arrays have the runs' length).
      const hashes = runs[run] as KeyRun;
      if (hashes instanceof CompactRun) {
        if (compactContains(hashes, target)) return true;
        continue;
      }
      let directory = directories[run];
      if (directory === undefined) {
        directory = hashes.length >= DIRECTORY_MIN_RUN ? buildDirectory(hashes) : null;
        directories[run] = directory;
      }
      if (directory === null ? runContains(hashes, target) : directoryContains(hashes, directory, target)) return true;
    }
    return false;
  }

  /** A new filter of one run: this one's hashes plus those of `keys`. */
  withKeys(keys: Iterable<string>): HashedKeyFilter {
    const fresh = sortedHashes(keys);
    if (fresh.length === 0 && this.runs.length <= 1) return this;
    const runs = [...this.runs, fresh];
    const merged = allocateRun(this.size + fresh.length);
    mergeRunsInto(runs, merged);
    return new HashedKeyFilter([merged]);
  }
}

/**
 * A `Float64Array` run's bucket directory: `starts[b]` is the index of the run's first hash whose
 * top `bits` bits (of 48) are at least `b`, so the hashes of bucket `b` are `starts[b] .. starts[b + 1] - 1`.
 * Hashes are uniform, so with about 4 hashes per bucket a lookup reads one directory entry and one
 * cache line of the run, where a binary search over a multi-megabyte run took about ten cache (and
 * TLB) misses: the checks a journal restored from a checkpoint makes for every new ID it commits.
 * Costs 1 byte per hash, built in one pass over the run on its first lookup.
 */
interface RunDirectory {
  /** 2 ** (48 - bits): a hash's bucket is `Math.floor(hash / scale)`. */
  readonly scale: number;
  readonly starts: Uint32Array;
}

/** Runs shorter than this are binary-searched (their few levels stay in cache). */
const DIRECTORY_MIN_RUN = 1024;

function buildDirectory(hashes: Float64Array): RunDirectory {
  const bits = Math.min(30, Math.max(1, Math.floor(Math.log2(hashes.length)) - 2));
  const buckets = 2 ** bits;
  const scale = 2 ** (KEY_HASH_BITS - bits);
  const starts = new Uint32Array(buckets + 1);
  let bucket = 0;
  for (let index = 0; index < hashes.length; index++) {
    // SAFETY: index < length. Runs are sorted, so buckets only grow; values are in [0, 2^48).
    const of = Math.min(buckets, Math.floor((hashes[index] as number) / scale));
    while (bucket < of) starts[++bucket] = index;
  }
  while (bucket < buckets) starts[++bucket] = hashes.length;
  return { scale, starts };
}

function directoryContains(hashes: Float64Array, directory: RunDirectory, target: number): boolean {
  const bucket = Math.floor(target / directory.scale);
  const starts = directory.starts;
  if (!(bucket >= 0 && bucket < starts.length - 1)) return runContains(hashes, target);
  // SAFETY: bucket + 1 < starts.length; the indices are within the run.
  const end = starts[bucket + 1] as number;
  for (let index = starts[bucket] as number; index < end; index++) {
    const value = hashes[index] as number;
    if (value >= target) return value === target;
  }
  return false;
}

/** True when the 48-bit hash `target` is in the compact run (a binary search within its bucket). */
function compactContains(run: CompactRun, target: number): boolean {
  const bucket = Math.floor(target / BUCKET_SCALE);
  if (!(bucket >= 0 && bucket < COMPACT_BUCKETS)) return false;
  // SAFETY: bucket + 1 <= COMPACT_BUCKETS.
  return searchSorted(run.low, run.starts[bucket] as number, (run.starts[bucket + 1] as number) - 1, target - bucket * BUCKET_SCALE);
}

function runContains(hashes: Float64Array, target: number): boolean {
  return searchSorted(hashes, 0, hashes.length - 1, target);
}

/** True when `want` is in the ascending `values[first..last]` (a binary search). */
function searchSorted(values: Float64Array | Uint32Array, first: number, last: number, want: number): boolean {
  let low = first;
  let high = last;
  while (low <= high) {
    const middle = (low + high) >>> 1;
    // SAFETY: first <= middle <= last, within bounds.
    const value = values[middle] as number;
    if (value === want) return true;
    if (value < want) low = middle + 1;
    else high = middle - 1;
  }
  return false;
}

/**
 * Merges sorted runs into `into` (exactly their total length), ascending. A compaction merges a
 * handful of runs of geometrically growing sizes: the smaller ones are merged pairwise, smallest
 * first (their total is about the size of the largest), then that result and the largest run are
 * merged straight into `into`, so the bulk of the hashes moves once. `into` is compact exactly
 * when it holds at least {@link COMPACT_MIN_RUN} hashes (then so may the largest run).
 */
export function mergeRunsInto(runs: readonly KeyRun[], into: KeyRun): void {
  const live = runs.filter((run) => run.length > 0).sort((a, b) => a.length - b.length);
  const largest = live.pop();
  let rest: Float64Array | undefined = live[0] === undefined ? undefined : floatRun(live[0]);
  for (let index = 1; index < live.length; index++) {
    const next = floatRun(live[index] as KeyRun);
    const merged: Float64Array = new Float64Array((rest as Float64Array).length + next.length);
    mergeTwo(rest as Float64Array, next, merged);
    rest = merged;
  }
  if (into instanceof CompactRun) {
    mergeIntoCompact(largest ?? new Float64Array(0), rest ?? new Float64Array(0), into);
    return;
  }
  if (largest === undefined) return;
  // A Float64 `into` is shorter than COMPACT_MIN_RUN, so every run merged into it is a Float64 one.
  const big = floatRun(largest);
  if (rest === undefined) into.set(big);
  else mergeTwo(big, rest, into);
}

/** The hashes of `run` as a `Float64Array` (the run itself, or a copy of a compact one). */
function floatRun(run: KeyRun): Float64Array {
  if (!(run instanceof CompactRun)) return run;
  const out = new Float64Array(run.length);
  const { starts, low } = run;
  for (let bucket = 0; bucket < COMPACT_BUCKETS; bucket++) {
    const base = bucket * BUCKET_SCALE;
    // SAFETY: bucket + 1 <= COMPACT_BUCKETS; the indexes are within `low`.
    const end = starts[bucket + 1] as number;
    for (let index = starts[bucket] as number; index < end; index++) out[index] = base + (low[index] as number);
  }
  return out;
}

/** Fills the compact run `out` (of exactly a.length + b.length hashes) with the merge of `a` and `b`. */
function mergeIntoCompact(a: KeyRun, b: Float64Array, out: CompactRun): void {
  if (a instanceof CompactRun) {
    mergeCompactBuckets(a, b, out);
    return;
  }
  const writer = new CompactWriter(out);
  let j = 0;
  const bLength = b.length;
  for (let index = 0; index < a.length; index++) {
    // SAFETY: index < a.length; j < bLength.
    const value = a[index] as number;
    while (j < bLength && (b[j] as number) < value) writer.put(b[j++] as number);
    writer.put(value);
  }
  // SAFETY: j < bLength.
  while (j < bLength) writer.put(b[j++] as number);
  writer.finish();
}

/**
 * {@link mergeIntoCompact} of a compact run and a (usually much shorter) sorted run, bucket by
 * bucket: the compact run's low halves are copied as they are, 32-bit words with no division per
 * hash, and only a bucket that holds hashes of `b` is merged, which saves feeding every hash
 * through {@link CompactWriter} (figures in docs/performance-history.md).
 */
function mergeCompactBuckets(a: CompactRun, b: Float64Array, out: CompactRun): void {
  const { starts, low } = a;
  const outStarts = out.starts;
  const outLow = out.low;
  const bLength = b.length;
  let j = 0;
  let k = 0;
  // The next hash of `b` and its bucket (past the end: a bucket no loop reaches).
  let nextB = bLength > 0 ? (b[0] as number) : 0;
  let nextBucket = bLength > 0 ? Math.floor(nextB / BUCKET_SCALE) : COMPACT_BUCKETS;
  // SAFETY (all indexes below): bucket + 1 <= COMPACT_BUCKETS; `index` < end <= low.length;
  // k < outLow.length (checked after the loop: out holds exactly a.length + b.length).
  for (let bucket = 0; bucket < COMPACT_BUCKETS; bucket++) {
    outStarts[bucket] = k;
    let index = starts[bucket] as number;
    const end = starts[bucket + 1] as number;
    if (nextBucket === bucket) {
      const base = bucket * BUCKET_SCALE;
      do {
        const lowB = nextB - base;
        while (index < end && (low[index] as number) <= lowB) outLow[k++] = low[index++] as number;
        outLow[k++] = lowB;
        j++;
        if (j < bLength) {
          nextB = b[j] as number;
          nextBucket = Math.floor(nextB / BUCKET_SCALE);
        } else nextBucket = COMPACT_BUCKETS;
      } while (nextBucket === bucket);
    }
    for (; index < end; index++) outLow[k++] = low[index] as number;
  }
  outStarts[COMPACT_BUCKETS] = k;
  if (j !== bLength || k !== outLow.length) throw new Error(`compact run: wrote ${k} of ${outLow.length} hashes`);
}

/** Appends ascending 48-bit hashes to a compact run, keeping its directory. */
class CompactWriter {
  #next = 0;
  #bucket = 0;
  readonly #starts: Uint32Array;
  readonly #low: Uint32Array;

  constructor(out: CompactRun) {
    this.#starts = out.starts;
    this.#low = out.low;
    this.#starts[0] = 0;
  }

  put(value: number): void {
    const bucket = Math.floor(value / BUCKET_SCALE);
    while (this.#bucket < bucket) this.#starts[++this.#bucket] = this.#next;
    this.#low[this.#next++] = value - bucket * BUCKET_SCALE;
  }

  finish(): void {
    if (this.#next !== this.#low.length) throw new Error(`compact run: wrote ${this.#next} of ${this.#low.length} hashes`);
    while (this.#bucket < COMPACT_BUCKETS) this.#starts[++this.#bucket] = this.#next;
  }
}

function mergeTwo(old: Float64Array, fresh: Float64Array, merged: Float64Array): void {
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
}

/**
 * Scratch space for the sorted hashes of a merge (used synchronously, then dropped): a fresh
 * array per checkpoint cost more in first-touch page faults than hashing did.
 */
let scratch = new Float64Array(0);

/** Keys joined per flat string when hashing a drained array (about 20 KB of text: young generation). */
const JOIN_CHUNK = 512;

/**
 * The hashes of `keys`, sorted. For an array the result is a view of shared scratch, valid until
 * the next call: copy it (or merge it) before hashing again.
 */
export function sortedHashes(keys: Iterable<string>): Float64Array {
  if (Array.isArray(keys)) {
    // The journal drains an array: fill the scratch array directly, no intermediate list.
    const list = keys as readonly string[];
    // The scratch is kept between calls up to SORT_SCRATCH_KEEP hashes; a one-off huge batch (the
    // first checkpoint over a long log) gets an array of its own, dropped after use.
    if (list.length > SORT_SCRATCH_KEEP) return sortHashes(hashInto(list, new Float64Array(list.length)));
    if (scratch.length < list.length) scratch = new Float64Array(Math.min(SORT_SCRATCH_KEEP, Math.max(list.length, 2 * scratch.length)));
    return sortHashes(hashInto(list, scratch.subarray(0, list.length)));
  }
  const added: number[] = [];
  for (const key of keys) added.push(hashKey(key));
  return Float64Array.from(added).sort();
}

/** Fills `hashes` with the `hashKey` of each of `list` (same length). */
function hashInto(list: readonly string[], hashes: Float64Array): Float64Array {
  // The drained IDs are mostly concatenations (`prefix + id`): reading one of those flattens it
  // (a copy per key, scattered in the heap). Joining a few hundred at a time copies them into
  // one flat string natively, and each key is hashed in place there (same hash as `hashKey`).
  // When a chunk is ASCII (IDs nearly always are), its UTF-8 bytes are its code units: the native
  // encoder copies them into bytes, and hashing from a byte array is much cheaper than
  // `charCodeAt` on the string (figures in docs/performance-history.md).
  for (let first = 0; first < list.length; first += JOIN_CHUNK) {
    const last = Math.min(list.length, first + JOIN_CHUNK);
    const joined = list.slice(first, last).join('');
    if (joinedBytes.length < joined.length) joinedBytes = new Uint8Array(Math.max(joined.length, 2 * joinedBytes.length));
    const { read, written } = utf8.encodeInto(joined, joinedBytes);
    const ascii = read === joined.length && written === joined.length;
    let start = 0;
    for (let index = first; index < last; index++) {
      // SAFETY: index < length.
      const end = start + (list[index] as string).length;
      hashes[index] = ascii ? hashKeyBytes(joinedBytes, start, end) : hashKeyRange(joined, start, end);
      start = end;
    }
  }
  return hashes;
}

const utf8 = new TextEncoder();
/** Scratch for the bytes of one joined chunk (about 20 KB). */
let joinedBytes = new Uint8Array(0);

/** Below this many hashes the native sort is as fast as the bucket sort and needs no scratch. */
const BUCKET_SORT_MIN = 1024;
/** At most 2^20 buckets (4 MiB of counts), even for a batch of millions of hashes. */
const MAX_BUCKET_BITS = 20;
/**
 * Scratch of {@link sortHashes} (8 bytes per hash, plus 4 per bucket) is kept between writes up to
 * this many hashes (about 1 MiB): a period's batch fits; the one-off batch of a first checkpoint
 * over a long log (every ID of the session) is sorted in scratch that is dropped right after, so a
 * Durable Object does not hold tens of megabytes for the rest of its life.
 */
export const SORT_SCRATCH_KEEP = 65_536;
/** Scratch of {@link sortHashes}: bucket counts, and the hashes spread into their buckets. */
let bucketCounts = new Uint32Array(0);
let spread = new Float64Array(0);

/**
 * Sorts 48-bit hashes (non-negative integers, exact doubles) in place, ascending: the order of
 * `Float64Array.prototype.sort`. A checkpoint sorts the few thousand IDs of one period. Hashes are
 * uniform, so one counting pass over their top bits (at least as many buckets as hashes) and one
 * scatter leave each in a bucket of about one, and an insertion pass finishes the order in nearly
 * linear time: 0.06-0.08 ms for 6,560 hashes here, against about 0.25 ms for the five-pass radix
 * sort it replaced and 0.47 ms for the native sort. Hashes of IDs chosen to collide in their top
 * bits would make the insertion pass quadratic; it gives up after 8 moves per hash and the native
 * sort finishes, so the worst case stays O(n log n).
 */
export function sortHashes(hashes: Float64Array): Float64Array {
  const n = hashes.length;
  if (n < BUCKET_SORT_MIN) return hashes.sort();
  const bits = Math.min(MAX_BUCKET_BITS, 32 - Math.clz32(n - 1));
  const buckets = 1 << bits;
  // A power of two: the product is exact, and floor(hash * scale) < buckets for hash < 2^48.
  const scale = 2 ** (bits - KEY_HASH_BITS);
  if (bucketCounts.length < buckets + 1) bucketCounts = new Uint32Array(buckets + 1);
  const counts = bucketCounts;
  counts.fill(0, 0, buckets + 1);
  // SAFETY (all indexes below): i < n <= lengths; bucket indexes < buckets + 1 (see `scale`).
  for (let i = 0; i < n; i++) {
    const bucket = Math.floor((hashes[i] as number) * scale) + 1;
    counts[bucket] = (counts[bucket] as number) + 1;
  }
  for (let bucket = 1; bucket <= buckets; bucket++) counts[bucket] = (counts[bucket] as number) + (counts[bucket - 1] as number);
  if (spread.length < n) spread = new Float64Array(n > SORT_SCRATCH_KEEP ? n : Math.min(SORT_SCRATCH_KEEP, Math.max(n, 2 * spread.length)));
  const out = spread.subarray(0, n);
  for (let i = 0; i < n; i++) {
    const value = hashes[i] as number;
    const bucket = Math.floor(value * scale);
    const target = counts[bucket] as number;
    counts[bucket] = target + 1;
    out[target] = value;
  }
  let moves = 0;
  const budget = 8 * n;
  for (let i = 1; i < n; i++) {
    const value = out[i] as number;
    let j = i;
    while (j > 0 && (out[j - 1] as number) > value) {
      out[j] = out[j - 1] as number;
      j--;
    }
    out[j] = value;
    moves += i - j;
    if (moves > budget) {
      out.sort();
      break;
    }
  }
  hashes.set(out);
  if (spread.length > SORT_SCRATCH_KEEP) {
    spread = new Float64Array(0);
    bucketCounts = new Uint32Array(0);
  }
  return hashes;
}

/** Hashes of scratch {@link sortHashes} keeps between calls (for tests). */
export function sortScratchSize(): number {
  return spread.length;
}
