/**
 * Unit tests of the log engine: the pure decisions every adapter calls (draft validation,
 * compare-and-append, envelope stamping and limits, read planning, lease decisions and fences).
 */
import { describe, expect, it } from 'vitest';
import {
  MAX_LEASE_TTL_MS,
  MIN_LEASE_TTL_MS,
  buildReadPage,
  checkExpectedLastSequence,
  checkFence,
  checkLeaseTtl,
  checkPrecondition,
  checkReadCursor,
  checkSessionId,
  decideAcquire,
  decideRelease,
  decideRenew,
  isLeaseActive,
  leaseRecord,
  parseLeaseState,
  planAppend,
  planRead,
  plannedEncodedBytes,
  validateDraftBatch,
  type LeaseState,
} from '../../src/core/log-engine.js';
import type { DurableExecutionFence } from '../../src/core/store.js';
import { isDurableEventSequenceConflictError, type DurableError } from '../../src/protocol/errors.js';
import type { DurableEventDraft } from '../../src/protocol/events.js';
import { EventId, EventSequence, FencingToken, SessionId, WorkerId } from '../../src/protocol/ids.js';
import { MAX_BATCH_BYTES, MAX_BATCH_EVENTS, MAX_EVENT_BYTES, MAX_READ_LIMIT, MAX_READ_PAGE_BYTES } from '../../src/protocol/limits.js';
import { markerDraft, markerDrafts, sessionCreatedDraft } from '../../src/conformance/fixtures.js';

const sessionId = SessionId('engine-session');
const NOW = Date.UTC(2025, 0, 31, 12, 0, 0);
const owner = WorkerId('worker-a');

/** Runs `fn` and returns what it threw (fails when it does not throw). */
function thrown(fn: () => unknown): DurableError {
  try {
    fn();
  } catch (error) {
    return error as DurableError;
  }
  throw new Error('expected a throw');
}

function lease(overrides: Partial<LeaseState> = {}): LeaseState {
  return {
    leaseId: 'lease-1',
    ownerId: owner,
    fencingToken: FencingToken(1),
    acquiredAtMs: NOW,
    expiresAtMs: NOW + 1_000,
    released: false,
    ...overrides,
  };
}

function fenceOf(state: LeaseState): DurableExecutionFence {
  return { leaseId: state.leaseId, ownerId: state.ownerId, fencingToken: state.fencingToken };
}

function counterIds(): () => EventId {
  let next = 0;
  return () => EventId(`event-${++next}`);
}

describe('checkSessionId', () => {
  it('accepts valid IDs and refuses the rest with DURABLE_EVENT_INVALID_INPUT', () => {
    expect(checkSessionId('s-1')).toBe('s-1');
    for (const bad of ['', 'a\nb', 'x'.repeat(257), 12, null, undefined]) {
      expect(thrown(() => checkSessionId(bad)).code).toBe('DURABLE_EVENT_INVALID_INPUT');
    }
  });
});

describe('validateDraftBatch', () => {
  it('returns the parsed drafts of a valid batch', () => {
    const drafts = [sessionCreatedDraft(), markerDraft('a')];
    expect(validateDraftBatch(drafts)).toEqual(drafts);
  });

  it('refuses non-arrays and empty batches', () => {
    for (const bad of [undefined, null, 'x', { length: 0 }]) {
      expect(thrown(() => validateDraftBatch(bad)).code).toBe('DURABLE_EVENT_INVALID_INPUT');
    }
    expect(thrown(() => validateDraftBatch([])).message).toMatch(/at least one/);
  });

  it('checks the count limit before parsing any draft', () => {
    const error = thrown(() => validateDraftBatch(new Array(MAX_BATCH_EVENTS + 1).fill({ bogus: true })));
    expect(error.code).toBe('DURABLE_EVENT_LIMIT_EXCEEDED');
    expect(error.details).toEqual({ limit: MAX_BATCH_EVENTS, actual: MAX_BATCH_EVENTS + 1 });
  });

  it('names the index of the first invalid draft', () => {
    const error = thrown(() => validateDraftBatch([markerDraft('ok'), { type: 'request_started', data: {} }]));
    expect(error.code).toBe('DURABLE_EVENT_INVALID_INPUT');
    expect(error.message).toMatch(/^events\[1\]: /);
    expect(error.details).toEqual({ index: 1 });
    expect(error.cause).toBeInstanceOf(Error);
  });
});

