/**
 * Subscription frames: ONE declaration of what a subscriber receives, runtime-neutral.
 *
 * The session object sends these as WebSocket text frames; the SSE route sends the same objects
 * as `data:` lines with `event: <type>` (and `id:` = the cursor of `event` frames). Each kind is a
 * row of {@link SUBSCRIPTION_FRAME_KINDS}: its zod schema (used by {@link parseSubscriptionFrame},
 * the HTTP client, the tests and the OpenAPI document) and whether it is `transient`.
 *
 * 1. `event` frames replay the log from the subscriber's cursor, in order, each with the encoded
 *    cursor of that event (save it to resume exactly after it); then one per committed event.
 * 2. One `caught_up` frame marks the end of the replay: every event up to `headSequence` was sent.
 * 3. On a refused subscription (bad, foreign or stale cursor; wrong session) one `error` frame,
 *    then the socket closes with {@link SUBSCRIBER_POLICY_CLOSE_CODE}.
 * 4. `durability` frames announce each durability record (step, sleep, wait...) after its commit;
 *    best effort (the durability records hold it).
 * A text frame `ping` is answered with `pong` without waking the object.
 *
 * 5. While the session object runs an agent (`docs/edge-agents.md`): `text_delta` /
 *    `reasoning_delta` (token deltas of the model response in flight, sent before the event that
 *    completes them), `partial_response` (once after `caught_up`: the text so far) and
 *    `tool_progress`.
 * Transient kinds (progress that is not a fact of the log, such as token deltas or tool progress)
 * are rows with `transient: true`: never replayed, never carrying a cursor, and a client that does
 * not know a kind ignores it ({@link parseSubscriptionFrame} answers `undefined`), so adding a kind
 * is one row here.
 */
import { z } from 'zod';
import { durableEventEnvelopeSchema, eventSequenceSchema, sessionIdSchema, type DurableEventEnvelope } from './events.js';
import type { EventSequence, SessionId } from './ids.js';
import { parsedJsonValueSchema, type JsonValue } from './json.js';

/** One replayed or live event. */
export interface SubscriberEventMessage {
  type: 'event';
  event: DurableEventEnvelope;
  /** `encodeDurableEventCursor` of this event. */
  cursor: string;
}

/** End of the replay. */
export interface SubscriberCaughtUpMessage {
  type: 'caught_up';
  headSequence: EventSequence | null;
}

/**
 * The subscription was refused, or (code {@link SUBSCRIBER_SLOW_ERROR_CODE}) the subscriber fell
 * behind; either way the socket closes next.
 */
export interface SubscriberErrorMessage {
  type: 'error';
  code: string;
  message: string;
}

/**
 * A durability record as a frame carries it: the stored fields every record has, plus the fields
 * of its kind (see `DurabilityRecord` in `agent-ledger`).
 */
export interface DurabilityFrameRecord {
  sequence: number;
  sessionId: SessionId;
  recordedAt: string;
  kind: string;
}

/** A durability record was committed (best effort). */
export interface SubscriberDurabilityFrame<R extends DurabilityFrameRecord = DurabilityFrameRecord> {
  type: 'durability';
  record: R;
}

/** A token or reasoning delta of the model response in flight (agent sessions). */
export interface SubscriberDeltaFrame {
  type: 'text_delta' | 'reasoning_delta';
  requestId: string;
  turnId: string;
  modelAttemptId: string;
  delta: string;
  /** `text_delta` only: where the delta starts in the response text. */
  offset?: number;
}

/** The text so far of the model response in flight, sent once after `caught_up`. */
export interface SubscriberPartialResponseFrame {
  type: 'partial_response';
  requestId: string;
  turnId: string;
  modelAttemptId: string;
  text: string;
}

/** Progress reported by a running tool. */
export interface SubscriberToolProgressFrame {
  type: 'tool_progress';
  requestId: string;
  turnId: string;
  toolAttemptId: string;
  toolCallId: string;
  toolName: string;
  data: JsonValue;
}

/** Transient frames of an agent running in the session object (never in the log, never replayed). */
export type TransientSubscriberFrame = SubscriberDeltaFrame | SubscriberPartialResponseFrame | SubscriberToolProgressFrame;

