/**
 * A small, fast, non-cryptographic 53-bit string hash (two 32-bit lanes, `Math.imul` mixing, in
 * the style of the public-domain cyrb53), usable as a running (streaming) hash.
 *
 * Why our own: core is runtime-neutral (no `node:crypto`), and Web Crypto's `subtle.digest` is
 * async and has no streaming interface, so it cannot keep a running digest over a million folded
 * events cheaply. The checkpoint's digest and key filter need speed and a low accidental-collision
 * rate, not resistance to an adversary (whoever can rewrite the log can rewrite the checkpoint).
 */

/** The running state of a {@link RunningHash}: two unfinalised 32-bit lanes. */
export interface RunningHashState {
  readonly h1: number;
  readonly h2: number;
}

/** The state before any input. */
export const INITIAL_HASH_STATE: RunningHashState = Object.freeze({ h1: 0xdeadbeef, h2: 0x41c6ce57 });

/**
 * Feeds `text` (UTF-16 code units, one per round) into the lanes, then a separator step that
 * mixes in its length.
 */
function feedHash(state: RunningHashState, text: string): RunningHashState {
  let h1 = state.h1;
  let h2 = state.h2;
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index);
    h1 = Math.imul(h1 ^ code, 2654435761);
    h2 = Math.imul(h2 ^ code, 1597334677);
  }
  h1 = Math.imul(h1 ^ 0x1f, 2654435761);
  h2 = Math.imul(h2 ^ (text.length & 0xffff), 1597334677);
  return { h1: h1 >>> 0, h2: h2 >>> 0 };
}

/** The 53-bit value of the lanes (a safe integer). */
export function finishHash(state: RunningHashState): number {
  let h1 = state.h1;
  let h2 = state.h2;
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507);
  h1 ^= Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507);
  h2 ^= Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return 4294967296 * (2097151 & h2) + (h1 >>> 0);
}

/**
 * The 48-bit value of the lanes, for key hashes: the same mixing as {@link finishHash}, 16 bits of
 * the second lane (a compact key run stores the low 32 bits and buckets by the top 16).
 */
function finishKeyHash(state: RunningHashState): number {
  return Math.floor(finishHash(state) / 32);
}

/** The 53-bit hash of one string. */
export function hashString(text: string): number {
  return finishHash(feedHash(INITIAL_HASH_STATE, text));
}

/**
 * The 48-bit hash of a used ID for the checkpoint's key filter. Reads two UTF-16 code units per
 * round (half the rounds of {@link hashString}, whose one-unit rounds were most of the cost of
 * hashing a checkpoint's new IDs) and feeds the length last, so "a" and "a\u0000" differ.
 */
export function hashKey(text: string): number {
  return hashKeyRange(text, 0, text.length);
}

/** Exactly `hashKey(text.slice(start, end))`, without the slice. */
export function hashKeyRange(text: string, start: number, end: number): number {
  let h1 = INITIAL_HASH_STATE.h1;
  let h2 = INITIAL_HASH_STATE.h2;
  const length = end - start;
  let index = start;
  for (; index + 1 < end; index += 2) {
    const word = text.charCodeAt(index) | (text.charCodeAt(index + 1) << 16);
    h1 = Math.imul(h1 ^ word, 2654435761);
    h2 = Math.imul(h2 ^ word, 1597334677);
  }
  if (index < end) {
    const code = text.charCodeAt(index);
    h1 = Math.imul(h1 ^ code, 2654435761);
    h2 = Math.imul(h2 ^ code, 1597334677);
  }
  h1 = Math.imul(h1 ^ length, 2654435761);
  h2 = Math.imul(h2 ^ length, 1597334677);
  return finishKeyHash({ h1: h1 >>> 0, h2: h2 >>> 0 });
}

/**
 * Exactly `hashKey` of the ASCII text whose code units are `bytes[start..end)` (one byte per code
 * unit): the same rounds, read from a byte array (the batch path of a checkpoint's new IDs).
 */
export function hashKeyBytes(bytes: Uint8Array, start: number, end: number): number {
  let h1 = INITIAL_HASH_STATE.h1;
  let h2 = INITIAL_HASH_STATE.h2;
  const length = end - start;
  let index = start;
  for (; index + 1 < end; index += 2) {
    // SAFETY: index + 1 < end <= bytes.length.
    const word = (bytes[index] as number) | ((bytes[index + 1] as number) << 16);
    h1 = Math.imul(h1 ^ word, 2654435761);
    h2 = Math.imul(h2 ^ word, 1597334677);
  }
  if (index < end) {
    const code = bytes[index] as number;
    h1 = Math.imul(h1 ^ code, 2654435761);
    h2 = Math.imul(h2 ^ code, 1597334677);
  }
  h1 = Math.imul(h1 ^ length, 2654435761);
  h2 = Math.imul(h2 ^ length, 1597334677);
  return finishKeyHash({ h1: h1 >>> 0, h2: h2 >>> 0 });
}

/** Scratch for an unaligned {@link hashFrameBytes} input (used synchronously). */
let frameScratch = new Uint8Array(0);

/**
 * The checksum of a checkpoint frame (53 bits), chained from `seed`. The bytes are read as 32-bit
 * little-endian words spread over four independent `Math.imul` lanes (word `i` feeds lane `i % 4`),
 * so the multiplications of consecutive words overlap instead of waiting on each other: about 2.5x
 * the speed of one stream of words through two lanes (format 3's checksum) on a multi-megabyte key
 * run, which every open checks and every compaction writes. The result does not depend on the input's alignment.
 */
export function hashFrameBytes(bytes: Uint8Array, seed: RunningHashState): number {
  let input = bytes;
  if (bytes.byteOffset % 4 !== 0) {
    if (frameScratch.length < bytes.length) frameScratch = new Uint8Array(bytes.length);
    frameScratch.set(bytes);
    input = frameScratch.subarray(0, bytes.length);
  }
  const words = new Int32Array(input.buffer, input.byteOffset, input.length >>> 2);
  let a = seed.h1 | 0;
  let b = seed.h2 | 0;
  let c = (seed.h1 ^ 0x9e3779b9) | 0;
  let d = (seed.h2 ^ 0x85ebca6b) | 0;
  const blocks = words.length & ~3;
  for (let index = 0; index < blocks; index += 4) {
    // SAFETY: index + 3 < blocks <= length.
    a = Math.imul(a ^ (words[index] as number), 2654435761);
    b = Math.imul(b ^ (words[index + 1] as number), 1597334677);
    c = Math.imul(c ^ (words[index + 2] as number), 2246822507);
    d = Math.imul(d ^ (words[index + 3] as number), 3266489909);
  }
  for (let index = blocks; index < words.length; index++) a = Math.imul(a ^ (words[index] as number), 2654435761);
  for (let index = words.length * 4; index < input.length; index++) b = Math.imul(b ^ (input[index] as number), 1597334677);
  const h1 = Math.imul(a ^ ((c << 17) | (c >>> 15)) ^ input.length, 2654435761);
  const h2 = Math.imul(b ^ ((d << 13) | (d >>> 19)), 1597334677);
  return finishHash({ h1: h1 >>> 0, h2: h2 >>> 0 });
}
