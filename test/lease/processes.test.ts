/**
 * Execution leases across real processes on the JSONL store.
 *
 * Holders are child processes (fixtures/lease-holder.ts) that print every acquisition and every
 * append with the token it carried and its result. After each scenario the log is read back and
 * checked against those claims: tokens never go down along the log, every acknowledged append
 * is there at its sequence, and every refused one (a stale fence) is absent.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { JsonlDurableEventStore } from '../../src/advanced.js';
import { LeaseFaultStore } from '../../src/conformance/checks-lease-handle.js';
import { DurableExecutionLease } from '../../src/core/lease/index.js';
import type { DurableEventEnvelope } from '../../src/protocol/events.js';
import { isDurableExecutionLeaseTimeoutError } from '../../src/protocol/errors.js';
import { SessionId, WorkerId } from '../../src/protocol/ids.js';
import { isStopped, startHolder, type Holder, type HolderLine } from './child-process.js';
import { codeOf, sleep, tagged, tagOf, waitUntil } from './helpers.js';
import { sized } from '../deep.js';

const root = mkdtempSync(path.join(os.tmpdir(), 'lease-processes-'));
const running: Holder[] = [];
afterEach(() => {
  for (const holder of running.splice(0)) {
    if (holder.child.exitCode === null && holder.child.signalCode === null) {
      holder.child.kill('SIGCONT');
      holder.child.kill('SIGKILL');
    }
  }
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

/**
 * Lease lifetimes are seconds, not hundreds of milliseconds: with both cores saturated by other
 * processes a child can go a second without being scheduled, and a heartbeat that late must not
 * cost the lease in a test that is about something else. Tests wait on the holders' printed lines
 * and on the store's lease record, never on elapsed time.
 */
const TTL_MS = 4_000;
const HEARTBEAT_MS = 1_000;
/** Bound on any single wait for a child's line (a child's tsx start-up on a saturated host included). */
const WAIT_MS = 60_000;
/**
 * Acquisitions per churn worker: two are enough for every worker to stall past the TTL (the holder
 * forces a stall in its second round at the latest) while the others take over; test:deep runs three.
 */
const CHURN_ROUNDS = sized(2, 3);

function holder(config: Record<string, unknown>): Holder {
  const started = startHolder({ root, ttlMs: TTL_MS, heartbeatMs: HEARTBEAT_MS, ...config });
  running.push(started);
  return started;
}

async function readLog(store: JsonlDurableEventStore, sessionId: SessionId): Promise<DurableEventEnvelope[]> {
  const page = await store.read(sessionId, { limit: 1000 });
  expect(page.hasMore).toBe(false);
  return page.events;
}

/** Acquires as `owner`, retrying while another lease is active; returns the handle and the last record seen before. */
async function takeOver(store: JsonlDurableEventStore, sessionId: SessionId, owner: string, ttlMs = TTL_MS) {
  const deadline = performance.now() + WAIT_MS;
  let conflicts = 0;
  for (;;) {
    const before = await store.inspectExecutionLease(sessionId);
    try {
      const lease = await DurableExecutionLease.acquire(store, sessionId, {
        ownerId: WorkerId(owner),
        ttlMs,
        heartbeatIntervalMs: Math.floor(ttlMs / 3),
      });
      return { lease, before, conflicts };
    } catch (error) {
      expect(codeOf(error)).toBe('DURABLE_EXECUTION_LEASE_CONFLICT');
      conflicts += 1;
      if (performance.now() > deadline) throw new Error(`no takeover within ${WAIT_MS} ms`);
      await sleep(20);
    }
  }
}

/** Appends as a holder would and returns the line it would print. */
async function appendAs(store: JsonlDurableEventStore, sessionId: SessionId, lease: DurableExecutionLease, tag: string): Promise<HolderLine> {
  const token = lease.fence.fencingToken;
  const sequence = await lease.withExecutionLease(async (fence, signal) => {
    const result = await store.append(sessionId, [tagged({ tag, owner: 'parent', token })], { executionFence: fence, signal });
    return result.lastSequence;
  });
  return { event: 'append', owner: 'parent', tag, token, ok: true, sequence };
}

/**
 * Checks the log against the writers' claims: tokens never decrease along the log (nothing lands
 * with a superseded token), tags are unique, every acknowledged append is present at its sequence
 * with its token, every refused append is absent, and every event was attempted by someone.
 */
