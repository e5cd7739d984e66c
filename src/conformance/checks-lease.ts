/**
 * Execution lease checks (stores implementing `DurableExecutionLeaseStore` only).
 *
 * They pin the fencing rules: tokens start at 1 and grow on every takeover; a live lease blocks
 * other owners; a retry of the same acquisition reconciles; once lease state exists every append
 * must carry the current fence (sticky, even after release or expiry); a stale, released or
 * expired fence is `DURABLE_EXECUTION_LEASE_LOST`. Expiry checks use the short TTL from the
 * options and let it lapse through `ctx.elapse` (clock control or a real sleep).
 */
import {
  isExecutionLeaseStore,
  type DurableEventStore,
  type DurableExecutionFence,
  type DurableExecutionLeaseRecord,
  type DurableSessionStore,
} from '../core/store.js';
import { isDurableExecutionLeaseError } from '../protocol/errors.js';
import { EventSequence, FencingToken, WorkerId, type SessionId } from '../protocol/ids.js';
import { assert, assertDeepEqual, assertEqual, describeValue, expectCode, expectSequenceConflict, fail } from './assertions.js';
import { markerDraft } from './fixtures.js';
import type { ConformanceCheck, ConformanceContext } from './types.js';

type Check = ConformanceCheck<DurableEventStore>;
type Ctx = ConformanceContext<DurableEventStore>;

/** TTL of leases that must not expire during a check. */
export const LONG_LEASE_TTL_MS = 60_000;

const OWNER_A = WorkerId('conformance-worker-a');
const OWNER_B = WorkerId('conformance-worker-b');

/** The context's store as a lease store (checks requiring `lease` only run when it is one). */
export function leaseStoreOf(ctx: Ctx): DurableSessionStore {
  const store = ctx.store;
  if (!isExecutionLeaseStore(store)) fail('the store does not implement DurableExecutionLeaseStore');
  return store;
}

/** The fence naming `record`. */
export function fenceOf(record: DurableExecutionLeaseRecord): DurableExecutionFence {
  return { leaseId: record.leaseId, ownerId: record.ownerId, fencingToken: record.fencingToken };
}

async function acquire(
  ctx: Ctx,
  sessionId: SessionId,
  ownerId: WorkerId,
  leaseId: string,
  ttlMs = LONG_LEASE_TTL_MS,
): Promise<DurableExecutionLeaseRecord> {
  return leaseStoreOf(ctx).acquireExecutionLease(sessionId, { ownerId, leaseId, ttlMs });
}

async function expectLost(promise: Promise<unknown>, what: string): Promise<void> {
  await expectCode(promise, 'DURABLE_EXECUTION_LEASE_LOST', what);
}

/** Asserts that append, renew and assert with `fence` are all refused as LOST. */
async function expectFenceLost(ctx: Ctx, sessionId: SessionId, fence: DurableExecutionFence, what: string) {
  const store = leaseStoreOf(ctx);
  const head = await store.getHeadSequence(sessionId);
  await expectLost(store.append(sessionId, [markerDraft('stale')], { executionFence: fence }), `${what}: append`);
  await expectLost(store.renewExecutionLease(sessionId, fence, { ttlMs: LONG_LEASE_TTL_MS }), `${what}: renew`);
  await expectLost(store.assertExecutionLease(sessionId, fence), `${what}: assert`);
  await ctx.expectHead(sessionId, head, `${what}: head unchanged`);
}

const firstToken: Check = {
  name: 'lease-acquire-issues-token-one',
  requires: ['lease'],
  async run(ctx) {
    const store = leaseStoreOf(ctx);
    const sessionId = ctx.newSessionId();
    assertEqual(await store.requiresExecutionLease(sessionId), false, 'requiresExecutionLease before any lease');
    assertEqual(await store.inspectExecutionLease(sessionId), null, 'inspectExecutionLease before any lease');
    const before = ctx.now();
    const record = await acquire(ctx, sessionId, OWNER_A, 'lease-first');
    const after = ctx.now();
    assertEqual(record.sessionId, sessionId, 'record.sessionId');
    assertEqual(record.leaseId, 'lease-first', 'record.leaseId');
    assertEqual(record.ownerId, OWNER_A, 'record.ownerId');
    assertEqual(record.fencingToken, 1, 'first fencing token');
    assertEqual(record.released, false, 'record.released');
    assert(
      record.acquiredAtMs >= before && record.acquiredAtMs <= after,
      `acquiredAtMs ${record.acquiredAtMs} must be the acquisition time (${before}..${after})`,
    );
    assertEqual(record.expiresAtMs, record.acquiredAtMs + LONG_LEASE_TTL_MS, 'expiresAtMs = acquiredAtMs + ttlMs');
    assertEqual(await store.requiresExecutionLease(sessionId), true, 'requiresExecutionLease after acquiring');
    assertDeepEqual(await store.inspectExecutionLease(sessionId), record, 'inspectExecutionLease after acquiring');
    await store.assertExecutionLease(sessionId, fenceOf(record));
  },
};

