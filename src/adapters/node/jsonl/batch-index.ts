/**
 * In-memory index of the batches in one session log.
 *
 * Two parallel growable `Float64Array`s: the first sequence of batch `i` and the byte offset
 * where its line starts. Batch `i` holds sequences `first[i] .. first[i + 1] - 1` (the last batch
 * ends at the head) and bytes `offset[i] .. offset[i + 1]` (the last ends at the validated size).
 * A page read binary-searches the batch holding its first and last wanted sequence and reads only
 * that byte range. Memory: 16 bytes per batch (two float64 values), at most twice that while the
 * arrays carry spare capacity after doubling. Float64 keeps every safe integer exact.
 */

const INITIAL_CAPACITY = 64;

/** First sequence and start offset of every batch, in file order. */
export class BatchIndex {
  #first = new Float64Array(INITIAL_CAPACITY);
  #offset = new Float64Array(INITIAL_CAPACITY);
  #count = 0;

  /** Number of batches indexed. */
  get size(): number {
    return this.#count;
  }

  /** Bytes currently allocated by the index (capacity, not just the used part). */
  get allocatedBytes(): number {
    return this.#first.byteLength + this.#offset.byteLength;
  }

  /** Appends a batch starting at byte `offset` whose first event has sequence `firstSequence`. */
  push(firstSequence: number, offset: number): void {
    if (this.#count === this.#first.length) {
      const first = new Float64Array(this.#first.length * 2);
      first.set(this.#first);
      const offsets = new Float64Array(this.#offset.length * 2);
      offsets.set(this.#offset);
      this.#first = first;
      this.#offset = offsets;
    }
    this.#first[this.#count] = firstSequence;
    this.#offset[this.#count] = offset;
    this.#count++;
  }

  /** Forgets every batch and gives the memory back. */
  clear(): void {
    this.#first = new Float64Array(INITIAL_CAPACITY);
    this.#offset = new Float64Array(INITIAL_CAPACITY);
    this.#count = 0;
  }

  /** First sequence of batch `i` (0 <= i < size). */
  firstSequence(i: number): number {
    return this.#first[i] ?? Number.NaN;
  }

  /** Start offset of batch `i` (0 <= i < size). */
  offset(i: number): number {
    return this.#offset[i] ?? Number.NaN;
  }

  /** Index of the batch holding `sequence`: the last batch whose first sequence is <= it (-1 if none). */
  batchOf(sequence: number): number {
    let low = 0;
    let high = this.#count - 1;
    let found = -1;
    while (low <= high) {
      const mid = (low + high) >>> 1;
      if ((this.#first[mid] ?? Number.POSITIVE_INFINITY) <= sequence) {
        found = mid;
        low = mid + 1;
      } else {
        high = mid - 1;
      }
    }
    return found;
  }
}
