/**
 * Several stores over ONE `pg.Pool` (the `pool` option): each store prepares its statements under
 * names derived from their text, so stores of different schemas (also schemas whose names share
 * a long prefix) never give one connection two statements under the same name. Reads and writes
 * of every store are mixed on the same connections.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { markerDraft } from '../../src/conformance/fixtures.js';
import { PostgresDurableEventStore } from '../../src/postgres.js';
import { SessionId } from '../../src/protocol/ids.js';
import { dropSchema, freshSchema, postgresUrl, readAll } from './helpers.js';

const url = postgresUrl();
let pool: pg.Pool;
const schemas: string[] = [];
const stores: PostgresDurableEventStore[] = [];

beforeAll(() => {
  pool = new pg.Pool({ connectionString: url, max: 3 });
  pool.on('error', () => undefined);
});
afterAll(async () => {
  for (const store of stores) await store.close();
  await pool.end();
  for (const schema of schemas) await dropSchema(url, schema);
});

async function openStore(schema: string): Promise<PostgresDurableEventStore> {
  if (!schemas.includes(schema)) schemas.push(schema);
  const store = await PostgresDurableEventStore.open({ pool, schema, notify: false });
  stores.push(store);
  return store;
}

/**
 * Every store appends and reads on two sessions at once, interleaved on the pool's connections;
 * store `i` starts with a different call than store `i + 1`, so the stores first use their
 * statements in different orders. Returns the outputs each session ends with.
 */
async function mixedLoad(group: PostgresDurableEventStore[], rounds: number): Promise<Map<PostgresDurableEventStore, string[][]>> {
  const sessions = [SessionId('shared-a'), SessionId('shared-b')];
  const calls: Array<Promise<unknown>> = [];
  for (let round = 0; round < rounds; round++) {
    for (const [index, store] of group.entries()) {
      const reads = (): void => {
        for (const sessionId of sessions) {
          calls.push(store.read(sessionId));
          calls.push(store.getHeadSequence(sessionId));
        }
        calls.push(store.inspectExecutionLease(sessions[0] as SessionId));
      };
      if (index % 2 === 1) reads();
      for (const sessionId of sessions) calls.push(store.append(sessionId, [markerDraft(`s${index}-r${round}`)]));
      if (index % 2 === 0) reads();
    }
  }
  const outcomes = await Promise.allSettled(calls);
  const failures = outcomes.filter((outcome): outcome is PromiseRejectedResult => outcome.status === 'rejected');
  expect(failures.map((failure) => String(failure.reason))).toEqual([]);
  const logs = new Map<PostgresDurableEventStore, string[][]>();
  for (const store of group) {
    const outputs: string[][] = [];
    for (const sessionId of sessions) {
      outputs.push((await readAll(store, sessionId)).map((event) => (event.data as { output: string }).output));
    }
    logs.set(store, outputs);
  }
  return logs;
}

const outputsOf = (index: number, rounds: number): string[] => Array.from({ length: rounds }, (_, round) => `s${index}-r${round}`);

describe('PostgreSQL: stores sharing one pg.Pool', () => {
  it('runs two stores of one schema on one pool, first using their statements in different orders', async () => {
    const schema = freshSchema('pool2');
    const group = [await openStore(schema), await openStore(schema)];
    // Each store's first statement is a different one.
    await group[0]?.getHeadSequence(SessionId('shared-a'));
    await group[1]?.read(SessionId('shared-a'));
    const logs = await mixedLoad(group, 10);
    const expected = [...outputsOf(0, 10), ...outputsOf(1, 10)].sort();
    for (const outputs of logs.values()) {
      for (const output of outputs) expect([...output].sort()).toEqual(expected);
    }
  });

  it('runs ten stores on one pool, their schema names sharing 60 leading characters', async () => {
    const base = freshSchema('pool10');
    const group: PostgresDurableEventStore[] = [];
    // 63-character names: a statement name cut at 63 characters would not tell these apart.
    for (let index = 0; index < 10; index++) group.push(await openStore(`${base}_${'x'.repeat(60 - base.length)}_${index}`));
    const logs = await mixedLoad(group, 4);
    for (const [index, store] of group.entries()) expect(logs.get(store)).toEqual([outputsOf(index, 4), outputsOf(index, 4)]);
  });
});
