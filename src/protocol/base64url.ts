/**
 * Base64url (RFC 4648 section 5, no padding) over bytes, without `node:buffer` or `btoa`, so it
 * runs the same in Node, browsers and Workers. Decoding is strict: only the url-safe alphabet,
 * no padding, no impossible lengths, no stray low bits; any other input yields `undefined`.
 */

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
const LOOKUP = new Int16Array(128).fill(-1);
for (let index = 0; index < ALPHABET.length; index++) LOOKUP[ALPHABET.charCodeAt(index)] = index;

function sextet(n: number, shift: number): string {
  return ALPHABET.charAt((n >> shift) & 63);
}

/** Encodes bytes as unpadded base64url. */
export function encodeBase64Url(bytes: Uint8Array): string {
  let out = '';
  // `?? 0` only satisfies noUncheckedIndexedAccess: the loop bounds keep indices in range.
  for (let index = 0; index < bytes.length; index += 3) {
    const remaining = bytes.length - index;
    const n = ((bytes[index] ?? 0) << 16) | ((bytes[index + 1] ?? 0) << 8) | (bytes[index + 2] ?? 0);
    out += sextet(n, 18) + sextet(n, 12);
    if (remaining > 1) out += sextet(n, 6);
    if (remaining > 2) out += sextet(n, 0);
  }
  return out;
}

/** Decodes unpadded base64url; `undefined` for any text base64url encoding cannot produce. */
export function decodeBase64Url(text: string): Uint8Array | undefined {
  if (text.length % 4 === 1) return undefined;
  const bytes = new Uint8Array(Math.floor((text.length * 3) / 4));
  let out = 0;
  for (let index = 0; index < text.length; index += 4) {
    const chunk = Math.min(4, text.length - index);
    let n = 0;
    for (let offset = 0; offset < 4; offset++) {
      let value = 0;
      if (offset < chunk) {
        const code = text.charCodeAt(index + offset);
        value = code < 128 ? (LOOKUP[code] ?? -1) : -1;
        if (value < 0) return undefined;
      }
      n = (n << 6) | value;
    }
    bytes[out++] = (n >> 16) & 255;
    if (chunk > 2) bytes[out++] = (n >> 8) & 255;
    else if ((n & 0xffff) !== 0) return undefined;
    if (chunk > 3) bytes[out++] = n & 255;
    else if (chunk === 3 && (n & 0xff) !== 0) return undefined;
  }
  return bytes;
}
