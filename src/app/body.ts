/**
 * Bounded JSON request bodies.
 *
 * 1. A declared `Content-Length` above the wire limit ({@link maxWireBytes}: eight times the
 *    limit) is refused before a byte is parsed.
 * 2. Otherwise the body stream is read chunk by chunk and rewritten into its compact spelling
 *    ({@link JsonCompactor}: no whitespace, no needless `\u` escapes), whose length is what the
 *    limit counts; crossing it (or the wire limit) refuses. So a batch the
 *    stores accept fits whatever the client's encoder escaped (Python's `json.dumps` escapes all
 *    non-ASCII, Go's `encoding/json` escapes `<>&`), and only compact bytes sit in memory.
 * 3. The bytes must be UTF-8 and JSON; anything else is `DURABLE_EVENT_INVALID_INPUT`.
 * Refusals for size carry `DURABLE_EVENT_LIMIT_EXCEEDED` (413), answered whatever the size. The
 * stream is never cancelled (the runtime then resets the connection while the client still
 * writes, and many clients never read the 413):
 * - the rest of a refused body is read and dropped, never kept, up to
 *   {@link MAX_DISCARDED_BODY_BYTES} in all, so a client that writes its whole body before it
 *   reads the answer (Python's `http.client`, say) sees the 413;
 * - a declared length above that budget, or a client waiting for `100 Continue`, is answered at
 *   once without reading anything ({@link abandon}), and a body without a declared length stops
 *   being read at the budget: the runtime closes the connection after the answer, which clients
 *   that read while they write (curl, fetch) get whatever the size.
 */
import { DurableEventStoreError } from '../protocol/errors.js';
import { JsonCompactor } from '../protocol/json-compactor.js';
import { MAX_BATCH_BYTES } from '../protocol/limits.js';

/**
 * Largest request body in compact JSON: a full batch plus room for JSON framing and the fence
 * (drafts are measured as stored envelopes, which are larger than the drafts themselves).
 */
export const MAX_REQUEST_BODY_BYTES = MAX_BATCH_BYTES + 1024 * 1024;
/** Wire bytes allowed per compact byte: six for `\u`-escaped ASCII (Go escapes `<>&`), plus indentation. */
const WIRE_BYTES_PER_COMPACT_BYTE = 8;
/** Largest body of the small control routes (leases, tokens). */
export const MAX_CONTROL_BODY_BYTES = 64 * 1024;
/** Most bytes of a refused body read (and dropped) so the client sees the 413 (see the module header). */
const MAX_DISCARDED_BODY_BYTES = 128 * 1024 * 1024;

/** Reads and drops the rest of a stream, at most `budget` more bytes; then stops reading, without cancelling. */
async function discardRest(reader: ReadableStreamDefaultReader<Uint8Array>, budget: number): Promise<void> {
  let left = budget;
  try {
    while (left > 0) {
      const { done, value } = await reader.read();
      if (done) return;
      left -= value.byteLength;
    }
  } catch {
    // The client went away; the 413 is still the answer.
  }
}

/**
 * Gives up on a refused body nothing has read: reads no more than one chunk of it and leaves the
 * stream as it is (not cancelled). Starting a read (never awaited) marks the body used, so
 * nothing downstream drains it before the answer goes out: `wrangler dev` wraps the Worker in a
 * middleware that reads an unused body to its end first, which for a large or endless upload
 * means no answer at all.
 */
function abandon(request: Request): void {
  if (request.bodyUsed) return;
  request.body?.getReader().read().catch(() => undefined);
}

function tooLarge(limit: number, actual?: number): DurableEventStoreError {
  return new DurableEventStoreError(
    'DURABLE_EVENT_LIMIT_EXCEEDED',
    `the request body exceeds ${limit} bytes`,
    { details: { limit, ...(actual === undefined ? {} : { actual }) } },
  );
}

function invalid(message: string): DurableEventStoreError {
  return new DurableEventStoreError('DURABLE_EVENT_INVALID_INPUT', message);
}

/**
 * Refuses a body whose `Content-Length` is malformed (400) or above `wireLimit` (413, reporting
 * `limit`), before parsing any of it: up to {@link MAX_DISCARDED_BODY_BYTES} it is read and
 * dropped first, past that it is abandoned (see the module header).
 */
async function refuseDeclaredLength(request: Request, wireLimit: number, limit: number): Promise<void> {
  const declared = request.headers.get('content-length');
  if (declared === null) return;
  const length = /^[0-9]{1,16}$/.test(declared) ? Number(declared) : Number.NaN;
  if (!Number.isSafeInteger(length)) {
    abandon(request);
    throw invalid('Content-Length is not a valid length');
  }
  if (length > wireLimit) {
    const body = request.body;
    // A client waiting for `100 Continue` has sent nothing and sends nothing until then: answer at once.
    const waits = /^\s*100-continue\s*$/i.test(request.headers.get('expect') ?? '');
    if (body !== null && length <= MAX_DISCARDED_BODY_BYTES && !waits) await discardRest(body.getReader(), length);
    else abandon(request);
    throw tooLarge(limit, length);
  }
}

/**
 * Most bytes on the wire for a JSON body whose compact form may take `maxBytes`: escaping one
 * UTF-8 byte as `\u003c` takes six, and indentation adds a little on top.
 */
function maxWireBytes(maxBytes: number): number {
  return WIRE_BYTES_PER_COMPACT_BYTE * maxBytes;
}

/**
 * Reads a JSON body and returns its compact spelling ({@link JsonCompactor}), refusing with 413
 * when the compact form exceeds `maxBytes` or the wire bytes exceed {@link maxWireBytes}. Only the
 * compact bytes are kept, so the limit means the same for every JSON encoder a client may use.
 */
async function readCompactJsonBytes(request: Request, maxBytes: number): Promise<Uint8Array> {
  const wireLimit = maxWireBytes(maxBytes);
  await refuseDeclaredLength(request, wireLimit, maxBytes);
  const body = request.body;
  if (body === null) return new Uint8Array(0);
  const reader = body.getReader();
  const compactor = new JsonCompactor(maxBytes);
  let wire = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    wire += value.byteLength;
    if (wire > wireLimit || !compactor.push(value)) {
      await discardRest(reader, MAX_DISCARDED_BODY_BYTES - wire);
      throw tooLarge(maxBytes);
    }
  }
  return compactor.finish();
}

/**
 * Reads and parses a JSON body whose compact form takes at most `maxBytes` (see
 * {@link readCompactJsonBytes}). An empty body is `undefined`.
 */
export async function readJsonBody(request: Request, maxBytes: number): Promise<unknown> {
  const bytes = await readCompactJsonBytes(request, maxBytes);
  if (bytes.byteLength === 0) return undefined;
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(bytes);
  } catch {
    throw invalid('the request body is not valid UTF-8');
  }
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw invalid('the request body is not valid JSON');
  }
}
