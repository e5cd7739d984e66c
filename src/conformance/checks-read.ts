/**
 * Cursor read checks: the empty stream, exclusive `after`, page size bounds, cursors ahead of
 * the head, walking a log page by page with `nextCursor` / `hasMore` / `headSequence`, and
 * detached copies (nothing a caller does to a returned event reaches the store).
 */
import type { DurableEventStore } from '../core/store.js';
import { EventSequence } from '../protocol/ids.js';
import { DEFAULT_READ_LIMIT, MAX_EVENT_BYTES, MAX_READ_LIMIT, MAX_READ_PAGE_BYTES } from '../protocol/limits.js';
import { assert, assertDeepEqual, assertEqual, expectCode } from './assertions.js';
import { markerDraft, markerDrafts, markerLabel } from './fixtures.js';
import { seed } from './helpers.js';
import type { ConformanceCheck } from './types.js';

type Check = ConformanceCheck<DurableEventStore>;

const range = (from: number, to: number): number[] => Array.from({ length: to - from + 1 }, (_, i) => from + i);

const emptyStream: Check = {
  name: 'read-empty-stream',
  async run(ctx) {
    const sessionId = ctx.newSessionId();
    assertEqual(await ctx.store.getHeadSequence(sessionId), null, 'head of an empty stream');
    const page = await ctx.store.read(sessionId);
    assertDeepEqual(page, { events: [], nextCursor: null, headSequence: null, hasMore: false }, 'page of an empty stream');
    const limited = await ctx.store.read(sessionId, { limit: 1 });
    assertDeepEqual(limited, page, 'page of an empty stream with limit 1');
  },
};

const afterExclusive: Check = {
  name: 'read-after-is-exclusive',
  async run(ctx) {
    const sessionId = ctx.newSessionId();
    await seed(ctx, sessionId, 5);
    const page = await ctx.store.read(sessionId, { after: EventSequence(2) });
    assertDeepEqual(page.events.map((event) => event.sequence), [3, 4, 5], 'sequences after 2');
    assertEqual(page.nextCursor, 5, 'nextCursor');
    assertEqual(page.headSequence, 5, 'headSequence');
    assertEqual(page.hasMore, false, 'hasMore');
    const fromStart = await ctx.store.read(sessionId);
    assertDeepEqual(fromStart.events.map((event) => event.sequence), range(1, 5), 'sequences without after');
  },
};

const limitBounds: Check = {
  name: 'read-limit-bounds',
  async run(ctx) {
    const sessionId = ctx.newSessionId();
    await seed(ctx, sessionId, 3);
    const one = await ctx.store.read(sessionId, { limit: 1 });
    assertDeepEqual(one.events.map((event) => event.sequence), [1], 'limit 1');
    assertEqual(one.hasMore, true, 'hasMore with limit 1 of 3');
    const max = await ctx.store.read(sessionId, { limit: MAX_READ_LIMIT });
    assertEqual(max.events.length, 3, `limit ${MAX_READ_LIMIT} returns what exists`);
    for (const bad of [0, MAX_READ_LIMIT + 1, 1.5, -1, Number.NaN, Number.POSITIVE_INFINITY, '10']) {
      await expectCode(
        // SAFETY: deliberately malformed to reach the run-time check.
        ctx.store.read(sessionId, { limit: bad as number }),
        'DURABLE_EVENT_INVALID_INPUT',
        `limit ${JSON.stringify(bad) ?? String(bad)}`,
      );
    }
  },
};

const defaultLimit: Check = {
  name: 'read-default-limit',
  async run(ctx) {
    const sessionId = ctx.newSessionId();
    await seed(ctx, sessionId, DEFAULT_READ_LIMIT + 1);
    const page = await ctx.store.read(sessionId);
    assertEqual(page.events.length, DEFAULT_READ_LIMIT, 'events in a page without limit');
    assertEqual(page.nextCursor, DEFAULT_READ_LIMIT, 'nextCursor');
    assertEqual(page.hasMore, true, 'hasMore');
    assertEqual(page.headSequence, DEFAULT_READ_LIMIT + 1, 'headSequence');
  },
};

