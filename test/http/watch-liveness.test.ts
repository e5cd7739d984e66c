/**
 * The liveness check of `HttpDurableEventStore`'s watch, on manual time against the real Worker:
 * a socket that stops delivering frames (a dead link whose TCP never reports it) is replaced at the
 * first ping that finds it silent for more than two ping intervals, and the watch reconnects from
 * its cursor. The watch's timers and
 * clock come from the store's `time` option, so the test advances 60 s of pings without waiting.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { HttpDurableEventStore } from '../../src/client.js';
import { ManualTimeSource } from '../../src/index.js';
import { WATCH_COALESCE_MS, WATCH_PING_INTERVAL_MS } from '../../src/adapters/http/websocket-watch.js';
import { RequestId, SessionId } from '../../src/protocol/ids.js';
import { startLocalWorker, type LocalWorker } from './local-worker.js';

let worker: LocalWorker;

beforeAll(async () => {
  worker = await startLocalWorker();
});

afterAll(async () => {
  await worker?.stop();
});

const sockets: DeafeningWebSocket[] = [];

/** `ws` WebSocket whose incoming frames can be cut off (`deafen`), as on a dead link. */
class DeafeningWebSocket extends WebSocket {
  deaf = false;
  caughtUp = false;
  eventFrames = 0;
  closedByClient: number | undefined;
  constructor(url: string, protocols?: string | string[]) {
    super(url, protocols);
    sockets.push(this);
    this.addEventListener('message', (event) => {
      if (this.deaf) return;
      if (String(event.data).startsWith('{"type":"caught_up"')) this.caughtUp = true;
      if (String(event.data).startsWith('{"type":"event"')) this.eventFrames += 1;
    });
    let handler: ((event: WebSocket.MessageEvent) => void) | null = null;
    // ws defines `onmessage` as an accessor on its prototype: wrap the handler the watch installs.
    const installHandler = Object.getOwnPropertyDescriptor(WebSocket.prototype, 'onmessage')?.set;
    Object.defineProperty(this, 'onmessage', {
      configurable: true,
      get: () => handler,
      set: (value: ((event: WebSocket.MessageEvent) => void) | null) => {
        handler = value;
        const gated = value === null ? null : (event: WebSocket.MessageEvent): void => {
          if (!this.deaf) value(event);
        };
        installHandler?.call(this, gated);
      },
    });
  }

  override close(code?: number, reason?: string): void {
    this.closedByClient = code;
    super.close(code, reason);
  }
}

/** Polls `condition` every 10 ms of real time (network work); throws after `timeoutMs`. */
async function waitFor(condition: () => boolean, what: string, timeoutMs = 20_000): Promise<void> {
  for (let waited = 0; !condition(); waited += 10) {
    if (waited > timeoutMs) throw new Error(`${what} did not happen in ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('watch liveness over HTTP', () => {
  it('replaces a socket silent for two ping intervals and resumes from its cursor', { timeout: 60_000 }, async () => {
    const time = new ManualTimeSource();
    const sessionId = SessionId(`liveness-${Date.now()}`);
    const store = new HttpDurableEventStore({ baseUrl: worker.url, token: worker.adminToken, WebSocket: DeafeningWebSocket, time });
    const writer = new HttpDurableEventStore({ baseUrl: worker.url, token: worker.adminToken });
    await writer.append(sessionId, [{ type: 'request_completed', requestId: RequestId('r'), data: { output: 'one' } }]);
    const heard: number[] = [];
    const stop = store.watch?.(sessionId, (notice) => heard.push(notice.lastSequence));
    try {
      await waitFor(() => sockets[0]?.caughtUp === true, 'the first caught_up');
      const first = sockets[0] as DeafeningWebSocket;
      first.deaf = true; // from now on its frames (the pongs too) never reach the watch

      // Two intervals: pings go out, no pong comes back; silent for exactly two intervals, not more.
      await time.advance(2 * WATCH_PING_INTERVAL_MS);
      expect(sockets).toHaveLength(1);
      expect(first.closedByClient).toBeUndefined();

      // The third ping finds it silent for more than two intervals: dropped, and the watch reconnects.
      await time.advance(WATCH_PING_INTERVAL_MS);
      expect(first.closedByClient).toBe(1000);
      await time.advance(1_000); // the reconnect backoff
      await waitFor(() => sockets.length === 2 && sockets[1]?.caughtUp === true, 'the reconnect');

      // The new socket resumes after the cursor: an append made now is heard once, over it.
      await writer.append(sessionId, [{ type: 'request_completed', requestId: RequestId('r'), data: { output: 'two' } }]);
      // Event frames are coalesced for WATCH_COALESCE_MS of the watch's (manual) time.
      await waitFor(() => (sockets[1]?.eventFrames ?? 0) > 0, 'the event frame of sequence 2');
      await time.advance(WATCH_COALESCE_MS);
      expect(heard).toEqual([1, 2]);
    } finally {
      stop?.();
    }
  });
});
