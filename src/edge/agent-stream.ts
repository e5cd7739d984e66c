/**
 * Transient frames of an agent running inside a SessionObject: token deltas, tool progress, and
 * the partial text of the model response in flight.
 *
 * Ordering comes from where the frames are produced, not from a queue:
 * 1. The object wraps the mounted model: each `text-delta` / `reasoning-delta` part is sent to the
 *    subscribers at the moment the Session reads it from the provider's stream, synchronously.
 *    The Session commits `model_request_completed` only after it read the stream's end, and the
 *    session's log pushes committed events to the sockets synchronously in the commit, so the durable
 *    event always follows the deltas it completes, on every socket.
 * 2. Tool handlers are wrapped the same way: `context.progress(data)` sends a `tool_progress`
 *    frame before returning; `tool_completed` is committed after the handler returned.
 * 3. The response in flight: a committed `model_request_started` opens it (with its request,
 *    turn and model attempt IDs), each delta appends to its text, and the attempt's terminal
 *    event (or the end of its turn) closes it. A socket that connects while it is open gets, right
 *    after its replay and `caught_up` (all synchronous), one `partial_response` frame with the text
 *    so far; the deltas after it follow live. Nothing is missed and nothing is sent twice, because
 *    no delta can be produced between the replay and the `partial_response` frame.
 * 4. Both wrappers first await the host's `beforeIo` (the alarm armed for this run), so no model
 *    or tool I/O starts before an eviction would be followed by an alarm.
 * Nothing here is written to the log; an eviction loses the text in flight (the recovery plan
 * then decides what happens to that model call).
 */
import type { DurableEventEnvelope } from '../protocol/events.js';
import type { JsonValue } from '../protocol/json.js';
import type { TransientSubscriberFrame } from '../protocol/frames.js';
import type { AnySessionTool, SessionLanguageModel, SessionToolContext } from '../session/types.js';

/** The model response being streamed now. */
interface InFlightResponse {
  requestId: string;
  turnId: string;
  modelAttemptId: string;
  text: string;
}

/** Where frames go: every subscribed socket of the session (see `sockets.ts`). */
type FrameSink = (frame: string) => void;

const ATTEMPT_TERMINALS = new Set(['model_request_completed', 'model_request_failed', 'model_request_aborted']);
const TURN_TERMINALS = new Set(['turn_completed', 'turn_aborted', 'request_completed', 'request_failed', 'request_interrupted']);

/** A string field of the event's envelope, else of its data (`modelAttemptId` lives on the envelope). */
function field(event: DurableEventEnvelope, name: string): string | undefined {
  for (const holder of [event as unknown, event.data as unknown]) {
    if (typeof holder !== 'object' || holder === null) continue;
    const value = (holder as Record<string, unknown>)[name];
    if (typeof value === 'string') return value;
  }
  return undefined;
}

/** What the tap reads of a stream part (the same in `LanguageModelV4` and `LanguageModelV3`). */
type TappedPart = { type: string; delta?: unknown };

/**
 * The provider's stream as the Session reads it (`getReader()`, then `read()` until done, then
 * `releaseLock()`), each part tapped when its read resolves, before the Session sees it. No
 * second native stream is piped in between (a pull-through `ReadableStream` here cost more than a
 * tenth of a one-tool turn in the edge-agent bench). A wrapped model's stream only ever reaches
 * the Session (the host wraps the models it hands to it), so only that reading path is offered:
 * any other use (pipes, async iteration) fails loudly rather than skipping the tap.
 */
function tappedStream<P extends TappedPart>(stream: ReadableStream<P>, tap: (part: TappedPart) => void): ReadableStream<P> {
  const tapped = {
    get locked(): boolean {
      return stream.locked;
    },
    cancel: (reason?: unknown): Promise<void> => stream.cancel(reason),
    getReader: () => {
      const reader = stream.getReader();
      return {
        get closed(): Promise<unknown> {
          return reader.closed;
        },
        read: () =>
          reader.read().then((next) => {
            if (!next.done) tap(next.value);
            return next;
          }),
        releaseLock: (): void => reader.releaseLock(),
        cancel: (reason?: unknown): Promise<void> => reader.cancel(reason),
      };
    },
  };
  // SAFETY: the Session reads a model stream through getReader(), read(), releaseLock() and
  // cancel() only (see the comment above); every other member is absent on purpose.
  return tapped as unknown as ReadableStream<P>;
}

/** The live part of an agent's stream (see the module header). */
export class AgentLiveStream {
  readonly #sink: FrameSink;
  readonly #beforeIo: () => Promise<void>;
  #inFlight: InFlightResponse | null = null;