describe('compare-and-append precondition', () => {
  it('passes undefined and null through and brands numbers', () => {
    expect(checkExpectedLastSequence(undefined)).toBeUndefined();
    expect(checkExpectedLastSequence(null)).toBeNull();
    expect(checkExpectedLastSequence(7)).toBe(7);
  });

  it('refuses 0 and other malformed values instead of treating them as "no check"', () => {
    for (const bad of [0, -1, 1.5, Number.NaN, '3', false]) {
      expect(thrown(() => checkExpectedLastSequence(bad)).code).toBe('DURABLE_EVENT_INVALID_INPUT');
    }
  });

  it('checks the head against each precondition form', () => {
    expect(() => checkPrecondition(undefined, null)).not.toThrow();
    expect(() => checkPrecondition(undefined, EventSequence(9))).not.toThrow();
    expect(() => checkPrecondition(null, null)).not.toThrow();
    expect(() => checkPrecondition(EventSequence(4), EventSequence(4))).not.toThrow();
    const cases: Array<[EventSequence | null, EventSequence | null]> = [
      [null, EventSequence(2)],
      [EventSequence(1), null],
      [EventSequence(1), EventSequence(2)],
      [EventSequence(3), EventSequence(2)],
    ];
    for (const [expected, head] of cases) {
      const error = thrown(() => checkPrecondition(expected, head));
      expect(isDurableEventSequenceConflictError(error)).toBe(true);
      expect(error).toMatchObject({ expected, actual: head });
    }
  });
});

