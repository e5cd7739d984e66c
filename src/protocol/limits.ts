/**
 * Size and time limits. Every limit carries its unit in its name.
 *
 * The outer bound is the Durable Object's 2 MB row: the SQL backend stores one event per row,
 * so an encoded event must stay well below it. Batches are bounded in count and bytes so that
 * one append stays one bounded write (one JSONL line, one SQLite transaction, one RPC message).
 */

/** Most events one `append` may carry. */
export const MAX_BATCH_EVENTS = 1000;
/** Most UTF-8 bytes of one encoded event envelope. */
export const MAX_EVENT_BYTES = 1024 * 1024;
/** Most UTF-8 bytes of one encoded batch (sum of its encoded events). */
export const MAX_BATCH_BYTES = 8 * 1024 * 1024;
/** Largest page `read` serves. */
export const MAX_READ_LIMIT = 1000;
/**
 * Most encoded bytes (UTF-8 of the stored envelopes) one page of events carries. A page stops
 * early, with `hasMore: true`, before the event that would pass it; the first event of a page
 * always comes, even one larger than the budget. Keeps every page far below the Durable Object
 * RPC's 32 MiB message cap and an HTTP response, SSE or WebSocket replay page bounded.
 */
export const MAX_READ_PAGE_BYTES = 4 * 1024 * 1024;
/** Page size when `limit` is omitted. */
export const DEFAULT_READ_LIMIT = 100;
/** Longest free-text field (messages, text parts, reasons), in UTF-16 code units. */
export const MAX_TEXT_LENGTH = 512 * 1024;
/** Deepest nesting of a stored JSON value. */
export const MAX_JSON_DEPTH = 64;
/** Default deadline of one journal, subscription, coordinator or lease store call. */
export const DEFAULT_STORE_TIMEOUT_MS = 15_000;
/** Upper bound of any configured store deadline. */
export const MAX_DURABLE_STORE_TIMEOUT_MS = 300_000;

/** Shortest lease TTL a store accepts. */
export const MIN_LEASE_TTL_MS = 10;
/** Longest lease TTL a store accepts (one day). */
export const MAX_LEASE_TTL_MS = 24 * 60 * 60 * 1000;