const cursorAhead: Check = {
  name: 'read-cursor-ahead-of-head-rejected',
  async run(ctx) {
    const empty = ctx.newSessionId();
    await expectCode(
      ctx.store.read(empty, { after: EventSequence(1) }),
      'DURABLE_EVENT_INVALID_CURSOR',
      'after 1 on an empty stream',
    );
    const sessionId = ctx.newSessionId();
    await seed(ctx, sessionId, 3);
    for (const ahead of [4, 1000]) {
      await expectCode(
        ctx.store.read(sessionId, { after: EventSequence(ahead) }),
        'DURABLE_EVENT_INVALID_CURSOR',
        `after ${ahead} with head 3`,
      );
    }
    const atHead = await ctx.store.read(sessionId, { after: EventSequence(3) });
    assertDeepEqual(
      atHead,
      { events: [], nextCursor: 3, headSequence: 3, hasMore: false },
      'page after the head itself (caught up)',
    );
  },
};

const malformedCursor: Check = {
  name: 'read-malformed-cursor-rejected',
  async run(ctx) {
    const sessionId = ctx.newSessionId();
    await seed(ctx, sessionId, 2);
    for (const bad of [0, -1, 1.5, Number.NaN, '1']) {
      await expectCode(
        // SAFETY: deliberately malformed to reach the run-time check.
        ctx.store.read(sessionId, { after: bad as unknown as EventSequence }),
        'DURABLE_EVENT_INVALID_CURSOR',
        `after ${JSON.stringify(bad) ?? String(bad)}`,
      );
    }
  },
};

const pageWalk: Check = {
  name: 'read-pages-walk-whole-log',
  async run(ctx) {
    const sessionId = ctx.newSessionId();
    await ctx.store.append(sessionId, markerDrafts(5, 'a'));
    await ctx.store.append(sessionId, markerDrafts(5, 'b'));
    await ctx.store.append(sessionId, markerDrafts(13, 'c'));
    const head = 23;
    const limit = 4;
    const seen: number[] = [];
    let after: EventSequence | undefined;
    for (let pageIndex = 0; ; pageIndex++) {
      assert(pageIndex <= head, 'the page walk must end');
      const page = await ctx.store.read(sessionId, { after, limit });
      const from = (after ?? 0) + 1;
      const expected = range(from, Math.min(from + limit - 1, head));
      assertDeepEqual(page.events.map((event) => event.sequence), expected, `page ${pageIndex} sequences`);
      assertEqual(page.nextCursor, expected[expected.length - 1] ?? after ?? null, `page ${pageIndex} nextCursor`);
      assertEqual(page.headSequence, head, `page ${pageIndex} headSequence`);
      assertEqual(page.hasMore, (page.nextCursor ?? 0) < head, `page ${pageIndex} hasMore`);
      seen.push(...page.events.map((event) => event.sequence));
      if (!page.hasMore) break;
      after = page.nextCursor ?? undefined;
    }
    assertDeepEqual(seen, range(1, head), 'every sequence exactly once, in order');
    const labels = (await ctx.readAll(sessionId)).map(markerLabel);
    assertEqual(labels[5], 'b-0', 'events keep their batch order');
  },
};

const pageHeadMovesWithAppends: Check = {
  name: 'read-page-reports-current-head',
  async run(ctx) {
    const sessionId = ctx.newSessionId();
    await seed(ctx, sessionId, 3);
    const first = await ctx.store.read(sessionId, { limit: 2 });
    assertEqual(first.headSequence, 3, 'headSequence before more appends');
    await seed(ctx, sessionId, 2, 'more');
    const second = await ctx.store.read(sessionId, { after: first.nextCursor ?? undefined, limit: 2 });
    assertDeepEqual(second.events.map((event) => event.sequence), [3, 4], 'next page after more appends');
    assertEqual(second.headSequence, 5, 'headSequence follows appends');
    assertEqual(second.hasMore, true, 'hasMore follows appends');
  },
};

const detachedCopies: Check = {
  name: 'read-returns-detached-copies',
  async run(ctx) {
    const sessionId = ctx.newSessionId();
    const draft = markerDraft('original', { nested: { list: [1, 2, 3] } });
    const appended = await ctx.store.append(sessionId, [draft, markerDraft('second')]);
    // A JSON snapshot, so that a store handing out shared objects cannot mutate it too.
    const before: unknown = JSON.parse(JSON.stringify(await ctx.readAll(sessionId)));

    // Mutate the draft, the append result and a read page in every way a caller could.
    (draft.data.output as { nested: { list: number[] } }).nested.list.push(4);
    const mutate = (events: Array<{ data: unknown; sequence: number }>): void => {
      const first = events[0];
      if (first === undefined) return;
      const output = (first.data as { output?: { nested?: { list?: number[] } } }).output;
      output?.nested?.list?.push(99);
      (first.data as Record<string, unknown>)['output'] = 'mutated';
      first.sequence = 42;
      events.pop();
    };
    mutate(appended.events);
    const page = await ctx.store.read(sessionId);
    mutate(page.events);
    page.events.push(...page.events);

    const after = await ctx.readAll(sessionId);
    assertDeepEqual(after, before, 'log after mutating the draft, the append result and a page');
    assertDeepEqual(after.map(markerLabel), [{ nested: { list: [1, 2, 3] } }, 'second'], 'stored payloads');
  },
};

