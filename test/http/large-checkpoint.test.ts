/**
 * A projection checkpoint record larger than one response slice, through the real Worker
 * (wrangler's local runtime): `GET /v1/sessions/{id}/checkpoint` answers slices of at most 8 MiB
 * (`?offset=` for the next) and `HttpDurableEventStore.readCheckpoint` joins them byte for byte.
 * (A record over the 32 MiB RPC cap is covered inside workerd, `test/workers/checkpoints.test.ts`:
 * only the object itself can write one.)
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpDurableEventStore } from '../../src/client.js';
import { HTTP_CHECKPOINT_SLICE_BYTES } from '../../src/app/routes/checkpoints.js';
import { EventId, EventSequence, SessionId } from '../../src/protocol/ids.js';
import { appendCycles } from '../checkpoint/lifecycle-log.js';
import { api, readProblem } from './http-helpers.js';
import { startLocalWorker, type LocalWorker } from './local-worker.js';

let worker: LocalWorker;
let store: HttpDurableEventStore;
const sessionId = SessionId(`large-checkpoint-${Date.now()}`);
// Two slices.
const BYTES = HTTP_CHECKPOINT_SLICE_BYTES + 12_345;
const data = new Uint8Array(BYTES);
for (let index = 0; index < BYTES; index += 7) data[index] = (index >>> 2) & 255;

beforeAll(async () => {
  worker = await startLocalWorker();
  store = new HttpDurableEventStore({ baseUrl: worker.url, token: worker.adminToken });
  await appendCycles(store, sessionId, 0, 1);
  await store.writeCheckpoint(sessionId, { sequence: EventSequence(6), eventId: EventId('e-big'), data });
}, 120_000);

afterAll(async () => {
  await worker?.stop();
});

describe('a checkpoint of two slices over HTTP', () => {
  it('reads back whole through the client, in slices', async () => {
    const read = await store.readCheckpoint(sessionId);
    expect(read?.sequence).toBe(6);
    expect(read?.eventId).toBe('e-big');
    expect(read?.data.length).toBe(BYTES);
    let firstDifference = -1;
    for (let index = 0; index < BYTES; index++) {
      if (read?.data[index] !== data[index]) {
        firstDifference = index;
        break;
      }
    }
    expect(firstDifference).toBe(-1);
  }, 60_000);

  it('answers one bounded slice per GET, with the record size and the offset', async () => {
    const first = await api(worker, `/v1/sessions/${sessionId}/checkpoint`, { token: worker.adminToken });
    expect(first.status).toBe(200);
    const text = await first.text();
    expect(text.length).toBeLessThan(Math.ceil((HTTP_CHECKPOINT_SLICE_BYTES * 4) / 3) + 1024);
    const body = JSON.parse(text) as { checkpoint: { totalBytes: number; offset: number; data: string } };
    expect(body.checkpoint).toMatchObject({ totalBytes: BYTES, offset: 0 });
    expect(body.checkpoint.data.length).toBe(Math.ceil((HTTP_CHECKPOINT_SLICE_BYTES * 4) / 3));
    const last = await api(worker, `/v1/sessions/${sessionId}/checkpoint?offset=${HTTP_CHECKPOINT_SLICE_BYTES}`, { token: worker.adminToken });
    const tail = (await last.json()) as { checkpoint: { offset: number; data: string } };
    expect(tail.checkpoint.offset).toBe(HTTP_CHECKPOINT_SLICE_BYTES);
    expect(tail.checkpoint.data.length).toBe(Math.ceil(((BYTES - HTTP_CHECKPOINT_SLICE_BYTES) * 4) / 3));
    // Past the end (the record may have been replaced by a shorter one): empty, with the size.
    const past = (await (await api(worker, `/v1/sessions/${sessionId}/checkpoint?offset=${BYTES + 1}`, { token: worker.adminToken })).json()) as {
      checkpoint: { totalBytes: number; data: string };
    };
    expect(past.checkpoint).toMatchObject({ totalBytes: BYTES, data: '' });
    for (const offset of ['abc', '-1']) {
      const refused = await api(worker, `/v1/sessions/${sessionId}/checkpoint?offset=${offset}`, { token: worker.adminToken });
      expect(refused.status).toBe(400);
      expect((await readProblem(refused)).code).toBe('DURABLE_EVENT_INVALID_INPUT');
    }
  }, 60_000);

  it('writes 20 MiB records back to back through the client and reads the last one back', async () => {
    // The client's base64url encoding used to take 4-7 s for 20 MiB: the event loop stalled past the
    // local runtime's keep-alive timeout and every other write went out on a closed socket (EPIPE).
    const other = SessionId(`large-checkpoint-twice-${Date.now()}`);
    await appendCycles(store, other, 0, 1);
    const size = 20 * 1024 * 1024 + 1;
    let last = new Uint8Array(0);
    for (const seed of [3, 5, 7]) {
      last = new Uint8Array(size);
      for (let index = 0; index < size; index += seed) last[index] = (index * seed) & 255;
      await store.writeCheckpoint(other, { sequence: EventSequence(6), eventId: EventId(`e-${seed}`), data: last });
    }
    const read = await store.readCheckpoint(other);
    expect(read?.eventId).toBe('e-7');
    expect(read?.data.length).toBe(size);
    expect(Buffer.compare(Buffer.from(read?.data ?? []), Buffer.from(last))).toBe(0);
  }, 120_000);
});