function agentDeltaSchema<T extends 'text_delta' | 'reasoning_delta'>(type: T) {
  return z.strictObject({
    type: z.literal(type),
    requestId: z.string(),
    turnId: z.string(),
    modelAttemptId: z.string(),
    delta: z.string(),
  });
}

/** One row of {@link SUBSCRIPTION_FRAME_KINDS}. */
export interface SubscriptionFrameKind {
  /** Validates a decoded frame of this kind. */
  readonly schema: z.ZodType;
  /** True for progress that is not a log fact: never replayed, no cursor. */
  readonly transient: boolean;
  readonly description: string;
}

/** Every frame kind a subscriber may receive, by `type`. */
export const SUBSCRIPTION_FRAME_KINDS = {
  event: {
    schema: z
      .strictObject({ type: z.literal('event'), event: durableEventEnvelopeSchema, cursor: z.string() })
      .meta({ id: 'SubscriptionEventFrame', description: 'One replayed or live event, with the cursor to resume after it.' }),
    transient: false,
    description: 'One replayed or live event, with the cursor to resume after it.',
  },
  caught_up: {
    schema: z
      .strictObject({ type: z.literal('caught_up'), headSequence: eventSequenceSchema.nullable() })
      .meta({ id: 'SubscriptionCaughtUpFrame', description: 'End of the replay: every event up to headSequence was sent.' }),
    transient: false,
    description: 'End of the replay: every event up to headSequence was sent.',
  },
  error: {
    schema: z
      .strictObject({ type: z.literal('error'), code: z.string(), message: z.string() })
      .meta({ id: 'SubscriptionErrorFrame', description: 'The subscription was refused; the connection closes next.' }),
    transient: false,
    description: 'The subscription was refused; the connection closes next.',
  },
  durability: {
    schema: z
      .strictObject({
        type: z.literal('durability'),
        record: z.looseObject({
          sequence: z.number().int().min(1),
          sessionId: sessionIdSchema,
          recordedAt: z.string(),
          kind: z.string(),
        }),
      })
      .meta({ id: 'SubscriptionDurabilityFrame', description: 'A durability record was committed (best effort).' }),
    transient: true,
    description: 'A durability record was committed (best effort; the durability records hold it).',
  },
  text_delta: {
    schema: agentDeltaSchema('text_delta')
      .extend({ offset: z.number().int().min(0) })
      .meta({
        id: 'SubscriptionTextDeltaFrame',
        description: 'A token delta of the model response in flight; offset is its position in the response text.',
      }),
    transient: true,
    description:
      'A token delta of the model response in flight (agent sessions run in the object). `offset` is where it starts in the ' +
      'response text, so a client that applied a `partial_response` can place it exactly.',
  },
  reasoning_delta: {
    schema: agentDeltaSchema('reasoning_delta').meta({
      id: 'SubscriptionReasoningDeltaFrame',
      description: 'A reasoning delta of the model response in flight.',
    }),
    transient: true,
    description: 'A reasoning delta of the model response in flight (not part of the response text).',
  },
  partial_response: {
    schema: z
      .strictObject({
        type: z.literal('partial_response'),
        requestId: z.string(),
        turnId: z.string(),
        modelAttemptId: z.string(),
        text: z.string(),
      })
      .meta({
        id: 'SubscriptionPartialResponseFrame',
        description: 'Sent once after caught_up when a model response is in flight: its text so far; live deltas follow.',
      }),
    transient: true,
    description:
      'Sent once right after `caught_up` when a model response is streaming: its text so far. The next `text_delta` of that ' +
      'attempt has `offset` equal to the length of this text.',
  },
  tool_progress: {
    schema: z
      .strictObject({
        type: z.literal('tool_progress'),
        requestId: z.string(),
        turnId: z.string(),
        toolAttemptId: z.string(),
        toolCallId: z.string(),
        toolName: z.string(),
        data: parsedJsonValueSchema,
      })
      .meta({ id: 'SubscriptionToolProgressFrame', description: 'Progress a running tool reported (not in the log).' }),
    transient: true,
    description: 'Progress a running tool reported through `context.progress(data)`; the tool outcome event follows it.',
  },
} as const satisfies Record<string, SubscriptionFrameKind>;

/** A frame `type`. */
export type SubscriptionFrameType = keyof typeof SUBSCRIPTION_FRAME_KINDS;