describe('planAppend', () => {
  const base = { sessionId, options: undefined, head: null, lease: null, nowMs: NOW };

  it('stamps store fields and numbers the batch after the head', () => {
    const occurredAt = '2020-01-01T00:00:00.000Z';
    const drafts: DurableEventDraft[] = [markerDraft('a'), { ...markerDraft('b'), occurredAt }];
    const result = planAppend({ ...base, drafts, head: EventSequence(4), newEventId: counterIds() });
    const recordedAt = new Date(NOW).toISOString();
    expect(result.previousSequence).toBe(4);
    expect(result.lastSequence).toBe(6);
    expect(result.events).toEqual([
      { schemaVersion: 4, eventId: 'event-1', sequence: 5, sessionId, ...markerDraft('a'), recordedAt, occurredAt: recordedAt },
      { schemaVersion: 4, eventId: 'event-2', sequence: 6, sessionId, ...markerDraft('b'), recordedAt, occurredAt },
    ]);
  });

  it('stamps each plan with its own clock reading, and remembers the encoded size of every planned event', () => {
    const first = planAppend({ ...base, drafts: [markerDraft('a'), markerDraft('ü€')] });
    const later = planAppend({ ...base, drafts: [markerDraft('b')], nowMs: NOW + 1 });
    const again = planAppend({ ...base, drafts: [markerDraft('c')] });
    expect(first.events[0]?.recordedAt).toBe(new Date(NOW).toISOString());
    expect(later.events[0]?.recordedAt).toBe(new Date(NOW + 1).toISOString());
    expect(again.events[0]?.recordedAt).toBe(new Date(NOW).toISOString());
    expect(plannedEncodedBytes(first.events)).toEqual(first.events.map((event) => Buffer.byteLength(JSON.stringify(event))));
    // Only the very array a plan returned carries the hint; a copy does not.
    expect(plannedEncodedBytes([...first.events])).toBeUndefined();
  });

  it('stamps recordedAt exactly as Date#toISOString, within a second, across seconds and at the edges', () => {
    const times: number[] = [];
    for (const start of [NOW, 0, -1000, Date.UTC(-300, 5, 1), Date.UTC(12_000, 0, 1), 8.64e15 - 1500, -8.64e15]) {
      // A run of readings sharing a second, then crossing into the next ones, fractions included.
      for (const step of [0, 1, 9, 10, 99, 100, 998.5, 999, 1000, 1000.25, 1001, 2500, -0.5, -1]) times.push(start + step);
    }
    for (const nowMs of times) {
      let expected: string;
      try {
        expected = new Date(nowMs).toISOString();
      } catch {
        expect(() => planAppend({ ...base, drafts: [markerDraft('t')], nowMs })).toThrow(RangeError);
        continue;
      }
      expect(planAppend({ ...base, drafts: [markerDraft('t')], nowMs }).events[0]?.recordedAt).toBe(expected);
    }
  });

  it('uses random UUID event IDs by default', () => {
    const result = planAppend({ ...base, drafts: markerDrafts(3) });
    const ids = result.events.map((event) => event.eventId);
    expect(new Set(ids).size).toBe(3);
    for (const id of ids) expect(id).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('leaves the drafts untouched', () => {
    const draft = { ...markerDraft('kept'), occurredAt: '2020-01-01T00:00:00.000Z' };
    const copy = structuredClone(draft);
    planAppend({ ...base, drafts: [draft] });
    expect(draft).toEqual(copy);
  });

  it('refuses a failed precondition and a malformed one', () => {
    const conflict = thrown(() =>
      planAppend({ ...base, drafts: [markerDraft('x')], head: EventSequence(2), options: { expectedLastSequence: null } }),
    );
    expect(conflict).toMatchObject({ code: 'DURABLE_EVENT_SEQUENCE_CONFLICT', expected: null, actual: 2 });
    const malformed = thrown(() =>
      planAppend({
        ...base,
        drafts: [markerDraft('x')],
        options: { expectedLastSequence: 0 as unknown as EventSequence },
      }),
    );
    expect(malformed.code).toBe('DURABLE_EVENT_INVALID_INPUT');
  });

  it('checks the fence before the precondition', () => {
    const error = thrown(() =>
      planAppend({
        ...base,
        drafts: [markerDraft('x')],
        head: EventSequence(3),
        lease: lease(),
        options: { expectedLastSequence: EventSequence(1) },
      }),
    );
    expect(error.code).toBe('DURABLE_EXECUTION_LEASE_REQUIRED');
    const fenced = planAppend({
      ...base,
      drafts: [markerDraft('x')],
      head: EventSequence(3),
      lease: lease(),
      options: { executionFence: fenceOf(lease()), expectedLastSequence: EventSequence(3) },
    });
    expect(fenced.lastSequence).toBe(4);
  });

  it('refuses an event over MAX_EVENT_BYTES, naming its index', () => {
    const error = thrown(() =>
      planAppend({ ...base, drafts: [markerDraft('ok'), markerDraft('big', 'x'.repeat(MAX_EVENT_BYTES))] }),
    );
    expect(error.code).toBe('DURABLE_EVENT_LIMIT_EXCEEDED');
    expect(error.details).toMatchObject({ index: 1, limit: MAX_EVENT_BYTES });
  });

  it('refuses a batch over MAX_BATCH_BYTES even when each event fits', () => {
    const eventPayloadBytes = MAX_EVENT_BYTES - 1024;
    const count = Math.floor(MAX_BATCH_BYTES / eventPayloadBytes) + 1;
    const chunk = 'y'.repeat(eventPayloadBytes);
    const drafts = Array.from({ length: count }, (_, index) => markerDraft(`chunk-${index}`, chunk));
    const error = thrown(() => planAppend({ ...base, drafts }));
    expect(error.code).toBe('DURABLE_EVENT_LIMIT_EXCEEDED');
    expect(error.details).toMatchObject({ limit: MAX_BATCH_BYTES });
  });
});

describe('read planning', () => {
  it('defaults the limit and validates its range', () => {
    expect(planRead(undefined)).toEqual({ after: undefined, limit: 100, maxBytes: MAX_READ_PAGE_BYTES });
    expect(planRead({ after: 3, limit: MAX_READ_LIMIT, maxBytes: 10 })).toEqual({ after: 3, limit: MAX_READ_LIMIT, maxBytes: 10 });
    for (const maxBytes of [0, -1, 1.5, MAX_READ_PAGE_BYTES + 1, '10']) {
      expect(thrown(() => planRead({ maxBytes })).code).toBe('DURABLE_EVENT_INVALID_INPUT');
    }
    for (const limit of [0, MAX_READ_LIMIT + 1, 2.5, -3, '5', Number.NaN]) {
      expect(thrown(() => planRead({ limit })).code).toBe('DURABLE_EVENT_INVALID_INPUT');
    }
  });

  it('refuses a malformed cursor with DURABLE_EVENT_INVALID_CURSOR', () => {
    for (const after of [0, -1, 1.5, '2', null, Number.POSITIVE_INFINITY]) {
      expect(thrown(() => planRead({ after })).code).toBe('DURABLE_EVENT_INVALID_CURSOR');
    }
  });

  it('refuses a cursor ahead of the head, accepts one at the head', () => {
    expect(() => checkReadCursor(undefined, null)).not.toThrow();
    expect(() => checkReadCursor(EventSequence(3), EventSequence(3))).not.toThrow();
    const ahead = thrown(() => checkReadCursor(EventSequence(4), EventSequence(3)));
    expect(ahead.code).toBe('DURABLE_EVENT_INVALID_CURSOR');
    expect(ahead.details).toEqual({ after: 4, headSequence: 3 });
    expect(thrown(() => checkReadCursor(EventSequence(1), null)).code).toBe('DURABLE_EVENT_INVALID_CURSOR');
  });

  it('shapes pages: nextCursor falls back to after, hasMore compares with the head', () => {
    const events = planAppend({ sessionId, drafts: markerDrafts(2), options: undefined, head: EventSequence(1), lease: null, nowMs: NOW }).events;
    expect(buildReadPage(events, { after: EventSequence(1), limit: 2, maxBytes: MAX_READ_PAGE_BYTES }, EventSequence(5))).toEqual({
      events,
      nextCursor: 3,
      headSequence: 5,
      hasMore: true,
    });
    expect(buildReadPage([], { after: EventSequence(5), limit: 2, maxBytes: MAX_READ_PAGE_BYTES }, EventSequence(5))).toEqual({
      events: [],
      nextCursor: 5,
      headSequence: 5,
      hasMore: false,
    });
    expect(buildReadPage([], { after: undefined, limit: 2, maxBytes: MAX_READ_PAGE_BYTES }, null)).toEqual({
      events: [],
      nextCursor: null,
      headSequence: null,
      hasMore: false,
    });
  });
});

describe('fences', () => {
  it('allows unfenced appends only while no lease state exists', () => {
    expect(() => checkFence(null, undefined, NOW)).not.toThrow();
    expect(thrown(() => checkFence(lease(), undefined, NOW)).code).toBe('DURABLE_EXECUTION_LEASE_REQUIRED');
    // Sticky: expired or released state still requires a fence.
    expect(thrown(() => checkFence(lease({ released: true }), undefined, NOW)).code).toBe('DURABLE_EXECUTION_LEASE_REQUIRED');
    expect(thrown(() => checkFence(lease(), undefined, NOW + 5_000)).code).toBe('DURABLE_EXECUTION_LEASE_REQUIRED');
  });

  it('accepts exactly the current, live lease', () => {
    const state = lease();
    expect(() => checkFence(state, fenceOf(state), NOW)).not.toThrow();
    const lost = [
      () => checkFence(null, fenceOf(state), NOW),
      () => checkFence(state, { ...fenceOf(state), fencingToken: FencingToken(2) }, NOW),
      () => checkFence(state, { ...fenceOf(state), ownerId: WorkerId('other') }, NOW),
      () => checkFence(state, { ...fenceOf(state), leaseId: 'other' }, NOW),
      () => checkFence(lease({ released: true }), fenceOf(state), NOW),
      () => checkFence(state, fenceOf(state), state.expiresAtMs), // expiry is exclusive
    ];
    for (const attempt of lost) expect(thrown(attempt).code).toBe('DURABLE_EXECUTION_LEASE_LOST');
  });

  it('refuses a malformed fence as DURABLE_EXECUTION_LEASE_INVALID', () => {
    for (const bad of [null, {}, { ...fenceOf(lease()), fencingToken: 0 }, { ...fenceOf(lease()), ownerId: '' }]) {
      expect(thrown(() => checkFence(lease(), bad, NOW)).code).toBe('DURABLE_EXECUTION_LEASE_INVALID');
    }
  });

  it('treats a lease as active until its expiry instant', () => {
    expect(isLeaseActive(null, NOW)).toBe(false);
    expect(isLeaseActive(lease(), NOW + 999)).toBe(true);
    expect(isLeaseActive(lease(), NOW + 1_000)).toBe(false);
    expect(isLeaseActive(lease({ released: true }), NOW)).toBe(false);
  });
});

describe('lease decisions', () => {
  const request = { ownerId: owner, leaseId: 'lease-1', ttlMs: 1_000 };

  it('issues token 1 on a session without lease state', () => {
    expect(decideAcquire(null, request, NOW)).toEqual(lease());
  });

  it('refuses another acquisition while a lease is live', () => {
    const error = thrown(() => decideAcquire(lease(), { ...request, ownerId: WorkerId('b'), leaseId: 'lease-b' }, NOW));
    expect(error.code).toBe('DURABLE_EXECUTION_LEASE_CONFLICT');
    expect(error.details).toEqual({ ownerId: owner, expiresAtMs: NOW + 1_000 });
    expect(thrown(() => decideAcquire(lease(), { ...request, leaseId: 'lease-2' }, NOW)).code).toBe(
      'DURABLE_EXECUTION_LEASE_CONFLICT',
    );
  });

  it('reconciles a retry of the live acquisition without a new token and never shortens it', () => {
    const retried = decideAcquire(lease(), { ...request, ttlMs: 5_000 }, NOW + 10);
    expect(retried).toEqual(lease({ expiresAtMs: NOW + 5_010 }));
    expect(decideAcquire(lease(), { ...request, ttlMs: 100 }, NOW + 10).expiresAtMs).toBe(NOW + 1_000);
  });

  it('takes over an expired or released lease with the next token', () => {
    const expired = decideAcquire(lease({ fencingToken: FencingToken(4) }), { ...request, ownerId: WorkerId('b') }, NOW + 1_000);
    expect(expired).toMatchObject({ ownerId: 'b', fencingToken: 5, acquiredAtMs: NOW + 1_000, expiresAtMs: NOW + 2_000 });
    const released = decideAcquire(lease({ released: true }), request, NOW);
    expect(released.fencingToken).toBe(2);
    expect(released.released).toBe(false);
  });

  it('validates TTL and identities', () => {
    expect(checkLeaseTtl(MIN_LEASE_TTL_MS)).toBe(MIN_LEASE_TTL_MS);
    expect(checkLeaseTtl(MAX_LEASE_TTL_MS)).toBe(MAX_LEASE_TTL_MS);
    for (const ttl of [MIN_LEASE_TTL_MS - 1, MAX_LEASE_TTL_MS + 1, 10.5, '100']) {
      expect(thrown(() => decideAcquire(null, { ...request, ttlMs: ttl }, NOW)).code).toBe('DURABLE_EXECUTION_LEASE_INVALID');
    }
    expect(thrown(() => decideAcquire(null, { ...request, ownerId: '' }, NOW)).code).toBe('DURABLE_EXECUTION_LEASE_INVALID');
  });

  it('renews only the live lease', () => {
    expect(decideRenew(lease(), fenceOf(lease()), 3_000, NOW + 500)).toEqual(lease({ expiresAtMs: NOW + 3_500 }));
    expect(thrown(() => decideRenew(lease(), fenceOf(lease()), 3_000, NOW + 1_000)).code).toBe('DURABLE_EXECUTION_LEASE_LOST');
    expect(thrown(() => decideRenew(null, fenceOf(lease()), 3_000, NOW)).code).toBe('DURABLE_EXECUTION_LEASE_LOST');
    expect(thrown(() => decideRenew(lease(), fenceOf(lease()), 1, NOW)).code).toBe('DURABLE_EXECUTION_LEASE_INVALID');
  });

  it('releases idempotently for the holder and refuses a stale fence', () => {
    const released = decideRelease(lease(), fenceOf(lease()), NOW + 100);
    expect(released).toEqual(lease({ released: true, expiresAtMs: NOW + 100 }));
    expect(decideRelease(released, fenceOf(lease()), NOW + 200)).toBe(released);
    // Releasing after expiry keeps the original expiry.
    expect(decideRelease(lease(), fenceOf(lease()), NOW + 9_000).expiresAtMs).toBe(NOW + 1_000);
    const stale = { ...fenceOf(lease()), fencingToken: FencingToken(2) };
    expect(thrown(() => decideRelease(lease(), stale, NOW)).code).toBe('DURABLE_EXECUTION_LEASE_LOST');
    expect(thrown(() => decideRelease(null, fenceOf(lease()), NOW)).code).toBe('DURABLE_EXECUTION_LEASE_LOST');
  });

  it('round-trips persisted lease state and refuses a malformed record as a corrupt log', () => {
    const state = lease({ fencingToken: FencingToken(3), released: true });
    expect(parseLeaseState(JSON.parse(JSON.stringify(state)))).toEqual(state);
    expect(leaseRecord(sessionId, state)).toEqual({ sessionId, ...state });
    for (const bad of [null, {}, { ...state, fencingToken: 0 }, { ...state, released: 'no' }, { ...state, leaseId: '' }]) {
      expect(thrown(() => parseLeaseState(bad)).code).toBe('DURABLE_EVENT_CORRUPT_LOG');
    }
  });
});
