/**
 * Watch checks (stores with `watch` only): a listener hears `{ sessionId, lastSequence }` once
 * per committed append, only for its own session, only while subscribed, and never for a refused
 * append; when it hears a notice, the events it names are already readable.
 */
import type { DurableAppendNotice, DurableEventStore, DurableReadResult } from '../core/store.js';
import { EventSequence } from '../protocol/ids.js';
import { assert, assertDeepEqual, assertEqual, expectCode, expectSequenceConflict, fail } from './assertions.js';
import { asDrafts, markerDraft, markerDrafts } from './fixtures.js';
import { eventually, settle } from './helpers.js';
import type { ConformanceCheck } from './types.js';

type Check = ConformanceCheck<DurableEventStore>;

function watchOf(store: DurableEventStore): NonNullable<DurableEventStore['watch']> {
  const watch = store.watch?.bind(store);
  if (watch === undefined) fail('the store lost its watch method');
  return watch;
}

const notifiesAfterCommit: Check = {
  name: 'watch-notifies-after-commit',
  requires: ['watch'],
  async run(ctx) {
    const sessionId = ctx.newSessionId();
    const notices: DurableAppendNotice[] = [];
    const readsAtNotice: Array<Promise<DurableReadResult>> = [];
    const stop = watchOf(ctx.store)(sessionId, (notice) => {
      notices.push(notice);
      // Started from inside the listener: it must already see the notified events.
      readsAtNotice.push(ctx.store.read(sessionId, { after: undefined, limit: 1000 }));
    });
    try {
      const result = await ctx.store.append(sessionId, markerDrafts(2, 'watched'));
      await eventually(() => notices.length >= 1, 'a notice after the append');
      assertDeepEqual(notices[0], { sessionId, lastSequence: result.lastSequence }, 'the notice');
      const page = await readsAtNotice[0];
      assertEqual(page?.headSequence, result.lastSequence, 'head seen by a read started inside the listener');
      assertEqual(page?.events.length, 2, 'events seen by a read started inside the listener');

      const second = await ctx.store.append(sessionId, [markerDraft('again')], {
        expectedLastSequence: EventSequence(2),
      });
      await eventually(() => notices.length >= 2, 'a notice after the second append');
      assertDeepEqual(notices[1], { sessionId, lastSequence: second.lastSequence }, 'the second notice');
      await settle();
      assertEqual(notices.length, 2, 'one notice per append');
    } finally {
      stop();
    }
  },
};

const noticeScope: Check = {
  name: 'watch-is-scoped-and-unsubscribes',
  requires: ['watch'],
  async run(ctx) {
    const watched = ctx.newSessionId();
    const other = ctx.newSessionId();
    const watch = watchOf(ctx.store);
    const heard: DurableAppendNotice[] = [];
    const stop = watch(watched, (notice) => heard.push(notice));
    const witness: DurableAppendNotice[] = [];
    const stopWitness = watch(watched, (notice) => witness.push(notice));
    try {
      await ctx.store.append(other, [markerDraft('elsewhere')]);
      // Refused appends must stay silent.
      await ctx.store.append(watched, [markerDraft('first')], { expectedLastSequence: null });
      await expectSequenceConflict(
        ctx.store.append(watched, [markerDraft('refused')], { expectedLastSequence: null }),
        null,
        1,
      );
      await expectCode(
        ctx.store.append(watched, asDrafts([{ type: 'nope', data: {} }])),
        'DURABLE_EVENT_INVALID_INPUT',
        'invalid draft',
      );
      await eventually(() => witness.length >= 1, 'a notice for the watched session');
      await settle();
      assertDeepEqual(heard, [{ sessionId: watched, lastSequence: 1 }], 'notices heard by the watcher');

      stop();
      await ctx.store.append(watched, [markerDraft('after-unsubscribe')]);
      await eventually(() => witness.length >= 2, 'a notice for the still-subscribed witness');
      await settle();
      assertEqual(heard.length, 1, 'an unsubscribed listener hears nothing more');
      assert(
        witness.every((notice) => notice.sessionId === watched),
        'a listener hears only its own session',
      );
    } finally {
      stop();
      stopWitness();
    }
  },
};

/** Watch checks. */
export const watchChecks: Check[] = [notifiesAfterCommit, noticeScope];
