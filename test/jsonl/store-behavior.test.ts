/**
 * JsonlDurableEventStore inside one process: group commit (arrival order, per-append outcomes,
 * one shared write), cancellation while queued, watchers, page reads through the batch index,
 * catch-up between two store objects, file names and modes, and the session cache bound.
 */
import { closeSync, openSync, readFileSync, readdirSync, statSync, existsSync, writeSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { processQueueState } from '../../src/adapters/node/jsonl/process-queue.js';
import { MAX_GROUP_BYTES } from '../../src/adapters/node/jsonl/append-commit.js';
import { JsonlDurableEventStore, MAX_CACHED_SESSIONS } from '../../src/advanced.js';
import type { DurableAppendNotice } from '../../src/core/store.js';
import { DurableEventSequenceConflictError } from '../../src/protocol/errors.js';
import type { DurableEventDraft } from '../../src/protocol/events.js';
import { EventSequence, RequestId, SessionId } from '../../src/protocol/ids.js';
import { faultyStore, finished, runFixture, startFixture, tagDraft, tagOf, tempRoot, waitForLine } from './helpers.js';

const { root, cleanup } = tempRoot();
afterAll(cleanup);

/** Polls `condition` every few milliseconds until it holds (or fails the test after 10 s). */
async function until(condition: () => boolean): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not reached within 10 s');
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

function lineCount(file: string): number {
  return readFileSync(file, 'utf8').split('\n').filter((line) => line.length > 0).length;
}

describe('group commit', () => {
  it('judges concurrent appends in arrival order, each on its own', async () => {
    // The fifth commit decision (the append tagged 'failed') fails before anything is written.
    let decisions = 0;
    const store = new JsonlDurableEventStore(root, {
      testHooks: {
        beforeCommit: () => {
          decisions++;
          if (decisions === 5) throw new Error('injected commit failure');
        },
      },
    });
    const sessionId = SessionId('group-order');
    const calls = [
      store.append(sessionId, [tagDraft('a')], { expectedLastSequence: null }),
      store.append(sessionId, [tagDraft('b1'), tagDraft('b2')], { expectedLastSequence: EventSequence(1) }),
      store.append(sessionId, [tagDraft('stale')], { expectedLastSequence: EventSequence(1) }),
      store.append(sessionId, [tagDraft('c')]),
      store.append(sessionId, [tagDraft('d')], { expectedLastSequence: EventSequence(4) }),
    ];
    const failing = store.append(sessionId, [tagDraft('failed')]);
    const tail = store.append(sessionId, [tagDraft('e')], { expectedLastSequence: EventSequence(5) });
    const results = await Promise.allSettled([...calls, failing, tail]);
    const [a, b, stale, c, d, failed, e] = results;
    expect(a).toMatchObject({ status: 'fulfilled', value: { previousSequence: null, lastSequence: 1 } });
    expect(b).toMatchObject({ status: 'fulfilled', value: { previousSequence: 1, lastSequence: 3 } });
    expect(stale?.status).toBe('rejected');
    const conflict = (stale as PromiseRejectedResult).reason as unknown;
    expect(conflict).toBeInstanceOf(DurableEventSequenceConflictError);
    expect(conflict).toMatchObject({ expected: 1, actual: 3 });
    expect(c).toMatchObject({ status: 'fulfilled', value: { lastSequence: 4 } });
    expect(d).toMatchObject({ status: 'fulfilled', value: { lastSequence: 5 } });
    expect(failed).toMatchObject({ status: 'rejected', reason: { code: 'DURABLE_EVENT_WRITE_FAILED' } });
    expect(e).toMatchObject({ status: 'fulfilled', value: { lastSequence: 6 } });
    const events = (await new JsonlDurableEventStore(root).read(sessionId)).events;
    expect(events.map(tagOf)).toEqual(['a', 'b1', 'b2', 'c', 'd', 'e']);
    // Still one line per append batch.
    expect(lineCount(store.pathsOf(sessionId).log)).toBe(5);
  });

  it('writes concurrent appends with one write: every commit decision sees the same file', async () => {
    const sizes: number[] = [];
    const sessionId = SessionId('group-one-write');
    let log = '';
    const store = new JsonlDurableEventStore(root, {
      testHooks: { beforeCommit: () => void sizes.push(existsSync(log) ? statSync(log).size : 0) },
    });
    log = store.pathsOf(sessionId).log;
    await store.append(sessionId, [tagDraft('seed')]);
    sizes.length = 0;
    const results = await Promise.all(Array.from({ length: 16 }, (_, i) => store.append(sessionId, [tagDraft(`p${i}`)])));
    expect(results.map((result) => result.lastSequence).sort((x, y) => x - y)).toEqual(
      Array.from({ length: 16 }, (_, i) => i + 2),
    );
    // All 16 were judged before any of them was written: they shared one write and one fsync.
    expect(sizes).toHaveLength(16);
    expect(new Set(sizes).size).toBe(1);
    expect(lineCount(log)).toBe(17);
  });
});

describe('group byte budget', () => {
  it('defers appends past MAX_GROUP_BYTES to the next group, keeping arrival order', async () => {
    const sizes: number[] = [];
    const sessionId = SessionId('group-budget');
    let log = '';
    const store = new JsonlDurableEventStore(root, {
      testHooks: { beforeCommit: () => void sizes.push(existsSync(log) ? statSync(log).size : 0) },
    });
    log = store.pathsOf(sessionId).log;
    const big = (tag: string): DurableEventDraft[] =>
      Array.from({ length: 3 }, (_, k) => ({
        type: 'request_completed',
        requestId: RequestId(`${tag}-${k}`),
        data: { output: ['x'.repeat(450_000), 'y'.repeat(450_000)] },
      }));
    const results = await Promise.all(['a', 'b', 'c'].map((tag) => store.append(sessionId, big(tag))));
    expect(results.map((result) => result.lastSequence)).toEqual([3, 6, 9]);
    expect(3 * 3 * 900_000).toBeGreaterThan(MAX_GROUP_BYTES);
    // a and b were judged together; c waited for the next group and saw their bytes.
    expect(sizes).toHaveLength(3);
    expect(sizes[0]).toBe(sizes[1]);
    expect(sizes[2]).toBeGreaterThan(sizes[1] ?? 0);
    expect(lineCount(log)).toBe(3);
    // Nine events of 900 KB take more than one page's byte budget: follow the cursor.
    const reader = new JsonlDurableEventStore(root);
    const tags: string[] = [];
    let after: EventSequence | undefined;
    for (;;) {
      const page = await reader.read(sessionId, { after });
      tags.push(...page.events.map(tagOf));
      if (!page.hasMore) break;
      after = page.nextCursor ?? undefined;
    }
    expect(tags).toEqual(['a', 'b', 'c'].flatMap((tag) => [0, 1, 2].map((k) => `${tag}-${k}`)));
  });
});

describe('cancellation', () => {
  it('never writes an append whose signal aborts while it waits for the lock', async () => {
    const sessionId = SessionId('abort-while-queued');
    const holder = startFixture('lock-holder', [root, sessionId]);
    const exit = finished(holder);
    await waitForLine(holder, 'locked');
    const waiting = new JsonlDurableEventStore(root);
    const queued = new JsonlDurableEventStore(root);
    try {
      const firstController = new AbortController();
      const secondController = new AbortController();
      // The first waits on the OS lock (polling); the second, from another store object in this
      // process, waits behind it in the process-wide queue.
      const key = waiting.pathsOf(sessionId).log;
      const first = waiting.append(sessionId, [tagDraft('first')], { signal: firstController.signal });
      await until(() => processQueueState(key).held);
      const second = queued.inspectExecutionLease(sessionId, { signal: secondController.signal });
      const third = queued.append(sessionId, [tagDraft('third')], { signal: secondController.signal });
      await until(() => processQueueState(key).waiters === 2);
      secondController.abort();
      await expect(second).rejects.toMatchObject({ name: 'AbortError' });
      await expect(third).rejects.toMatchObject({ name: 'AbortError' });
      expect(processQueueState(key)).toEqual({ held: true, waiters: 0 });
      firstController.abort();
      await expect(first).rejects.toMatchObject({ name: 'AbortError' });
      expect(processQueueState(key)).toEqual({ held: false, waiters: 0 });
    } finally {
      holder.kill('SIGKILL');
      await exit;
    }
    expect(await waiting.getHeadSequence(sessionId)).toBeNull();
    const result = await queued.append(sessionId, [tagDraft('after')], { expectedLastSequence: null });
    expect(result.lastSequence).toBe(1);
    expect((await waiting.read(sessionId)).events.map(tagOf)).toEqual(['after']);
  });

  it('reports an append that outlives operationTimeoutMs as DURABLE_EVENT_IO_TIMEOUT (outcome unknown)', async () => {
    const sessionId = SessionId('slow-commit');
    let stall = false;
    const store = new JsonlDurableEventStore(root, {
      lockTimeoutMs: 200,
      operationTimeoutMs: 250,
      testHooks: {
        beforeCommit: () => {
          if (!stall) return;
          // A commit that stalls past the whole-call deadline after the append was judged.
          const until = performance.now() + 300;
          while (performance.now() < until) {
            // busy wait
          }
        },
      },
    });
    await store.append(sessionId, [tagDraft('warm-up')]);
    stall = true;
    await expect(store.append(sessionId, [tagDraft('slow')])).rejects.toMatchObject({ code: 'DURABLE_EVENT_IO_TIMEOUT' });
    // The store finished the write it had started: the caller must read to learn the outcome.
    expect((await new JsonlDurableEventStore(root).read(sessionId)).events.map(tagOf)).toEqual(['warm-up', 'slow']);
  });

  it('rejects an already aborted call without touching the files', async () => {
    const store = new JsonlDurableEventStore(root);
    const sessionId = SessionId('aborted-before');
    const controller = new AbortController();
    controller.abort();
    await expect(store.append(sessionId, [tagDraft('x')], { signal: controller.signal })).rejects.toMatchObject({
      name: 'AbortError',
    });
    await expect(store.acquireExecutionLease(sessionId, { ownerId: 'w' as never, leaseId: 'l', ttlMs: 1000, signal: controller.signal })).rejects.toMatchObject({ name: 'AbortError' });
    expect(existsSync(store.pathsOf(sessionId).log)).toBe(false);
    expect(existsSync(store.pathsOf(sessionId).lease)).toBe(false);
  });
});

describe('watch', () => {
  it('notifies listeners of any store object in this process after each durable append', async () => {
    const sessionId = SessionId('watched');
    const writer = new JsonlDurableEventStore(root);
    const watcher = new JsonlDurableEventStore(root);
    const notices: DurableAppendNotice[] = [];
    const stop = watcher.watch(sessionId, (notice) => {
      notices.push(notice);
    });
    const { store: faulty, failNextCommit } = faultyStore(root);
    await writer.append(sessionId, [tagDraft('a'), tagDraft('b')]);
    failNextCommit();
    await expect(faulty.append(sessionId, [tagDraft('lost')])).rejects.toMatchObject({ code: 'DURABLE_EVENT_WRITE_FAILED' });
    await faulty.append(sessionId, [tagDraft('c')]);
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(notices).toEqual([
      { sessionId, lastSequence: 2 },
      { sessionId, lastSequence: 3 },
    ]);
    stop();
    await writer.append(sessionId, [tagDraft('d')]);
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(notices).toHaveLength(2);
  });
});

describe('the batch line', () => {
  it('is exactly the JSON of the batch envelopes, as the engine encoded them for its byte limits', async () => {
    const sessionId = SessionId('line-encoding');
    const store = new JsonlDurableEventStore(root);
    const result = await store.append(sessionId, [
      tagDraft('ascii'),
      { type: 'request_started', requestId: RequestId('üñí-ç😀'), data: {} },
      tagDraft('line\u2028separator'),
    ]);
    const [line] = readFileSync(store.pathsOf(sessionId).log, 'utf8').split('\n');
    expect(line).toBe(JSON.stringify(result.events));
    await store.close();
  });
});

describe('reads through the batch index', () => {
  it('serves every cursor and page size exactly, across batches of mixed sizes', async () => {
    const sessionId = SessionId('index-pages');
    const store = new JsonlDurableEventStore(root);
    const sizes = [1, 3, 1, 7, 2, 1, 1, 12, 5, 1, 4, 9, 1, 2, 6];
    let n = 0;
    for (const size of sizes) {
      await store.append(sessionId, Array.from({ length: size }, () => tagDraft(`t${++n}`)));
    }
    const head = n;
    for (const reader of [store, new JsonlDurableEventStore(root)]) {
      for (let after = 0; after <= head; after++) {
        for (const limit of [1, 2, 3, 5, 8, 13, 100]) {
          const page = await reader.read(sessionId, { after: after === 0 ? undefined : EventSequence(after), limit });
          const expected = Array.from({ length: Math.min(limit, head - after) }, (_, i) => after + 1 + i);
          expect(page.events.map((event) => event.sequence)).toEqual(expected);
          expect(page.events.map(tagOf)).toEqual(expected.map((sequence) => `t${sequence}`));
          expect(page.hasMore).toBe(after + limit < head);
        }
      }
    }
  });

  it('catches up with appends another store object made, reading only the new tail', async () => {
    const sessionId = SessionId('two-caches');
    const a = new JsonlDurableEventStore(root);
    const b = new JsonlDurableEventStore(root);
    for (let i = 0; i < 10; i++) {
      const writer = i % 2 === 0 ? a : b;
      const head = await writer.getHeadSequence(sessionId);
      await writer.append(sessionId, [tagDraft(`x${i}`)], { expectedLastSequence: head });
    }
    expect((await a.read(sessionId)).events.map(tagOf)).toEqual(Array.from({ length: 10 }, (_, i) => `x${i}`));
    expect(await b.getHeadSequence(sessionId)).toBe(10);
  });
});

describe('files', () => {
  it('names files by base64url session ID with private modes, and never lets an ID become a path', async () => {
    const store = new JsonlDurableEventStore(root);
    const sneaky = SessionId('../../escape/me');
    await store.append(sneaky, [tagDraft('x')]);
    await store.acquireExecutionLease(sneaky, { ownerId: 'w' as never, leaseId: 'l', ttlMs: 60_000 });
    const directory = path.join(root, 'durable-events');
    const stem = Buffer.from('../../escape/me').toString('base64url');
    expect(readdirSync(directory).filter((name) => name.startsWith(stem)).sort()).toEqual(
      [`${stem}.jsonl`, `${stem}.jsonl.lock`, `${stem}.lease.json`].sort(),
    );
    expect(statSync(directory).mode & 0o777).toBe(0o700);
    for (const suffix of ['.jsonl', '.jsonl.lock', '.lease.json']) {
      expect(statSync(path.join(directory, `${stem}${suffix}`)).mode & 0o777).toBe(0o600);
    }
    const lease = JSON.parse(readFileSync(path.join(directory, `${stem}.lease.json`), 'utf8')) as Record<string, unknown>;
    expect(lease).toMatchObject({ version: 2, sessionId: '../../escape/me', leaseId: 'l', ownerId: 'w', fencingToken: 1, released: false });
  });

  it('stores a 256-character session ID under a hashed name', async () => {
    const store = new JsonlDurableEventStore(root);
    const long = SessionId('é'.repeat(256));
    await store.append(long, [tagDraft('long')]);
    const name = path.basename(store.pathsOf(long).log);
    expect(name.startsWith('~')).toBe(true);
    expect(name.length).toBeLessThan(64);
    expect((await new JsonlDurableEventStore(root).read(long)).events.map(tagOf)).toEqual(['long']);
  });

  it('loads the native lock addon only on the first store operation', async () => {
    const report = JSON.parse(await runFixture('lazy-addon', [root])) as Record<string, boolean>;
    expect(report).toEqual({ afterImport: false, afterConstruct: false, afterFirstCall: true });
  });

  it('reads an unknown session as empty without creating any file', async () => {
    const store = new JsonlDurableEventStore(root);
    const sessionId = SessionId('never-touched');
    expect(await store.getHeadSequence(sessionId)).toBeNull();
    expect(await store.read(sessionId)).toEqual({ events: [], nextCursor: null, headSequence: null, hasMore: false });
    const { log, lock } = store.pathsOf(sessionId);
    expect(existsSync(log) || existsSync(lock)).toBe(false);
  });

  it('stays correct past the session cache bound', async () => {
    const store = new JsonlDurableEventStore(root);
    const count = MAX_CACHED_SESSIONS + 8;
    for (let i = 0; i < count; i++) await store.append(SessionId(`many-${i}`), [tagDraft(`m${i}`)]);
    for (let i = 0; i < count; i += 17) {
      expect((await store.read(SessionId(`many-${i}`))).events.map(tagOf)).toEqual([`m${i}`]);
    }
    await store.close();
    expect(await store.getHeadSequence(SessionId('many-0'))).toBe(1);
  });

  it('closes the least recently used session first; appending again to the last used one keeps it cached', async () => {
    const store = new JsonlDurableEventStore(root);
    const id = (i: number): SessionId => SessionId(`lru-${i}`);
    for (let i = 0; i < MAX_CACHED_SESSIONS; i++) await store.append(id(i), [tagDraft(`l${i}`)]);
    // lru-0 becomes the most recently used, and is used again while it is already the last used.
    await store.append(id(0), [tagDraft('again')]);
    await store.append(id(0), [tagDraft('and again')]);
    // One session more: the least recently used idle one (lru-1) is closed, lru-0 stays cached.
    await store.append(id(MAX_CACHED_SESSIONS), [tagDraft('one more')]);
    // Break the first line of both logs in place. A cached session only reads what was appended
    // after its validated size, so it does not notice; a closed one validates the whole file again.
    for (const i of [0, 1]) {
      const fd = openSync(store.pathsOf(id(i)).log, 'r+');
      writeSync(fd, 'X', 1);
      closeSync(fd);
    }
    expect((await store.append(id(0), [tagDraft('still cached')])).lastSequence).toBe(4);
    await expect(store.append(id(1), [tagDraft('reopened')])).rejects.toMatchObject({ code: 'DURABLE_EVENT_CORRUPT_LOG' });
  });
});
