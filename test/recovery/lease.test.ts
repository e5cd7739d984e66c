/**
 * Recovery under execution leases: a coordinator fences before it resolves or dispatches work.
 * Opening needs a current lease once lease state exists; every recovery command carries the fence,
 * so a coordinator whose lease was taken over writes nothing; a retry that would hand back work
 * already committed confirms ownership first; a lost lease stops every decision at once.
 */
import { describe, expect, it } from 'vitest';
import { MemoryDurableEventStore } from '../../src/adapters/memory/memory-store.js';
import { DurableExecutionLease } from '../../src/core/lease/execution-lease.js';
import { DurableSessionRecoveryCoordinator } from '../../src/core/recovery/index.js';
import type { DurableExecutionFence } from '../../src/core/store.js';
import { DurableExecutionLeaseError } from '../../src/protocol/errors.js';
import { CommandId, InputId, RequestId, SessionId, ToolAttemptId, TurnId, WorkerId } from '../../src/protocol/ids.js';
import {
  activeTurnState,
  eventsOf,
  finishAcceptedRequest,
  permittedToolState,
  readAll,
  rejectionOf,
  seedSession,
  unknownToolState,
  type RecoveryJournalBuilder,
} from './helpers.js';

const TTL_MS = 1_000;

/** A memory store with a hand-driven clock, holding `state`, and a raw lease helper. */
async function leasedSession(state: RecoveryJournalBuilder) {
  let now = 1_000_000;
  const store = new MemoryDurableEventStore({ clock: () => now });
  const sessionId = SessionId('leased-session');
  const head = (await seedSession(store, sessionId, state.events)) ?? 0;
  const acquire = async (owner: string) => {
    const record = await store.acquireExecutionLease(sessionId, { ownerId: WorkerId(owner), leaseId: `lease-${owner}`, ttlMs: TTL_MS });
    const controller = new AbortController();
    const fence: DurableExecutionFence = { leaseId: record.leaseId, ownerId: record.ownerId, fencingToken: record.fencingToken };
    return { fence, signal: controller.signal, controller };
  };
  return { store, sessionId, head, acquire, advance: (ms: number) => (now += ms) };
}

const reconcileInput = (commandId: string) => ({
  commandId: CommandId(commandId),
  toolAttemptId: ToolAttemptId('tool-1'),
  outcome: { status: 'completed' as const, result: { deploymentId: 'dep-42' } },
});

describe('recovery with execution leases', () => {
  it('refuses to open without a lease once the session has lease state', async () => {
    const { store, sessionId, acquire } = await leasedSession(unknownToolState());
    await acquire('a');
    const error = await rejectionOf(DurableSessionRecoveryCoordinator.open(store, sessionId, { executionLeaseStore: store }));
    expect(error).toBeInstanceOf(DurableExecutionLeaseError);
    expect(error).toMatchObject({ code: 'DURABLE_EXECUTION_LEASE_REQUIRED' });
  });

  it('refuses to open with a lease that is no longer current', async () => {
    const { store, sessionId, acquire, advance } = await leasedSession(unknownToolState());
    const old = await acquire('a');
    advance(TTL_MS + 1);
    await acquire('b');
    await expect(
      DurableSessionRecoveryCoordinator.open(store, sessionId, { executionLease: old, executionLeaseStore: store }),
    ).rejects.toMatchObject({ code: 'DURABLE_EXECUTION_LEASE_LOST' });
  });

  it('fences every recovery command: after a takeover the old owner writes nothing, the new one commits', async () => {
    const { store, sessionId, head, acquire, advance } = await leasedSession(unknownToolState());
    const a = await acquire('a');
    const stale = await DurableSessionRecoveryCoordinator.open(store, sessionId, { executionLease: a, executionLeaseStore: store });
    advance(TTL_MS + 1);
    const b = await acquire('b');
    expect(b.fence.fencingToken).toBe(a.fence.fencingToken + 1);
    const error = await rejectionOf(stale.reconcileToolOutcome(reconcileInput('rc-stale')));
    expect(error).toMatchObject({ code: 'DURABLE_EXECUTION_LEASE_LOST' });
    expect(await store.getHeadSequence(sessionId)).toBe(head);
    const current = await DurableSessionRecoveryCoordinator.open(store, sessionId, { executionLease: b, executionLeaseStore: store });
    await expect(current.reconcileToolOutcome(reconcileInput('rc-current'))).resolves.toMatchObject({ status: 'committed' });
  });

  it('confirms ownership before handing back work a retry finds already committed', async () => {
    const { store, sessionId, acquire, advance } = await leasedSession(permittedToolState());
    const a = await acquire('a');
    const coordinator = await DurableSessionRecoveryCoordinator.open(store, sessionId, { executionLease: a, executionLeaseStore: store });
    const input = { commandId: CommandId('rc-start'), toolAttemptId: ToolAttemptId('tool-1') };
    await expect(coordinator.startToolAttempt(input)).resolves.toMatchObject({ status: 'committed' });
    await expect(coordinator.startToolAttempt(input)).resolves.toMatchObject({ status: 'reconciled' });
    advance(TTL_MS + 1);
    await acquire('b');
    // The retry appends nothing, so no store fence check would stop it: the coordinator asks the store.
    await expect(coordinator.startToolAttempt(input)).rejects.toMatchObject({ code: 'DURABLE_EXECUTION_LEASE_LOST' });
    expect(await eventsOf(store, sessionId, 'rc-start')).toHaveLength(1);
  });

  it('stops every decision once the lease signal aborted', async () => {
    const { store, sessionId, head, acquire } = await leasedSession(unknownToolState());
    const a = await acquire('a');
    const coordinator = await DurableSessionRecoveryCoordinator.open(store, sessionId, { executionLease: a, executionLeaseStore: store });
    a.controller.abort(new Error('heartbeat failed'));
    expect(() => coordinator.planResume()).toThrow(DurableExecutionLeaseError);
    await expect(coordinator.reconcileToolOutcome(reconcileInput('rc-1'))).rejects.toMatchObject({ code: 'DURABLE_EXECUTION_LEASE_LOST' });
    expect(await store.getHeadSequence(sessionId)).toBe(head);
  });

  it('recovers a session under a DurableExecutionLease handle, every event fenced', async () => {
    const store = new MemoryDurableEventStore();
    const sessionId = SessionId('handle-session');
    await seedSession(store, sessionId, activeTurnState().events);
    const lease = await DurableExecutionLease.acquire(store, sessionId, { ownerId: WorkerId('worker-a'), ttlMs: 60_000 });
    try {
      const coordinator = await DurableSessionRecoveryCoordinator.open(store, sessionId, { executionLease: lease, executionLeaseStore: store });
      const rolled = await coordinator.prepareTurnRecovery({
        commandId: CommandId('rc-turn'),
        requestId: RequestId('req-a'),
        turnId: TurnId('turn-a1'),
        recoveryRequestId: RequestId('req-recovery'),
        recoveryInputId: InputId('input-recovery'),
      });
      expect(rolled.status).toBe('committed');
      // Fencing is sticky: an unfenced writer is refused, so the coordinator's command carried the fence.
      await expect(finishAcceptedRequest(store, sessionId)).rejects.toMatchObject({ code: 'DURABLE_EXECUTION_LEASE_REQUIRED' });
      expect((await readAll(store, sessionId)).at(-1)?.type).toBe('request_accepted');
    } finally {
      await lease.release();
    }
  });
});
