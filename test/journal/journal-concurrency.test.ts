/**
 * Several journals on one session: with pinned heads exactly one command wins per head; without,
 * compare-and-append conflicts are retried until every command lands exactly once. Randomized
 * (bounded) interleavings with a fixed seed list, so failures reproduce.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MemoryDurableEventStore } from '../../src/adapters/memory/memory-store.js';
import { lifecycleDrafts as d } from '../../src/conformance/checks-journal.js';
import { DurableSessionJournal } from '../../src/core/journal/index.js';
import { isDurableEventSequenceConflictError } from '../../src/protocol/errors.js';
import { CommandId, EventSequence, SessionId } from '../../src/protocol/ids.js';
import { sleepIgnoringSignal, wrapStore } from './store-wrappers.js';

const sessionId = SessionId('race-session');

async function startedSession(store: MemoryDurableEventStore): Promise<void> {
  const journal = await DurableSessionJournal.open(store, sessionId);
  await journal.commit({
    commandId: CommandId('begin'),
    events: [d.sessionCreated(), d.requestAccepted('r1'), d.requestStarted('r1')],
  });
}

describe('concurrent journals on one session', () => {
  it('exactly one pinned command wins per observed head', async () => {
    const store = new MemoryDurableEventStore();
    await startedSession(store);
    const journals = await Promise.all(Array.from({ length: 5 }, () => DurableSessionJournal.open(store, sessionId)));
    for (let round = 0; round < 3; round++) {
      const head = await store.getHeadSequence(sessionId);
      const results = await Promise.allSettled(
        journals.map((journal, index) =>
          journal.commit({
            commandId: CommandId(`round-${round}-journal-${index}`),
            events: [d.inputApplied('r1', `input-${round}-${index}`)],
            expectedHeadSequence: head,
          }),
        ),
      );
      const won = results.filter((r) => r.status === 'fulfilled');
      expect(won).toHaveLength(1);
      for (const result of results) {
        if (result.status === 'rejected') {
          expect(isDurableEventSequenceConflictError(result.reason)).toBe(true);
          expect(result.reason).toMatchObject({ expected: head, actual: (head ?? 0) + 1 });
        }
      }
      expect(await store.getHeadSequence(sessionId)).toBe((head ?? 0) + 1);
    }
  });

  it('the same command from several journals lands once: one committed, the rest reconciled', async () => {
    const store = new MemoryDurableEventStore();
    await startedSession(store);
    const journals = await Promise.all(Array.from({ length: 4 }, () => DurableSessionJournal.open(store, sessionId)));
    const command = { commandId: CommandId('shared'), events: [d.inputApplied('r1', 'shared-input')] };
    const results = await Promise.all(journals.map((journal) => journal.commit(command)));
    expect(results.map((r) => r.status).sort()).toEqual(['committed', 'reconciled', 'reconciled', 'reconciled']);
    expect((await store.read(sessionId)).events.filter((e) => e.commandId === 'shared')).toHaveLength(1);
  });

  it('unpinned commands from racing journals all land once, and the journals converge (randomized)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 2, max: 4 }),
        fc.array(fc.tuple(fc.nat(3), fc.integer({ min: 0, max: 2 })), { minLength: 4, maxLength: 14 }),
        async (journalCount, plan) => {
          const inner = new MemoryDurableEventStore();
          await startedSession(inner);
          // Random small delays inside append widen the race windows between journals.
          const store = wrapStore(inner, {
            append: async (append, id, drafts, options) => {
              await sleepIgnoringSignal((drafts.length * 7 + (options?.expectedLastSequence ?? 0)) % 3);
              return append(id, drafts, options);
            },
          });
          const journals = await Promise.all(
            Array.from({ length: journalCount }, () => DurableSessionJournal.open(store, sessionId, { maxConflictRetries: 100 })),
          );
          const commits = plan.map(([journalIndex, extra], index) => {
            const journal = journals[journalIndex % journalCount]!;
            const events = Array.from({ length: extra + 1 }, (_, part) => d.inputApplied('r1', `in-${index}-${part}`));
            return journal.commit({ commandId: CommandId(`cmd-${index}`), events });
          });
          const results = await Promise.all(commits);
          expect(results.every((r) => r.status === 'committed')).toBe(true);
          const events = (await inner.read(sessionId, { limit: 1000 })).events;
          expect(events.map((e) => e.sequence)).toEqual(events.map((_, i) => i + 1));
          for (let index = 0; index < plan.length; index++) {
            const mine = events.filter((e) => e.commandId === `cmd-${index}`);
            expect(mine).toHaveLength((plan[index]![1] ?? 0) + 1);
            // One contiguous range per command.
            expect(mine.at(-1)!.sequence - mine[0]!.sequence).toBe(mine.length - 1);
          }
          const heads = await Promise.all(journals.map((journal) => journal.refresh()));
          expect(new Set(heads)).toEqual(new Set([EventSequence(events.length)]));
          const projections = journals.map((journal) => journal.getProjection());
          for (const projection of projections) expect(projection).toEqual(projections[0]);
        },
      ),
      { numRuns: 25, seed: 4242 },
    );
  });
});