const secondOwnerConflicts: Check = {
  name: 'lease-second-owner-conflicts',
  requires: ['lease'],
  async run(ctx) {
    const sessionId = ctx.newSessionId();
    const held = await acquire(ctx, sessionId, OWNER_A, 'lease-a');
    await expectCode(acquire(ctx, sessionId, OWNER_B, 'lease-b'), 'DURABLE_EXECUTION_LEASE_CONFLICT', 'other owner');
    await expectCode(
      acquire(ctx, sessionId, OWNER_A, 'lease-a-second'),
      'DURABLE_EXECUTION_LEASE_CONFLICT',
      'same owner with another leaseId',
    );
    await expectCode(
      acquire(ctx, sessionId, OWNER_B, 'lease-a'),
      'DURABLE_EXECUTION_LEASE_CONFLICT',
      'other owner reusing the leaseId',
    );
    assertDeepEqual(await leaseStoreOf(ctx).inspectExecutionLease(sessionId), held, 'lease after refused acquisitions');
  },
};

const retryReconciles: Check = {
  name: 'lease-acquire-retry-reconciles',
  requires: ['lease'],
  async run(ctx) {
    const sessionId = ctx.newSessionId();
    const first = await acquire(ctx, sessionId, OWNER_A, 'lease-retry');
    const again = await acquire(ctx, sessionId, OWNER_A, 'lease-retry');
    assertEqual(again.fencingToken, first.fencingToken, 'a retry keeps the fencing token');
    assertEqual(again.leaseId, first.leaseId, 'a retry keeps the leaseId');
    assertEqual(again.acquiredAtMs, first.acquiredAtMs, 'a retry keeps acquiredAtMs');
    assert(again.expiresAtMs >= first.expiresAtMs, 'a retry never shortens the lease');
    await leaseStoreOf(ctx).assertExecutionLease(sessionId, fenceOf(first));
  },
};

const fencedAppend: Check = {
  name: 'lease-fenced-append-succeeds',
  requires: ['lease'],
  async run(ctx) {
    const store = leaseStoreOf(ctx);
    const sessionId = ctx.newSessionId();
    const unleased = await store.append(sessionId, [markerDraft('before-lease')]);
    assertEqual(unleased.lastSequence, 1, 'an unfenced append before any lease state');
    const record = await acquire(ctx, sessionId, OWNER_A, 'lease-fenced');
    const fenced = await store.append(sessionId, [markerDraft('fenced')], {
      executionFence: fenceOf(record),
      expectedLastSequence: EventSequence(1),
    });
    assertEqual(fenced.lastSequence, 2, 'a fenced append with the current lease');
    await ctx.expectHead(sessionId, 2);
  },
};

const unfencedRequired: Check = {
  name: 'lease-unfenced-append-required',
  requires: ['lease'],
  async run(ctx) {
    const store = leaseStoreOf(ctx);
    const sessionId = ctx.newSessionId();
    await acquire(ctx, sessionId, OWNER_A, 'lease-required');
    await expectCode(
      store.append(sessionId, [markerDraft('unfenced')]),
      'DURABLE_EXECUTION_LEASE_REQUIRED',
      'unfenced append during an active lease',
    );
    await expectCode(
      store.append(sessionId, [markerDraft('unfenced')], { expectedLastSequence: null }),
      'DURABLE_EXECUTION_LEASE_REQUIRED',
      'unfenced conditioned append during an active lease',
    );
    await ctx.expectHead(sessionId, null, 'head after refused unfenced appends');
    // Lease state is per session.
    const other = ctx.newSessionId();
    assertEqual(await store.requiresExecutionLease(other), false, 'another session needs no lease');
    await store.append(other, [markerDraft('free')]);
  },
};

const stickyAfterRelease: Check = {
  name: 'lease-fencing-sticky-after-release',
  requires: ['lease'],
  async run(ctx) {
    const store = leaseStoreOf(ctx);
    const sessionId = ctx.newSessionId();
    const record = await acquire(ctx, sessionId, OWNER_A, 'lease-released');
    await store.releaseExecutionLease(sessionId, fenceOf(record));
    await store.releaseExecutionLease(sessionId, fenceOf(record)); // idempotent for the holder
    const inspected = await store.inspectExecutionLease(sessionId);
    assertEqual(inspected?.released, true, 'inspect after release: released');
    assertEqual(inspected?.fencingToken, record.fencingToken, 'inspect after release: token');
    assertEqual(await store.requiresExecutionLease(sessionId), true, 'requiresExecutionLease after release');
    await expectCode(
      store.append(sessionId, [markerDraft('after-release')]),
      'DURABLE_EXECUTION_LEASE_REQUIRED',
      'unfenced append after release',
    );
    await expectFenceLost(ctx, sessionId, fenceOf(record), 'released fence');
  },
};

