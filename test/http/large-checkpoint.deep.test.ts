/**
 * `npm run test:deep` only: the largest checkpoint records through the real Worker. In `npm test`,
 * large-checkpoint.test.ts drives the same sliced write path (ordered slices of at most 16 MiB, the
 * Worker passing each to the object, the record read back in 8 MiB slices) with 20 MiB records
 * ("writes 20 MiB records back to back ..., each in two ordered slices"); these add a record of
 * three slices and one larger than a whole request may be.
 */
import { describe, expect, it } from 'vitest';
import { EventId, EventSequence, SessionId } from '../../src/protocol/ids.js';
import { appendCycles } from '../checkpoint/lifecycle-log.js';
import { patterned, recordingClient, sameBytes } from './large-checkpoint-helpers.js';
import { startLocalWorker } from './local-worker.js';

describe('whole checkpoints of 36 and 50 MiB over HTTP', () => {
  it('a 36 MiB record goes as three ordered slices (16 MiB each at most) and reads back whole', async () => {
    const { client, posts } = recordingClient(await startLocalWorker());
    const session = SessionId(`large-checkpoint-rpc-cap-${Date.now()}`);
    await appendCycles(client, session, 0, 1);
    const size = 36 * 1024 * 1024 + 3;
    const big = patterned(size, 5);
    await client.writeCheckpoint(session, { sequence: EventSequence(6), eventId: EventId('e-over-cap'), data: big });
    expect(posts.map((post) => post.slice)).toEqual([true, true, true]);
    const read = await client.readCheckpoint(session);
    expect(read?.eventId).toBe('e-over-cap');
    expect(read?.data.length).toBe(size);
    expect(sameBytes(read?.data, big)).toBe(true);
  }, 120_000);

  it("a record over one request's 48 MiB is written in slices too", async () => {
    const { client } = recordingClient(await startLocalWorker());
    const session = SessionId(`large-checkpoint-over-request-${Date.now()}`);
    await appendCycles(client, session, 0, 1);
    const size = 50 * 1024 * 1024 + 7;
    const big = patterned(size, 3);
    await client.writeCheckpoint(session, { sequence: EventSequence(6), eventId: EventId('e-over-request'), data: big });
    const read = await client.readCheckpoint(session);
    expect(read?.data.length).toBe(size);
    expect(sameBytes(read?.data, big)).toBe(true);
  }, 180_000);
});
