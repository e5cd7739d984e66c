/**
 * SessionObject RPC and DurableObjectEventStore beyond the shared contract, inside workerd:
 * error classes surviving RPC, the object's session binding, long polls, abort signals, and
 * lease state surviving a reset of the object.
 */
import { abortAllDurableObjects, runInDurableObject } from 'cloudflare:test';
import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { DurableObjectEventStore, sessionObjectRpc } from '../../src/adapters/durable-object/durable-object-store.js';
import type { SessionObjectRpc } from '../../src/adapters/durable-object/rpc.js';
import type { DurableExecutionFence } from '../../src/core/store.js';
import {
  DurableEventSequenceConflictError,
  DurableExecutionLeaseError,
  isDurableEventSequenceConflictError,
} from '../../src/protocol/errors.js';
import { EventSequence, WorkerId } from '../../src/protocol/ids.js';
import { SessionObject } from '../../src/edge/session-object.js';
import { freshSessionId, markers, sleep, stubFor } from './session-object-helpers.js';

const store = new DurableObjectEventStore(env.SESSIONS);

/** The typed RPC surface of a session's object. */
function rpc(sessionId: string): SessionObjectRpc {
  return sessionObjectRpc(env.SESSIONS, sessionId);
}

describe('SessionObject RPC', () => {
  it('rebuilds domain errors with their class, code and details', async () => {
    const sessionId = freshSessionId('errors');
    await store.append(sessionId, markers(2, 'e'));
    const error = await store.append(sessionId, markers(1, 'late'), { expectedLastSequence: null }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DurableEventSequenceConflictError);
    expect(isDurableEventSequenceConflictError(error)).toBe(true);
    expect(error).toMatchObject({ expected: null, actual: 2 });

    const envelope = await rpc(sessionId).appendJson(sessionId, JSON.stringify(markers(1, 'x')), { expectedLastSequence: EventSequence(1) });
    expect(envelope).toEqual({
      ok: false,
      error: expect.objectContaining({ code: 'DURABLE_EVENT_SEQUENCE_CONFLICT', details: { expected: 1, actual: 2 } }),
    });
  });

  it('serves one session only, also after the object was reset', async () => {
    const sessionId = freshSessionId('bound');
    await store.append(sessionId, markers(1, 'b'));
    const refused = await rpc(sessionId).getHeadSequence('another-session');
    expect(refused).toMatchObject({ ok: false, error: { code: 'DURABLE_EVENT_INVALID_INPUT' } });
    await abortAllDurableObjects();
    expect(await rpc(sessionId).read('another-session')).toMatchObject({
      ok: false,
      error: { code: 'DURABLE_EVENT_INVALID_INPUT' },
    });
    expect(await rpc(sessionId).getHeadSequence(sessionId)).toEqual({ ok: true, value: 1 });
    const bound = await runInDurableObject(stubFor(sessionId), (_instance, state) =>
      state.storage.sql.exec("SELECT value FROM ledger_meta WHERE key = 'session_id'").toArray(),
    );
    expect(bound).toEqual([{ value: sessionId }]);
  });

  it('refuses malformed RPC arguments with a classified error instead of throwing', async () => {
    const sessionId = freshSessionId('garbage');
    const object = rpc(sessionId);
    const drafts = JSON.stringify([{ type: 'no_such_event', data: {} }]);
    expect(await object.appendJson(sessionId, drafts)).toMatchObject({ ok: false, error: { code: 'DURABLE_EVENT_INVALID_INPUT' } });
    // SAFETY: deliberately wrong shapes, as an untyped caller could send them.
    expect(await object.appendJson(sessionId, JSON.stringify(markers(1, 'y')), 5 as never)).toMatchObject({ ok: false, error: { code: 'DURABLE_EVENT_INVALID_INPUT' } });
    expect(await object.read(sessionId, 'after' as never)).toMatchObject({ ok: false, error: { code: 'DURABLE_EVENT_INVALID_INPUT' } });
    expect(await object.read(sessionId, { limit: 0 })).toMatchObject({ ok: false, error: { code: 'DURABLE_EVENT_INVALID_INPUT' } });
    expect(await object.waitForEvents(sessionId, null, 60_000)).toMatchObject({
      ok: false,
      error: { code: 'DURABLE_EVENT_INVALID_INPUT' },
    });
    expect(await object.waitForEvents(sessionId, 5, 10)).toMatchObject({
      ok: false,
      error: { code: 'DURABLE_EVENT_INVALID_CURSOR' },
    });
    expect(await object.getHeadSequence(sessionId)).toEqual({ ok: true, value: null });
  });

  it('keeps lease state and fencing across a reset of the object', async () => {
    const sessionId = freshSessionId('lease');
    const lease = await store.acquireExecutionLease(sessionId, {
      ownerId: WorkerId('worker-a'),
      leaseId: 'lease-a',
      ttlMs: 60_000,
    });
    await abortAllDurableObjects();
    await expect(store.append(sessionId, markers(1, 'unfenced'))).rejects.toBeInstanceOf(DurableExecutionLeaseError);
    const fence = { leaseId: lease.leaseId, ownerId: lease.ownerId, fencingToken: lease.fencingToken };
    await expect(store.append(sessionId, markers(1, 'fenced'), { executionFence: fence })).resolves.toMatchObject({
      lastSequence: 1,
    });
  });
});