/** The frames of the event stream (replayed and live log facts, end of replay, refusal). */
export type SubscriberMessage = SubscriberEventMessage | SubscriberCaughtUpMessage | SubscriberErrorMessage;

/** Any frame a subscriber may receive (besides `pong`). */
export type SubscriptionFrame = SubscriberMessage | SubscriberDurabilityFrame | TransientSubscriberFrame;

/** The zod schema of any frame (a discriminated union of the rows), for OpenAPI and tests. */
export const subscriptionFrameSchema = z
  .discriminatedUnion('type', [
    SUBSCRIPTION_FRAME_KINDS.event.schema,
    SUBSCRIPTION_FRAME_KINDS.caught_up.schema,
    SUBSCRIPTION_FRAME_KINDS.error.schema,
    SUBSCRIPTION_FRAME_KINDS.durability.schema,
    SUBSCRIPTION_FRAME_KINDS.text_delta.schema,
    SUBSCRIPTION_FRAME_KINDS.reasoning_delta.schema,
    SUBSCRIPTION_FRAME_KINDS.partial_response.schema,
    SUBSCRIPTION_FRAME_KINDS.tool_progress.schema,
  ])
  .meta({
    id: 'SubscriptionMessage',
    description:
      'One WebSocket text message. SSE sends the same objects as `data:` with `event: <type>` and, for events, `id:` set to the cursor.',
  });

/** WebSocket close code after an `error` frame (1008: policy violation). */
export const SUBSCRIBER_POLICY_CLOSE_CODE = 1008;

// ---- Flow control (client -> object): acknowledgements ------------------------------------------
//
// The session object cannot see how much of what it sent a socket still sits in buffers (the
// runtime does not expose `bufferedAmount` on server-side WebSockets), so the client tells it: a
// client that subscribes with `?ack=1` sends `{ "type": "ack", "bytes": N }` text frames, where N
// is the cumulative UTF-8 size of every text frame it has received AND processed on this socket
// (`pong` excluded). The object keeps at most one window of unacknowledged bytes per socket (and a
// total per object): replay continues page by page as acks arrive, and a socket that cannot keep
// up is closed with {@link SUBSCRIBER_SLOW_CLOSE_CODE}; the client reconnects after its cursor.
// A client that does not send `ack=1` (older clients) gets at most one window per connection and
// is then closed with the same code. See docs/http-api.md ("Flow control").

/**
 * WebSocket close code of a subscriber that fell too far behind (or never acknowledged): reconnect
 * at once, resuming after the cursor of the last `event` frame received. Nothing is lost.
 */
export const SUBSCRIBER_SLOW_CLOSE_CODE = 4008;
/**
 * Code of the `error` frame the object sends right before it closes a socket with
 * {@link SUBSCRIBER_SLOW_CLOSE_CODE}. A client may reconnect as soon as it reads this frame rather
 * than wait for the close handshake to finish (behind some proxies the TCP close, and with it the
 * close event, comes only after the client library's close timeout, ~30 s with `ws`).
 */
export const SUBSCRIBER_SLOW_ERROR_CODE = 'DURABLE_EVENT_LIMIT_EXCEEDED';

/** True when `frame` is the notice that the socket is about to be closed for falling behind. */
export function isSubscriberSlowNotice(frame: { type: string; code?: unknown } | undefined): boolean {
  return frame?.type === 'error' && frame.code === SUBSCRIBER_SLOW_ERROR_CODE;
}
/** Query parameter a client sets to `1` to announce that it sends acknowledgements. */
export const SUBSCRIBER_ACK_PARAM = 'ack';
/**
 * A client acknowledges at the latest when this many received bytes are unacknowledged (and after
 * a short idle time for fewer), well under any window the object uses.
 */
export const SUBSCRIBER_ACK_EVERY_BYTES = 32 * 1024;
/** A client acknowledges what it received this long after the last frame, if not sooner. */
export const SUBSCRIBER_ACK_IDLE_MS = 20;

/** An acknowledgement sent by the client. */
interface SubscriberAckMessage {
  type: 'ack';
  /** Cumulative UTF-8 bytes of the text frames received and processed on this socket (`pong` excluded). */
  bytes: number;
}