const releaseReacquire: Check = {
  name: 'lease-release-then-reacquire-increments-token',
  requires: ['lease'],
  async run(ctx) {
    const store = leaseStoreOf(ctx);
    const sessionId = ctx.newSessionId();
    const first = await acquire(ctx, sessionId, OWNER_A, 'lease-one');
    await store.releaseExecutionLease(sessionId, fenceOf(first));
    const second = await acquire(ctx, sessionId, OWNER_A, 'lease-two');
    assertEqual(second.fencingToken, first.fencingToken + 1, 'token after release and re-acquire');
    const third = await (async () => {
      await store.releaseExecutionLease(sessionId, fenceOf(second));
      return acquire(ctx, sessionId, OWNER_B, 'lease-three');
    })();
    assertEqual(third.fencingToken, first.fencingToken + 2, 'token after a second release and takeover');
    await store.append(sessionId, [markerDraft('by-b')], { executionFence: fenceOf(third) });
    await expectFenceLost(ctx, sessionId, fenceOf(second), 'fence of the previous lease');
  },
};

const staleAfterTakeover: Check = {
  name: 'lease-stale-token-after-takeover-is-lost',
  requires: ['lease'],
  async run(ctx) {
    const store = leaseStoreOf(ctx);
    const sessionId = ctx.newSessionId();
    const old = await acquire(ctx, sessionId, OWNER_A, 'lease-old', ctx.shortLeaseTtlMs);
    await store.append(sessionId, [markerDraft('by-a')], { executionFence: fenceOf(old) });
    await ctx.elapse(ctx.shortLeaseTtlMs + 1);
    const taken = await acquire(ctx, sessionId, OWNER_B, 'lease-new');
    assertEqual(taken.fencingToken, old.fencingToken + 1, 'token after takeover of an expired lease');
    assertDeepEqual(await store.inspectExecutionLease(sessionId), taken, 'inspect after takeover');
    await expectFenceLost(ctx, sessionId, fenceOf(old), 'old holder after takeover');
    await expectLost(store.releaseExecutionLease(sessionId, fenceOf(old)), 'old holder release after takeover');
    await expectCode(
      acquire(ctx, sessionId, OWNER_A, 'lease-old'),
      'DURABLE_EXECUTION_LEASE_CONFLICT',
      'old holder retrying its acquisition after takeover',
    );
    const byB = await store.append(sessionId, [markerDraft('by-b')], { executionFence: fenceOf(taken) });
    assertEqual(byB.lastSequence, 2, 'the new holder appends');
  },
};

const expiredHolderLost: Check = {
  name: 'lease-expired-holder-is-lost',
  requires: ['lease'],
  async run(ctx) {
    const store = leaseStoreOf(ctx);
    const sessionId = ctx.newSessionId();
    const record = await acquire(ctx, sessionId, OWNER_A, 'lease-expiring', ctx.shortLeaseTtlMs);
    await ctx.elapse(ctx.shortLeaseTtlMs + 1);
    await expectFenceLost(ctx, sessionId, fenceOf(record), 'expired holder');
    await expectCode(
      store.append(sessionId, [markerDraft('unfenced')]),
      'DURABLE_EXECUTION_LEASE_REQUIRED',
      'unfenced append after expiry (fencing is sticky)',
    );
    assertEqual(await store.requiresExecutionLease(sessionId), true, 'requiresExecutionLease after expiry');
    const renewed = await acquire(ctx, sessionId, OWNER_A, 'lease-after-expiry');
    assertEqual(renewed.fencingToken, record.fencingToken + 1, 'a fresh acquisition by the same owner after expiry');
  },
};

const renewExtends: Check = {
  name: 'lease-renew-extends-expiry',
  requires: ['lease'],
  async run(ctx) {
    const store = leaseStoreOf(ctx);
    const sessionId = ctx.newSessionId();
    const record = await acquire(ctx, sessionId, OWNER_A, 'lease-renewed', ctx.shortLeaseTtlMs);
    const before = ctx.now();
    const renewed = await store.renewExecutionLease(sessionId, fenceOf(record), { ttlMs: LONG_LEASE_TTL_MS });
    const after = ctx.now();
    assertEqual(renewed.fencingToken, record.fencingToken, 'renew keeps the token');
    assertEqual(renewed.leaseId, record.leaseId, 'renew keeps the leaseId');
    assert(
      renewed.expiresAtMs >= before + LONG_LEASE_TTL_MS && renewed.expiresAtMs <= after + LONG_LEASE_TTL_MS,
      `renewed expiresAtMs ${renewed.expiresAtMs} must be now + ttlMs`,
    );
    assertDeepEqual(await store.inspectExecutionLease(sessionId), renewed, 'inspect after renew');
    // The renewed lease outlives the original short TTL.
    await ctx.elapse(ctx.shortLeaseTtlMs + 1);
    await store.assertExecutionLease(sessionId, fenceOf(record));
    await store.append(sessionId, [markerDraft('after-renew')], { executionFence: fenceOf(record) });
    await expectCode(acquire(ctx, sessionId, OWNER_B, 'lease-b'), 'DURABLE_EXECUTION_LEASE_CONFLICT', 'takeover of a renewed lease');
  },
};