function verifyNoStaleWrites(events: DurableEventEnvelope[], lines: HolderLine[]): { landed: number; refused: number } {
  const tags = events.map(tagOf);
  for (let i = 1; i < tags.length; i++) {
    expect(tags[i]?.token, `token at sequence ${i + 1}`).toBeGreaterThanOrEqual(tags[i - 1]?.token ?? 0);
  }
  const bySequence = new Map(tags.map((tag, index) => [tag.tag, { ...tag, sequence: index + 1 }]));
  expect(bySequence.size).toBe(tags.length);
  const attempted = new Set(lines.filter((l) => l.event === 'attempt' || l.event === 'append').map((l) => l.tag));
  for (const tag of tags) expect(attempted.has(tag.tag), `${tag.tag} was attempted`).toBe(true);
  let refused = 0;
  for (const line of lines.filter((l) => l.event === 'append')) {
    const found = bySequence.get(String(line.tag));
    if (line.ok === true) {
      expect(found, `acknowledged ${String(line.tag)}`).toMatchObject({ token: line.token, sequence: line.sequence });
    } else if (line.uncertain !== true) {
      refused += 1;
      expect(found, `refused ${String(line.tag)} (${String(line.code)})`).toBeUndefined();
    }
  }
  return { landed: tags.length, refused };
}

