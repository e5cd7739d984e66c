/**
 * Public surface of the protocol layer: branded ids, errors, limits, lossless JSON, the v4 event
 * types and schemas, and cursors. Runtime-neutral: nothing here imports `node:*` or `cloudflare:*`.
 */
export * from './ids.js';
export * from './errors.js';
export * from './limits.js';
export * from './json.js';
export * from './events.js';
export * from './cursor.js';
export { encodeBase64Url, decodeBase64Url } from './base64url.js';
export * from './recovery-operations.js';
export * from './http-paths.js';
export * from './frames.js';
