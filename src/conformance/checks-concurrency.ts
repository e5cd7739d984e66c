/**
 * Concurrency checks: appends started together must serialize. With the same precondition
 * exactly one wins and every other one sees the winner's head in its conflict; without a
 * precondition every batch lands, in one contiguous range of its own.
 */
import type { DurableAppendResult, DurableEventStore } from '../core/store.js';
import { isDurableEventSequenceConflictError } from '../protocol/errors.js';
import { EventSequence } from '../protocol/ids.js';
import { assert, assertDeepEqual, assertEqual, describeValue, fail } from './assertions.js';
import { markerDraft, markerDrafts, markerLabel } from './fixtures.js';
import { seed } from './helpers.js';
import type { ConformanceCheck } from './types.js';

type Check = ConformanceCheck<DurableEventStore>;

/** How many appends race in each concurrency check. */
const RACERS = 8;

function splitSettled(
  results: PromiseSettledResult<DurableAppendResult>[],
): { won: Array<{ index: number; value: DurableAppendResult }>; lost: unknown[] } {
  const won: Array<{ index: number; value: DurableAppendResult }> = [];
  const lost: unknown[] = [];
  results.forEach((result, index) => {
    if (result.status === 'fulfilled') won.push({ index, value: result.value });
    else lost.push(result.reason);
  });
  return { won, lost };
}

const conditionalRace: Check = {
  name: 'concurrent-conditional-appends-one-winner',
  async run(ctx) {
    for (const seeded of [2, 0]) {
      const sessionId = ctx.newSessionId();
      if (seeded > 0) await seed(ctx, sessionId, seeded);
      const expected = seeded === 0 ? null : EventSequence(seeded);
      const results = await Promise.allSettled(
        Array.from({ length: RACERS }, (_, index) =>
          ctx.store.append(sessionId, [markerDraft(`racer-${index}`)], { expectedLastSequence: expected }),
        ),
      );
      const { won, lost } = splitSettled(results);
      const what = `${RACERS} appends expecting head ${String(expected)}`;
      assertEqual(won.length, 1, `${what}: winners`);
      const winner = won[0];
      if (winner === undefined) return;
      assertEqual(winner.value.lastSequence, seeded + 1, `${what}: winner's lastSequence`);
      for (const error of lost) {
        if (!isDurableEventSequenceConflictError(error)) {
          fail(`${what}: a loser must get DURABLE_EVENT_SEQUENCE_CONFLICT, got ${describeValue(error)}`, error);
        }
        assertEqual(error.expected, expected, `${what}: conflict.expected`);
        assertEqual(error.actual, seeded + 1, `${what}: conflict.actual (the winner's head)`);
      }
      const events = await ctx.readAll(sessionId);
      assertEqual(events.length, seeded + 1, `${what}: events stored`);
      assertEqual(markerLabel(events[seeded] ?? { type: '', data: null }), `racer-${winner.index}`, `${what}: stored winner`);
    }
  },
};

const unconditionedRace: Check = {
  name: 'concurrent-unconditioned-appends-all-land',
  async run(ctx) {
    const sessionId = ctx.newSessionId();
    await seed(ctx, sessionId, 1);
    const batchSize = 3;
    const results = await Promise.all(
      Array.from({ length: RACERS }, (_, index) => ctx.store.append(sessionId, markerDrafts(batchSize, `racer${index}`))),
    );
    const ranges = results
      .map((result, index) => ({ index, previous: result.previousSequence ?? 0, last: result.lastSequence }))
      .sort((a, b) => a.previous - b.previous);
    let head = 1;
    for (const range of ranges) {
      assertEqual(range.previous, head, `batch of racer ${range.index} starts right after the previous batch`);
      assertEqual(range.last, head + batchSize, `batch of racer ${range.index} is contiguous`);
      head = range.last;
    }
    const total = 1 + RACERS * batchSize;
    await ctx.expectHead(sessionId, total, 'head after the race');
    const events = await ctx.readAll(sessionId);
    assertDeepEqual(
      events.map((event) => event.sequence),
      Array.from({ length: total }, (_, index) => index + 1),
      'sequences after the race',
    );
    for (const range of ranges) {
      const labels = events.slice(range.previous, range.last).map(markerLabel);
      assertDeepEqual(
        labels,
        Array.from({ length: batchSize }, (_, index) => `racer${range.index}-${index}`),
        `racer ${range.index}'s batch is stored whole and in order`,
      );
    }
    assertEqual(new Set(events.map((event) => event.eventId)).size, total, 'distinct eventIds after the race');
  },
};

const raceAcrossSessions: Check = {
  name: 'concurrent-appends-across-sessions',
  async run(ctx) {
    const sessions = Array.from({ length: RACERS }, () => ctx.newSessionId());
    const results = await Promise.all(
      sessions.map((sessionId, index) =>
        ctx.store.append(sessionId, markerDrafts(2, `s${index}`), { expectedLastSequence: null }),
      ),
    );
    for (const [index, result] of results.entries()) {
      assertEqual(result.lastSequence, 2, `session ${index} lastSequence`);
      const events = await ctx.readAll(sessions[index] ?? ctx.newSessionId());
      assert(
        events.every((event) => event.sessionId === sessions[index]),
        `session ${index} holds only its own events`,
      );
      assertDeepEqual(events.map(markerLabel), [`s${index}-0`, `s${index}-1`], `session ${index} events`);
    }
  },
};

/** Concurrency checks. */
export const concurrencyChecks: Check[] = [conditionalRace, unconditionedRace, raceAcrossSessions];
