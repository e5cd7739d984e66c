/**
 * Streaming JSON compaction for bounded request bodies.
 *
 * A JSON text has many spellings: a client may escape every non-ASCII character as `\uXXXX`
 * (Python's `json.dumps` default), escape `<`, `>` and `&` (Go's `encoding/json`), or indent.
 * The same batch can therefore take up to six times the bytes on the wire that it takes when the
 * store encodes it. A body limit on wire bytes would refuse batches the stores accept; a limit
 * six times larger would let a body sit in memory six times over. {@link JsonCompactor} rewrites
 * the text chunk by chunk into an equivalent compact spelling and counts only those bytes:
 *
 * - whitespace between tokens is dropped (one space is kept between two word-like characters,
 *   so `[1 2]` stays invalid instead of becoming `[12]`);
 * - inside strings, `\uXXXX` escapes (and surrogate pairs of them) become the character's UTF-8
 *   bytes, and `\/` becomes `/`; escapes JSON requires (`"`, `\`, control characters) and lone
 *   surrogates stay escaped;
 * - everything else is copied byte for byte, so invalid input stays invalid for `JSON.parse`.
 *
 * The compact text is never longer than what `JSON.stringify` makes of the parsed value (plus
 * key and number spelling, which no encoder inflates), so a limit on it admits every batch within
 * the event limits whatever the client's encoder did, while memory holds only the compact bytes.
 */

const BACKSLASH = 0x5c;
const QUOTE = 0x22;
const SPACE = 0x20;

function isWhitespace(byte: number): boolean {
  return byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09;
}

/** Characters that may touch each other inside one number or literal token. */
function isWordLike(byte: number): boolean {
  return (
    (byte >= 0x30 && byte <= 0x39) ||
    (byte >= 0x41 && byte <= 0x5a) ||
    (byte >= 0x61 && byte <= 0x7a) ||
    byte === 0x2b ||
    byte === 0x2d ||
    byte === 0x2e
  );
}

function hexValue(byte: number): number {
  if (byte >= 0x30 && byte <= 0x39) return byte - 0x30;
  if (byte >= 0x41 && byte <= 0x46) return byte - 0x37;
  if (byte >= 0x61 && byte <= 0x66) return byte - 0x57;
  return -1;
}

type State = 'outside' | 'string' | 'escape' | 'unicode';

/** Rewrites a JSON byte stream into its compact spelling (see the module header). */
export class JsonCompactor {
  #out: Uint8Array;
  #length = 0;
  #state: State = 'outside';
  #pendingSpace = false;
  #last = -1;
  /** Bytes of the `\uXXXX` escape being read (starting with the backslash). */
  #escape: number[] = [];
  /** A high surrogate escape waiting for its low half (its six bytes and its value). */
  #high: { bytes: number[]; value: number } | undefined;

  /** @param limit most compact bytes accepted; {@link push} returns false once it is passed. */
  constructor(readonly limit: number) {
    this.#out = new Uint8Array(Math.min(limit + 16, 64 * 1024));
  }

  /** Compact bytes so far. */
  get length(): number {
    return this.#length;
  }

  #emit(byte: number): void {
    if (this.#length === this.#out.length) {
      const grown = new Uint8Array(Math.min(Math.max(this.#out.length * 2, 1024), this.limit + 16));
      grown.set(this.#out);
      this.#out = grown;
    }
    this.#out[this.#length++] = byte;
    this.#last = byte;
  }

  #emitAll(bytes: readonly number[]): void {
    for (const byte of bytes) this.#emit(byte);
  }

  #emitCodePoint(code: number): void {
    if (code < 0x80) this.#emit(code);
    else if (code < 0x800) {
      this.#emit(0xc0 | (code >> 6));
      this.#emit(0x80 | (code & 0x3f));
    } else if (code < 0x10000) {
      this.#emit(0xe0 | (code >> 12));
      this.#emit(0x80 | ((code >> 6) & 0x3f));
      this.#emit(0x80 | (code & 0x3f));
    } else {
      this.#emit(0xf0 | (code >> 18));
      this.#emit(0x80 | ((code >> 12) & 0x3f));
      this.#emit(0x80 | ((code >> 6) & 0x3f));
      this.#emit(0x80 | (code & 0x3f));
    }
  }

  /** Emits a waiting high surrogate escape unchanged (it had no low half). */
  #flushHigh(): void {
    if (this.#high !== undefined) {
      this.#emitAll(this.#high.bytes);
      this.#high = undefined;
    }
  }

  /** Handles one complete `\uXXXX` escape (`bytes` holds its six bytes). */
  #unicodeEscape(bytes: number[]): void {
    let value = 0;
    for (let i = 2; i < 6; i++) {
      const digit = hexValue(bytes[i] ?? -1);
      if (digit < 0) {
        // Not an escape JSON knows: copy it and let the parser refuse it.
        this.#flushHigh();
        this.#emitAll(bytes);
        return;
      }
      value = value * 16 + digit;
    }
    if (value >= 0xdc00 && value <= 0xdfff && this.#high !== undefined) {
      const code = 0x10000 + ((this.#high.value - 0xd800) << 10) + (value - 0xdc00);
      this.#high = undefined;
      this.#emitCodePoint(code);
      return;
    }
    this.#flushHigh();
    if (value >= 0xd800 && value <= 0xdbff) {
      this.#high = { bytes, value };
      return;
    }
    if (value < 0x20 || value === QUOTE || value === BACKSLASH || (value >= 0xdc00 && value <= 0xdfff)) {
      this.#emitAll(bytes);
      return;
    }
    this.#emitCodePoint(value);
  }

  /** Takes the next chunk. Returns false once the compact text is longer than `limit`. */
  push(chunk: Uint8Array): boolean {
    for (let i = 0; i < chunk.length; i++) {
      // SAFETY: i < chunk.length.
      const byte = chunk[i] as number;
      switch (this.#state) {
        case 'outside':
          if (isWhitespace(byte)) {
            this.#pendingSpace = true;
            continue;
          }
          if (this.#pendingSpace && isWordLike(this.#last) && isWordLike(byte)) this.#emit(SPACE);
          this.#pendingSpace = false;
          this.#emit(byte);
          if (byte === QUOTE) this.#state = 'string';
          break;
        case 'string':
          if (byte === BACKSLASH) {
            this.#state = 'escape';
            continue;
          }
          this.#flushHigh();
          this.#emit(byte);
          if (byte === QUOTE) this.#state = 'outside';
          break;
        case 'escape':
          if (byte === 0x75 /* u */) {
            this.#escape = [BACKSLASH, byte];
            this.#state = 'unicode';
            continue;
          }
          this.#flushHigh();
          if (byte === 0x2f /* / */) this.#emit(byte);
          else {
            this.#emit(BACKSLASH);
            this.#emit(byte);
          }
          this.#state = 'string';
          break;
        case 'unicode':
          this.#escape.push(byte);
          if (this.#escape.length === 6) {
            const bytes = this.#escape;
            this.#escape = [];
            this.#state = 'string';
            this.#unicodeEscape(bytes);
          }
          break;
      }
      if (this.#length > this.limit) return false;
    }
    return true;
  }

  /** The compact text's bytes (call after the last chunk). */
  finish(): Uint8Array {
    this.#flushHigh();
    if (this.#escape.length > 0) {
      this.#emitAll(this.#escape);
      this.#escape = [];
    }
    return this.#out.subarray(0, this.#length);
  }
}