  /** `beforeIo` is awaited before every provider call and tool execution (the host arms its alarm there). */
  constructor(sink: FrameSink, beforeIo: () => Promise<void> = () => Promise.resolve()) {
    this.#sink = sink;
    this.#beforeIo = beforeIo;
  }

  /** The response in flight (a copy), or `null`. */
  get inFlight(): InFlightResponse | null {
    return this.#inFlight === null ? null : { ...this.#inFlight };
  }

  /** Follows committed events: opens and closes the response in flight. Never throws. */
  observe(events: readonly DurableEventEnvelope[]): void {
    for (const event of events) {
      if (event.type === 'model_request_started') {
        const modelAttemptId = field(event, 'modelAttemptId');
        const { requestId, turnId } = event;
        if (modelAttemptId !== undefined && requestId !== undefined && turnId !== undefined) {
          this.#inFlight = { requestId, turnId, modelAttemptId, text: '' };
        }
      } else if (ATTEMPT_TERMINALS.has(event.type)) {
        if (this.#inFlight !== null && field(event, 'modelAttemptId') === this.#inFlight.modelAttemptId) this.#inFlight = null;
      } else if (TURN_TERMINALS.has(event.type)) {
        this.#inFlight = null;
      }
    }
  }

  /** The frame a socket gets after its `caught_up` while a response is in flight (else `undefined`). */
  partialFrame(): string | undefined {
    const open = this.#inFlight;
    if (open === null) return undefined;
    return JSON.stringify({ type: 'partial_response', ...open } satisfies TransientSubscriberFrame);
  }

  /** Forgets the response in flight (the Session stopped locally). */
  reset(): void {
    this.#inFlight = null;
  }

  #delta(kind: 'text_delta' | 'reasoning_delta', delta: string): void {
    const open = this.#inFlight;
    if (open === null || delta.length === 0) return;
    const offset = kind === 'text_delta' ? open.text.length : undefined;
    if (kind === 'text_delta') open.text += delta;
    const frame: TransientSubscriberFrame = {
      type: kind,
      requestId: open.requestId,
      turnId: open.turnId,
      modelAttemptId: open.modelAttemptId,
      delta,
      ...(offset === undefined ? {} : { offset }),
    };
    this.#sink(JSON.stringify(frame));
  }

  /** Wraps a model so each streamed delta reaches the subscribers as the Session reads it. */
  wrapModel(model: SessionLanguageModel): SessionLanguageModel {
    const tap = (part: TappedPart): void => {
      if (typeof part.delta !== 'string') return;
      if (part.type === 'text-delta') this.#delta('text_delta', part.delta);
      else if (part.type === 'reasoning-delta') this.#delta('reasoning_delta', part.delta);
    };
    // One literal per specification version: the wrapper keeps the model's version (and so the
    // prompt shape the Session hands it), and TypeScript checks each against its own type.
    if (model.specificationVersion === 'v3') {
      return {
        specificationVersion: 'v3',
        provider: model.provider,
        modelId: model.modelId,
        get supportedUrls() {
          return model.supportedUrls;
        },
        doGenerate: async (options) => {
          await this.#beforeIo();
          return model.doGenerate(options);
        },
        doStream: async (options) => {
          await this.#beforeIo();
          const result = await model.doStream(options);
          return { ...result, stream: tappedStream(result.stream, tap) };
        },
      };
    }
    return {
      specificationVersion: 'v4',
      provider: model.provider,
      modelId: model.modelId,
      get supportedUrls() {
        return model.supportedUrls;
      },
      doGenerate: async (options) => {
        await this.#beforeIo();
        return model.doGenerate(options);
      },
      doStream: async (options) => {
        await this.#beforeIo();
        const result = await model.doStream(options);
        return { ...result, stream: tappedStream(result.stream, tap) };
      },
    };
  }

  /** Wraps tools so `context.progress(data)` also reaches the subscribers. */
  wrapTools(tools: Readonly<Record<string, AnySessionTool>>): Record<string, AnySessionTool> {
    const wrapped: Record<string, AnySessionTool> = {};
    for (const [name, tool] of Object.entries(tools)) {
      wrapped[name] = {
        ...tool,
        execute: async (input: never, context: SessionToolContext) => {
          await this.#beforeIo();
          const { requestId, turnId, toolAttemptId, toolCallId, toolName } = context;
          const progress = (data: JsonValue): void => {
            // The Session always sets the Request's IDs (only a run leaves them out).
            if (requestId !== undefined && turnId !== undefined && toolAttemptId !== undefined) {
              const frame: TransientSubscriberFrame = { type: 'tool_progress', requestId, turnId, toolAttemptId, toolCallId, toolName, data };
              this.#sink(JSON.stringify(frame));
            }
            context.progress(data);
          };
          return tool.execute(input, { ...context, progress });
        },
      };
    }
    return wrapped;
  }
}
