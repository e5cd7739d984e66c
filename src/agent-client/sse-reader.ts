/**
 * A Server-Sent Events parser over a fetch response body (WHATWG `text/event-stream` rules), so
 * the agent client streams with `fetch` alone: it runs in browsers, Workers and Node 20, sends an
 * `Authorization` header (EventSource cannot), and controls its own reconnects.
 *
 * Lines end with CRLF, LF or CR; a blank line dispatches the message; `:` starts a comment;
 * several `data:` lines join with LF; one space after the colon is dropped. A message without
 * `data` is not dispatched (as in EventSource); `retry` is ignored (the client has its own delays).
 */

/** One dispatched message. */
interface SseMessage {
  /** `event:` field, `message` when absent. */
  readonly event: string;
  readonly data: string;
  /** `id:` field of this message, when it had one. */
  readonly id: string | undefined;
}

/** Reads the messages of an SSE body in order; ends when the body ends. */
export async function* readSseMessages(body: ReadableStream<Uint8Array>): AsyncGenerator<SseMessage, void, undefined> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  let event = '';
  let data: string[] = [];
  let id: string | undefined;
  /** A CR ended the last chunk: a LF at the start of the next one belongs to it. */
  let pendingCr = false;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      buffer += done ? decoder.decode() : decoder.decode(value, { stream: true });
      if (pendingCr && buffer.startsWith('\n')) buffer = buffer.slice(1);
      pendingCr = false;
      for (;;) {
        const end = buffer.search(/[\r\n]/);
        if (end < 0) break;
        // A CR as the last character may be half of a CRLF split across chunks.
        if (buffer[end] === '\r' && end === buffer.length - 1 && !done) {
          pendingCr = true;
        }
        const line = buffer.slice(0, end);
        const width = buffer[end] === '\r' && buffer[end + 1] === '\n' ? 2 : 1;
        buffer = buffer.slice(end + width);
        if (line === '') {
          if (data.length > 0) yield { event: event === '' ? 'message' : event, data: data.join('\n'), id };
          event = '';
          data = [];
          id = undefined;
          continue;
        }
        if (line.startsWith(':')) continue;
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        let value = colon < 0 ? '' : line.slice(colon + 1);
        if (value.startsWith(' ')) value = value.slice(1);
        if (field === 'event') event = value;
        else if (field === 'data') data.push(value);
        else if (field === 'id' && !value.includes('\0')) id = value;
      }
      if (done) return;
    }
  } finally {
    // Ends the connection when the consumer stops early (a no-op once the body ended or failed).
    reader.cancel().catch(() => undefined);
  }
}
