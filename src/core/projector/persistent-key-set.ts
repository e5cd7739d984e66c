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
 * The projector's keys are `prefix + ID` (see {@link KEY_PREFIXES}); `top` and each layer keep one
 * set of bare IDs per prefix, so `hasKey`/`addKey` hash the ID string the event holds (V8 caches
 * a string's hash) instead of concatenating, flattening and hashing a new key on every lookup.
 * `has`/`add`/`exactKeys`/`drainAdds` still speak spelled keys, so this is invisible outside.
 *
 * Memory: one reference per key (to the ID string the event carried) for the set's lifetime,
 * shared by all forks.
 *
 * A set restored from a projection checkpoint also has a `base`: the hashes of every key used
 * before the checkpoint. A key found there is only *maybe* present, so `has` and `add` throw
 * `DurableCheckpointInconclusiveError` rather than guess; the owner then folds the whole log.
 */
import { DurableCheckpointInconclusiveError, HashedKeyFilter } from '../checkpoint/key-filter.js';

/**
 * The namespaces of the projector's keys: a key of kind `k` is spelled `KEY_PREFIXES[k] + id`.
 * Inside the set each kind has its own string sets holding bare IDs (so a lookup hashes the ID
 * string the event already holds, never a freshly concatenated key); any other string is a key of
 * the catch-all kind {@link OTHER_KIND}, spelled as is.
 */
export const KEY_PREFIXES = ['e:', 'r:', 't:', 'm:', 'a:', 'p:', 'c:', 'i:'] as const;

/** Index of one of {@link KEY_PREFIXES}. */
export type KeyKind = 0 | 1 | 2 | 3 | 4 | 5 | 6 | 7;

/** The kind of keys without one of the prefixes. */
const OTHER_KIND = KEY_PREFIXES.length;
const KINDS = OTHER_KIND + 1;
const SPELLING: readonly string[] = [...KEY_PREFIXES, ''];
const KIND_OF_PREFIX: ReadonlyMap<string, number> = new Map(KEY_PREFIXES.map((prefix, kind) => [prefix, kind]));

/** One set of IDs per kind (absent while empty). */
type KindSets = (Set<string> | undefined)[];

/** A sealed layer: its sets (never modified again) and the number of keys they hold. */
interface Layer {
  readonly sets: readonly (ReadonlySet<string> | undefined)[];
  readonly size: number;
}

function emptyKindSets(): KindSets {
  return new Array<Set<string> | undefined>(KINDS).fill(undefined);
}

/** The kind and ID of a key spelled as a string: the inverse of `SPELLING[kind] + id`. */
function splitKey(key: string): { kind: number; id: string } {
  if (key.length >= 2 && key.charCodeAt(1) === 58 /* ':' */) {
    const kind = KIND_OF_PREFIX.get(key.slice(0, 2));
    if (kind !== undefined) return { kind, id: key.slice(2) };
  }
  return { kind: OTHER_KIND, id: key };
}

/** A copy-on-write string set with cheap forks. */
export class PersistentKeySet {
  private layers: Layer[];
  private top: KindSets;
  private topSize = 0;
  /** Hashes of the keys used before a checkpoint (empty when folded from the start). */
  readonly base: HashedKeyFilter;
  private added: string[] | null = null;

  private constructor(layers: Layer[], base: HashedKeyFilter) {
    this.layers = layers;
    this.top = emptyKindSets();
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
    for (const layer of this.layers) yield* spell(layer.sets);
    yield* spell(this.top);
  }

  /** The hashes of every key of this set: `base` plus the exact keys. */
  toFilter(): HashedKeyFilter {
    return this.base.withKeys(this.exactKeys());
  }

  /** Number of keys (including those of `base`). */
  get size(): number {
    let total = this.topSize + this.base.size;
    for (const layer of this.layers) total += layer.size;
    return total;
  }

  /** Number of sealed layers (exposed for tests of the O(log n) bound). */
  get layerCount(): number {
    return this.layers.length;
  }

  has(key: string): boolean {
    const { kind, id } = splitKey(key);
    return this.#has(kind, id);
  }

  /** Adds `key`; returns false when it was already present. */
  add(key: string): boolean {
    const { kind, id } = splitKey(key);
    return this.#add(kind, id);
  }

  /** `has(KEY_PREFIXES[kind] + id)`, without building that string. */
  hasKey(kind: KeyKind, id: string): boolean {
    return this.#has(kind, id);
  }

  /** `add(KEY_PREFIXES[kind] + id)`, without building that string (unless adds are tracked). */
  addKey(kind: KeyKind, id: string): boolean {
    return this.#add(kind, id);
  }

  #has(kind: number, id: string): boolean {
    const own = this.top[kind];
    if (own !== undefined && own.has(id)) return true;
    const layers = this.layers;
    for (let index = layers.length - 1; index >= 0; index--) {
      // SAFETY: index is within bounds.
      const set = (layers[index] as Layer).sets[kind];
      if (set !== undefined && set.has(id)) return true;
    }
    if (this.base.size > 0) {
      // SAFETY: kind is a valid index of SPELLING.
      const key = (SPELLING[kind] as string) + id;
      if (this.base.mightContain(key)) throw new DurableCheckpointInconclusiveError(key);
    }
    return false;
  }

  #add(kind: number, id: string): boolean {
    if (this.#has(kind, id)) return false;
    let own = this.top[kind];
    if (own === undefined) {
      own = new Set();
      this.top[kind] = own;
    }
    own.add(id);
    this.topSize++;
    // SAFETY: kind is a valid index of SPELLING.
    this.added?.push((SPELLING[kind] as string) + id);
    return true;
  }

  /**
   * A short-lived copy for a synchronous preview, in O(layers) without sealing: it reads this
   * set's private `top` in place, so it is valid only until this set's next `add`. Adds to the
   * overlay are invisible here. Its own merges build new sets and never modify shared ones.
   */
  overlay(): PersistentKeySet {
    return new PersistentKeySet(
      this.topSize === 0 ? this.layers.slice() : [...this.layers, { sets: this.top, size: this.topSize }],
      this.base,
    );
  }

  /** An independent copy: later adds on either side are invisible to the other. */
  fork(): PersistentKeySet {
    this.seal();
    return new PersistentKeySet(this.layers.slice(), this.base);
  }

  private seal(): void {
    if (this.topSize === 0) return;
    this.layers.push({ sets: this.top, size: this.topSize });
    this.top = emptyKindSets();
    this.topSize = 0;
    for (;;) {
      const count = this.layers.length;
      if (count < 2) return;
      const older = this.layers[count - 2] as Layer;
      const newer = this.layers[count - 1] as Layer;
      if (older.size >= 2 * newer.size) return;
      this.layers.splice(count - 2, 2, { sets: mergeSets(older.sets, newer.sets), size: older.size + newer.size });
    }
  }
}

/**
 * The union of two layers' sets. A kind present on one side only keeps that (sealed, never
 * modified) set; otherwise a new set: the old layers may be shared with forks and stay untouched.
 */
function mergeSets(
  older: readonly (ReadonlySet<string> | undefined)[],
  newer: readonly (ReadonlySet<string> | undefined)[],
): (ReadonlySet<string> | undefined)[] {
  const merged: (ReadonlySet<string> | undefined)[] = [];
  for (let kind = 0; kind < KINDS; kind++) {
    const a = older[kind];
    const b = newer[kind];
    if (a === undefined || b === undefined) {
      merged.push(a ?? b);
    } else {
      const union = new Set(a);
      for (const id of b) union.add(id);
      merged.push(union);
    }
  }
  return merged;
}

/** The keys of one layer, spelled out. */
function* spell(sets: readonly (ReadonlySet<string> | undefined)[]): IterableIterator<string> {
  for (let kind = 0; kind < sets.length; kind++) {
    const set = sets[kind];
    // SAFETY: kind is a valid index of SPELLING.
    if (set !== undefined) for (const id of set) yield (SPELLING[kind] as string) + id;
  }
}
