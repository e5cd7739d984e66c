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
 * Feeds `text` (UTF-16 code units) into the lanes, then a separator step that mixes in its length
 * (so feeding "ab","c" differs from "a","bc"). One text is {@link feedHashJoined} of one part.
 */
export function feedHash(state: RunningHashState, text: string): RunningHashState {
  return feedHashJoined(state, [text]);
}

/**
 * Exactly `feedHash(state, parts.join('|'))`, without building the joined string (the journal
 * chains one digest step per folded event, so the concatenation was most of its cost).
 */
export function feedHashJoined(state: RunningHashState, parts: readonly string[]): RunningHashState {
  let h1 = state.h1;
  let h2 = state.h2;
  let length = 0;
  for (let part = 0; part < parts.length; part++) {
    // SAFETY: part < length.
    const text = parts[part] as string;
    if (part > 0) {
      h1 = Math.imul(h1 ^ 0x7c, 2654435761);
      h2 = Math.imul(h2 ^ 0x7c, 1597334677);
      length++;
    }
    for (let index = 0; index < text.length; index++) {
      const code = text.charCodeAt(index);
      h1 = Math.imul(h1 ^ code, 2654435761);
      h2 = Math.imul(h2 ^ code, 1597334677);
    }
    length += text.length;
  }
  h1 = Math.imul(h1 ^ 0x1f, 2654435761);
  h2 = Math.imul(h2 ^ (length & 0xffff), 1597334677);
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

/** The 53-bit hash of one string. */
export function hashString(text: string): number {
  return finishHash(feedHash(INITIAL_HASH_STATE, text));
}

/**
 * The 53-bit hash of a used ID for the checkpoint's key filter. Reads two UTF-16 code units per
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
  return finishHash({ h1: h1 >>> 0, h2: h2 >>> 0 });
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
  return finishHash({ h1: h1 >>> 0, h2: h2 >>> 0 });
}

/** The lanes of {@link hashBytes} before finishing, starting from `state` (to chain hashes). */
export function hashBytesState(bytes: Uint8Array, state: RunningHashState = INITIAL_HASH_STATE): RunningHashState {
  let h1 = state.h1;
  let h2 = state.h2;
  let start = 0;
  if (bytes.byteOffset % 4 === 0) {
    const words = new Uint32Array(bytes.buffer, bytes.byteOffset, bytes.length >>> 2);
    for (let index = 0; index < words.length; index++) {
      // SAFETY: index < length.
      const word = words[index] as number;
      h1 = Math.imul(h1 ^ word, 2654435761);
      h2 = Math.imul(h2 ^ word, 1597334677);
    }
    start = words.length * 4;
  }
  for (let index = start; index < bytes.length; index++) {
    // SAFETY: index < length.
    const byte = bytes[index] as number;
    h1 = Math.imul(h1 ^ byte, 2654435761);
    h2 = Math.imul(h2 ^ byte, 1597334677);
  }
  return { h1: h1 >>> 0, h2: h2 >>> 0 };
}

/**
 * The 53-bit hash of bytes (the checkpoint frames' checksum). Reads 32-bit words where the bytes
 * are aligned (four times fewer rounds on the large key filter), then the remaining bytes.
 */
export function hashBytes(bytes: Uint8Array): number {
  return finishHash(hashBytesState(bytes));
}
