/**
 * Validation and limit checks: every malformed batch is refused with
 * `DURABLE_EVENT_INVALID_INPUT`, an over-limit batch with `DURABLE_EVENT_LIMIT_EXCEEDED`, and in
 * both cases the log is left exactly as it was (a batch is all or nothing).
 */
import type { DurableEventStore } from '../core/store.js';
import { MAX_BATCH_EVENTS, MAX_EVENT_BYTES } from '../protocol/limits.js';
import { assertDeepEqual, assertEqual, expectCode } from './assertions.js';
import {
  asDrafts,
  invalidDraftCases,
  markerDraft,
  markerDrafts,
  markerLabel,
  oversizedDraft,
  overfullBatch,
} from './fixtures.js';
import { seed } from './helpers.js';
import type { ConformanceCheck } from './types.js';

type Check = ConformanceCheck<DurableEventStore>;

const invalidDrafts: Check = {
  name: 'append-rejects-invalid-drafts',
  async run(ctx) {
    const seeded = ctx.newSessionId();
    await seed(ctx, seeded, 1);
    const empty = ctx.newSessionId();
    for (const { name, batch } of invalidDraftCases()) {
      await expectCode(ctx.store.append(seeded, asDrafts(batch)), 'DURABLE_EVENT_INVALID_INPUT', name);
      await expectCode(
        ctx.store.append(empty, asDrafts(batch), { expectedLastSequence: null }),
        'DURABLE_EVENT_INVALID_INPUT',
        `${name} (empty stream)`,
      );
    }
    await ctx.expectHead(seeded, 1, 'head after every invalid batch');
    await ctx.expectHead(empty, null, 'empty stream after every invalid batch');
  },
};

const invalidBatchAtomic: Check = {
  name: 'append-invalid-batch-is-atomic',
  async run(ctx) {
    const sessionId = ctx.newSessionId();
    await seed(ctx, sessionId, 2);
    const before = await ctx.readAll(sessionId);
    const batch = [...markerDrafts(5, 'ok'), { type: 'request_started', data: {} }];
    await expectCode(ctx.store.append(sessionId, asDrafts(batch)), 'DURABLE_EVENT_INVALID_INPUT', 'bad last draft');
    assertDeepEqual(await ctx.readAll(sessionId), before, 'log after a batch whose last draft is invalid');
    const next = await ctx.store.append(sessionId, [markerDraft('next')]);
    assertEqual(next.lastSequence, 3, 'the next append continues from the unchanged head');
  },
};

const batchCountLimit: Check = {
  name: 'append-batch-count-limit',
  async run(ctx) {
    const sessionId = ctx.newSessionId();
    await seed(ctx, sessionId, 1);
    await expectCode(
      ctx.store.append(sessionId, overfullBatch()),
      'DURABLE_EVENT_LIMIT_EXCEEDED',
      `a batch of ${MAX_BATCH_EVENTS + 1} events`,
    );
    await ctx.expectHead(sessionId, 1, 'head after an over-count batch');
    const full = await ctx.store.append(sessionId, markerDrafts(MAX_BATCH_EVENTS, 'full'));
    assertEqual(full.lastSequence, MAX_BATCH_EVENTS + 1, `a batch of exactly ${MAX_BATCH_EVENTS} events is accepted`);
  },
};

const eventSizeLimit: Check = {
  name: 'append-event-size-limit',
  async run(ctx) {
    const sessionId = ctx.newSessionId();
    await seed(ctx, sessionId, 1);
    await expectCode(
      ctx.store.append(sessionId, [oversizedDraft()]),
      'DURABLE_EVENT_LIMIT_EXCEEDED',
      'one event over MAX_EVENT_BYTES',
    );
    await expectCode(
      ctx.store.append(sessionId, [...markerDrafts(3, 'small'), oversizedDraft()]),
      'DURABLE_EVENT_LIMIT_EXCEEDED',
      'a batch ending with an event over MAX_EVENT_BYTES',
    );
    await ctx.expectHead(sessionId, 1, 'head after over-size batches');
    // Just under the limit is accepted and reads back intact.
    const big = 'y'.repeat(MAX_EVENT_BYTES - 4096);
    await ctx.store.append(sessionId, [markerDraft('big', big)]);
    const [, stored] = await ctx.readAll(sessionId);
    assertEqual(markerLabel(stored ?? { type: '', data: null }), big, 'an event just under MAX_EVENT_BYTES reads back intact');
  },
};

const illFormedSessionIds: Check = {
  name: 'session-ids-must-be-well-formed-utf16',
  async run(ctx) {
    // A lone surrogate encodes to U+FFFD in UTF-8, so `x\uD800` and `x\uFFFD` would share a file name,
    // a row key or an object name. Every store refuses such IDs before touching storage.
    const base = ctx.newSessionId();
    for (const bad of [`${base}-\uD800`, `${base}-\uDC00`, `\uDFFF${base}`, `${base}-\uDBFF-tail`]) {
      // SAFETY: deliberately unbranded input; the store must validate it at run time.
      const sessionId = bad as unknown as Parameters<DurableEventStore['append']>[0];
      await expectCode(ctx.store.append(sessionId, [markerDraft('bad-id')]), 'DURABLE_EVENT_INVALID_INPUT', `append to ${JSON.stringify(bad)}`);
      await expectCode(ctx.store.read(sessionId), 'DURABLE_EVENT_INVALID_INPUT', `read of ${JSON.stringify(bad)}`);
      await expectCode(ctx.store.getHeadSequence(sessionId), 'DURABLE_EVENT_INVALID_INPUT', `head of ${JSON.stringify(bad)}`);
    }
    // A well-formed astral character (a surrogate pair) stays valid.
    const pair = `${base}-\uD83D\uDE00`;
    // SAFETY: as above; this one is valid and must be accepted.
    const ok = pair as unknown as Parameters<DurableEventStore['append']>[0];
    const result = await ctx.store.append(ok, [markerDraft('pair')]);
    assertEqual(result.lastSequence, 1, 'an ID with a surrogate pair is accepted');
  },
};

/** Draft validation and size limit checks. */
export const validationChecks: Check[] = [
  invalidDrafts,
  invalidBatchAtomic,
  batchCountLimit,
  eventSizeLimit,
  illFormedSessionIds,
];