/** The zod schema of {@link SubscriberAckMessage} (OpenAPI, tests). */
const subscriberAckSchema = z
  .strictObject({ type: z.literal('ack'), bytes: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER) })
  .meta({
    id: 'SubscriptionAck',
    description:
      'Client to server (with ?ack=1): cumulative UTF-8 bytes of the text frames received and processed on this socket, pong excluded.',
  });

/** The text of an ack frame. */
export function encodeSubscriberAck(bytes: number): string {
  return JSON.stringify({ type: 'ack', bytes } satisfies SubscriberAckMessage);
}

/** Parses a client text frame as an ack; `undefined` when it is not a well-formed ack. */
export function parseSubscriberAck(text: string): SubscriberAckMessage | undefined {
  if (!text.startsWith('{')) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  const parsed = subscriberAckSchema.safeParse(value);
  return parsed.success ? parsed.data : undefined;
}

/**
 * UTF-8 size of a text frame, the unit of acknowledgements (what goes on the wire; any language
 * can count it: `len(text.encode())`, Go's `len(text)`).
 */
export function frameByteLength(text: string): number {
  let bytes = text.length;
  for (let index = 0; index < text.length; index += 1) {
    const code = text.charCodeAt(index);
    if (code < 0x80) continue;
    if (code < 0x800) {
      bytes += 1;
    } else if (code >= 0xd800 && code <= 0xdbff && index + 1 < text.length) {
      const next = text.charCodeAt(index + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        // A surrogate pair (2 code units) is 4 bytes.
        bytes += 2;
        index += 1;
        continue;
      }
      bytes += 2; // lone surrogate: encoded as U+FFFD (3 bytes)
    } else {
      bytes += 2;
    }
  }
  return bytes;
}
/** Text frame a client may send to check liveness; answered with {@link SUBSCRIBER_PONG}. */
export const SUBSCRIBER_PING = 'ping';
/** Answer to {@link SUBSCRIBER_PING}. */
export const SUBSCRIBER_PONG = 'pong';

/**
 * The `event` frame checked for its position only (sequence, IDs, cursor, commit time), for
 * consumers that take nothing else from it: the HTTP client's `watch` only learns the head from a
 * frame and reads the events themselves through `read`, which validates them.
 */
const eventPositionFrameSchema = z.looseObject({
  type: z.literal('event'),
  cursor: z.string(),
  event: z.looseObject({
    sequence: eventSequenceSchema,
    eventId: z.string(),
    sessionId: sessionIdSchema,
    recordedAt: z.string(),
  }),
});

/** Options of {@link parseSubscriptionFrame}. */
interface ParseSubscriptionFrameOptions {
  /**
   * `full` (default): an `event` frame's envelope is validated with the protocol's strict schema.
   * `position`: only its position fields are (see above); the rest is passed through unchecked.
   */
  events?: 'full' | 'position';
}

/** True when `type` is a known frame kind. */
function isSubscriptionFrameType(type: unknown): type is SubscriptionFrameType {
  return typeof type === 'string' && Object.hasOwn(SUBSCRIPTION_FRAME_KINDS, type);
}

/**
 * Parses one frame (the text of a WebSocket message or an SSE `data:` line, or its decoded JSON).
 *
 * Answers `undefined` for `pong`, for a kind this version does not know (newer servers may add
 * transient kinds) and for anything that is not a JSON object with a `type`.
 *
 * @throws TypeError when the frame names a known kind but does not match its schema
 */
export function parseSubscriptionFrame(
  frame: string | unknown,
  options: ParseSubscriptionFrameOptions = {},
): SubscriptionFrame | undefined {
  let value: unknown = frame;
  if (typeof frame === 'string') {
    if (frame === SUBSCRIBER_PONG) return undefined;
    try {
      value = JSON.parse(frame);
    } catch {
      return undefined;
    }
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const type = (value as { type?: unknown }).type;
  if (!isSubscriptionFrameType(type)) return undefined;
  const schema =
    type === 'event' && options.events === 'position' ? eventPositionFrameSchema : SUBSCRIPTION_FRAME_KINDS[type].schema;
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    throw new TypeError(`malformed ${type} frame: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
  }
  // SAFETY: validated just above with this kind's schema, which mirrors its interface (with
  // `events: 'position'` the caller asked to trust the envelope beyond its position fields).
  return parsed.data as SubscriptionFrame;
}
