/**
 * Append checks: compare-and-append in each precondition form, store-assigned envelope fields,
 * contiguous sequences across batches and session isolation.
 *
 * Each check seeds its own fresh sessions, acts, then reads the log back through the public
 * API, so a store that acknowledges something it did not store (or stores something it refused)
 * fails here.
 */
import type { DurableEventStore } from '../core/store.js';
import { DURABLE_EVENT_SCHEMA_VERSION, isIsoTimestamp } from '../protocol/events.js';
import { EventSequence, SessionId } from '../protocol/ids.js';
import {
  assert,
  assertDeepEqual,
  assertEqual,
  expectCode,
  expectSequenceConflict,
} from './assertions.js';
import {
  fullyCorrelatedDraft,
  markerDraft,
  markerDrafts,
  markerLabel,
  requestAcceptedDraft,
  requestStartedDraft,
  sessionCreatedDraft,
} from './fixtures.js';
import { seed } from './helpers.js';
import type { ConformanceCheck } from './types.js';

type Check = ConformanceCheck<DurableEventStore>;

const appendWithoutPrecondition: Check = {
  name: 'append-to-empty-without-precondition',
  async run(ctx) {
    const sessionId = ctx.newSessionId();
    const result = await ctx.store.append(sessionId, [
      sessionCreatedDraft(),
      requestAcceptedDraft('a'),
      requestStartedDraft('a'),
    ]);
    assertEqual(result.previousSequence, null, 'previousSequence of the first batch');
    assertEqual(result.lastSequence, 3, 'lastSequence of a 3-event first batch');
    assertDeepEqual(
      result.events.map((event) => event.sequence),
      [1, 2, 3],
      'sequences of the first batch',
    );
    await ctx.expectHead(sessionId, 3);
  },
};

const appendWithNull: Check = {
  name: 'append-to-empty-with-null-precondition',
  async run(ctx) {
    const sessionId = ctx.newSessionId();
    const result = await ctx.store.append(sessionId, [sessionCreatedDraft()], { expectedLastSequence: null });
    assertEqual(result.previousSequence, null, 'previousSequence');
    assertEqual(result.lastSequence, 1, 'lastSequence');
    await ctx.expectHead(sessionId, 1);
  },
};

const appendWithMatchingHead: Check = {
  name: 'append-with-matching-head',
  async run(ctx) {
    const sessionId = ctx.newSessionId();
    await seed(ctx, sessionId, 2);
    const second = await ctx.store.append(sessionId, [markerDraft('b')], {
      expectedLastSequence: EventSequence(2),
    });
    assertEqual(second.previousSequence, 2, 'previousSequence after a matching precondition');
    assertEqual(second.lastSequence, 3, 'lastSequence after a matching precondition');
    const third = await ctx.store.append(sessionId, markerDrafts(2, 'c'), {
      expectedLastSequence: EventSequence(3),
    });
    assertEqual(third.previousSequence, 3, 'previousSequence of the next batch');
    assertEqual(third.lastSequence, 5, 'lastSequence of the next batch');
    await ctx.expectHead(sessionId, 5);
  },
};

const conflictNumberOnEmpty: Check = {
  name: 'append-conflict-sequence-on-empty',
  async run(ctx) {
    const sessionId = ctx.newSessionId();
    await expectSequenceConflict(
      ctx.store.append(sessionId, [sessionCreatedDraft()], { expectedLastSequence: EventSequence(1) }),
      1,
      null,
      'expectedLastSequence 1 on an empty stream',
    );
    await ctx.expectHead(sessionId, null, 'head after the refused append');
  },
};

const conflictNullOnNonEmpty: Check = {
  name: 'append-conflict-null-on-non-empty',
  async run(ctx) {
    const sessionId = ctx.newSessionId();
    await seed(ctx, sessionId, 2);
    await expectSequenceConflict(
      ctx.store.append(sessionId, [sessionCreatedDraft()], { expectedLastSequence: null }),
      null,
      2,
      'expectedLastSequence null on a stream with 2 events',
    );
    await ctx.expectHead(sessionId, 2, 'head after the refused append');
  },
};

const conflictStale: Check = {
  name: 'append-conflict-stale-sequence',
  async run(ctx) {
    const sessionId = ctx.newSessionId();
    await seed(ctx, sessionId, 2);
    await seed(ctx, sessionId, 1, 'more');
    for (const stale of [2, 1]) {
      await expectSequenceConflict(
        ctx.store.append(sessionId, [markerDraft('late')], { expectedLastSequence: EventSequence(stale) }),
        stale,
        3,
        `stale expectedLastSequence ${stale} with head 3`,
      );
    }
    await ctx.expectHead(sessionId, 3, 'head after the refused appends');
  },
};

