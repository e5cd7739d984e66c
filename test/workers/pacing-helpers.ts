/**
 * Helpers of the flow-control tests inside workerd: a raw subscriber that counts the bytes it
 * receives and acknowledges only when told (or after every frame), and a way to set an object's
 * pacing limits for one test.
 */
import { runInDurableObject } from 'cloudflare:test';
import type { SubscriberPacingLimits } from '../../src/edge/socket-pacing.js';
import type { SessionObject } from '../../src/edge/session-object.js';
import { encodeSubscriberAck, frameByteLength, parseSubscriptionFrame, type SubscriptionFrame } from '../../src/protocol/frames.js';
import { sleep, stubFor } from './session-object-helpers.js';

const opened: RawSubscriber[] = [];

/** Closes every subscriber opened so far (call in `afterEach`). */
export function closeRawSubscribers(): void {
  while (opened.length > 0) opened.pop()?.close();
}

/** Sets the object's flow-control limits on its current instance (until it is evicted). */
export async function setPacingLimits(sessionId: string, limits: Partial<SubscriberPacingLimits>): Promise<void> {
  await runInDurableObject(stubFor(sessionId) as DurableObjectStub<SessionObject>, (instance) => {
    Object.defineProperty(instance, 'subscriberPacing', { value: () => limits, configurable: true });
  });
}

/** A subscriber that counts the bytes of what it receives and acknowledges only when told. */
export class RawSubscriber {
  readonly frames: SubscriptionFrame[] = [];
  received = 0;
  acked = 0;
  /** Largest number of bytes received and not acknowledged at any time. */
  peakUnacked = 0;
  closed: { code: number; reason: string } | null = null;
  lastFrameAt = Date.now();

  private constructor(
    readonly ws: WebSocket,
    autoAck: boolean,
  ) {
    ws.addEventListener('message', (event) => {
      const text = typeof event.data === 'string' ? event.data : new TextDecoder().decode(event.data as ArrayBuffer);
      this.lastFrameAt = Date.now();
      if (text === 'pong') return;
      this.received += frameByteLength(text);
      this.peakUnacked = Math.max(this.peakUnacked, this.received - this.acked);
      const frame = parseSubscriptionFrame(text);
      if (frame !== undefined) this.frames.push(frame);
      if (autoAck) this.ack();
    });
    ws.addEventListener('close', (event) => {
      this.closed = { code: event.code, reason: event.reason };
    });
    ws.accept();
  }

  static async open(sessionId: string, options: { ack: boolean; after?: string; autoAck?: boolean }): Promise<RawSubscriber> {
    const params = new URLSearchParams({ sessionId });
    if (options.after !== undefined) params.set('after', options.after);
    if (options.ack) params.set('ack', '1');
    const response = await stubFor(sessionId).fetch(`http://session-object.test/subscribe?${params.toString()}`, {
      headers: { Upgrade: 'websocket' },
    });
    if (response.status !== 101 || response.webSocket === null) throw new Error(`expected an upgrade, got ${response.status}`);
    const subscriber = new RawSubscriber(response.webSocket, options.autoAck === true);
    opened.push(subscriber);
    return subscriber;
  }

  get events(): Extract<SubscriptionFrame, { type: 'event' }>[] {
    return this.frames.filter((f): f is Extract<SubscriptionFrame, { type: 'event' }> => f.type === 'event');
  }

  get caughtUp(): boolean {
    return this.frames.some((f) => f.type === 'caught_up');
  }

  ack(bytes = this.received): void {
    this.acked = Math.max(this.acked, Math.min(bytes, this.received));
    this.ws.send(encodeSubscriberAck(bytes));
  }

  /** Waits until no frame arrived for `quietMs` (the object stopped sending). */
  async quiet(quietMs = 150, timeoutMs = 10_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() - this.lastFrameAt < quietMs) {
      if (Date.now() > deadline) throw new Error('frames kept coming');
      await sleep(20);
    }
  }

  async until(predicate: () => boolean, what: string, timeoutMs = 15_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!predicate()) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what} (received ${this.received} bytes, closed ${JSON.stringify(this.closed)})`);
      await sleep(10);
    }
  }

  close(): void {
    try {
      this.ws.close(1000, 'test done');
    } catch {
      // Already closed.
    }
  }
}

