/**
 * An inspection of a long session opened from its projection checkpoint (`fullFoldLimit`), on real
 * memory stores: the projection, plan, event list, cursors and timeline are exactly what a fold of
 * the whole log gives; the checkpoint is reported `used` (not audited); a session at or under the
 * limit, or one without a usable checkpoint, still folds the whole log; a log the projector
 * refuses after the checkpoint fails the same way both ways; an event after the checkpoint that
 * its ID filter cannot judge falls back to the whole-log fold. Each runs with the memory store's
 * live checkpoints (every used ID known exactly) and with encoded records.
 */
import { describe, expect, it } from 'vitest';
import { MemoryDurableEventStore } from '../../src/adapters/memory/memory-store.js';
import { DurableSessionJournal } from '../../src/core/journal/index.js';
import { ALL_INSPECTOR_SCOPES } from '../../src/inspector/backend.js';
import { describeCheckpoint, loadInspection, type Inspection } from '../../src/inspector/model/inspection.js';
import { buildTimeline, MAX_TIMELINE_BARS } from '../../src/inspector/model/timeline.js';
import { InspectorPage } from '../../src/inspector/page.js';
import { RequestId, SessionId, TurnId } from '../../src/protocol/ids.js';
import { everyEvent } from './read-all.js';
import { appendCycles, cycleDrafts } from '../checkpoint/lifecycle-log.js';
import { sized } from '../deep.js';

const sessionId = SessionId('long-checkpointed');

/**
 * Cycles (5 events each) before the checkpoint. The proof needs a checkpoint well past
 * `FULL_FOLD_LIMIT` and a head further on than the `TAIL` read; 3,001 events are that as much as
 * 15,001 (the size of `npm run test:deep`), at a fifth of the folds.
 */
const CYCLES = sized(600, 3000);
/** The checkpoint's sequence: session_created and the cycles. */
const AT = CYCLES * 5 + 1;
/** The head: 100 more cycles and an open request (503 events after the checkpoint). */
const HEAD = AT + 503;
/** Below the checkpoint's sequence, so a session of {@link HEAD} events opens from it. */
const FULL_FOLD_LIMIT = sized(2000, 10_000);
/** More than the 503 events after the checkpoint (the tail starts before it) and more than 2 x 400 bars. */
const TAIL = 2000;

/** `AT` events, a checkpoint at `AT` written by a journal, then 100 more cycles and an open request. */
async function longSession(liveCheckpoints: boolean): Promise<MemoryDurableEventStore> {
  const store = new MemoryDurableEventStore({ liveCheckpoints });
  await appendCycles(store, sessionId, 0, CYCLES);
  const journal = await DurableSessionJournal.open(store, sessionId);
  expect(await journal.writeCheckpoint()).toBe(true);
  expect((await store.readCheckpoint(sessionId))?.sequence).toBe(AT);
  await appendCycles(store, sessionId, CYCLES, 100);
  await store.append(sessionId, cycleDrafts(CYCLES + 100).slice(0, 3));
  return store;
}

const comparable = (inspection: Inspection) => ({
  headSequence: inspection.headSequence,
  headCursor: inspection.headCursor,
  projection: inspection.projection,
  plan: inspection.plan,
  classified: inspection.classified,
  projectionFailure: inspection.projectionFailure,
  recent: inspection.recent,
  olderCursor: inspection.olderCursor,
});

