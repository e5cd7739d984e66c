/**
 * Inside workerd, against real SessionObjects: the SSE stream the Worker builds by long-polling
 * the object ends by itself when its lifetime is over (EventSource then reconnects with
 * Last-Event-ID), and resuming from a cursor replays exactly the events after it.
 */
import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { DurableObjectEventStore } from '../../src/adapters/durable-object/durable-object-store.js';
import { durableEventCursor } from '../../src/protocol/cursor.js';
import { sessionObject } from '../../src/app/session-rpc.js';
import { sseResponse } from '../../src/app/sse.js';
import { freshSessionId, markers } from './session-object-helpers.js';

const store = new DurableObjectEventStore(env.SESSIONS);

async function readAll(response: Response): Promise<string> {
  return new Response(response.body).text();
}

function frames(text: string): Array<{ event: string; id: string | undefined; data: unknown }> {
  return text
    .split('\n\n')
    .filter((block) => block.includes('event: '))
    .map((block) => {
      const line = (name: string) => block.split('\n').find((l) => l.startsWith(`${name}: `))?.slice(name.length + 2);
      return { event: line('event') ?? '', id: line('id'), data: JSON.parse(line('data') ?? 'null') as unknown };
    });
}

describe('SSE stream built by the Worker', () => {
  it('replays, sends caught_up, then ends when its lifetime is over', async () => {
    const sessionId = freshSessionId('sse-life');
    const object = sessionObject(env.SESSIONS, sessionId);
    await store.append(sessionId, markers(2, 'life'));
    const response = sseResponse({ object, sessionId, after: undefined, lifetimeMs: 150 });
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const text = await readAll(response);
    expect(text.startsWith('retry: ')).toBe(true);
    const received = frames(text);
    expect(received.map((frame) => frame.event)).toEqual(['event', 'event', 'caught_up']);
    expect(received[2]?.data).toEqual({ type: 'caught_up', headSequence: 2 });
  });

  it('resumes after a cursor and delivers live events until the end', async () => {
    const sessionId = freshSessionId('sse-resume');
    const object = sessionObject(env.SESSIONS, sessionId);
    const first = await store.append(sessionId, markers(3, 'before'));
    const second = first.events[1];
    if (second === undefined) throw new Error('no second event');
    const response = sseResponse({ object, sessionId, after: durableEventCursor(second), lifetimeMs: 400 });
    const reading = readAll(response);
    await store.append(sessionId, markers(1, 'live'));
    const received = frames(await reading);
    const sequences = received.flatMap((frame) =>
      frame.event === 'event' ? [(frame.data as { event: { sequence: number } }).event.sequence] : [],
    );
    expect(sequences).toEqual([3, 4]);
    expect(received.filter((frame) => frame.event === 'caught_up')).toHaveLength(1);
    for (const frame of received.filter((f) => f.event === 'event')) {
      expect(frame.id).toBe((frame.data as { cursor: string }).cursor);
    }
  });
});
