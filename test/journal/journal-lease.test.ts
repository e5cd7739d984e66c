/**
 * DurableSessionJournal with execution leases: the open-time requirement check, the fence carried
 * by every append, and refusal once the lease is lost.
 */
import { describe, expect, it } from 'vitest';
import { MemoryDurableEventStore } from '../../src/adapters/memory/memory-store.js';
import { lifecycleDrafts as d } from '../../src/conformance/checks-journal.js';
import { DurableSessionJournal, type DurableJournalExecutionLease } from '../../src/core/journal/index.js';
import { DurableExecutionLeaseError } from '../../src/protocol/errors.js';
import { CommandId, SessionId, WorkerId } from '../../src/protocol/ids.js';

const sessionId = SessionId('lease-session');

async function leaseOf(store: MemoryDurableEventStore, owner: string): Promise<DurableJournalExecutionLease & { controller: AbortController }> {
  const record = await store.acquireExecutionLease(sessionId, { ownerId: WorkerId(owner), leaseId: `lease-${owner}`, ttlMs: 60_000 });
  const controller = new AbortController();
  return {
    fence: { leaseId: record.leaseId, ownerId: record.ownerId, fencingToken: record.fencingToken },
    signal: controller.signal,
    controller,
  };
}

describe('DurableSessionJournal with execution leases', () => {
  it('refuses to open without a lease once the session has lease state', async () => {
    const store = new MemoryDurableEventStore();
    await expect(DurableSessionJournal.open(store, sessionId, { executionLeaseStore: store })).resolves.toBeDefined();
    await leaseOf(store, 'a');
    await expect(DurableSessionJournal.open(store, sessionId, { executionLeaseStore: store })).rejects.toMatchObject({
      code: 'DURABLE_EXECUTION_LEASE_REQUIRED',
    });
  });

  it('carries the fence on every append', async () => {
    const store = new MemoryDurableEventStore();
    const lease = await leaseOf(store, 'a');
    const journal = await DurableSessionJournal.open(store, sessionId, { executionLease: lease, executionLeaseStore: store });
    await expect(journal.commit({ commandId: CommandId('create'), events: [d.sessionCreated()] })).resolves.toMatchObject({
      status: 'committed',
    });
    // Without the fence the store refuses (sticky fencing), so the journal's commit really carried it.
    const unfenced = await DurableSessionJournal.open(store, sessionId);
    await expect(unfenced.commit({ commandId: CommandId('accept'), events: [d.requestAccepted('r1')] })).rejects.toMatchObject({
      code: 'DURABLE_EXECUTION_LEASE_REQUIRED',
    });
    expect(unfenced.getUncertainCommandId()).toBeNull();
  });

  it('refuses to commit once lease.signal aborted, writing nothing', async () => {
    const store = new MemoryDurableEventStore();
    const lease = await leaseOf(store, 'a');
    const journal = await DurableSessionJournal.open(store, sessionId, { executionLease: lease });
    await journal.commit({ commandId: CommandId('create'), events: [d.sessionCreated()] });
    lease.controller.abort(new Error('heartbeat failed'));
    const error = await journal.commit({ commandId: CommandId('accept'), events: [d.requestAccepted('r1')] }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DurableExecutionLeaseError);
    expect(error).toMatchObject({ code: 'DURABLE_EXECUTION_LEASE_LOST' });
    expect(await store.getHeadSequence(sessionId)).toBe(1);
    expect(journal.getUncertainCommandId()).toBeNull();
  });

  it('rethrows the store refusing a stale fence, without uncertainty', async () => {
    let nowMs = Date.UTC(2030, 0, 1);
    const store = new MemoryDurableEventStore({ clock: () => nowMs });
    const stale = await leaseOf(store, 'a');
    const journal = await DurableSessionJournal.open(store, sessionId, { executionLease: stale });
    await journal.commit({ commandId: CommandId('create'), events: [d.sessionCreated()] });
    nowMs += 120_000;
    await leaseOf(store, 'b');
    await expect(journal.commit({ commandId: CommandId('accept'), events: [d.requestAccepted('r1')] })).rejects.toMatchObject({
      code: 'DURABLE_EXECUTION_LEASE_LOST',
    });
    expect(journal.getUncertainCommandId()).toBeNull();
    expect(await store.getHeadSequence(sessionId)).toBe(1);
  });
});
