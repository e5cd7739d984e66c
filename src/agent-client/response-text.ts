/**
 * Keeps the text of each model response in flight as the consumer has seen it, so the stream
 * hands out token deltas that follow each other exactly, across reconnects.
 *
 * The server sends `text_delta` frames with the `offset` where each starts, and, right after
 * `caught_up` of every connection, one `partial_response` with the whole text so far. After a
 * reconnect the consumer already has part of that text: the partial is turned into a delta with
 * only what is new (nothing when nothing is), and a delta that overlaps what was seen is trimmed.
 * A fresh stream that joins mid-answer gets the text so far as one delta at offset 0. Only when
 * the text does not extend what the consumer saw (a delta was skipped, never sent again) does
 * the `partial_response` go through, meaning "replace the text of this attempt".
 */
import type { SubscriberDeltaFrame, SubscriberPartialResponseFrame } from '../protocol/frames.js';

interface Seen {
  text: string;
  /** False after a gap: `text` no longer matches the response's text at its offsets. */
  exact: boolean;
}

/** Per-stream text tracker (see the module header). */
export class ResponseTextTracker {
  readonly #seen = new Map<string, Seen>();

  /** The text delta to hand out for `frame`, or `undefined` when the consumer has all of it. */
  delta(frame: SubscriberDeltaFrame): SubscriberDeltaFrame | undefined {
    const seen = this.#seen.get(frame.modelAttemptId) ?? { text: '', exact: true };
    const offset = frame.offset ?? seen.text.length;
    if (!seen.exact || offset > seen.text.length) {
      // A gap: hand the delta out as the server sent it; the next partial_response replaces.
      this.#seen.set(frame.modelAttemptId, { text: seen.text + frame.delta, exact: false });
      return frame;
    }
    const fresh = frame.delta.slice(seen.text.length - offset);
    if (fresh === '') return undefined;
    this.#seen.set(frame.modelAttemptId, { text: seen.text + fresh, exact: true });
    return { ...frame, delta: fresh, offset: seen.text.length };
  }

  /** What to hand out for a `partial_response`: the new tail as a delta, the frame itself, or nothing. */
  partial(frame: SubscriberPartialResponseFrame): SubscriberDeltaFrame | SubscriberPartialResponseFrame | undefined {
    const seen = this.#seen.get(frame.modelAttemptId) ?? { text: '', exact: true };
    this.#seen.set(frame.modelAttemptId, { text: frame.text, exact: true });
    if (!seen.exact || !frame.text.startsWith(seen.text)) return frame;
    if (frame.text.length === seen.text.length) return undefined;
    return {
      type: 'text_delta',
      requestId: frame.requestId,
      turnId: frame.turnId,
      modelAttemptId: frame.modelAttemptId,
      delta: frame.text.slice(seen.text.length),
      offset: seen.text.length,
    };
  }

  /** Forgets an attempt whose terminal event arrived. */
  settle(modelAttemptId: string): void {
    this.#seen.delete(modelAttemptId);
  }
}
