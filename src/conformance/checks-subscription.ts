/**
 * Subscription conformance checks: `DurableEventSubscription` run against the store under test.
 *
 * They prove the replay contract end to end on a real backend: replay through the head captured
 * at open, one `caught_up` barrier, live events afterwards (by `watch` where the store has it,
 * else by polling), resumption from a saved cursor without loss or duplication, fail-closed
 * cursors, `follow: false`, the end after `session_closed`, and `close()` / abort semantics.
 */
import { DurableEventSubscription } from '../core/subscription/subscription.js';
import type { StoreAgnosticCheck, StoreCheckContext } from './checks-journal.js';
import type { DurableSubscriptionMessage } from '../core/subscription/subscription-options.js';
import { durableEventCursor, type DurableEventCursor } from '../protocol/cursor.js';
import { isDurableEventSubscriptionError } from '../protocol/errors.js';
import { DurableEventType } from '../protocol/events.js';
import { EventId, EventSequence, type EventSequence as Sequence, type SessionId } from '../protocol/ids.js';
import { assert, assertDeepEqual, assertEqual, describeValue, expectAbortError, expectRejection, fail } from './assertions.js';
import { markerDrafts } from './fixtures.js';
import { EVENTUALLY_TIMEOUT_MS } from './helpers.js';

type Check = StoreAgnosticCheck;
type Ctx = StoreCheckContext;

/** Poll interval the checks use, so polling stores stay fast. */
const CHECK_POLL_INTERVAL_MS = 5;

async function take(subscription: DurableEventSubscription, what: string): Promise<DurableSubscriptionMessage> {
  const result = await subscription.next();
  if (result.done === true) fail(`${what}: the subscription ended early`);
  return result.value;
}

async function takeEvent(subscription: DurableEventSubscription, what: string): Promise<{ sequence: number; live: boolean; cursor: DurableEventCursor; type: string }> {
  const message = await take(subscription, what);
  if (message.type !== 'event') fail(`${what}: expected an event, got ${describeValue(message)}`);
  return { sequence: message.event.sequence, live: message.live, cursor: message.cursor, type: message.event.type };
}

async function expectCaughtUp(subscription: DurableEventSubscription, head: number | null, what: string): Promise<void> {
  const message = await take(subscription, what);
  if (message.type !== 'caught_up') fail(`${what}: expected caught_up, got ${describeValue(message)}`);
  assertEqual(message.headSequence, head, `${what}: caught_up.headSequence`);
}

async function expectEnd(subscription: DurableEventSubscription, what: string): Promise<void> {
  const result = await subscription.next();
  assertEqual(result.done, true, `${what}: done`);
}

