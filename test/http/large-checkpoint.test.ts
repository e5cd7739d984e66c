/**
 * A projection checkpoint record larger than one response slice, through the real Worker
 * (wrangler's local runtime): `GET /v1/sessions/{id}/checkpoint` answers slices of at most 8 MiB
 * (`?offset=` for the next) and `HttpDurableEventStore.readCheckpoint` joins them byte for byte.
 * A whole record over 16 MiB is written in ordered slices (one request each; the Worker passes each
 * to the object, whose RPC values are at most 32 MiB); inside workerd,
 * `test/workers/checkpoints.test.ts` covers the RPC client. Extensions: a record that
 * extends the stored one goes as its tail, and whole when the object or an older Worker refuses.
 * The 36 MiB (three slices) and over-48 MiB records are in large-checkpoint.deep.test.ts
 * (`npm run test:deep`); here the 20 MiB records take the sliced path.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpDurableEventStore } from '../../src/client.js';
import { HTTP_CHECKPOINT_SLICE_BYTES } from '../../src/app/routes/checkpoints.js';
import { EventId, EventSequence, SessionId } from '../../src/protocol/ids.js';
import { appendCycles } from '../checkpoint/lifecycle-log.js';
import { sized } from '../deep.js';
import { api, readProblem } from './http-helpers.js';
import { patterned, recordingClient as recordingClientOf, sameBytes as same } from './large-checkpoint-helpers.js';
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

  it('writes 20 MiB records back to back through the client, each in two ordered slices, and reads the last one back', async () => {
    const { client, posts } = recordingClient();
    const other = SessionId(`large-checkpoint-twice-${Date.now()}`);
    await appendCycles(client, other, 0, 1);
    const size = 20 * 1024 * 1024 + 1;
    // Two writes: a sliced record replaced by another sliced record (three in test:deep).
    const seeds = [3, 5, 7].slice(0, sized(2, 3));
    let last = new Uint8Array(0);
    for (const seed of seeds) {
      last = new Uint8Array(size);
      for (let index = 0; index < size; index += seed) last[index] = (index * seed) & 255;
      await client.writeCheckpoint(other, { sequence: EventSequence(6), eventId: EventId(`e-${seed}`), data: last });
    }
    // Slices of at most 16 MiB: two per 20 MiB record.
    expect(posts.map((post) => post.slice)).toEqual(seeds.flatMap(() => [true, true]));
    const read = await client.readCheckpoint(other);
    expect(read?.eventId).toBe(`e-${seeds.at(-1)}`);
    expect(read?.data.length).toBe(size);
    expect(same(read?.data, last)).toBe(true);
  }, 120_000);
});

const recordingClient = (rewrite?: (body: Record<string, unknown>) => Record<string, unknown>) => recordingClientOf(worker, rewrite);
const pattern = (length: number, seed: number): Uint8Array => new Uint8Array(length).map((_, index) => (index * seed + (index >>> 9)) & 255);
const joined = (head: Uint8Array, tail: Uint8Array): Uint8Array => {
  const out = new Uint8Array(head.length + tail.length);
  out.set(head);
  out.set(tail, head.length);
  return out;
};

describe('whole checkpoints larger than one RPC value over HTTP', () => {
  it('a Worker that refuses slices as invalid input gets the record in one request (which it slices for the object)', async () => {
    const { client, posts } = recordingClient((body) => (body['upload'] === undefined ? body : { ...body, olderWorker: true }));
    const session = SessionId(`large-checkpoint-older-${Date.now()}`);
    await appendCycles(client, session, 0, 1);
    const big = patterned(20 * 1024 * 1024 + 1, 7);
    await client.writeCheckpoint(session, { sequence: EventSequence(6), eventId: EventId('e-older'), data: big });
    expect(posts.map((post) => post.slice)).toEqual([true, false]);
    const read = await client.readCheckpoint(session);
    expect(Buffer.compare(Buffer.from(read?.data ?? []), Buffer.from(big))).toBe(0);
  }, 120_000);
});

describe('checkpoint extensions over HTTP', () => {
  it('a record that extends the stored one sends only its new bytes, and reads back whole', async () => {
    const { client, posts } = recordingClient();
    expect(client.checkpointExtension).toBe(true);
    const session = SessionId(`checkpoint-extension-${Date.now()}`);
    await appendCycles(client, session, 0, 1);
    const base = pattern(512 * 1024, 3);
    await client.writeCheckpoint(session, { sequence: EventSequence(1), eventId: EventId('x-1'), data: base });
    const extended = joined(base, pattern(1000, 5));
    await client.writeCheckpoint(session, { sequence: EventSequence(6), eventId: EventId('x-2'), data: extended, extendsBytes: base.length });
    expect(posts.map((post) => post.extension)).toEqual([false, true]);
    expect(posts[0]?.bytes).toBeGreaterThan((base.length * 4) / 3);
    // The tail: 8 bytes of overlap and 1,000 new ones, as base64url in a small JSON body.
    expect(posts[1]?.bytes).toBeLessThan(2000);
    const read = await client.readCheckpoint(session);
    expect(read).toMatchObject({ sequence: 6, eventId: 'x-2' });
    expect(same(read?.data, extended)).toBe(true);
  }, 60_000);

  it('an extension of a record the object does not hold is refused and the record sent whole', async () => {
    const { client, posts } = recordingClient();
    const session = SessionId(`checkpoint-extension-foreign-${Date.now()}`);
    await appendCycles(client, session, 0, 1);
    await client.writeCheckpoint(session, { sequence: EventSequence(1), eventId: EventId('x-1'), data: pattern(4096, 7) });
    // Claims a prefix of the same length whose last 8 bytes differ from the stored ones.
    const foreign = joined(pattern(4096, 9), pattern(200, 11));
    await client.writeCheckpoint(session, { sequence: EventSequence(6), eventId: EventId('x-2'), data: foreign, extendsBytes: 4096 });
    expect(posts.map((post) => post.extension)).toEqual([false, true, false]);
    const answer = await api(worker, `/v1/sessions/${session}/checkpoint`, {
      token: worker.adminToken,
      method: 'POST',
      body: { sequence: 6, eventId: 'x-3', extendsBytes: 8, data: 'AAAAAAAAAAAAAAAAAAAAAA' },
    });
    expect(await answer.json()).toEqual({ ok: true, extended: false });
    // Malformed extensions: a prefix length that is not a multiple of 8, a tail of only the 8 overlap bytes.
    for (const body of [
      { sequence: 6, eventId: 'x-3', extendsBytes: 12, data: 'AAAAAAAAAAAAAAAAAAAAAA' },
      { sequence: 6, eventId: 'x-3', extendsBytes: 8, data: 'AAAAAAAAAAA' },
    ]) {
      const refused = await api(worker, `/v1/sessions/${session}/checkpoint`, { token: worker.adminToken, method: 'POST', body });
      expect(refused.status).toBe(400);
      expect((await readProblem(refused)).code).toBe('DURABLE_EVENT_INVALID_INPUT');
    }
    const read = await client.readCheckpoint(session);
    expect(read?.eventId).toBe('x-2');
    expect(same(read?.data, foreign)).toBe(true);
  }, 60_000);

  it('a Worker that refuses the extension field as invalid input gets the record whole', async () => {
    // An older Worker's strict body schema refuses unknown fields: the extra field stands in for `extendsBytes`.
    const { client, posts } = recordingClient((body) => (body['extendsBytes'] === undefined ? body : { ...body, olderWorker: true }));
    const session = SessionId(`checkpoint-extension-older-${Date.now()}`);
    await appendCycles(client, session, 0, 1);
    const base = pattern(2048, 13);
    await client.writeCheckpoint(session, { sequence: EventSequence(1), eventId: EventId('x-1'), data: base });
    const extended = joined(base, pattern(96, 17));
    await client.writeCheckpoint(session, { sequence: EventSequence(6), eventId: EventId('x-2'), data: extended, extendsBytes: base.length });
    expect(posts.map((post) => post.extension)).toEqual([false, true, false]);
    expect(same((await client.readCheckpoint(session))?.data, extended)).toBe(true);
  }, 60_000);
});
