/**
 * A set of strings that only grows, whose `fork()` costs O(layers) and never copies keys.
 *
 * The projector must remember every ID a session ever used (event IDs for causation checks,
 * Request/Turn/Tool/... IDs for reuse checks), and copies of it are taken while the original goes
 * on: a projection checkpoint kept live by the memory store holds one per write, `clone()` one per
 * call. Copying a `Set` per copy would make a long session quadratic, so:
 * 1. keys are added to a private `top` owned by one instance: plain sets until its first fork
 *    (a long fold without forks, such as opening a session, keeps every key in them), then maps
 *    from each key to its ordinal (how many keys `top` held before it). Keys are never removed,
 *    so the keys of a map `top` with an ordinal below `n` are exactly what it held at `n` keys;
 * 2. the first `fork()` of an instance seals its sets into a layer of its own (moved, not copied)
 *    and switches `top` to maps. Every fork gives the copy the original's layers plus a *view* of
 *    the original's `top`: those maps (shared, never copied) and their size at the fork as a limit.
 *    The original goes on adding to its maps (at ordinals past every view's limit); the copy adds
 *    to a `top` of its own;
 * 3. so an instance gains at most one layer in its life (the sealed sets), and a copy has at most
 *    two more than its original: only a chain of copies of copies (a session resumed again and
 *    again in one process) deepens. A fork of an instance with {@link MAX_LAYERS} layers first
 *    merges its adjacent layers of least total size into new sets (copying only those) until at
 *    most half that many remain, and the instance keeps the merged list;
 * 4. `has` checks `top`, then each layer (a set, or a map within its limit).
 *
 * (Sealing `top` into an immutable layer at every fork and merging layers geometrically would
 * cost amortised O(log n) copies per key, but also a copy of the whole set now and then: a pause
 * of hundreds of milliseconds at 400,000 keys, see docs/performance.md.)
 *
 * The projector's keys are `prefix + ID` (see {@link KEY_PREFIXES}); `top` and each layer keep one
 * map of bare IDs per prefix, so `hasKey`/`addKey` hash the ID string the event holds (V8 caches
 * a string's hash) instead of concatenating, flattening and hashing a new key on every lookup.
 * `has`/`add`/`exactKeys`/`drainAdds` still speak spelled keys, so this is invisible outside.
 *
 * Memory: one set entry per key folded before the first fork, one map entry (the ID and a small
 * integer, about a third larger) per key after it, for the set's lifetime, shared by all forks.
 *
 * A set restored from a projection checkpoint also has a `base`: the hashes of every key used
 * before the checkpoint. A key found there is only *maybe* present, so `has` and `add` throw
 * `DurableCheckpointInconclusiveError` rather than guess; the owner then folds the whole log.
 */
import { DurableCheckpointInconclusiveError, HashedKeyFilter } from './key-filter.js';

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

/**
 * The IDs of one kind in `top`: a set while no fork views `top`, then a map from each ID to its
 * ordinal (absent while empty).
 */
type KindStore = Set<string> | Map<string, number> | undefined;

/** Layers of a fork deeper than this are merged first (see the module header, 3). */
export const MAX_LAYERS = 8;

/**
 * A layer, never modified by its readers: either sealed `sets` (every key in them belongs to the
 * layer) or a view of another instance's `top` maps (the keys whose ordinal is below `limit`;
 * that `top` may have grown since). `limit` is the number of keys either way.
 */
interface Layer {
  readonly sets: readonly (ReadonlySet<string> | undefined)[] | null;
  readonly maps: readonly (ReadonlyMap<string, number> | undefined)[] | null;
  readonly limit: number;
}

function emptyKindStores(): KindStore[] {
  return new Array<KindStore>(KINDS).fill(undefined);
}

/** The kind and ID of a key spelled as a string: the inverse of `SPELLING[kind] + id`. */
function splitKey(key: string): { kind: number; id: string } {
  if (key.length >= 2 && key.charCodeAt(1) === 58 /* ':' */) {
    const kind = KIND_OF_PREFIX.get(key.slice(0, 2));
    if (kind !== undefined) return { kind, id: key.slice(2) };
  }
  return { kind: OTHER_KIND, id: key };
}

/** A grow-only string set with cheap forks. */
export class PersistentKeySet {
  private layers: readonly Layer[];
  /** This instance's own keys: sets until the first fork, maps (ID to ordinal) after it. */
  private top: KindStore[] = emptyKindStores();
  /** True once a fork may view `top` (it holds maps from then on). */
  private viewed = false;
  private topSize = 0;
  /** Hashes of the keys used before a checkpoint (empty when folded from the start). */
  readonly base: HashedKeyFilter;
  private added: string[] | null = null;

  private constructor(layers: readonly Layer[], base: HashedKeyFilter) {
    this.layers = layers;
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
    for (const layer of this.layers) yield* spell(layer);
    yield* spellStores(this.top, Number.POSITIVE_INFINITY);
  }

  /** The hashes of every key of this set: `base` plus the exact keys. */
  toFilter(): HashedKeyFilter {
    return this.base.withKeys(this.exactKeys());
  }

  /** Number of keys (including those of `base`). */
  get size(): number {
    let total = this.topSize + this.base.size;
    for (const layer of this.layers) total += layer.limit;
    return total;
  }

