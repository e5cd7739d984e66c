/**
 * WebSocket subscriptions through the Worker with a real client (`ws`): the token as a
 * `bearer.<token>` subprotocol (the Worker selects `agent-ledger.v1`) or as `?access_token=`;
 * replay, one `caught_up`, live events; exact resume from a saved cursor; refusals before the
 * upgrade (bad token, other session, bad cursor) and by the object (stale cursor).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { HttpDurableEventStore, LEDGER_SUBPROTOCOL } from '../../src/client.js';
import { markerDrafts, markerLabel } from '../../src/conformance/fixtures.js';
import { decodeDurableEventCursor, encodeDurableEventCursor } from '../../src/protocol/cursor.js';
import type { DurableEventEnvelope } from '../../src/protocol/events.js';
import { EventId, EventSequence, SessionId } from '../../src/protocol/ids.js';
import { startLocalWorker, type LocalWorker } from './local-worker.js';

let worker: LocalWorker;
let store: HttpDurableEventStore;
let counter = 0;

beforeAll(async () => {
  worker = await startLocalWorker();
  store = new HttpDurableEventStore({ baseUrl: worker.url, token: worker.adminToken });
});

afterAll(async () => {
  await worker?.stop();
});

type Frame =
  | { type: 'event'; event: DurableEventEnvelope; cursor: string }
  | { type: 'caught_up'; headSequence: number | null }
  | { type: 'error'; code: string; message: string };

function freshSession(): SessionId {
  counter += 1;
  return SessionId(`ws ${counter}/${Date.now()}`);
}

function subscribeUrl(sessionId: string, query: Record<string, string> = {}): string {
  const url = new URL(worker.href(`/v1/sessions/${encodeURIComponent(sessionId)}/subscribe`));
  url.protocol = 'ws:';
  for (const [key, value] of Object.entries(query)) url.searchParams.set(key, value);
  return url.href;
}

/** An open socket plus everything it received. */
interface Subscriber {
  socket: WebSocket;
  frames: Frame[];
  closed: Promise<{ code: number }>;
  /** Resolves once `predicate` holds for the received frames. */
  until(predicate: (frames: Frame[]) => boolean): Promise<Frame[]>;
}

async function connect(url: string, protocols: string[]): Promise<Subscriber> {
  const socket = new WebSocket(url, protocols);
  const frames: Frame[] = [];
  const waiters: Array<() => void> = [];
  socket.on('message', (data) => {
    frames.push(JSON.parse(String(data)) as Frame);
    for (const wake of waiters.splice(0)) wake();
  });
  const closed = new Promise<{ code: number }>((resolve) => socket.on('close', (code) => resolve({ code })));
  await new Promise<void>((resolve, reject) => {
    socket.once('open', () => resolve());
    socket.once('error', reject);
  });
  return {
    socket,
    frames,
    closed,
    async until(predicate) {
      while (!predicate(frames)) {
        await new Promise<void>((resolve, reject) => {
          const timer = setTimeout(() => reject(new Error(`timed out; frames: ${JSON.stringify(frames.map((f) => f.type))}`)), 30_000); // generous: a loaded machine is slow, not wrong
          waiters.push(() => {
            clearTimeout(timer);
            resolve();
          });
        });
      }
      return frames;
    },
  };
}

/** The HTTP status a refused upgrade answered with. */
function refusedStatus(url: string, protocols: string[]): Promise<number> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url, protocols);
    socket.on('unexpected-response', (_request, response) => {
      resolve(response.statusCode ?? 0);
      socket.terminate();
    });
    socket.on('open', () => reject(new Error('the upgrade was accepted')));
    socket.on('error', () => undefined);
  });
}

const sequences = (frames: Frame[]): number[] =>
  frames.flatMap((frame) => (frame.type === 'event' ? [frame.event.sequence] : []));