async function withinBound<T>(promise: Promise<T>, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const bound = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: nothing within ${EVENTUALLY_TIMEOUT_MS} ms`)), EVENTUALLY_TIMEOUT_MS);
  });
  try {
    return await Promise.race([promise, bound]);
  } finally {
    if (timer !== undefined) clearTimeout(timer);
  }
}

async function seeded(ctx: Ctx, count: number): Promise<SessionId> {
  const sessionId = ctx.newSessionId();
  if (count > 0) await ctx.store.append(sessionId, markerDrafts(count, 'sub'));
  return sessionId;
}

function open(ctx: Ctx, sessionId: SessionId, options: Parameters<typeof DurableEventSubscription.open>[2] = {}): Promise<DurableEventSubscription> {
  return DurableEventSubscription.open(ctx.store, sessionId, { pollIntervalMs: CHECK_POLL_INTERVAL_MS, ...options });
}

const replayBarrierLive: Check = {
  name: 'subscription-replay-barrier-live',
  async run(ctx) {
    const sessionId = await seeded(ctx, 5);
    const subscription = await open(ctx, sessionId, { pageSize: 2 });
    assertEqual(subscription.replayHeadSequence, 5, 'replay barrier');
    // Appended after open: beyond the barrier, so delivered live after caught_up.
    await ctx.store.append(sessionId, markerDrafts(2, 'after-open'));
    const replayed = [];
    for (let index = 0; index < 5; index++) replayed.push(await takeEvent(subscription, `replayed event ${index}`));
    assertDeepEqual(replayed.map((event) => [event.sequence, event.live]), [1, 2, 3, 4, 5].map((s) => [s, false]), 'replay');
    const stored = await ctx.readAll(sessionId);
    assertDeepEqual(replayed[2]?.cursor, durableEventCursor(stored[2] ?? fail('event 3 missing')), 'cursor of event 3');
    await expectCaughtUp(subscription, 5, 'barrier');
    const live = [await takeEvent(subscription, 'live 6'), await takeEvent(subscription, 'live 7')];
    assertDeepEqual(live.map((event) => [event.sequence, event.live]), [[6, true], [7, true]], 'events appended after open');
    const pending = subscription.next();
    await ctx.store.append(sessionId, markerDrafts(1, 'live'));
    const next = await withinBound(pending, 'a live append');
    assert(next.done !== true && next.value.type === 'event' && next.value.event.sequence === 8 && next.value.live, 'live event 8');
    subscription.close();
    await expectEnd(subscription, 'after close');
  },
};

const resumeFromCursor: Check = {
  name: 'subscription-resume-from-saved-cursor',
  async run(ctx) {
    const sessionId = await seeded(ctx, 4);
    const seen: number[] = [];
    let saved: DurableEventCursor | null = null;
    let appended = 4;
    // Three connections, each consuming a few events, with appends racing the reads.
    for (let round = 0; round < 3; round++) {
      const subscription = await open(ctx, sessionId, { after: saved, pageSize: 3 });
      const barrier = subscription.replayHeadSequence;
      let consumed = 0;
      for (;;) {
        const message = await take(subscription, `round ${round}`);
        if (message.type === 'caught_up') {
          assertEqual(message.headSequence, barrier, 'caught_up reports the barrier');
          continue;
        }
        seen.push(message.event.sequence);
        saved = message.cursor; // saved after processing
        consumed += 1;
        // Every delivery races one more append, so the log always runs ahead of the reader.
        await ctx.store.append(sessionId, markerDrafts(1, `round-${round}-${consumed}`));
        appended += 1;
        if (consumed === 5) break;
      }
      subscription.close();
    }
    const subscription = await open(ctx, sessionId, { after: saved, follow: false });
    for (;;) {
      const message = await take(subscription, 'final drain');
      if (message.type === 'caught_up') break;
      seen.push(message.event.sequence);
    }
    await expectEnd(subscription, 'follow: false after caught_up');
    assertDeepEqual(seen, Array.from({ length: appended }, (_, index) => index + 1), 'every event exactly once, in order');
  },
};

const failClosedCursors: Check = {
  name: 'subscription-fail-closed-cursors',
  async run(ctx) {
    const sessionId = await seeded(ctx, 3);
    const other = await seeded(ctx, 3);
    const events = await ctx.readAll(sessionId);
    const third = events[2] ?? fail('event 3 missing');
    const foreign = durableEventCursor((await ctx.readAll(other))[0] ?? fail('foreign event missing'));
    const cases: Array<[string, unknown]> = [
      ['a cursor of another session', foreign],
      ['a cursor ahead of the head', { ...durableEventCursor(third), sequence: EventSequence(9) }],
      ['a cursor naming a replaced event', { ...durableEventCursor(third), eventId: EventId('replaced-event') }],
      ['a cursor without its version', { sessionId, sequence: 1, eventId: third.eventId }],
    ];
    for (const [what, after] of cases) {
      const error = await expectRejection(
        // SAFETY: deliberately malformed cursors, to reach the run-time checks.
        DurableEventSubscription.open(ctx.store, sessionId, { after: after as DurableEventCursor }),
        what,
      );
      if (!isDurableEventSubscriptionError(error)) fail(`${what}: expected DurableEventSubscriptionError, got ${describeValue(error)}`, error);
    }
    const empty = ctx.newSessionId();
    const error = await expectRejection(
      DurableEventSubscription.open(ctx.store, empty, { after: { ...durableEventCursor(third), sessionId: empty } }),
      'a cursor into an empty session',
    );
    assert(isDurableEventSubscriptionError(error), `an empty session's cursor: ${describeValue(error)}`);
  },
};

