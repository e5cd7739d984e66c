/** Byte helpers shared by the checkpoint store tests (SQLite, PostgreSQL). */

/** `length` bytes of a pattern that differs per `seed`. */
export const fill = (length: number, seed: number): Uint8Array => new Uint8Array(length).map((_, index) => (index * 31 + seed) & 0xff);

/** The parts, one after the other, in a new array. */
export function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0));
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}

/** True when `actual` holds exactly the bytes of `expected`. */
export const sameBytes = (actual: Uint8Array | undefined, expected: Uint8Array): boolean =>
  actual !== undefined && Buffer.from(actual.buffer, actual.byteOffset, actual.length).equals(Buffer.from(expected.buffer, expected.byteOffset, expected.length));