const conflictAhead: Check = {
  name: 'append-conflict-sequence-ahead-of-head',
  async run(ctx) {
    const sessionId = ctx.newSessionId();
    await seed(ctx, sessionId, 2);
    for (const ahead of [3, 100]) {
      await expectSequenceConflict(
        ctx.store.append(sessionId, [markerDraft('early')], { expectedLastSequence: EventSequence(ahead) }),
        ahead,
        2,
        `expectedLastSequence ${ahead} with head 2`,
      );
    }
    await ctx.expectHead(sessionId, 2, 'head after the refused appends');
  },
};

const conflictWritesNothing: Check = {
  name: 'append-conflict-writes-nothing',
  async run(ctx) {
    const sessionId = ctx.newSessionId();
    await seed(ctx, sessionId, 3);
    const before = await ctx.readAll(sessionId);
    await expectSequenceConflict(
      ctx.store.append(sessionId, markerDrafts(4, 'refused'), { expectedLastSequence: EventSequence(1) }),
      1,
      3,
    );
    assertDeepEqual(await ctx.readAll(sessionId), before, 'log after a refused 4-event batch');
    const next = await ctx.store.append(sessionId, [markerDraft('after')]);
    assertEqual(next.lastSequence, 4, 'the next append continues right after the untouched head');
  },
};

const malformedPrecondition: Check = {
  name: 'append-rejects-malformed-precondition',
  async run(ctx) {
    const sessionId = ctx.newSessionId();
    await seed(ctx, sessionId, 1);
    // 0 must never mean "no check" or "empty": only null does.
    for (const bad of [0, -1, 1.5, Number.NaN, '1', true]) {
      await expectCode(
        ctx.store.append(sessionId, [markerDraft('x')], {
          // SAFETY: deliberately malformed to reach the run-time check.
          expectedLastSequence: bad as unknown as EventSequence,
        }),
        'DURABLE_EVENT_INVALID_INPUT',
        `expectedLastSequence ${JSON.stringify(bad) ?? String(bad)}`,
      );
    }
    await ctx.expectHead(sessionId, 1, 'head after malformed preconditions');
  },
};

const envelopeFields: Check = {
  name: 'append-stamps-envelope-fields',
  async run(ctx) {
    const sessionId = ctx.newSessionId();
    const occurredAt = '2024-02-29T23:59:59.123Z';
    const drafts = [sessionCreatedDraft(), fullyCorrelatedDraft(occurredAt), markerDraft('plain')];
    const before = ctx.now();
    const result = await ctx.store.append(sessionId, drafts);
    const after = ctx.now();
    assertEqual(result.events.length, 3, 'events in the append result');
    const recordedAt = result.events[0]?.recordedAt;
    assert(isIsoTimestamp(recordedAt), `recordedAt must be an ISO-8601 UTC timestamp, got ${String(recordedAt)}`);
    const recordedMs = Date.parse(recordedAt);
    assert(
      recordedMs >= Math.floor(before) - 1 && recordedMs <= after + 1,
      `recordedAt ${recordedAt} must be the commit time (between ${new Date(before).toISOString()} and ${new Date(after).toISOString()})`,
    );
    result.events.forEach((event, index) => {
      const draft = drafts[index];
      assertEqual(event.schemaVersion, DURABLE_EVENT_SCHEMA_VERSION, `events[${index}].schemaVersion`);
      assertEqual(event.sessionId, sessionId, `events[${index}].sessionId`);
      assertEqual(event.sequence, index + 1, `events[${index}].sequence`);
      assert(typeof event.eventId === 'string' && event.eventId.length > 0, `events[${index}].eventId must be a non-empty string`);
      assertEqual(event.recordedAt, recordedAt, `events[${index}].recordedAt (one batch, one commit time)`);
      const { schemaVersion: _v, eventId: _e, sequence: _s, sessionId: _id, recordedAt: _r, occurredAt, ...rest } =
        event;
      const { occurredAt: draftOccurredAt, ...draftRest } = draft as typeof draft & { occurredAt?: string };
      assertEqual(occurredAt, draftOccurredAt ?? recordedAt, `events[${index}].occurredAt`);
      assertDeepEqual(rest, draftRest, `events[${index}] type, data and correlation fields`);
    });
    assertDeepEqual(await ctx.readAll(sessionId), result.events, 'read-back events equal the append result');
  },
};

