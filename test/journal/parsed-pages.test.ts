/**
 * A journal skips the projector's schema pass only for envelopes this process parsed in full or
 * planned itself (`markParsedEnvelopes` / `planAppend`); anything else is parsed again, so a store
 * that hands back a malformed event still fails closed.
 */
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { MemoryDurableEventStore } from '../../src/adapters/memory/memory-store.js';
import { SqliteDurableEventStore } from '../../src/adapters/node/sqlite/sqlite-store.js';
import { lifecycleDrafts as d } from '../../src/conformance/checks-journal.js';
import { DurableSessionJournal } from '../../src/core/journal/index.js';
import { areParsedEnvelopes, planAppend } from '../../src/core/log-engine.js';
import { CommandId, EventSequence, SessionId } from '../../src/protocol/ids.js';
import { withCommand, wrapStore } from './store-wrappers.js';
import { scratchDir } from '../scratch-dir.js';

const sessionId = SessionId('parsed-pages');

async function seed(store: MemoryDurableEventStore | SqliteDurableEventStore): Promise<void> {
  const journal = await DurableSessionJournal.open(store, sessionId, { checkpoints: false });
  await journal.commit({ commandId: CommandId('begin'), events: [d.sessionCreated(), d.requestAccepted('r1'), d.requestStarted('r1')] });
}

describe('parsed envelope pages', () => {
  it('marks planned appends and the read pages of the memory and SQLite stores, not copies', async () => {
    const planned = planAppend({ sessionId, drafts: [withCommand(d.sessionCreated(), 'c')], options: undefined, head: null, lease: null, nowMs: 0 });
    expect(areParsedEnvelopes(planned.events)).toBe(true);
    expect(areParsedEnvelopes([...planned.events])).toBe(false);

    const memory = new MemoryDurableEventStore();
    await seed(memory);
    const dir = scratchDir('parsed-pages-');
    const sqlite = new SqliteDurableEventStore(path.join(dir, 'events.db'));
    try {
      await seed(sqlite);
      for (const store of [memory, sqlite]) {
        const page = await store.read(sessionId);
        expect(page.events).toHaveLength(3);
        expect(areParsedEnvelopes(page.events)).toBe(true);
        // A page cut short by its byte budget stays marked.
        const cut = await store.read(sessionId, { after: EventSequence(1), limit: 2, maxBytes: 1 });
        expect(cut.events).toHaveLength(1);
        expect(areParsedEnvelopes(cut.events)).toBe(true);
      }
    } finally {
      sqlite.close();
    }
  });

  it('still parses, and refuses, an event a store hands back in an unmarked page', async () => {
    const inner = new MemoryDurableEventStore();
    await seed(inner);
    const store = wrapStore(inner, {
      read: async (read, id, options) => {
        const page = await read(id, options);
        // An unmarked copy with one malformed event (an unknown field), as a faulty store would return.
        return { ...page, events: page.events.map((event) => (event.sequence === 2 ? { ...event, unexpected: true } : { ...event })) };
      },
    });
    await expect(DurableSessionJournal.open(store, sessionId, { checkpoints: false })).rejects.toMatchObject({
      name: 'DurableEventProjectionError',
    });
    // The same log through the marked pages of the store itself opens.
    const journal = await DurableSessionJournal.open(inner, sessionId, { checkpoints: false });
    expect(journal.getHeadSequence()).toBe(3);
  });
});
