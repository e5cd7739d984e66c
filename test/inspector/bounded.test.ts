/**
 * An inspection keeps what the page shows, not the log: on a session of 3,001 events (1,200
 * bars; 15,001 and 6,000 in `npm run test:deep`) it holds the latest 400 bars and 100 events,
 * and they are exactly the tail of what a fold of the whole log in memory gives (`buildTimeline`
 * over every event, the last events, the event list from `listFrom`, the cursors). Real memory
 * store, real projector.
 */
import { describe, expect, it } from 'vitest';
import { MemoryDurableEventStore } from '../../src/adapters/memory/memory-store.js';
import { loadInspection } from '../../src/inspector/model/inspection.js';
import { buildTimeline, MAX_TIMELINE_BARS, TimelineBuilder } from '../../src/inspector/model/timeline.js';
import { durableEventCursor, encodeDurableEventCursor } from '../../src/protocol/cursor.js';
import type { DurableEventEnvelope } from '../../src/protocol/events.js';
import { SessionId, TurnId } from '../../src/protocol/ids.js';
import { everyEvent } from './read-all.js';
import { appendCycles } from '../checkpoint/lifecycle-log.js';
import { JournalBuilder } from '../projector/journal-builder.js';
import { sized } from '../deep.js';

const sessionId = SessionId('long-inspected');

/** Cycles of 5 events (2 bars each): 1,200 bars are three times the 400 kept, 3,001 events thirty times the 100 kept. */
const CYCLES = sized(600, 3000);
const EVENTS = CYCLES * 5 + 1;
const BARS = CYCLES * 2;

const cursorOf = (event: DurableEventEnvelope): string => encodeDurableEventCursor(durableEventCursor(event));

describe('loadInspection on a long session', () => {
  it('keeps the latest bars and events, equal to the tail of a whole-log fold', async () => {
    const store = new MemoryDurableEventStore();
    await appendCycles(store, sessionId, 0, CYCLES);
    const events = await everyEvent(store, sessionId);
    expect(events).toHaveLength(EVENTS);
    const full = buildTimeline(events);
    expect(full.bars).toHaveLength(BARS);

    const latest = await loadInspection(store, sessionId, { nowMs: 0 });
    expect(latest.timeline.bars).toHaveLength(MAX_TIMELINE_BARS);
    expect(latest.timeline.total).toBe(BARS);
    expect(latest.timeline.bars).toEqual(full.bars.slice(-MAX_TIMELINE_BARS));
    expect([latest.timeline.startMs, latest.timeline.endMs]).toEqual([full.startMs, full.endMs]);
    expect(latest.recent).toEqual(events.slice(-100));
    expect(latest.olderCursor).toBe(cursorOf(events[events.length - 101] as DurableEventEnvelope));
    expect(latest.headCursor).toBe(cursorOf(events[events.length - 1] as DurableEventEnvelope));

    const page = await loadInspection(store, sessionId, { nowMs: 0, listFrom: 1000, timelineBars: 10 });
    expect(page.recent).toEqual(events.slice(999, 1099));
    expect(page.olderCursor).toBe(cursorOf(events[998] as DurableEventEnvelope));
    expect(page.timeline.bars).toEqual(full.bars.slice(-10));
    const first = await loadInspection(store, sessionId, { nowMs: 0, listFrom: 1 });
    expect(first.recent).toEqual(events.slice(0, 100));
    expect(first.olderCursor).toBeNull();
    expect((await loadInspection(store, sessionId, { nowMs: 0, listFrom: EVENTS + 1000 })).recent).toEqual([]);
  });

  it('pairs the end of a bar that left the window while open', () => {
    // One request open across 30 turns, then completed; a window of 5 bars.
    const b = JournalBuilder.startedRequest();
    for (let turn = 1; turn <= 30; turn++) b.startTurn({ turnId: `turn-${turn}`, turn }).completeTurn({ turnId: TurnId(`turn-${turn}`), turn });
    b.completeRequest();
    const full = buildTimeline(b.events);
    const builder = new TimelineBuilder(5);
    for (const event of b.events) builder.addEvents([event]);
    const bounded = builder.finish();
    expect(full.bars).toHaveLength(31);
    expect(bounded.total).toBe(31);
    expect(bounded.bars).toEqual(full.bars.slice(-5));
    // The request's bar started first and is not kept, but its end counted.
    expect(full.bars[0]).toMatchObject({ lane: 'request', status: 'request_completed' });
    expect(bounded.endMs).toBe(full.endMs);
    expect(bounded.endMs).toBe(Date.parse(b.events[b.events.length - 1]?.occurredAt ?? ''));
    expect(() => new TimelineBuilder(0)).toThrow(RangeError);
  });
});