describe('execution leases across processes (JSONL)', () => {
  it('a holder stopped past its TTL loses to a new owner; after SIGCONT its fenced append is refused', async () => {
    const sessionId = SessionId('paused-holder');
    const a = holder({ sessionId, owner: 'a', mode: 'pause' });
    const acquired = await a.waitFor((l) => l.event === 'acquired', 'A acquires');
    const stopping = await a.waitFor((l) => l.event === 'stopping', 'A stops itself');
    const pid = a.child.pid ?? 0;
    await waitUntil(() => isStopped(pid) !== false, 'A is stopped', WAIT_MS);

    const store = new JsonlDurableEventStore(root);
    const { lease: b, before } = await takeOver(store, sessionId, 'b');
    expect(isStopped(pid)).not.toBe(false); // the takeover happened while A was still stopped
    expect(b.fence.fencingToken).toBe(Number(acquired.token) + 1);
    expect(before).toMatchObject({ ownerId: 'a', fencingToken: acquired.token });
    // Never before A's lease had lapsed at the store.
    expect(b.record.acquiredAtMs).toBeGreaterThanOrEqual(Number(stopping.expiresAtMs));
    const parentLines = [await appendAs(store, sessionId, b, 'b-0')];

    a.child.kill('SIGCONT');
    expect(await a.exited).toEqual({ code: 0, signal: null });
    const resumed = a.lines.find((l) => l.event === 'resumed');
    // The handle fails closed by itself: the fenced step that spanned the pause reports the loss.
    expect(resumed).toMatchObject({ step: { ok: false, code: 'DURABLE_EXECUTION_LEASE_LOST' }, aborted: true });
    // And the store refuses the late write carrying the superseded token.
    const late = a.lines.find((l) => l.event === 'append' && l.late === true);
    expect(late).toMatchObject({ ok: false, code: 'DURABLE_EXECUTION_LEASE_LOST', token: acquired.token });

    const events = await readLog(store, sessionId);
    expect(events.map((e) => tagOf(e).tag)).toEqual(['a-0', 'a-1', 'a-2', 'b-0']);
    expect(verifyNoStaleWrites(events, [...a.lines, ...parentLines]).refused).toBe(1);
    await b.release();
    await store.close();
  }, 120_000);

  it("a killed holder's lease expires and is taken over with the next token", async () => {
    const sessionId = SessionId('killed-holder');
    const k = holder({ sessionId, owner: 'k', mode: 'hold' });
    const acquired = await k.waitFor((l) => l.event === 'acquired', 'K acquires');
    await k.waitFor((l) => l.event === 'append' && l.ok === true && l.tag === 'k-3', 'K appends four events');
    k.child.kill('SIGKILL');
    expect((await k.exited).signal).toBe('SIGKILL');

    const store = new JsonlDurableEventStore(root);
    const { lease: b, before } = await takeOver(store, sessionId, 'b');
    expect(b.fence.fencingToken).toBe(Number(acquired.token) + 1);
    // The dead holder's lease was never released: it had to expire first.
    expect(before).toMatchObject({ ownerId: 'k', released: false });
    expect(b.record.acquiredAtMs).toBeGreaterThanOrEqual(before?.expiresAtMs ?? Infinity);
    const parentLines = [await appendAs(store, sessionId, b, 'b-0')];

    const events = await readLog(store, sessionId);
    expect(tagOf(events.at(-1) as DurableEventEnvelope)).toMatchObject({ tag: 'b-0', token: b.fence.fencingToken });
    const { landed } = verifyNoStaleWrites(events, [...k.lines, ...parentLines]);
    expect(landed).toBeGreaterThanOrEqual(5);
    await b.release();
    await store.close();
  }, 120_000);

  it('under churn (takeovers, releases, stalls past the TTL) no append lands with a stale token', async () => {
    const sessionId = SessionId('churn');
    const workers = ['w0', 'w1', 'w2'].map((owner) =>
      holder({ sessionId, owner, mode: 'churn', ttlMs: 2_000, heartbeatMs: 500, rounds: CHURN_ROUNDS, stallMarginMs: 500 }),
    );
    const exits = await Promise.all(workers.map((w) => w.exited));
    for (const [index, exit] of exits.entries()) {
      expect(exit, `worker ${index}: ${workers[index]?.stderr() ?? ''}`).toEqual({ code: 0, signal: null });
    }
    const lines = workers.flatMap((w) => w.lines);
    const acquisitions = lines.filter((l) => l.event === 'acquired').map((l) => Number(l.token));
    expect(new Set(acquisitions).size).toBe(acquisitions.length); // every acquisition got its own token
    const stalls = lines.filter((l) => l.event === 'stalled');
    for (const stall of stalls) expect(stall.aborted).toBe(true);
    const stale = lines.filter((l) => l.event === 'append' && l.stale === true);
    expect(stale.length).toBeGreaterThanOrEqual(workers.length); // each worker stalls at least once
    for (const line of stale) expect(line).toMatchObject({ ok: false, code: 'DURABLE_EXECUTION_LEASE_LOST' });

    const store = new JsonlDurableEventStore(root);
    const events = await readLog(store, sessionId);
    const { landed, refused } = verifyNoStaleWrites(events, lines);
    expect(landed).toBeGreaterThan(0);
    expect(refused).toBeGreaterThanOrEqual(stale.length);
    const owners = new Set(events.map((e) => tagOf(e).owner));
    expect(owners.size).toBeGreaterThan(1);
    await store.close();
  }, 180_000);

  it('another process reconciles an uncertain acquisition by passing its leaseId', async () => {
    const sessionId = SessionId('uncertain-acquisition');
    const ttlMs = 120_000; // the late grant must outlive two child start-ups on a saturated host
    const store = new LeaseFaultStore(new JsonlDurableEventStore(root));
    store.faults.acquire = { kind: 'delay', ms: 400 };
    const error = await DurableExecutionLease.acquire(store, sessionId, {
      ownerId: WorkerId('u'),
      ttlMs,
      heartbeatIntervalMs: 30_000,
      storeTimeoutMs: 100,
    }).then(
      () => undefined,
      (e: unknown) => e,
    );
    if (!isDurableExecutionLeaseTimeoutError(error) || error.leaseId === undefined) throw new Error(`expected a lease timeout, got ${String(error)}`);
    await waitUntil(() => store.callsOf('acquire')[0]?.settledAt !== undefined, 'the late grant', WAIT_MS);
    expect(await store.inspectExecutionLease(sessionId)).toMatchObject({ leaseId: error.leaseId, fencingToken: 1 });

    const fresh = holder({ sessionId, owner: 'u', mode: 'acquire', ttlMs, heartbeatMs: 30_000 });
    expect((await fresh.exited).code).toBe(1);
    expect(fresh.lines.find((l) => l.event === 'crashed')).toMatchObject({ code: 'DURABLE_EXECUTION_LEASE_CONFLICT' });

    const retry = holder({ sessionId, owner: 'u', mode: 'acquire', ttlMs, heartbeatMs: 30_000, leaseId: error.leaseId });
    expect((await retry.exited).code).toBe(0);
    expect(retry.lines.find((l) => l.event === 'acquired')).toMatchObject({ token: 1, leaseId: error.leaseId });
    expect(retry.lines.find((l) => l.event === 'append')).toMatchObject({ ok: true, token: 1 });
    expect(retry.lines.some((l) => l.event === 'released')).toBe(true);
    expect(await store.inspectExecutionLease(sessionId)).toMatchObject({ leaseId: error.leaseId, fencingToken: 1, released: true });
  }, 120_000);
});