const uniqueEventIds: Check = {
  name: 'append-assigns-unique-event-ids',
  async run(ctx) {
    const first = ctx.newSessionId();
    const second = ctx.newSessionId();
    await seed(ctx, first, 5);
    await seed(ctx, first, 3, 'again');
    await seed(ctx, second, 4);
    const ids = [...(await ctx.readAll(first)), ...(await ctx.readAll(second))].map((event) => event.eventId);
    assertEqual(new Set(ids).size, ids.length, `distinct eventIds among ${ids.length} events`);
  },
};

const contiguousAcrossBatches: Check = {
  name: 'append-sequences-contiguous-across-batches',
  async run(ctx) {
    const sessionId = ctx.newSessionId();
    const sizes = [1, 3, 2, 5];
    let head: number | null = null;
    const labels: string[] = [];
    for (const [batch, size] of sizes.entries()) {
      const drafts = markerDrafts(size, `batch${batch}`);
      labels.push(...drafts.map((draft) => String(draft.data.output)));
      const result = await ctx.store.append(sessionId, drafts);
      assertEqual(result.previousSequence, head, `batch ${batch} previousSequence`);
      assertEqual(result.lastSequence, (head ?? 0) + size, `batch ${batch} lastSequence`);
      assertDeepEqual(
        result.events.map((event) => event.sequence),
        Array.from({ length: size }, (_, index) => (head ?? 0) + index + 1),
        `batch ${batch} sequences`,
      );
      head = result.lastSequence;
    }
    const events = await ctx.readAll(sessionId);
    assertDeepEqual(
      events.map((event) => event.sequence),
      Array.from({ length: 11 }, (_, index) => index + 1),
      'sequences read back',
    );
    assertDeepEqual(events.map(markerLabel), labels, 'events read back in append order');
  },
};

const sessionsIsolated: Check = {
  name: 'sessions-are-isolated',
  async run(ctx) {
    const a = ctx.newSessionId();
    const b = ctx.newSessionId();
    await ctx.store.append(a, markerDrafts(3, 'a'), { expectedLastSequence: null });
    const inB = await ctx.store.append(b, [markerDraft('b-0')], { expectedLastSequence: null });
    assertEqual(inB.previousSequence, null, 'a second session starts empty');
    assertEqual(inB.lastSequence, 1, 'a second session numbers from 1');
    await ctx.expectHead(a, 3, 'head of session A');
    await ctx.expectHead(b, 1, 'head of session B');
    const eventsB = await ctx.readAll(b);
    assertDeepEqual(eventsB.map(markerLabel), ['b-0'], 'session B holds only its own events');
    assert(eventsB.every((event) => event.sessionId === b), 'events of B carry sessionId B');
    await expectSequenceConflict(
      ctx.store.append(b, [markerDraft('b-1')], { expectedLastSequence: EventSequence(3) }),
      3,
      1,
      "session B's precondition uses B's head, not A's",
    );
    await ctx.expectHead(ctx.newSessionId(), null, 'an untouched session');
  },
};

const invalidSessionId: Check = {
  name: 'calls-reject-invalid-session-id',
  async run(ctx) {
    for (const bad of ['', 'bad\nid', 's'.repeat(257)]) {
      // SAFETY: deliberately malformed to reach the run-time check.
      const sessionId = bad as SessionId;
      const label = JSON.stringify(bad.slice(0, 12));
      await expectCode(ctx.store.append(sessionId, [markerDraft('x')]), 'DURABLE_EVENT_INVALID_INPUT', `append to ${label}`);
      await expectCode(ctx.store.read(sessionId), 'DURABLE_EVENT_INVALID_INPUT', `read of ${label}`);
      await expectCode(ctx.store.getHeadSequence(sessionId), 'DURABLE_EVENT_INVALID_INPUT', `head of ${label}`);
    }
    // A valid but unusual ID works and stays separate.
    const unusual = SessionId(`${ctx.newSessionId()}/../ünïcødé ✓`);
    await ctx.store.append(unusual, [markerDraft('unusual')]);
    await ctx.expectHead(unusual, 1, 'session with an unusual ID');
  },
};

/** Compare-and-append, envelope and sequence checks. */
export const appendChecks: Check[] = [
  appendWithoutPrecondition,
  appendWithNull,
  appendWithMatchingHead,
  conflictNumberOnEmpty,
  conflictNullOnNonEmpty,
  conflictStale,
  conflictAhead,
  conflictWritesNothing,
  malformedPrecondition,
  envelopeFields,
  uniqueEventIds,
  contiguousAcrossBatches,
  sessionsIsolated,
  invalidSessionId,
];
