/**
 * `watch` over the Worker's WebSocket subscription.
 *
 * 1. Find where to start: the cursor of the session's last event (two small HTTP reads), so the
 *    socket replays nothing old. An empty session subscribes from the start.
 * 2. Open `GET /v1/sessions/{id}/subscribe` as a WebSocket, offering the subprotocols
 *    `agent-ledger.v1` and `bearer.<token>` (or `?access_token=` when the token cannot be a
 *    subprotocol).
 * 3. Notices: frames come one per event, but a listener hears one `{ sessionId, lastSequence }`
 *    per committed batch. Event frames are coalesced: a batch is flushed when a frame from another
 *    commit arrives (different `recordedAt`), at `caught_up`, or {@link WATCH_COALESCE_MS} after its
 *    last frame. The `caught_up` head is a notice too: it covers appends that landed between
 *    `watch()` and the socket opening (at worst a subscriber re-reads once). Appends made through
 *    the same store object are also reported directly when they return (`observe`). A notice is
 *    only delivered when it moves past every earlier one, so each batch is heard once.
 * 4. On a drop, reconnect with exponential backoff from the last cursor seen, so nothing is
 *    missed. If the server refuses the cursor (log replaced), start again from the head.
 * 5. Every {@link WATCH_PING_INTERVAL_MS} send `ping`; a socket silent for two intervals is
 *    considered dead and replaced.
 * 6. Flow control: the socket subscribes with `?ack=1` and acknowledges the bytes of the frames it
 *    processed (`{ "type": "ack", "bytes": N }`) every {@link SUBSCRIBER_ACK_EVERY_BYTES} bytes and
 *    {@link SUBSCRIBER_ACK_IDLE_MS} after the last unacknowledged frame, so the object replays a long
 *    log page by page. Told it fell behind (the `error` notice before a `SUBSCRIBER_SLOW_CLOSE_CODE`
 *    close, or that close itself), it drops the socket and reconnects at once after the last cursor
 *    seen.
 * `close()` closes the socket and stops reconnecting. Every timer and the liveness clock run on the
 * `time` option (default: the host's timers), so tests can drive them with a `ManualTimeSource`.
 */
import { durableEventCursor, encodeDurableEventCursor } from '../../protocol/cursor.js';
import {
  SUBSCRIBER_ACK_EVERY_BYTES,
  SUBSCRIBER_ACK_IDLE_MS,
  SUBSCRIBER_ACK_PARAM,
  SUBSCRIBER_PONG,
  SUBSCRIBER_SLOW_CLOSE_CODE,
  encodeSubscriberAck,
  frameByteLength,
  isSubscriberSlowNotice,
  parseSubscriptionFrame,
  type SubscriptionFrame,
} from '../../protocol/frames.js';
import { durableErrorFromJson } from '../../protocol/errors.js';
import type { DurableEventEnvelope } from '../../protocol/events.js';
import type { EventSequence, SessionId } from '../../protocol/ids.js';
import type { DurableAppendListener } from '../../core/store.js';
import { systemTime, type TimeSource } from '../../core/time.js';

/** Subprotocol the Worker selects for ledger subscriptions. */
export const LEDGER_SUBPROTOCOL = 'agent-ledger.v1';
/** Prefix of the subprotocol that carries the bearer token. */
export const BEARER_SUBPROTOCOL_PREFIX = 'bearer.';
/** Liveness ping period. */
export const WATCH_PING_INTERVAL_MS = 30_000;
/** First reconnect delay; doubles up to {@link WATCH_MAX_BACKOFF_MS}. */
const WATCH_MIN_BACKOFF_MS = 100;
/** Longest reconnect delay. */
const WATCH_MAX_BACKOFF_MS = 5_000;
/** Quiet time after an event frame before its batch is notified. */
export const WATCH_COALESCE_MS = 5;

/**
 * A WebSocket constructor with the WHATWG shape (`globalThis.WebSocket` in browsers, Workers and
 * Node >= 22; `WebSocket` from the `ws` package on Node 20).
 */
export type WebSocketConstructorLike = new (url: string, protocols?: string | string[]) => unknown;

/** The members of a WHATWG WebSocket this module uses. */
interface WebSocketLike {
  onopen: ((event: unknown) => void) | null;
  onmessage: ((event: { data: unknown }) => void) | null;
  onclose: ((event: unknown) => void) | null;
  onerror: ((event: unknown) => void) | null;
  send(data: string): void;
  close(code?: number, reason?: string): void;
}

/** What {@link WebSocketWatch.start} needs from the store. */
interface WebSocketWatchOptions {
  sessionId: SessionId;
  listener: DurableAppendListener;
  WebSocket: WebSocketConstructorLike;
  getToken: () => string | Promise<string>;
  /** The `ws:`/`wss:` subscribe URL, resuming after the encoded cursor when given. */
  subscribeUrl: (after: string | undefined) => URL;
  /** The session's last event, or `null` for an empty session. */
  readTail: (signal: AbortSignal) => Promise<DurableEventEnvelope | null>;
  onError?: (error: unknown) => void;
  /** Timers (coalescing, acks, pings, reconnects) and the liveness clock (default: the host's). */
  time?: TimeSource;
}