const followFalse: Check = {
  name: 'subscription-follow-false-replays-the-snapshot',
  async run(ctx) {
    const sessionId = await seeded(ctx, 3);
    const subscription = await open(ctx, sessionId, { follow: false, pageSize: 1 });
    await ctx.store.append(sessionId, markerDrafts(2, 'late'));
    const sequences = [];
    for (let index = 0; index < 3; index++) sequences.push((await takeEvent(subscription, `snapshot ${index}`)).sequence);
    assertDeepEqual(sequences, [1, 2, 3], 'snapshot events');
    await expectCaughtUp(subscription, 3, 'snapshot barrier');
    await expectEnd(subscription, 'after the snapshot');
    const empty = await open(ctx, ctx.newSessionId(), { follow: false });
    await expectCaughtUp(empty, null, 'empty session');
    await expectEnd(empty, 'empty snapshot');
  },
};

const endsAfterClosure: Check = {
  name: 'subscription-ends-after-session-closed',
  async run(ctx) {
    const sessionId = ctx.newSessionId();
    await ctx.store.append(sessionId, [{ type: DurableEventType.SESSION_CREATED, data: {} }]);
    const subscription = await open(ctx, sessionId);
    assertEqual((await takeEvent(subscription, 'created')).type, 'session_created', 'first event');
    await expectCaughtUp(subscription, 1, 'barrier');
    const pending = subscription.next();
    await ctx.store.append(sessionId, [{ type: DurableEventType.SESSION_CLOSED, data: { reason: 'completed' } }]);
    const closed = await withinBound(pending, 'session_closed');
    assert(closed.done !== true && closed.value.type === 'event' && closed.value.event.type === 'session_closed', 'session_closed delivered live');
    await expectEnd(subscription, 'after session_closed');
    const replay = await open(ctx, sessionId);
    await takeEvent(replay, 'replayed created');
    const last = await takeEvent(replay, 'replayed closure');
    assertEqual(last.type, 'session_closed', 'replayed closure');
    await expectCaughtUp(replay, 2, 'barrier after a replayed closure');
    await expectEnd(replay, 'after a replayed closure');
    const resumed = await open(ctx, sessionId, { after: last.cursor });
    await expectCaughtUp(resumed, 2, 'resumed at the closure');
    await expectEnd(resumed, 'resumed at the closure');
  },
};

const closeAndAbort: Check = {
  name: 'subscription-close-and-abort',
  async run(ctx) {
    const sessionId = ctx.newSessionId();
    const subscription = await open(ctx, sessionId);
    await expectCaughtUp(subscription, null, 'empty session');
    const pending = subscription.next();
    subscription.close();
    const result = await withinBound(pending, 'close() releasing a pending next()');
    assertEqual(result.done, true, 'a pending next() after close()');
    await expectEnd(subscription, 'after close');

    const controller = new AbortController();
    const aborted = await open(ctx, sessionId, { signal: controller.signal });
    await expectCaughtUp(aborted, null, 'empty session (abort)');
    const waiting = aborted.next();
    controller.abort();
    await expectAbortError(withinBound(waiting, 'abort releasing a pending next()'), 'a pending next() after abort');
    await expectAbortError(aborted.next(), 'next() after abort');
    await expectAbortError(DurableEventSubscription.open(ctx.store, sessionId, { signal: controller.signal }), 'open with an aborted signal');
  },
};

const pushedWithoutPolling: Check = {
  name: 'subscription-live-by-watch',
  requires: ['watch'],
  async run(ctx) {
    const sessionId = await seeded(ctx, 1);
    // A poll interval far beyond the bound: only a watch notification can deliver in time.
    const subscription = await DurableEventSubscription.open(ctx.store, sessionId, { pollIntervalMs: 60_000 });
    await takeEvent(subscription, 'replayed');
    await expectCaughtUp(subscription, 1, 'barrier');
    const pending = subscription.next();
    await ctx.store.append(sessionId, markerDrafts(1, 'pushed'));
    const next = await withinBound(pending, 'a watch-driven live event');
    const sequence: Sequence | undefined = next.done === true || next.value.type !== 'event' ? undefined : next.value.event.sequence;
    assertEqual(sequence, 2, 'pushed event');
    subscription.close();
  },
};

/** Every subscription check, for `runStoreConformance({ extraChecks })`. */
export const subscriptionConformanceChecks: readonly Check[] = Object.freeze([
  replayBarrierLive,
  resumeFromCursor,
  failClosedCursors,
  followFalse,
  endsAfterClosure,
  closeAndAbort,
  pushedWithoutPolling,
]);
