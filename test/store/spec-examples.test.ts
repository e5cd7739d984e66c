/**
 * The store spec's code examples (append, compare-and-append, cursor reads, the page-by-page
 * read loop), run against MemoryDurableEventStore instead of the JSONL store, with the values
 * the spec prints checked.
 */
import { describe, expect, it } from 'vitest';
import { MemoryDurableEventStore } from '../../src/adapters/memory/memory-store.js';
import { markerDrafts } from '../../src/conformance/fixtures.js';
import { DurableEventSequenceConflictError } from '../../src/protocol/errors.js';
import { DurableEventType, type DurableEventDraft, type DurableEventEnvelope } from '../../src/protocol/events.js';
import { CommandId, EventSequence, InputId, RequestId, SessionId } from '../../src/protocol/ids.js';

describe('spec examples against the memory store', () => {
  it('Append events: one batch of three on an empty stream', async () => {
    const store = new MemoryDurableEventStore();
    const sessionId = SessionId('session-123');
    const requestId = RequestId('request-123');
    const commandId = CommandId('command-123');
    const inputId = InputId('input-123');

    const result = await store.append(
      sessionId,
      [
        {
          type: DurableEventType.SESSION_CREATED,
          data: { source: 'create' },
        },
        {
          type: DurableEventType.REQUEST_ACCEPTED,
          requestId,
          commandId,
          data: {
            inputId,
            input: 'Run the deployment checks',
            priority: 'next',
          },
        },
        {
          type: DurableEventType.REQUEST_STARTED,
          requestId,
          data: {},
        },
      ],
      {
        expectedLastSequence: null,
      },
    );

    expect(result.previousSequence).toBeNull();
    expect(result.lastSequence).toBe(3);
    expect(result.events.map((event) => [event.sequence, event.type])).toEqual([
      [1, 'session_created'],
      [2, 'request_accepted'],
      [3, 'request_started'],
    ]);
    const accepted = result.events[1];
    expect(accepted).toMatchObject({ schemaVersion: 4, sessionId, requestId, commandId, data: { inputId } });
  });

  describe('Compare-and-append', () => {
    async function storeWithHead(head: number): Promise<{ store: MemoryDurableEventStore; sessionId: SessionId }> {
      const store = new MemoryDurableEventStore();
      const sessionId = SessionId(`cas-${head}`);
      await store.append(sessionId, markerDrafts(head), { expectedLastSequence: null });
      return { store, sessionId };
    }
    const events: DurableEventDraft[] = markerDrafts(2, 'next');

    it('appends when the head is 12', async () => {
      const { store, sessionId } = await storeWithHead(12);
      const result = await store.append(sessionId, events, {
        expectedLastSequence: EventSequence(12),
      });
      expect(result).toMatchObject({ previousSequence: 12, lastSequence: 14 });
    });

    it('throws DurableEventSequenceConflictError with expected and actual otherwise', async () => {
      const { store, sessionId } = await storeWithHead(13);
      const error = await store
        .append(sessionId, events, { expectedLastSequence: EventSequence(12) })
        .catch((reason: unknown) => reason);
      expect(error).toBeInstanceOf(DurableEventSequenceConflictError);
      expect(error).toMatchObject({ code: 'DURABLE_EVENT_SEQUENCE_CONFLICT', expected: 12, actual: 13 });
      expect(await store.getHeadSequence(sessionId)).toBe(13);
    });

    it('undefined appends after the head; null requires an empty stream', async () => {
      const { store, sessionId } = await storeWithHead(12);
      expect((await store.append(sessionId, events)).previousSequence).toBe(12);
      await expect(store.append(sessionId, events, { expectedLastSequence: null })).rejects.toMatchObject({
        expected: null,
        actual: 14,
      });
    });
  });

  describe('Cursor reads', () => {
    it('reads after 20 with limit 100', async () => {
      const store = new MemoryDurableEventStore();
      const sessionId = SessionId('cursor-session');
      await store.append(sessionId, markerDrafts(25));
      const consumed: number[] = [];
      const consume = (event: DurableEventEnvelope): void => void consumed.push(event.sequence);

      const page = await store.read(sessionId, {
        after: EventSequence(20),
        limit: 100,
      });

      for (const event of page.events) {
        consume(event);
      }

      expect(consumed).toEqual([21, 22, 23, 24, 25]);
      expect(page.nextCursor).toBe(25);
      expect(page.headSequence).toBe(25);
      expect(page.hasMore).toBe(false);
    });

    it('rejects a cursor ahead of the head and a page size outside 1..1000', async () => {
      const store = new MemoryDurableEventStore();
      const sessionId = SessionId('cursor-bounds');
      await store.append(sessionId, markerDrafts(5));
      await expect(store.read(sessionId, { after: EventSequence(20), limit: 100 })).rejects.toMatchObject({
        code: 'DURABLE_EVENT_INVALID_CURSOR',
      });
      await expect(store.read(sessionId, { limit: 1001 })).rejects.toMatchObject({ code: 'DURABLE_EVENT_INVALID_INPUT' });
      await expect(store.read(sessionId, { limit: 0 })).rejects.toMatchObject({ code: 'DURABLE_EVENT_INVALID_INPUT' });
    });

    it('the page-by-page loop of the projection section visits every event once', async () => {
      const store = new MemoryDurableEventStore();
      const sessionId = SessionId('loop-session');
      await store.append(sessionId, markerDrafts(250));
      const applied: DurableEventEnvelope[] = [];
      let after: EventSequence | undefined;
      let pages = 0;

      do {
        const page = await store.read(sessionId, { after, limit: 100 });
        applied.push(...page.events);
        pages += 1;
        after = page.nextCursor ?? undefined;
        if (!page.hasMore) break;
        // eslint-disable-next-line no-constant-condition -- the spec's loop, kept as written
      } while (true);

      expect(pages).toBe(3);
      expect(applied.map((event) => event.sequence)).toEqual(Array.from({ length: 250 }, (_, i) => i + 1));
    });
  });
});
