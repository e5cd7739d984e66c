/**
 * JSONL checkpoint writes copy the caller's bytes into a buffer the store reuses from one write to
 * the next: every record still reads back exactly as written, whatever the caller does with its
 * array afterwards, also when writes of several sessions overlap.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { JsonlDurableEventStore } from '../../src/advanced.js';
import { EventId, EventSequence, SessionId } from '../../src/protocol/ids.js';
import { tagDraft, tempRoot } from './helpers.js';

let root: string;
let cleanup: () => void;
beforeEach(() => {
  ({ root, cleanup } = tempRoot());
});
afterEach(() => cleanup());

function bytes(length: number, seed: number): Uint8Array {
  const data = new Uint8Array(length);
  for (let index = 0; index < length; index++) data[index] = (index * 31 + seed) & 0xff;
  return data;
}
/** Byte-exact comparison (a deep equality over a few hundred thousand elements is slow). */
const same = (actual: Uint8Array | undefined, expected: Uint8Array): boolean => actual !== undefined && Buffer.from(actual).equals(Buffer.from(expected));

async function sessionWithOneEvent(store: JsonlDurableEventStore, id: SessionId): Promise<EventId> {
  const result = await store.append(id, [tagDraft(`${id}-0`)]);
  return EventId(String(result.events[0]?.eventId));
}

describe('JSONL checkpoint writes', () => {
  it('read back exactly as written while the store reuses its copy buffer', async () => {
    const store = new JsonlDurableEventStore(root);
    const id = SessionId('copy-session');
    const eventId = await sessionWithOneEvent(store, id);
    for (const [length, seed] of [
      [300_000, 1],
      [1000, 2], // fits the previous buffer
      [700_000, 3], // does not
      [5, 4],
    ] as const) {
      const data = bytes(length, seed);
      await store.writeCheckpoint(id, { sequence: EventSequence(1), eventId, data });
      data.fill(0); // the caller reuses its array once the write settled
      const read = await store.readCheckpoint(id);
      expect(same(read?.data, bytes(length, seed))).toBe(true);
    }
    await store.close();
  });

  it('keep overlapping writes of different sessions apart', async () => {
    const store = new JsonlDurableEventStore(root);
    const ids = [SessionId('copy-a'), SessionId('copy-b'), SessionId('copy-c')];
    const eventIds = await Promise.all(ids.map((id) => sessionWithOneEvent(store, id)));
    await store.writeCheckpoint(ids[0] as SessionId, { sequence: EventSequence(1), eventId: eventIds[0] as EventId, data: bytes(400_000, 9) });
    await Promise.all(
      ids.map((id, index) => store.writeCheckpoint(id, { sequence: EventSequence(1), eventId: eventIds[index] as EventId, data: bytes(200_000 + index, index) })),
    );
    for (const [index, id] of ids.entries()) expect(same((await store.readCheckpoint(id))?.data, bytes(200_000 + index, index))).toBe(true);
    await store.close();
  });
});