  /** Number of layers (exposed for tests of the depth bound). */
  get layerCount(): number {
    return this.layers.length;
  }

  has(key: string): boolean {
    const { kind, id } = splitKey(key);
    return this.#has(kind, id);
  }

  /** True when `key` is known exactly or `base` may hold it (never throws, unlike `has`). */
  mightContain(key: string): boolean {
    const { kind, id } = splitKey(key);
    return this.#hasExactly(kind, id) || this.base.mightContain(key);
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

  #hasExactly(kind: number, id: string): boolean {
    const own = this.top[kind];
    if (own !== undefined && own.has(id)) return true;
    const layers = this.layers;
    for (let index = layers.length - 1; index >= 0; index--) {
      // SAFETY: index is within bounds.
      const layer = layers[index] as Layer;
      if (layer.sets !== null) {
        if (layer.sets[kind]?.has(id) === true) return true;
      } else {
        // SAFETY: a layer has sets or maps.
        const ordinal = (layer.maps as readonly (ReadonlyMap<string, number> | undefined)[])[kind]?.get(id);
        if (ordinal !== undefined && ordinal < layer.limit) return true;
      }
    }
    return false;
  }

  #has(kind: number, id: string): boolean {
    if (this.#hasExactly(kind, id)) return true;
    if (this.base.size > 0) {
      // SAFETY: kind is a valid index of SPELLING.
      const key = (SPELLING[kind] as string) + id;
      if (this.base.mightContain(key)) throw new DurableCheckpointInconclusiveError(key);
    }
    return false;
  }

  #add(kind: number, id: string): boolean {
    if (this.#has(kind, id)) return false;
    const own = this.top[kind];
    if (this.viewed) {
      if (own === undefined) this.top[kind] = new Map([[id, this.topSize]]);
      else (own as Map<string, number>).set(id, this.topSize);
    } else if (own === undefined) {
      this.top[kind] = new Set([id]);
    } else {
      (own as Set<string>).add(id);
    }
    this.topSize++;
    // SAFETY: kind is a valid index of SPELLING.
    this.added?.push((SPELLING[kind] as string) + id);
    return true;
  }

  /** An independent copy: later adds on either side are invisible to the other. */
  fork(): PersistentKeySet {
    if (this.layers.length >= MAX_LAYERS) this.layers = compacted(this.layers, MAX_LAYERS / 2);
    if (!this.viewed) {
      // Nobody views the sets yet: they become a sealed layer of this instance as they are (moved,
      // not copied), and its keys from now on go to maps a fork can view.
      if (this.topSize > 0) this.layers = [...this.layers, { sets: this.top as (Set<string> | undefined)[], maps: null, limit: this.topSize }];
      this.top = emptyKindStores();
      this.topSize = 0;
      this.viewed = true;
    }
    const layers =
      this.topSize === 0 ? this.layers : [...this.layers, { sets: null, maps: this.top as (Map<string, number> | undefined)[], limit: this.topSize }];
    return new PersistentKeySet(layers, this.base);
  }
}

/**
 * `layers` with adjacent pairs of least total size merged (into new sets: the old ones may be
 * shared) until at most `count` remain. Same keys, in the same order of layers.
 */
function compacted(layers: readonly Layer[], count: number): Layer[] {
  const list = [...layers];
  while (list.length > count) {
    let best = 0;
    for (let index = 1; index + 1 < list.length; index++) {
      // SAFETY: indexes are within bounds.
      if ((list[index] as Layer).limit + (list[index + 1] as Layer).limit < (list[best] as Layer).limit + (list[best + 1] as Layer).limit) best = index;
    }
    // SAFETY: best + 1 < list.length.
    list.splice(best, 2, merged(list[best] as Layer, list[best + 1] as Layer));
  }
  return list;
}

/** One sealed layer holding the keys of both. */
function merged(older: Layer, newer: Layer): Layer {
  const sets = new Array<Set<string> | undefined>(KINDS).fill(undefined);
  let size = 0;
  for (const layer of [older, newer]) {
    for (const key of spell(layer)) {
      const { kind, id } = splitKey(key);
      let target = sets[kind];
      if (target === undefined) {
        target = new Set();
        sets[kind] = target;
      }
      target.add(id);
      size++;
    }
  }
  return { sets, maps: null, limit: size };
}

/** The keys of one layer, spelled out. */
function spell(layer: Layer): IterableIterator<string> {
  return spellStores(layer.sets ?? layer.maps ?? [], layer.limit);
}

/** The keys of per-kind stores, spelled out: every key of a set, a map's keys with an ordinal below `limit`. */
function* spellStores(stores: readonly (ReadonlySet<string> | ReadonlyMap<string, number> | undefined)[], limit: number): IterableIterator<string> {
  for (let kind = 0; kind < stores.length; kind++) {
    const store = stores[kind];
    if (store === undefined) continue;
    // SAFETY: kind is a valid index of SPELLING.
    const prefix = SPELLING[kind] as string;
    if (store instanceof Map) {
      for (const [id, at] of store) if (at < limit) yield prefix + id;
    } else {
      for (const id of store) yield prefix + id;
    }
  }
}