const SUBPROTOCOL_TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const NORMAL_CLOSURE = 1000;

/** One watching WebSocket, reconnecting until closed. */
export class WebSocketWatch {
  readonly #options: WebSocketWatchOptions;
  readonly #time: TimeSource;
  readonly #stop = new AbortController();
  /** Encoded cursor to resume after; `undefined`: from the first event; `null`: not known yet. */
  #cursor: string | undefined | null = null;
  #socket: WebSocketLike | undefined;
  #backoffMs = WATCH_MIN_BACKOFF_MS;
  #retryTimer: unknown;
  #pingTimer: unknown;
  #lastHeardAt = 0;
  /** Highest sequence a notice was delivered for. */
  #notified = 0;
  /** Batch being coalesced: its last sequence and commit time. */
  #pending: { lastSequence: EventSequence; recordedAt: unknown } | undefined;
  #flushTimer: unknown;
  /** Flow control of the current socket: bytes received and acknowledged. */
  #received = 0;
  #acked = 0;
  #ackTimer: unknown;

  private constructor(options: WebSocketWatchOptions) {
    this.#options = options;
    this.#time = options.time ?? systemTime;
  }

  /** Starts watching. */
  static start(options: WebSocketWatchOptions): WebSocketWatch {
    const watch = new WebSocketWatch(options);
    void watch.#connect();
    return watch;
  }

