/**
 * The one declaration of subscription frames: every kind parses from its text, unknown kinds and
 * `pong` are ignored (room for transient kinds a newer server adds), a malformed frame of a known
 * kind is refused, and the position-only mode checks an event frame without its payload.
 */
import { describe, expect, it } from 'vitest';
import { MemoryDurableEventStore } from '../../src/adapters/memory/memory-store.js';
import { durableEventCursor, encodeDurableEventCursor } from '../../src/protocol/cursor.js';
import {
  SUBSCRIPTION_FRAME_KINDS,
  parseSubscriptionFrame,
  subscriptionFrameSchema,
  type SubscriptionFrame,
} from '../../src/protocol/frames.js';
import { SessionId } from '../../src/protocol/ids.js';

async function storedEvent() {
  const store = new MemoryDurableEventStore();
  const { events } = await store.append(SessionId('frames'), [{ type: 'session_created', data: { source: 'create' } }]);
  const event = events[0];
  if (event === undefined) throw new Error('no event');
  return event;
}

describe('parseSubscriptionFrame', () => {
  it('parses every kind, from text or from decoded JSON', async () => {
    const event = await storedEvent();
    const frames: SubscriptionFrame[] = [
      { type: 'event', event, cursor: encodeDurableEventCursor(durableEventCursor(event)) },
      { type: 'caught_up', headSequence: null },
      { type: 'error', code: 'DURABLE_EVENT_INVALID_CURSOR', message: 'bad' },
      { type: 'durability', record: { sequence: 1, sessionId: SessionId('frames'), recordedAt: event.recordedAt, kind: 'step' } },
    ];
    for (const frame of frames) {
      expect(parseSubscriptionFrame(JSON.stringify(frame))).toEqual(frame);
      expect(parseSubscriptionFrame(frame)).toEqual(frame);
      expect(subscriptionFrameSchema.safeParse(frame).success).toBe(true);
    }
    expect(Object.keys(SUBSCRIPTION_FRAME_KINDS)).toEqual(expect.arrayContaining(frames.map((f) => f.type)));
  });

  it('ignores pong, non-JSON, non-objects and kinds it does not know', () => {
    expect(parseSubscriptionFrame('pong')).toBeUndefined();
    expect(parseSubscriptionFrame('{not json')).toBeUndefined();
    expect(parseSubscriptionFrame('[1,2]')).toBeUndefined();
    expect(parseSubscriptionFrame('{"type":"token_delta","text":"hi"}')).toBeUndefined();
  });

  it('refuses a known kind that does not match its schema', async () => {
    expect(() => parseSubscriptionFrame('{"type":"caught_up","headSequence":"x"}')).toThrow(TypeError);
    expect(() => parseSubscriptionFrame('{"type":"error","code":"X"}')).toThrow(TypeError);
    const event = await storedEvent();
    const broken = { type: 'event', cursor: 'c', event: { ...event, data: { source: 'nope' } } };
    expect(() => parseSubscriptionFrame(broken)).toThrow(TypeError);
    // Position mode checks the position only, so the same frame passes...
    expect(parseSubscriptionFrame(broken, { events: 'position' })).toMatchObject({ type: 'event', cursor: 'c' });
    // ...but not one without a sequence.
    const { sequence: _sequence, ...withoutSequence } = event;
    expect(() => parseSubscriptionFrame({ type: 'event', cursor: 'c', event: withoutSequence }, { events: 'position' })).toThrow(
      TypeError,
    );
  });
});
