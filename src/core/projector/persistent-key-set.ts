/**
 * A copy-on-write set of strings whose `fork()` costs O(log n), not O(n).
 *
 * The projector must remember every ID a session ever used (event IDs for causation checks,
 * Request/Turn/Tool/... IDs for reuse checks), and the journal forks the projector on every
 * commit to preview a batch. Copying a `Set` per fork would make a long session quadratic, so:
 * 1. keys are added to a private `top` set owned by one instance (a long fold without forks, such
 *    as opening a session, keeps every key in that one set, so a lookup is one hash probe);
 * 2. `fork()` seals `top` into an immutable layer that both instances then share, and each
 *    instance continues with a fresh private `top`; sealed layers are never mutated again;
 * 3. after sealing, adjacent layers are merged (into a new set) while the older one is less than
 *    twice the size of the newer one, so sizes shrink geometrically: at most O(log n) layers,
 *    and each key is copied O(log n) times over the set's life (amortised);
 * 4. `has` checks `top`, then the layers.
 *
 * Memory: one string per key for the set's lifetime (shared by all forks).
 *
 * A set restored from a projection checkpoint also has a `base`: the hashes of every key used
 * before the checkpoint. A key found there is only *maybe* present, so `has` and `add` throw
 * `DurableCheckpointInconclusiveError` rather than guess; the owner then folds the whole log.
 */
import { DurableCheckpointInconclusiveError, HashedKeyFilter } from '../checkpoint/key-filter.js';

/** A copy-on-write string set with cheap forks. */
export class PersistentKeySet {
  private layers: ReadonlySet<string>[];
  private top: Set<string>;
  /** Hashes of the keys used before a checkpoint (empty when folded from the start). */
  readonly base: HashedKeyFilter;
  private added: string[] | null = null;

  private constructor(layers: ReadonlySet<string>[], base: HashedKeyFilter) {
    this.layers = layers;
    this.top = new Set();
    this.base = base;
  }

  /** An empty set. */
  static empty(): PersistentKeySet {
    return new PersistentKeySet([], HashedKeyFilter.EMPTY);
  }

  /** A set whose keys before a checkpoint are known only by their hashes (see the module header). */
  static restored(base: HashedKeyFilter): PersistentKeySet {
    return new PersistentKeySet([], base);
  }

  /**
   * Starts recording the keys added from now on (for the checkpoint writer, which turns them into
   * hashes incrementally); forks do not record.
   */
  trackAdds(): void {
    this.added ??= [];
  }

  /** The keys added since the previous call (or since `trackAdds`), and forgets them. */
  drainAdds(): string[] {
    const added = this.added ?? [];
    if (this.added !== null) this.added = [];
    return added;
  }

  /** Every key known exactly (added to this set, not part of `base`). */
  *exactKeys(): IterableIterator<string> {
    for (const layer of this.layers) yield* layer;
    yield* this.top;
  }

  /** The hashes of every key of this set: `base` plus the exact keys. */
  toFilter(): HashedKeyFilter {
    return this.base.withKeys(this.exactKeys());
  }

  /** Number of keys (including those of `base`). */
  get size(): number {
    let total = this.top.size + this.base.size;
    for (const layer of this.layers) total += layer.size;
    return total;
  }

  /** Number of sealed layers (exposed for tests of the O(log n) bound). */
  get layerCount(): number {
    return this.layers.length;
  }

  has(key: string): boolean {
    if (this.top.has(key)) return true;
    for (let index = this.layers.length - 1; index >= 0; index--) {
      // SAFETY: index is within bounds.
      if ((this.layers[index] as ReadonlySet<string>).has(key)) return true;
    }
    if (this.base.size > 0 && this.base.mightContain(key)) throw new DurableCheckpointInconclusiveError(key);
    return false;
  }

  /** Adds `key`; returns false when it was already present. */
  add(key: string): boolean {
    if (this.has(key)) return false;
    this.top.add(key);
    this.added?.push(key);
    return true;
  }

  /**
   * A short-lived copy for a synchronous preview, in O(layers) without sealing: it reads this
   * set's private `top` in place, so it is valid only until this set's next `add`. Adds to the
   * overlay are invisible here. Its own merges build new sets and never modify shared ones.
   */
  overlay(): PersistentKeySet {
    return new PersistentKeySet(this.top.size === 0 ? this.layers.slice() : [...this.layers, this.top], this.base);
  }

  /** An independent copy: later adds on either side are invisible to the other. */
  fork(): PersistentKeySet {
    this.seal();
    return new PersistentKeySet(this.layers.slice(), this.base);
  }

  private seal(): void {
    if (this.top.size === 0) return;
    this.layers.push(this.top);
    this.top = new Set();
    for (;;) {
      const count = this.layers.length;
      if (count < 2) return;
      const older = this.layers[count - 2] as ReadonlySet<string>;
      const newer = this.layers[count - 1] as ReadonlySet<string>;
      if (older.size >= 2 * newer.size) return;
      // A new set: the old layers may be shared with forks and must stay untouched.
      const merged = new Set(older);
      for (const key of newer) merged.add(key);
      this.layers.splice(count - 2, 2, merged);
    }
  }
}