  /** Reports that the log reached `lastSequence` (e.g. an append made by this process returned). */
  observe(lastSequence: EventSequence): void {
    if (this.#closed || lastSequence <= this.#notified) return;
    this.#notified = lastSequence;
    try {
      this.#options.listener({ sessionId: this.#options.sessionId, lastSequence });
    } catch (error) {
      this.#report(error);
    }
  }

  /** Stops for good: closes the socket, cancels timers and pending reads. */
  close(): void {
    if (this.#stop.signal.aborted) return;
    this.#stop.abort();
    if (this.#retryTimer !== undefined) this.#time.clearTimer(this.#retryTimer);
    if (this.#flushTimer !== undefined) this.#time.clearTimer(this.#flushTimer);
    this.#pending = undefined;
    this.#closeSocket();
  }

  get #closed(): boolean {
    return this.#stop.signal.aborted;
  }

  #report(error: unknown): void {
    try {
      this.#options.onError?.(error);
    } catch {
      // A failing error callback must not break the watch.
    }
  }

  /** Delivers the batch being coalesced, if any. */
  #flush(): void {
    if (this.#flushTimer !== undefined) this.#time.clearTimer(this.#flushTimer);
    this.#flushTimer = undefined;
    const pending = this.#pending;
    this.#pending = undefined;
    if (pending !== undefined) this.observe(pending.lastSequence);
  }

  #onEventFrame(lastSequence: EventSequence, recordedAt: unknown): void {
    if (this.#pending !== undefined && this.#pending.recordedAt !== recordedAt) this.#flush();
    this.#pending = { lastSequence, recordedAt };
    if (this.#flushTimer !== undefined) this.#time.clearTimer(this.#flushTimer);
    this.#flushTimer = this.#time.setTimer(() => this.#flush(), WATCH_COALESCE_MS);
  }

  async #connect(): Promise<void> {
    if (this.#closed) return;
    try {
      if (this.#cursor === null) {
        const tail = await this.#options.readTail(this.#stop.signal);
        this.#cursor = tail === null ? undefined : encodeDurableEventCursor(durableEventCursor(tail));
      }
      const token = await this.#options.getToken();
      if (this.#closed) return;
      const url = this.#options.subscribeUrl(this.#cursor);
      url.searchParams.set(SUBSCRIBER_ACK_PARAM, '1');
      const protocols = [LEDGER_SUBPROTOCOL];
      if (SUBPROTOCOL_TOKEN.test(token)) protocols.push(`${BEARER_SUBPROTOCOL_PREFIX}${token}`);
      else url.searchParams.set('access_token', token);
      // SAFETY: WebSocketConstructorLike is documented as a WHATWG WebSocket constructor, whose
      // instances have the members of WebSocketLike.
      const socket = new this.#options.WebSocket(url.href, protocols) as WebSocketLike;
      this.#attach(socket);
    } catch (error) {
      if (this.#closed) return;
      this.#report(error);
      this.#scheduleReconnect();
    }
  }

  #attach(socket: WebSocketLike): void {
    this.#socket = socket;
    this.#lastHeardAt = this.#time.monotonicNow();
    this.#received = 0;
    this.#acked = 0;
    this.#clearAck();
    socket.onopen = () => {
      this.#lastHeardAt = this.#time.monotonicNow();
    };
    socket.onmessage = (event) => {
      this.#lastHeardAt = this.#time.monotonicNow();
      if (typeof event.data !== 'string') return;
      if (this.#onFrame(event.data) === 'slow' && this.#socket === socket) {
        // About to be closed for falling behind: do not wait for the close handshake (some proxies
        // end the TCP connection only ~30 s later).
        this.#closeSocket();
        this.#resumeAtOnce();
        return;
      }
      if (this.#socket === socket && event.data !== SUBSCRIBER_PONG) this.#countReceived(socket, event.data);
    };
    socket.onerror = (event) => {
      this.#report(event);
    };
    socket.onclose = (event) => {
      if (this.#socket !== socket) return;
      this.#socket = undefined;
      this.#clearPing();
      this.#clearAck();
      if ((event as { code?: unknown } | null)?.code === SUBSCRIBER_SLOW_CLOSE_CODE) this.#resumeAtOnce();
      else this.#scheduleReconnect();
    };
    this.#armPing(socket);
  }

  /** Handles one frame; `'slow'` for the notice that precedes a close for falling behind. */
  #onFrame(text: string): 'slow' | undefined {
    let frame: SubscriptionFrame | undefined;
    try {
      frame = parseSubscriptionFrame(text, { events: 'position' });
    } catch {
      return undefined; // a malformed frame of a known kind: ignore it, like an unknown kind
    }
    if (frame === undefined) return undefined;
    if (isSubscriberSlowNotice(frame)) {
      this.#flush();
      return 'slow';
    }
    if (frame.type === 'event') {
      this.#cursor = frame.cursor;
      this.#backoffMs = WATCH_MIN_BACKOFF_MS;
      this.#onEventFrame(frame.event.sequence, frame.event.recordedAt);
    } else if (frame.type === 'caught_up') {
      this.#backoffMs = WATCH_MIN_BACKOFF_MS;
      this.#flush();
      if (frame.headSequence !== null) this.observe(frame.headSequence);
    } else if (frame.type === 'error') {
      this.#flush();
      const error = durableErrorFromJson(frame);
      this.#report(error);
      // The cursor no longer anchors in the log: resubscribe from the current head.
      if (error.code === 'DURABLE_EVENT_SUBSCRIPTION_INVALID' || error.code === 'DURABLE_EVENT_INVALID_CURSOR') {
        this.#cursor = null;
      }
    }
    return undefined;
  }

  /** Counts a processed frame and acknowledges when enough is pending (or soon, when idle). */
  #countReceived(socket: WebSocketLike, text: string): void {
    this.#received += frameByteLength(text);
    if (this.#received - this.#acked >= SUBSCRIBER_ACK_EVERY_BYTES) {
      this.#sendAck(socket);
      return;
    }
    this.#ackTimer ??= this.#time.setTimer(() => {
      this.#ackTimer = undefined;
      if (this.#socket === socket) this.#sendAck(socket);
    }, SUBSCRIBER_ACK_IDLE_MS);
  }

  #sendAck(socket: WebSocketLike): void {
    this.#clearAck();
    if (this.#received === this.#acked) return;
    try {
      socket.send(encodeSubscriberAck(this.#received));
      this.#acked = this.#received;
    } catch {
      // Closing: the reconnect starts a new count.
    }
  }

  #clearAck(): void {
    if (this.#ackTimer !== undefined) this.#time.clearTimer(this.#ackTimer);
    this.#ackTimer = undefined;
  }

  /** Pings `socket` every {@link WATCH_PING_INTERVAL_MS} while it is the current one. */
  #armPing(socket: WebSocketLike): void {
    this.#pingTimer = this.#time.setTimer(() => {
      this.#pingTimer = undefined;
      if (this.#socket !== socket) return;
      this.#ping(socket);
      if (this.#socket === socket) this.#armPing(socket);
    }, WATCH_PING_INTERVAL_MS);
  }

  #ping(socket: WebSocketLike): void {
    if (this.#time.monotonicNow() - this.#lastHeardAt > 2 * WATCH_PING_INTERVAL_MS) {
      this.#closeSocket();
      this.#scheduleReconnect();
      return;
    }
    try {
      socket.send('ping');
    } catch {
      // Not open yet or already closing; the close handler reconnects.
    }
  }

  #clearPing(): void {
    if (this.#pingTimer !== undefined) this.#time.clearTimer(this.#pingTimer);
    this.#pingTimer = undefined;
  }

  #closeSocket(): void {
    this.#clearPing();
    this.#clearAck();
    const socket = this.#socket;
    this.#socket = undefined;
    if (socket === undefined) return;
    try {
      socket.close(NORMAL_CLOSURE, 'unsubscribed');
    } catch {
      // Closing a socket that never opened may throw; it is gone either way.
    }
  }

  /** Fell behind (nothing is lost): reconnect after the last cursor without a backoff delay. */
  #resumeAtOnce(): void {
    this.#backoffMs = 0;
    this.#scheduleReconnect();
  }

  #scheduleReconnect(): void {
    if (this.#closed || this.#retryTimer !== undefined) return;
    const delay = this.#backoffMs;
    this.#backoffMs = Math.min(Math.max(this.#backoffMs * 2, WATCH_MIN_BACKOFF_MS), WATCH_MAX_BACKOFF_MS);
    this.#retryTimer = this.#time.setTimer(() => {
      this.#retryTimer = undefined;
      void this.#connect();
    }, delay);
  }
}
