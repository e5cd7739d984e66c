/**
 * Bounded JSON request bodies.
 *
 * 1. A declared `Content-Length` above the limit is refused before a byte is read.
 * 2. Otherwise the body stream is read chunk by chunk with a running byte count; crossing the
 *    limit cancels the stream and refuses, so a chunked or lying upload never sits in memory
 *    beyond the limit.
 * 3. The bytes must be UTF-8 and JSON; anything else is `DURABLE_EVENT_INVALID_INPUT`.
 * Refusals for size carry `DURABLE_EVENT_LIMIT_EXCEEDED` (413). Before answering, the rest of an
 * oversized upload is read and discarded (never kept) up to {@link MAX_DISCARDED_BODY_BYTES}:
 * many HTTP/1.1 clients fail with a connection reset instead of reading the 413 when the server
 * stops reading mid-upload. Past that budget the stream is cancelled.
 */
import { DurableEventStoreError } from '../protocol/errors.js';
import { MAX_BATCH_BYTES } from '../protocol/limits.js';

/**
 * Largest request body: a full batch plus room for JSON framing, the fence and escaping
 * (drafts are measured as stored envelopes, which are larger than the drafts themselves).
 */
export const MAX_REQUEST_BODY_BYTES = MAX_BATCH_BYTES + 1024 * 1024;
/** Largest body of the small control routes (leases, tokens). */
export const MAX_CONTROL_BODY_BYTES = 64 * 1024;
/** Most bytes of an oversized upload read (and dropped) so the client can see the 413. */
export const MAX_DISCARDED_BODY_BYTES = 64 * 1024 * 1024;

/** Reads and drops the rest of a stream, up to `budget` bytes; cancels it past that. */
async function discardRest(reader: ReadableStreamDefaultReader<Uint8Array>, budget: number): Promise<void> {
  let remaining = budget;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      remaining -= value.byteLength;
      if (remaining < 0) {
        await reader.cancel();
        return;
      }
    }
  } catch {
    // The client went away; the 413 is still the answer.
  }
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

/** Reads at most `maxBytes` of the body; throws `DURABLE_EVENT_LIMIT_EXCEEDED` past it. */
export async function readBoundedBytes(request: Request, maxBytes: number): Promise<Uint8Array> {
  const declared = request.headers.get('content-length');
  if (declared !== null) {
    const length = /^[0-9]{1,16}$/.test(declared) ? Number(declared) : Number.NaN;
    if (!Number.isSafeInteger(length)) throw invalid('Content-Length is not a valid length');
    if (length > maxBytes) {
      const body = request.body;
      if (body !== null && length <= MAX_DISCARDED_BODY_BYTES) await discardRest(body.getReader(), MAX_DISCARDED_BODY_BYTES);
      throw tooLarge(maxBytes, length);
    }
  }
  const body = request.body;
  if (body === null) return new Uint8Array(0);
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > maxBytes) {
      await discardRest(reader, MAX_DISCARDED_BODY_BYTES - total);
      throw tooLarge(maxBytes);
    }
    chunks.push(value);
  }
  const out = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    out.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return out;
}

/** Reads and parses a JSON body of at most `maxBytes`. An empty body is `undefined`. */
export async function readJsonBody(request: Request, maxBytes: number): Promise<unknown> {
  const bytes = await readBoundedBytes(request, maxBytes);
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
