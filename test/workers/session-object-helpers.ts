/**
 * Helpers of the SessionObject tests inside workerd: a WebSocket subscriber that records every
 * frame, fresh session names, and marker drafts.
 */
import { env } from 'cloudflare:workers';
import { parseSubscriptionFrame, type SubscriptionFrame } from '../../src/protocol/frames.js';
import type { DurableEventDraft } from '../../src/protocol/events.js';
import { RequestId, SessionId } from '../../src/protocol/ids.js';

/** A session ID no other test uses (storage is shared within a test file). */
export function freshSessionId(label: string): SessionId {
  return SessionId(`${label}-${crypto.randomUUID()}`);
}

/** `count` recognisable drafts: `request_completed` whose output is `<prefix>-<i>`. */
export function markers(count: number, prefix: string): DurableEventDraft[] {
  return Array.from({ length: count }, (_, index) => ({
    type: 'request_completed' as const,
    requestId: RequestId('socket-request'),
    data: { output: `${prefix}-${index}` },
  }));
}

/** The stub of a session's object. */
export function stubFor(sessionId: string): DurableObjectStub {
  return env.SESSIONS.get(env.SESSIONS.idFromName(sessionId));
}

/** Resolves after `ms` milliseconds. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** The client end of one subscription, recording frames as they arrive. */
export class TestSubscriber {
  readonly frames: Array<SubscriptionFrame | string> = [];
  closed: { code: number; reason: string } | null = null;

  private constructor(readonly ws: WebSocket) {
    ws.addEventListener('message', (event) => {
      const text = typeof event.data === 'string' ? event.data : new TextDecoder().decode(event.data as ArrayBuffer);
      this.frames.push(parseSubscriptionFrame(text) ?? text);
    });
    ws.addEventListener('close', (event) => {
      this.closed = { code: event.code, reason: event.reason };
    });
    ws.accept();
  }

  /** Opens a subscription to the object of `objectSession` (the query may name another session). */
  static async open(objectSession: string, query: { sessionId?: string; after?: string }): Promise<TestSubscriber> {
    const params = new URLSearchParams();
    if (query.sessionId !== undefined) params.set('sessionId', query.sessionId);
    if (query.after !== undefined) params.set('after', query.after);
    const response = await stubFor(objectSession).fetch(`http://session-object.test/subscribe?${params.toString()}`, {
      headers: { Upgrade: 'websocket' },
    });
    if (response.status !== 101 || response.webSocket === null) {
      throw new Error(`expected a WebSocket upgrade, got ${response.status}`);
    }
    return new TestSubscriber(response.webSocket);
  }

  /** JSON frames only, in order. */
  get messages(): SubscriptionFrame[] {
    return this.frames.filter((frame): frame is SubscriptionFrame => typeof frame !== 'string');
  }

  /** The `event` frames, in order. */
  get events(): Extract<SubscriptionFrame, { type: 'event' }>[] {
    return this.messages.filter((m): m is Extract<SubscriptionFrame, { type: 'event' }> => m.type === 'event');
  }

  /** Waits until `predicate` holds (polling), or fails after `timeoutMs`. */
  async until(predicate: (subscriber: TestSubscriber) => boolean, what: string, timeoutMs = 5_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!predicate(this)) {
      if (Date.now() > deadline) {
        throw new Error(`timed out waiting for ${what}; frames: ${JSON.stringify(this.frames).slice(0, 2000)}`);
      }
      await sleep(5);
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