/** Cursor read checks. */
/** Encoded size of an event, the unit of every byte limit. */
const sizeOf = (event: unknown): number => new TextEncoder().encode(JSON.stringify(event)).byteLength;

const pagesBoundedByBytes: Check = {
  name: 'read-pages-bounded-by-bytes',
  async run(ctx) {
    // Events near the 1 MiB limit, enough for more than two pages of the read budget: the default
    // page and every page after it must stop at MAX_READ_PAGE_BYTES, not at the event count.
    const sessionId = ctx.newSessionId();
    const big = 'y'.repeat(MAX_EVENT_BYTES - 4096);
    const count = Math.ceil((2 * MAX_READ_PAGE_BYTES) / MAX_EVENT_BYTES) + 2;
    for (let sequence = 0; sequence < count; sequence += 7) {
      const drafts = range(sequence, Math.min(sequence + 6, count - 1)).map((index) => markerDraft(`${index}`, `${index}:${big}`));
      await ctx.store.append(sessionId, drafts);
    }
    const first = await ctx.store.read(sessionId);
    assert(first.events.length >= 1, 'the default page of a log of 1 MiB events is not empty');
    assert(first.events.length < count, 'the default page of a log over two read budgets stops early');
    assertEqual(first.hasMore, true, 'a page cut by its byte budget has hasMore');
    assertEqual(first.nextCursor, first.events.length, 'a cut page continues after its last event');
    let total = 0;
    for (const event of first.events) total += sizeOf(event);
    assert(total <= MAX_READ_PAGE_BYTES, `a page carries at most MAX_READ_PAGE_BYTES (${total})`);
    // Following the cursors reads every event, in order, each page within the budget.
    const labels: string[] = [];
    let after: EventSequence | undefined;
    for (;;) {
      const page = await ctx.store.read(sessionId, { after, limit: MAX_READ_LIMIT });
      let bytes = 0;
      for (const event of page.events) bytes += sizeOf(event);
      assert(page.events.length === 1 || bytes <= MAX_READ_PAGE_BYTES, `page after ${String(after)} carries ${bytes} bytes`);
      for (const event of page.events) labels.push(String(markerLabel(event)).split(':')[0] ?? '');
      if (!page.hasMore) break;
      assert(page.nextCursor !== null && page.nextCursor !== after, 'a page with hasMore advances the cursor');
      after = page.nextCursor ?? undefined;
    }
    assertDeepEqual(labels, range(0, count - 1).map(String), 'every 1 MiB event read back in order');
    // An event larger than the page budget still comes, alone.
    const alone = await ctx.store.read(sessionId, { after: EventSequence(3), maxBytes: 1024 });
    assertEqual(alone.events.length, 1, 'one event larger than maxBytes comes alone');
    assertEqual(alone.events[0]?.sequence, 4, 'the lone event is the next one');
    assertEqual(alone.hasMore, true, 'more follows the lone event');
    // Small events: a budget of three events' bytes gives one to three of them.
    const small = ctx.newSessionId();
    await ctx.store.append(small, markerDrafts(10, 'small'));
    const probe = await ctx.store.read(small, { limit: 3 });
    let three = 0;
    for (const event of probe.events) three += sizeOf(event);
    const cut = await ctx.store.read(small, { maxBytes: three });
    assert(cut.events.length >= 1 && cut.events.length <= 3, `a 3-event budget gives 1..3 events, got ${cut.events.length}`);
    assertEqual(cut.hasMore, true, 'a page cut by maxBytes has hasMore');
    await expectCode(ctx.store.read(small, { maxBytes: 0 }), 'DURABLE_EVENT_INVALID_INPUT', 'maxBytes 0');
    await expectCode(
      ctx.store.read(small, { maxBytes: MAX_READ_PAGE_BYTES + 1 }),
      'DURABLE_EVENT_INVALID_INPUT',
      'maxBytes above MAX_READ_PAGE_BYTES',
    );
  },
};

export const readChecks: Check[] = [
  pagesBoundedByBytes,
  emptyStream,
  afterExclusive,
  limitBounds,
  defaultLimit,
  cursorAhead,
  malformedCursor,
  pageWalk,
  pageHeadMovesWithAppends,
  detachedCopies,
];