describe('long poll (waitForEvents)', () => {
  it('resolves as soon as an append passes the cursor', async () => {
    const sessionId = freshSessionId('poll');
    await store.append(sessionId, markers(1, 'p'));
    const waiting = store.waitForEvents(sessionId, EventSequence(1), 10_000);
    await sleep(20);
    await store.append(sessionId, markers(2, 'q'));
    await expect(waiting).resolves.toEqual({ headSequence: 3 });
  });

  it('resolves at once when the head is already past the cursor, and on an empty session at the first event', async () => {
    const sessionId = freshSessionId('poll-now');
    const first = store.waitForEvents(sessionId, null, 10_000);
    await sleep(10);
    await store.append(sessionId, markers(1, 'a'));
    await expect(first).resolves.toEqual({ headSequence: 1 });
    await expect(store.waitForEvents(sessionId, null, 10_000)).resolves.toEqual({ headSequence: 1 });
  });

  it('returns the unchanged head when the wait elapses', async () => {
    const sessionId = freshSessionId('poll-timeout');
    await store.append(sessionId, markers(2, 't'));
    await expect(store.waitForEvents(sessionId, EventSequence(2), 30)).resolves.toEqual({ headSequence: 2 });
  });
});

describe('DurableObjectEventStore transport failures', () => {
  it('reports an append whose RPC fails as DURABLE_EVENT_WRITE_FAILED (outcome unknown), a read as unavailable', async () => {
    const sessionId = freshSessionId('transport');
    // A symbol cannot be serialized for RPC, so the call fails in transport, not in the object.
    // (The drafts are valid: the store validates drafts before sending, and refuses bad ones itself.)
    // SAFETY: deliberately not a valid fence.
    const unsendable = { leaseId: Symbol('lease'), ownerId: 'w', fencingToken: 1 } as unknown as DurableExecutionFence;
    await expect(store.append(sessionId, markers(1, 'x'), { executionFence: unsendable })).rejects.toMatchObject({
      code: 'DURABLE_EVENT_WRITE_FAILED',
    });
    // SAFETY: deliberately not valid read options.
    const badRead = { limit: 1, after: Symbol('after') as unknown as EventSequence };
    await expect(store.read(sessionId, badRead)).rejects.toMatchObject({ code: 'DURABLE_EVENT_UNAVAILABLE' });
    expect(await store.getHeadSequence(sessionId)).toBeNull();
  });

  it('reports a lease call whose RPC fails by its row of SESSION_OPERATIONS: a write as a lease timeout with its leaseId, a read as unavailable', async () => {
    const sessionId = freshSessionId('lease-transport');
    // SAFETY: deliberately not a valid owner: a symbol cannot cross RPC.
    const ownerId = Symbol('owner') as unknown as WorkerId;
    await expect(store.acquireExecutionLease(sessionId, { ownerId, leaseId: 'lease-lost', ttlMs: 60_000 })).rejects.toMatchObject({
      code: 'DURABLE_EXECUTION_LEASE_TIMEOUT',
      leaseId: 'lease-lost',
    });
    // SAFETY: deliberately not a valid fence.
    const unsendable = { leaseId: 'lease-x', ownerId: Symbol('w'), fencingToken: 1 } as unknown as DurableExecutionFence;
    await expect(store.releaseExecutionLease(sessionId, unsendable)).rejects.toMatchObject({
      code: 'DURABLE_EXECUTION_LEASE_TIMEOUT',
      leaseId: 'lease-x',
    });
    expect(await store.inspectExecutionLease(sessionId)).toBeNull();
  });
});

describe('DurableObjectEventStore signals', () => {
  it('does not start a call once the signal is aborted', async () => {
    const sessionId = freshSessionId('aborted');
    const controller = new AbortController();
    controller.abort();
    await expect(store.append(sessionId, markers(1, 'never'), { signal: controller.signal })).rejects.toMatchObject({
      name: 'AbortError',
    });
    expect(await store.getHeadSequence(sessionId)).toBeNull();
  });

  it('rejects a running call when the signal aborts', async () => {
    const sessionId = freshSessionId('abort-running');
    await store.append(sessionId, markers(1, 'x'));
    const controller = new AbortController();
    const waiting = store.waitForEvents(sessionId, EventSequence(1), 10_000, { signal: controller.signal });
    controller.abort();
    await expect(waiting).rejects.toMatchObject({ name: 'AbortError' });
  });
});

describe('SessionObject test hook', () => {
  it('fails a commit inside the transaction and writes nothing', async () => {
    const sessionId = freshSessionId('hook');
    SessionObject.testHooks = {
      beforeCommit: () => {
        throw new Error('injected');
      },
    };
    try {
      await expect(store.append(sessionId, markers(2, 'lost'))).rejects.toMatchObject({ code: 'DURABLE_EVENT_WRITE_FAILED' });
    } finally {
      SessionObject.testHooks = undefined;
    }
    expect(await store.getHeadSequence(sessionId)).toBeNull();
    const rows = await runInDurableObject(stubFor(sessionId), (_instance, state) =>
      state.storage.sql.exec('SELECT count(*) AS n FROM events').toArray(),
    );
    expect(rows).toEqual([{ n: 0 }]);
  });
});