describe.each([
  { live: true, kept: 'kept live in memory' },
  { live: false, kept: 'encoded' },
])('loadInspection from the checkpoint (fullFoldLimit), $kept', ({ live }) => {
  it('gives what a whole-log fold gives, reading only the tail', async () => {
    const store = await longSession(live);
    const events = await everyEvent(store, sessionId);
    expect(events).toHaveLength(HEAD);
    const whole = await loadInspection(store, sessionId, { nowMs: 0 });
    expect(whole.openedFrom).toBe('log');
    expect(whole.timelineFrom).toBe(1);
    expect(whole.checkpoint).toMatchObject({ sequence: AT, status: 'matches' });
    expect(whole.plan?.action).toBe('resume_turn');

    let read = 0;
    const fast = await loadInspection(store, sessionId, { nowMs: 0, fullFoldLimit: FULL_FOLD_LIMIT, tailEvents: TAIL, onProgress: (count) => (read = count) });
    expect(fast.openedFrom).toBe('checkpoint');
    expect(read).toBe(TAIL);
    expect(fast.timelineFrom).toBe(HEAD - TAIL + 1);
    expect(comparable(fast)).toEqual(comparable(whole));
    expect(fast.checkpoint).toMatchObject({ sequence: AT, behind: 503, status: 'used', defects: [] });
    // The audit reads the record (a live checkpoint encoded on demand); the view opened from the live one has no bytes.
    // An encoded record of AT events' state: more than ten bytes an event (about 19).
    expect(whole.checkpoint?.bytes).toBeGreaterThan(AT * 10);
    expect(fast.checkpoint?.bytes).toBe(live ? 0 : whole.checkpoint?.bytes);
    expect(describeCheckpoint(fast)).toMatch(
      new RegExp(`^at sequence ${AT}, 503 event\\(s\\) behind the head, ${live ? 'kept live in memory' : '\\d+ bytes'}: this view opened from it and folded the 503 event\\(s\\) after it; not audited`),
    );
    // TAIL (2,000) events are 800 bars: the latest 400 are the same as the whole log's.
    expect(fast.timeline.bars).toHaveLength(MAX_TIMELINE_BARS);
    expect(fast.timeline.bars).toEqual(whole.timeline.bars);
    expect(fast.timeline.total).toBe(buildTimeline(events.slice(fast.timelineFrom - 1)).bars.length);

    // A checkpoint older than the tail: the fold reads from just after it.
    const behind = await loadInspection(store, sessionId, { nowMs: 0, fullFoldLimit: FULL_FOLD_LIMIT, tailEvents: 200 });
    expect(behind.timelineFrom).toBe(AT + 1);
    expect(comparable(behind)).toEqual(comparable(whole));

    // Pages of the event list before the tail are read on their own.
    // The first page, one well before the tail, one in the tail, the head, past the head.
    for (const listFrom of [1, Math.round(AT / 3), HEAD - 104, HEAD, HEAD + 1000]) {
      const wholePage = await loadInspection(store, sessionId, { nowMs: 0, listFrom });
      const fastPage = await loadInspection(store, sessionId, { nowMs: 0, listFrom, fullFoldLimit: FULL_FOLD_LIMIT, tailEvents: 200 });
      expect(fastPage.openedFrom).toBe('checkpoint');
      expect(comparable(fastPage)).toEqual(comparable(wholePage));
    }

    const html = String(await InspectorPage({ inspection: fast, scopes: ALL_INSPECTOR_SCOPES, basePath: '/v1/sessions/long-checkpointed/inspect' }));
    expect(html).toContain('<dd id="checkpoint" data-status="used">');
    expect(html).toContain('href="/v1/sessions/long-checkpointed/inspect?full=1"');
    expect(html).toContain(`bars begun from sequence ${fast.timelineFrom} on`);
    const wholeHtml = String(await InspectorPage({ inspection: whole, scopes: ALL_INSPECTOR_SCOPES, basePath: '/x' }));
    expect(wholeHtml).not.toContain('id="whole-log"');
    expect(wholeHtml).not.toContain('id="timeline-from"');
  });

  it('folds the whole log at or under the limit, and without a usable checkpoint', async () => {
    const store = await longSession(live);
    expect((await loadInspection(store, sessionId, { nowMs: 0, fullFoldLimit: HEAD })).openedFrom).toBe('log');
    expect((await loadInspection(store, sessionId, { nowMs: 0, fullFoldLimit: HEAD - 1 })).openedFrom).toBe('checkpoint');
    // The same log without its checkpoint, and with one written for another session.
    const bare = new MemoryDurableEventStore();
    await appendCycles(bare, sessionId, 0, CYCLES + 100);
    await bare.append(sessionId, cycleDrafts(CYCLES + 100).slice(0, 3));
    const uncheckpointed = await loadInspection(bare, sessionId, { nowMs: 0, fullFoldLimit: 100 });
    expect(uncheckpointed.openedFrom).toBe('log');
    expect(uncheckpointed.checkpoint).toBeNull();
    const record = await store.readCheckpoint(sessionId);
    if (record === null) throw new Error('no checkpoint');
    await bare.writeCheckpoint(sessionId, record);
    // Event IDs differ in the copy: the checkpoint stands over another event, so it is discarded.
    const replaced = await loadInspection(bare, sessionId, { nowMs: 0, fullFoldLimit: 100 });
    expect(replaced.openedFrom).toBe('log');
    expect(replaced.checkpoint?.status).toBe('discarded');
    expect(comparable(replaced).plan).toEqual((await loadInspection(store, sessionId, { nowMs: 0 })).plan);
  });

  it('reports a log the projector refuses after the checkpoint like the whole-log fold', async () => {
    const store = await longSession(live);
    // A turn that ends without having started: the projector refuses it.
    await store.append(sessionId, [{ type: 'turn_completed', requestId: RequestId(`cycle-request-${CYCLES + 100}`), turnId: TurnId('never-started'), data: { turn: 2, hasToolCalls: false } }]);
    const whole = await loadInspection(store, sessionId, { nowMs: 0 });
    const fast = await loadInspection(store, sessionId, { nowMs: 0, fullFoldLimit: FULL_FOLD_LIMIT });
    expect(whole.projectionFailure).not.toBeNull();
    expect(fast.openedFrom).toBe('checkpoint');
    expect(comparable(fast)).toEqual(comparable(whole));
  });

  it('falls back to the whole log when the checkpoint cannot judge an ID reused after it (a live one can)', async () => {
    const store = await longSession(live);
    // A request ID used before the checkpoint, accepted again after it: only the log can tell.
    await store.append(sessionId, [cycleDrafts(CYCLES + 100).slice(3, 5), cycleDrafts(7).slice(0, 1)].flat());
    const whole = await loadInspection(store, sessionId, { nowMs: 0 });
    expect(whole.projectionFailure).not.toBeNull();
    const fast = await loadInspection(store, sessionId, { nowMs: 0, fullFoldLimit: FULL_FOLD_LIMIT });
    // A live checkpoint knows every ID exactly and judges it; a record's hashes cannot.
    expect(fast.openedFrom).toBe(live ? 'checkpoint' : 'log');
    expect(fast.checkpoint?.status).toBe(live ? 'used' : 'matches');
    expect(comparable(fast)).toEqual(comparable(whole));
  });
});
