/**
 * Base64url (RFC 4648 section 5, no padding) over bytes, without `node:buffer` or `btoa`, so it
 * runs the same in Node, browsers and Workers. Decoding is strict: only the url-safe alphabet,
 * no padding, no impossible lengths, no stray low bits; any other input yields `undefined`.
 *
 * Both directions go through byte arrays and the platform's UTF-8 codec (the text is ASCII), not
 * through one string operation per character: a 20 MiB checkpoint record took 4-7 s to encode
 * character by character, long enough to stall an HTTP client's event loop past its server's
 * keep-alive timeout (the next request then went out on a closed socket: `EPIPE`).
 */

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
/** The ASCII code of each sextet's character. */
const CODES = new Uint8Array(64);
/** The sextet of each byte value, -1 outside the alphabet. */
const LOOKUP = new Int16Array(256).fill(-1);
for (let index = 0; index < ALPHABET.length; index++) {
  CODES[index] = ALPHABET.charCodeAt(index);
  LOOKUP[ALPHABET.charCodeAt(index)] = index;
}
const ascii = new TextDecoder();
const utf8 = new TextEncoder();

/** Encodes bytes as unpadded base64url. */
export function encodeBase64Url(bytes: Uint8Array): string {
  const length = bytes.length;
  const full = length - (length % 3);
  const out = new Uint8Array(Math.ceil((length * 4) / 3));
  let o = 0;
  // SAFETY (every indexed read below): the loop bounds keep indices within `bytes`, `CODES` and `out`.
  for (let index = 0; index < full; index += 3) {
    const n = ((bytes[index] as number) << 16) | ((bytes[index + 1] as number) << 8) | (bytes[index + 2] as number);
    out[o++] = CODES[n >>> 18] as number;
    out[o++] = CODES[(n >>> 12) & 63] as number;
    out[o++] = CODES[(n >>> 6) & 63] as number;
    out[o++] = CODES[n & 63] as number;
  }
  if (length - full > 0) {
    const n = ((bytes[full] as number) << 16) | (length - full > 1 ? (bytes[full + 1] as number) << 8 : 0);
    out[o++] = CODES[n >>> 18] as number;
    out[o++] = CODES[(n >>> 12) & 63] as number;
    if (length - full > 1) out[o++] = CODES[(n >>> 6) & 63] as number;
  }
  return ascii.decode(out);
}

/** Decodes unpadded base64url; `undefined` for any text base64url encoding cannot produce. */
export function decodeBase64Url(text: string): Uint8Array | undefined {
  const length = text.length;
  if (length % 4 === 1) return undefined;
  const codes = utf8.encode(text);
  // Any character outside ASCII takes more than one byte: not base64url.
  if (codes.length !== length) return undefined;
  const bytes = new Uint8Array(Math.floor((length * 3) / 4));
  const full = length - (length % 4);
  let o = 0;
  // SAFETY (every indexed read below): the loop bounds keep indices within `codes`, `LOOKUP` (256
  // entries, byte values) and `bytes`.
  for (let index = 0; index < full; index += 4) {
    const a = LOOKUP[codes[index] as number] as number;
    const b = LOOKUP[codes[index + 1] as number] as number;
    const c = LOOKUP[codes[index + 2] as number] as number;
    const d = LOOKUP[codes[index + 3] as number] as number;
    if ((a | b | c | d) < 0) return undefined;
    const n = (a << 18) | (b << 12) | (c << 6) | d;
    bytes[o++] = n >>> 16;
    bytes[o++] = (n >>> 8) & 255;
    bytes[o++] = n & 255;
  }
  const rest = length - full;
  if (rest === 0) return bytes;
  const a = LOOKUP[codes[full] as number] as number;
  const b = LOOKUP[codes[full + 1] as number] as number;
  const c = rest === 3 ? (LOOKUP[codes[full + 2] as number] as number) : 0;
  if ((a | b | c) < 0) return undefined;
  const n = (a << 18) | (b << 12) | (c << 6);
  // The bits past the last whole byte must be zero (else two texts would decode alike).
  if (rest === 2 ? (n & 0xffff) !== 0 : (n & 0xff) !== 0) return undefined;
  bytes[o++] = n >>> 16;
  if (rest === 3) bytes[o++] = (n >>> 8) & 255;
  return bytes;
}
