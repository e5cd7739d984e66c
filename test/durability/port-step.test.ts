/**
 * `step` against the memory store: replay, refused values, detached snapshots, concurrent
 * deduplication per store object, incremental cursor reads, and fail-closed corrupt records.
 */
import { describe, expect, it } from 'vitest';
import { MemoryDurableEventStore } from '../../src/adapters/memory/memory-store.js';
import { createDurabilityPort } from '../../src/core/durability/port.js';
import type { JsonValue } from '../../src/protocol/json.js';
import { readAllRecords } from '../../src/conformance/durability-helpers.js';
import { deferred, durabilityView, newSessionId, tamperedStore } from './helpers.js';

describe('step', () => {
  it('runs the body once and replays the recorded result in later ports', async () => {
    const store = new MemoryDurableEventStore();
    const sessionId = newSessionId();
    let runs = 0;
    const body = () => ({ run: ++runs });
    const port = createDurabilityPort({ store, sessionId, runId: 'run-1' });
    expect(await port.step('a', body)).toEqual({ run: 1 });
    expect(await port.step('a', body)).toEqual({ run: 1 });
    port.close();
    const replay = createDurabilityPort({ store, sessionId, runId: 'run-1' });
    expect(await replay.step('a', body)).toEqual({ run: 1 });
    expect(await replay.step('b', body)).toEqual({ run: 2 });
    expect(runs).toBe(2);
    const records = await readAllRecords(store, sessionId);
    expect(records.map((r) => [r.kind, 'scope' in r ? r.scope : undefined, r.key])).toEqual([
      ['step', 'run-1', 'a'],
      ['step', 'run-1', 'b'],
    ]);
  });

  class Point {
    constructor(readonly x: number) {}
  }
  const sparse = [1, , 2]; // eslint-disable-line no-sparse-arrays
  const cyclic: Record<string, unknown> = {};
  cyclic['self'] = cyclic;
  const refused: Array<[string, () => unknown]> = [
    ['NaN', () => Number.NaN],
    ['Infinity', () => Number.POSITIVE_INFINITY],
    ['-Infinity', () => ({ deep: [Number.NEGATIVE_INFINITY] })],
    ['negative zero', () => -0],
    ['nested negative zero', () => ({ a: [0, -0] })],
    ['undefined', () => undefined],
    ['undefined in an object', () => ({ a: undefined })],
    ['a sparse array', () => sparse],
    ['a getter', () => Object.defineProperty({}, 'x', { get: () => 1, enumerable: true })],
    ['a Date', () => new Date(0)],
    ['a class instance', () => new Point(1)],
    ['a Map', () => new Map([['a', 1]])],
    ['a Set', () => new Set([1])],
    ['a bigint', () => 1n],
    ['a function', () => () => 1],
    ['a symbol', () => Symbol('s')],
    ['a cycle', () => cyclic],
    ['a typed array', () => new Uint8Array([1])],
  ];
  it.each(refused)('refuses %s after the body ran, records nothing, and runs the body again next time', async (_what, make) => {
    const store = new MemoryDurableEventStore();
    const sessionId = newSessionId();
    const port = createDurabilityPort({ store, sessionId, runId: 'run-1' });
    let runs = 0;
    // SAFETY: deliberately not JSON; the port must refuse it at run time.
    const bad = () => ((runs += 1), make()) as JsonValue;
    await expect(port.step('k', bad)).rejects.toMatchObject({ code: 'DURABILITY_INVALID_VALUE' });
    expect(runs).toBe(1);
    expect((await store.readDurability(sessionId)).headSequence).toBeNull();
    expect(await port.step('k', () => ((runs += 1), null))).toBeNull();
    expect(runs).toBe(2);
  });

  it('returns detached snapshots on first execution and on replay', async () => {
    const store = new MemoryDurableEventStore();
    const sessionId = newSessionId();
    const produced = { items: [1, 2], meta: { label: 'original' } };
    const port = createDurabilityPort({ store, sessionId, runId: 'run-1' });
    const first = await port.step('k', () => produced);
    expect(first).not.toBe(produced);
    first.items.push(3);
    produced.meta.label = 'changed by the body after returning';
    const replayed = await port.step('k', () => ({ items: [], meta: { label: 'never' } }));
    expect(replayed).toEqual({ items: [1, 2], meta: { label: 'original' } });
    replayed.meta.label = 'changed by the caller';
    const fresh = createDurabilityPort({ store, sessionId, runId: 'run-1' });
    expect(await fresh.step('k', () => null)).toEqual({ items: [1, 2], meta: { label: 'original' } });
    const [record] = await readAllRecords(store, sessionId);
    expect(record).toMatchObject({ result: { items: [1, 2], meta: { label: 'original' } } });
  });

  it('runs the body once for two concurrent calls on one store object (same port or not)', async () => {
    const store = new MemoryDurableEventStore();
    const sessionId = newSessionId();
    const gate = deferred();
    let runs = 0;
    const body = async () => {
      runs += 1;
      await gate.promise;
      return { run: runs };
    };
    const portA = createDurabilityPort({ store, sessionId, runId: 'run-1' });
    const portB = createDurabilityPort({ store, sessionId, runId: 'run-1' });
    const calls = [portA.step('k', body), portA.step('k', body), portB.step('k', body)];
    await new Promise((resolve) => setTimeout(resolve, 5));
    gate.resolve();
    const results = await Promise.all(calls);
    expect(runs).toBe(1);
    expect(results).toEqual([{ run: 1 }, { run: 1 }, { run: 1 }]);
    expect(results[0]).not.toBe(results[1]);
    expect((await store.readDurability(sessionId)).records).toHaveLength(1);
  });

  it('never shares in-flight work between distinct store objects with equal keys', async () => {
    const sessionId = newSessionId();
    const storeA = new MemoryDurableEventStore();
    const storeB = new MemoryDurableEventStore();
    const gate = deferred();
    const ran: string[] = [];
    const body = (label: string) => async () => {
      ran.push(label);
      await gate.promise;
      return label;
    };
    const a = createDurabilityPort({ store: storeA, sessionId, runId: 'run-1' }).step('k', body('a'));
    const b = createDurabilityPort({ store: storeB, sessionId, runId: 'run-1' }).step('k', body('b'));
    await new Promise((resolve) => setTimeout(resolve, 5));
    gate.resolve();
    expect(await Promise.all([a, b])).toEqual(['a', 'b']);
    expect(ran.sort()).toEqual(['a', 'b']);

    // Two store objects over ONE ledger: no in-flight sharing either; the ledger's
    // first-writer-wins makes both return the first recorded result.
    const shared = new MemoryDurableEventStore();
    const gate2 = deferred();
    const ran2: string[] = [];
    const slow = (label: string) => async () => {
      ran2.push(label);
      await gate2.promise;
      return label;
    };
    const one = createDurabilityPort({ store: durabilityView(shared), sessionId, runId: 'run-1' }).step('k', slow('one'));
    const two = createDurabilityPort({ store: durabilityView(shared), sessionId, runId: 'run-1' }).step('k', slow('two'));
    await new Promise((resolve) => setTimeout(resolve, 5));
    gate2.resolve();
    const [r1, r2] = await Promise.all([one, two]);
    expect(ran2.sort()).toEqual(['one', 'two']);
    expect(r1).toBe(r2);
    expect((await shared.readDurability(sessionId)).records).toHaveLength(1);
  });

  it('reads the ledger incrementally: one read from the start, then only after its cursor', async () => {
    const inner = new MemoryDurableEventStore();
    const sessionId = newSessionId();
    // Records from other runs and writers, before and between the port's steps.
    await inner.recordDurability(sessionId, { kind: 'step', scope: 'other', key: 'x', result: 1 });
    await inner.recordDurability(sessionId, { kind: 'step', scope: 'other', key: 'y', result: 2 });
    const store = durabilityView(inner);
    const port = createDurabilityPort({ store, sessionId, runId: 'run-1' });
    await port.step('a', () => 'a');
    await inner.recordDurability(sessionId, { kind: 'step', scope: 'other', key: 'z', result: 3 });
    await port.step('b', () => 'b');
    await port.step('a', () => 'never');
    await port.step('c', () => 'c');
    expect(store.reads.filter((after) => after === undefined)).toHaveLength(1);
    // Each record the port writes right after its cursor extends its prefix: it never reads its own
    // write back (step a wrote 3, step b read 4 and wrote 5, step c wrote 6).
    expect(store.reads).toEqual([undefined, 3, 5]);

    // A page limit below the backlog: the port follows nextCursor page by page.
    for (let index = 0; index < 2500; index++) {
      await inner.recordDurability(sessionId, { kind: 'step', scope: 'bulk', key: `k${index}`, result: index });
    }
    store.reads.length = 0;
    await port.step('d', () => 'd');
    // The cursor stood at 6 (the port's own record 6 extended the prefix without a read).
    expect(store.reads).toEqual([6, 1006, 2006]);
  });

  const corruptions: Array<[string, (page: { records: unknown[] } & Record<string, unknown>) => unknown]> = [
    ['an unknown kind', (page) => ({ ...page, records: page.records.map((r) => ({ ...(r as object), kind: 'nap' })) })],
    ['a result that is not lossless JSON', (page) => ({ ...page, records: page.records.map((r) => ({ ...(r as object), result: { x: -0 } })) })],
    ['a sequence gap', (page) => ({ ...page, records: page.records.map((r) => ({ ...(r as object), sequence: 2 })), nextCursor: 2 })],
    ['another session', (page) => ({ ...page, records: page.records.map((r) => ({ ...(r as object), sessionId: 'other' })) })],
    ['an extra field', (page) => ({ ...page, records: page.records.map((r) => ({ ...(r as object), extra: 1 })) })],
    ['a page that claims more but returns nothing', (page) => ({ ...page, records: [], nextCursor: null, hasMore: true })],
    ['a wrong nextCursor', (page) => ({ ...page, nextCursor: 7 })],
    ['no page at all', () => undefined],
  ];
  it.each(corruptions)('fails closed on %s: DURABILITY_CORRUPT_RECORD and the body never runs', async (_what, tamper) => {
    const inner = new MemoryDurableEventStore();
    const sessionId = newSessionId();
    await inner.recordDurability(sessionId, { kind: 'step', scope: 'run-1', key: 'k', result: 'recorded' });
    // SAFETY: the tamper functions only rebuild pages from their own fields.
    const store = tamperedStore(inner, (page) => tamper(page as unknown as { records: unknown[] } & Record<string, unknown>));
    const port = createDurabilityPort({ store, sessionId, runId: 'run-1' });
    let runs = 0;
    for (const key of ['k', 'other']) {
      await expect(port.step(key, () => ((runs += 1), 'ran'))).rejects.toMatchObject({ code: 'DURABILITY_CORRUPT_RECORD' });
    }
    expect(runs).toBe(0);
  });

  it('refuses a store without the ledger and bad keys', async () => {
    const store = new MemoryDurableEventStore();
    // SAFETY: deliberately not a ledger store.
    expect(() => createDurabilityPort({ store: {} as MemoryDurableEventStore, sessionId: 's', runId: 'r' })).toThrow(
      expect.objectContaining({ code: 'DURABILITY_INVALID_INPUT' }),
    );
    const port = createDurabilityPort({ store, sessionId: newSessionId(), runId: 'run-1' });
    await expect(port.step('', () => 1)).rejects.toMatchObject({ code: 'DURABILITY_INVALID_INPUT' });
    await expect(port.step('k'.repeat(300), () => 1)).rejects.toMatchObject({ code: 'DURABILITY_INVALID_INPUT' });
  });
});
