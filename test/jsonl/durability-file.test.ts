/**
 * The JSONL durability ledger file beyond the shared contract: one 0600 line per created record
 * next to the event log, the record's own key order, torn tails ignored and cut off, corrupt
 * complete lines failing closed with DURABILITY_CORRUPT_RECORD, truncated or replaced files
 * revalidated from scratch, records written by another process caught up from the tail, and
 * pages served without the lock only while the cache still describes the whole file.
 */
import { appendFileSync, existsSync, readFileSync, renameSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { JsonlDurableEventStore } from '../../src/advanced.js';
import type { DurabilityRecord } from '../../src/core/durability/record-contract.js';
import { RequestId, SessionId } from '../../src/protocol/ids.js';
import { finished, runFixture, startFixture, tempRoot, waitForLine } from './helpers.js';

const { root, cleanup } = tempRoot();
afterAll(cleanup);

let counter = 0;
const newSession = (): SessionId => SessionId(`ledger-${counter++}`);

const step = (key: string, result: unknown = key) =>
  ({ kind: 'step', scope: 'run', key, result }) as { kind: 'step'; scope: string; key: string; result: never };

/** A session with `count` step records (keys k0..), written through a store that is then closed. */
async function seeded(count: number): Promise<{ sessionId: SessionId; file: string }> {
  const sessionId = newSession();
  const store = new JsonlDurableEventStore(root);
  for (let i = 0; i < count; i++) await store.recordDurability(sessionId, step(`k${i}`, i));
  const file = store.pathsOf(sessionId).durability;
  await store.close();
  return { sessionId, file };
}

function lines(file: string): string[] {
  return readFileSync(file, 'utf8').split('\n').filter((line) => line.length > 0);
}

async function readAll(store: JsonlDurableEventStore, sessionId: SessionId): Promise<DurabilityRecord[]> {
  const page = await store.readDurability(sessionId, { limit: 1000 });
  expect(page.hasMore).toBe(false);
  return page.records;
}

async function expectCorrupt(promise: Promise<unknown>): Promise<void> {
  await expect(promise).rejects.toMatchObject({ code: 'DURABILITY_CORRUPT_RECORD' });
}

describe('the ledger file', () => {
  it('holds one 0600 line per created record, next to the event log, in the record key order', async () => {
    const sessionId = newSession();
    const store = new JsonlDurableEventStore(root);
    const reading = await store.readDurability(sessionId);
    expect(reading.headSequence).toBeNull();
    const paths = store.pathsOf(sessionId);
    expect(existsSync(paths.durability)).toBe(false);
    expect(existsSync(paths.lock)).toBe(false);

    await store.recordDurability(sessionId, step('a', { zeta: 1, alpha: [2] }));
    const again = await store.recordDurability(sessionId, step('a', 'ignored'));
    expect(again.created).toBe(false);
    await store.recordDurability(sessionId, { kind: 'sleep', scope: 'run', key: 'a', untilMs: 5 });

    expect(paths.durability).toBe(paths.log.replace(/\.jsonl$/, '.ledger.jsonl'));
    expect(statSync(paths.durability).mode & 0o777).toBe(0o600);
    expect(existsSync(paths.log)).toBe(false);
    const stored = lines(paths.durability).map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(stored.map((record) => [record['kind'], record['sequence']])).toEqual([
      ['step', 1],
      ['sleep', 2],
    ]);
    // A fresh store reads the result back with the key order it was recorded with.
    const [first] = await readAll(new JsonlDurableEventStore(root), sessionId);
    expect(first?.kind === 'step' ? Object.keys(first.result as object) : []).toEqual(['zeta', 'alpha']);
    await store.close();
  });

  it('ignores a torn final line and cuts it off before the next record', async () => {
    const { sessionId, file } = await seeded(2);
    appendFileSync(file, '{"kind":"step","scope":"run","ke');
    const store = new JsonlDurableEventStore(root);
    expect((await readAll(store, sessionId)).map((r) => r.sequence)).toEqual([1, 2]);
    const next = await store.recordDurability(sessionId, step('k2'));
    expect(next.record.sequence).toBe(3);
    expect(lines(file).map((line) => (JSON.parse(line) as { sequence: number }).sequence)).toEqual([1, 2, 3]);
    expect((await readAll(new JsonlDurableEventStore(root), sessionId)).map((r) => r.sequence)).toEqual([1, 2, 3]);
  });

  it.each([
    ['not JSON', () => '{"kind":"step",'],
    ['an unknown kind', (l: Record<string, unknown>) => JSON.stringify({ ...l, kind: 'mystery' })],
    ['a sequence gap', (l: Record<string, unknown>) => JSON.stringify({ ...l, sequence: 9 })],
    ['another session', (l: Record<string, unknown>) => JSON.stringify({ ...l, sessionId: 'someone-else' })],
    ['a repeated identity', (_l: Record<string, unknown>, first: Record<string, unknown>) => JSON.stringify({ ...first, sequence: 2 })],
  ])('fails closed with DURABILITY_CORRUPT_RECORD on a complete line with %s', async (_what, damage) => {
    const { sessionId, file } = await seeded(3);
    const [first, second, third] = lines(file);
    const parsed = JSON.parse(second ?? '') as Record<string, unknown>;
    writeFileSync(file, `${first}\n${damage(parsed, JSON.parse(first ?? '') as Record<string, unknown>)}\n${third}\n`);
    const store = new JsonlDurableEventStore(root);
    await expectCorrupt(store.readDurability(sessionId));
    await expectCorrupt(store.recordDurability(sessionId, step('new')));
    // Still corrupt on the next call: a bad line is never skipped.
    await expectCorrupt(store.readDurability(sessionId, { after: 1 }));
    expect(lines(file)).toHaveLength(3);
  });

  it('revalidates from scratch when the file is truncated or replaced under a cached store', async () => {
    const { sessionId, file } = await seeded(3);
    const store = new JsonlDurableEventStore(root);
    expect((await readAll(store, sessionId)).length).toBe(3);

    truncateSync(file, Buffer.byteLength(`${lines(file)[0]}\n`));
    expect((await store.readDurability(sessionId)).headSequence).toBe(1);
    const afterTruncation = await store.recordDurability(sessionId, step('k1', 'again'));
    expect([afterTruncation.created, afterTruncation.record.sequence]).toEqual([true, 2]);

    const other = await seeded(1);
    renameSync(other.file, file);
    const replaced = await readAll(store, sessionId).catch((error: unknown) => error);
    // The replacement belongs to another session: the cached store must notice it, not serve old data.
    expect(replaced).toMatchObject({ code: 'DURABILITY_CORRUPT_RECORD' });
  });

  it('fails closed when a validated line changes its structure in place', async () => {
    const { sessionId, file } = await seeded(2);
    const store = new JsonlDurableEventStore(root);
    expect((await readAll(store, sessionId)).length).toBe(2);
    const text = readFileSync(file, 'utf8');
    writeFileSync(file, text.replace('"sequence":1', '"sequence":7'));
    await expectCorrupt(store.readDurability(sessionId));
  });

  it('catches up with records written by another process (identity index from the tail)', async () => {
    const sessionId = newSession();
    const store = new JsonlDurableEventStore(root);
    await store.recordDurability(sessionId, { kind: 'step', scope: 'paced', key: 'mine', result: 0 });
    await runFixture('paced-writer', [root, sessionId, 'ledger', '3']);
    const duplicate = await store.recordDurability(sessionId, { kind: 'step', scope: 'paced', key: 'paced-1', result: 'late' });
    expect(duplicate.created).toBe(false);
    expect(duplicate.record).toMatchObject({ sequence: 3, result: { i: 1 } });
    const next = await store.recordDurability(sessionId, { kind: 'step', scope: 'paced', key: 'after', result: 1 });
    expect(next.record.sequence).toBe(5);
    await store.close();
  });

  it('keeps records and events in their own files when both are written concurrently', async () => {
    const sessionId = newSession();
    const store = new JsonlDurableEventStore(root);
    await store.append(sessionId, [{ type: 'request_started', requestId: RequestId('r'), data: {} }]);
    await Promise.all([
      store.recordDurability(sessionId, step('x')),
      store.append(sessionId, [{ type: 'request_started', requestId: RequestId('r2'), data: {} }]),
      store.recordDurability(sessionId, step('y')),
    ]);
    const { log, durability } = store.pathsOf(sessionId);
    expect(lines(log)).toHaveLength(2);
    expect(lines(durability)).toHaveLength(2);
    expect(lines(log).every((line) => line.startsWith('['))).toBe(true);
    await store.close();
  });

  it('serves pages without the lock only while the cached ledger describes the whole file', async () => {
    const { sessionId, file } = await seeded(2);
    const store = new JsonlDurableEventStore(root, { lockTimeoutMs: 0 });
    expect((await readAll(store, sessionId)).length).toBe(2);
    const holder = startFixture('lock-holder', [root, sessionId]);
    const exit = finished(holder);
    try {
      await waitForLine(holder, 'locked');
      // Nothing changed: the validated records are served while another process holds the lock.
      expect((await store.readDurability(sessionId, { after: 1 })).records.map((r) => r.key)).toEqual(['k1']);
      // The file grew: the new bytes must be caught up under the lock, which is held.
      const [first] = lines(file);
      const third = { ...(JSON.parse(first ?? '') as Record<string, unknown>), key: 'k2', sequence: 3 };
      appendFileSync(file, `${JSON.stringify(third)}\n`);
      await expect(store.readDurability(sessionId)).rejects.toMatchObject({ code: 'DURABLE_EVENT_LOCK_TIMEOUT' });
    } finally {
      holder.kill('SIGKILL');
      await exit;
    }
    expect((await readAll(store, sessionId)).map((r) => r.key)).toEqual(['k0', 'k1', 'k2']);
    await store.close();
  });
});