describe('WebSocket subscriptions through the Worker', () => {
  it('replays, sends one caught_up, then live events; token as a subprotocol', async () => {
    const sessionId = freshSession();
    await store.append(sessionId, markerDrafts(3, 'before'));
    const token = await worker.mintToken(sessionId, ['subscribe']);
    const subscriber = await connect(subscribeUrl(sessionId), [LEDGER_SUBPROTOCOL, `bearer.${token}`]);
    expect(subscriber.socket.protocol).toBe(LEDGER_SUBPROTOCOL);
    await subscriber.until((frames) => frames.some((frame) => frame.type === 'caught_up'));
    expect(subscriber.frames.map((frame) => frame.type)).toEqual(['event', 'event', 'event', 'caught_up']);
    expect(subscriber.frames[3]).toEqual({ type: 'caught_up', headSequence: 3 });

    await store.append(sessionId, markerDrafts(2, 'live'));
    await subscriber.until((frames) => sequences(frames).length === 5);
    expect(sequences(subscriber.frames)).toEqual([1, 2, 3, 4, 5]);
    for (const frame of subscriber.frames) {
      if (frame.type !== 'event') continue;
      const cursor = decodeDurableEventCursor(frame.cursor);
      expect(cursor).toEqual({ version: 1, sessionId, sequence: frame.event.sequence, eventId: frame.event.eventId });
    }
    expect(subscriber.frames.slice(4).map((frame) => (frame.type === 'event' ? markerLabel(frame.event) : frame.type))).toEqual([
      'live-0',
      'live-1',
    ]);
    subscriber.socket.close();
    await subscriber.closed;
  });

  it('accepts the token as ?access_token= and resumes exactly after a saved cursor', async () => {
    const sessionId = freshSession();
    const first = await store.append(sessionId, markerDrafts(4, 'saved'));
    const token = await worker.mintToken(sessionId, ['subscribe']);
    const saved = first.events[1];
    if (saved === undefined) throw new Error('no event 2');
    const after = encodeDurableEventCursor({ version: 1, sessionId, sequence: saved.sequence, eventId: saved.eventId });
    const subscriber = await connect(subscribeUrl(sessionId, { access_token: token, after }), []);
    expect(subscriber.socket.protocol).toBe('');
    await subscriber.until((frames) => frames.some((frame) => frame.type === 'caught_up'));
    expect(sequences(subscriber.frames)).toEqual([3, 4]);
    expect(subscriber.frames.at(-1)).toEqual({ type: 'caught_up', headSequence: 4 });
    subscriber.socket.close();
  });

  it('refuses bad tokens, other sessions and missing scopes before upgrading', async () => {
    const sessionId = freshSession();
    const other = await worker.mintToken('someone-else', ['subscribe']);
    const readOnly = await worker.mintToken(sessionId, ['read']);
    expect(await refusedStatus(subscribeUrl(sessionId), [LEDGER_SUBPROTOCOL])).toBe(401);
    expect(await refusedStatus(subscribeUrl(sessionId), [LEDGER_SUBPROTOCOL, 'bearer.nope'])).toBe(401);
    expect(await refusedStatus(subscribeUrl(sessionId), [LEDGER_SUBPROTOCOL, `bearer.${other}`])).toBe(403);
    expect(await refusedStatus(subscribeUrl(sessionId, { access_token: readOnly }), [])).toBe(403);
  });

  it('refuses malformed and foreign cursors with 400, and a stale cursor with an error frame', async () => {
    const sessionId = freshSession();
    await store.append(sessionId, markerDrafts(2));
    const token = await worker.mintToken(sessionId, ['subscribe']);
    const protocols = [LEDGER_SUBPROTOCOL, `bearer.${token}`];
    expect(await refusedStatus(subscribeUrl(sessionId, { after: 'not-a-cursor' }), protocols)).toBe(400);
    const foreign = encodeDurableEventCursor({
      version: 1,
      sessionId: SessionId('another-session'),
      sequence: EventSequence(1),
      eventId: EventId('e'),
    });
    expect(await refusedStatus(subscribeUrl(sessionId, { after: foreign }), protocols)).toBe(400);

    const stale = encodeDurableEventCursor({ version: 1, sessionId, sequence: EventSequence(1), eventId: EventId('replaced') });
    const subscriber = await connect(subscribeUrl(sessionId, { after: stale }), protocols);
    const frames = await subscriber.until((received) => received.length >= 1);
    expect(frames[0]).toMatchObject({ type: 'error', code: 'DURABLE_EVENT_SUBSCRIPTION_INVALID' });
    // The object's close frame arrives at once; the local runtime then keeps the TCP connection
    // for a while, so end it here instead of waiting (the close code is the one received).
    await waitFor(() => subscriber.socket.readyState === WebSocket.CLOSING);
    subscriber.socket.terminate();
    expect((await subscriber.closed).code).toBe(1008);
  });

  it('drives HttpDurableEventStore.watch over the socket, for appends made by another client', async () => {
    const sessionId = freshSession();
    await store.append(sessionId, markerDrafts(1, 'existing'));
    const token = await worker.mintToken(sessionId, ['read', 'subscribe']);
    const watcher = new HttpDurableEventStore({ baseUrl: worker.url, token, WebSocket });
    const notices: number[] = [];
    const stop = watcher.watch?.(sessionId, (notice) => notices.push(notice.lastSequence));
    if (stop === undefined) throw new Error('watch is missing');
    try {
      // Wait until the subscription is live (its caught_up notice names the existing head).
      await waitFor(() => notices.includes(1));
      await store.append(sessionId, markerDrafts(3, 'batch'));
      await waitFor(() => notices.includes(4));
      await store.append(sessionId, markerDrafts(1, 'single'));
      await waitFor(() => notices.includes(5));
      // Usually [1, 4, 5]: the batch's three frames coalesce into one notice. Coalescing is
      // best-effort (a batch is flushed WATCH_COALESCE_MS after its last frame), so on a loaded
      // machine the batch may be heard in parts, e.g. [1, 2, 4, 5]. What must hold: every notice
      // moves past the previous one, the batch's end and the single append are each heard.
      expect(notices[0]).toBe(1);
      expect(notices).toContain(4);
      expect(notices.at(-1)).toBe(5);
      for (let index = 1; index < notices.length; index++) expect(notices[index]).toBeGreaterThan(notices[index - 1] ?? Infinity);
    } finally {
      stop();
    }
  });
});

async function waitFor(condition: () => boolean): Promise<void> {
  const deadline = Date.now() + 30_000; // generous: a loaded machine is slow, not wrong
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}