const mismatchedFence: Check = {
  name: 'lease-mismatched-fence-is-lost',
  requires: ['lease'],
  async run(ctx) {
    const sessionId = ctx.newSessionId();
    const record = await acquire(ctx, sessionId, OWNER_A, 'lease-exact');
    const fence = fenceOf(record);
    await expectFenceLost(ctx, sessionId, { ...fence, ownerId: OWNER_B }, 'fence with another ownerId');
    await expectFenceLost(ctx, sessionId, { ...fence, leaseId: 'lease-other' }, 'fence with another leaseId');
    await expectFenceLost(
      ctx,
      sessionId,
      { ...fence, fencingToken: FencingToken(fence.fencingToken + 1) },
      'fence with a token from the future',
    );
    const never = ctx.newSessionId();
    await expectLost(
      leaseStoreOf(ctx).append(never, [markerDraft('x')], { executionFence: fence }),
      'a fence on a session that never had a lease',
    );
    await leaseStoreOf(ctx).assertExecutionLease(sessionId, fence);
  },
};

const fenceAndPrecondition: Check = {
  name: 'lease-fence-and-precondition-both-apply',
  requires: ['lease'],
  async run(ctx) {
    const store = leaseStoreOf(ctx);
    const sessionId = ctx.newSessionId();
    const record = await acquire(ctx, sessionId, OWNER_A, 'lease-cas');
    const fence = fenceOf(record);
    await store.append(sessionId, [markerDraft('one')], { executionFence: fence, expectedLastSequence: null });
    await expectSequenceConflict(
      store.append(sessionId, [markerDraft('stale')], { executionFence: fence, expectedLastSequence: null }),
      null,
      1,
      'a valid fence does not bypass compare-and-append',
    );
    const wrong = { ...fence, leaseId: 'lease-wrong' };
    const error = await expectCode(
      store.append(sessionId, [markerDraft('wrong')], { executionFence: wrong, expectedLastSequence: EventSequence(1) }),
      'DURABLE_EXECUTION_LEASE_LOST',
      'a matching precondition does not bypass the fence',
    );
    assert(isDurableExecutionLeaseError(error), `lease errors classify by code, got ${describeValue(error)}`);
    await ctx.expectHead(sessionId, 1, 'head after refused appends');
  },
};

const concurrentAcquire: Check = {
  name: 'lease-concurrent-acquire-one-winner',
  requires: ['lease'],
  async run(ctx) {
    const store = leaseStoreOf(ctx);
    const sessionId = ctx.newSessionId();
    const racers = 6;
    const results = await Promise.allSettled(
      Array.from({ length: racers }, (_, index) =>
        store.acquireExecutionLease(sessionId, {
          ownerId: WorkerId(`racer-${index}`),
          leaseId: `lease-racer-${index}`,
          ttlMs: LONG_LEASE_TTL_MS,
        }),
      ),
    );
    const won = results.filter((result) => result.status === 'fulfilled');
    assertEqual(won.length, 1, `winners among ${racers} concurrent acquisitions`);
    for (const result of results) {
      if (result.status === 'rejected') {
        const code = (result.reason as { code?: unknown } | null)?.code;
        assertEqual(code, 'DURABLE_EXECUTION_LEASE_CONFLICT', 'a losing acquisition');
      }
    }
    const winner = won[0];
    if (winner?.status !== 'fulfilled') return;
    assertEqual(winner.value.fencingToken, 1, "the winner's token");
    assertDeepEqual(await store.inspectExecutionLease(sessionId), winner.value, 'inspect after the race');
  },
};

/** Execution lease checks. */
export const leaseChecks: Check[] = [
  firstToken,
  secondOwnerConflicts,
  retryReconciles,
  fencedAppend,
  unfencedRequired,
  stickyAfterRelease,
  releaseReacquire,
  staleAfterTakeover,
  expiredHolderLost,
  renewExtends,
  mismatchedFence,
  fenceAndPrecondition,
  concurrentAcquire,
];
