/**
 * The rules every coordinator operation shares, run over each operation (see `operation-cases.ts`):
 * one command pinned to the observed head; a retry with the same commandId reconciles without a
 * duplicate (on the same instance and on a new one); a competitor's write between the decision and
 * the append makes the command fail; two coordinators racing commit it exactly once.
 */
import { describe, expect, it } from 'vitest';
import { MemoryDurableEventStore } from '../../src/adapters/memory/memory-store.js';
import { planDurableRecovery } from '../../src/core/projector/index.js';
import { DurableSessionRecoveryCoordinator } from '../../src/core/recovery/index.js';
import type { DurableEventStore } from '../../src/core/store.js';
import { DurableEventSequenceConflictError } from '../../src/protocol/errors.js';
import { CommandId, EventSequence, InputId, RequestId, SessionId, ToolAttemptId } from '../../src/protocol/ids.js';
import { eventsOf, interceptedStore, racingStore, readAll, rejectionOf, seedSession } from './helpers.js';
import { operationCases, type OperationCase } from './operation-cases.js';

let sessionCounter = 0;

async function setup(op: OperationCase, wrap: (inner: DurableEventStore, sessionId: SessionId) => DurableEventStore = (inner) => inner) {
  const inner = new MemoryDurableEventStore();
  const sessionId = SessionId(`ops-${op.name}-${sessionCounter++}`);
  const head = await seedSession(inner, sessionId, op.state().events);
  const store = wrap(inner, sessionId);
  const coordinator = await DurableSessionRecoveryCoordinator.open(store, sessionId);
  return { inner, store, sessionId, head: head ?? 0, coordinator, observed: coordinator.getProjection() };
}

describe.each(operationCases)('$name', (op) => {
  it('commits exactly one command right after the observed head', async () => {
    const { inner, sessionId, head, coordinator, observed } = await setup(op);
    const result = await op.run(coordinator, CommandId('rc-1'), observed);
    expect(result.status).toBe('committed');
    expect(result.commandId).toBe('rc-1');
    expect(result.events.map((event) => event.type)).toEqual(op.types);
    expect(result.events.map((event) => event.sequence)).toEqual(op.types.map((_, index) => head + index + 1));
    expect(result.events.every((event) => event.commandId === 'rc-1')).toBe(true);
    expect(result.headSequence).toBe(head + op.types.length);
    expect(result.projection.headSequence).toBe(result.headSequence);
    expect(result.recoveryPlan).toEqual(planDurableRecovery(result.projection));
    expect(coordinator.getHeadSequence()).toBe(result.headSequence);
    expect(await eventsOf(inner, sessionId, 'rc-1')).toEqual(result.events);
  });

  it('reconciles a retry with the same commandId, on the same and on a new coordinator, writing nothing', async () => {
    const { inner, sessionId, coordinator, observed } = await setup(op);
    const first = await op.run(coordinator, CommandId('rc-1'), observed);
    const again = await op.run(coordinator, CommandId('rc-1'), observed);
    expect(again.status).toBe('reconciled');
    expect(again.events).toEqual(first.events);
    expect(again.headSequence).toBe(first.headSequence);
    const other = await DurableSessionRecoveryCoordinator.open(inner, sessionId);
    const third = await op.run(other, CommandId('rc-1'), observed);
    expect(third.status).toBe('reconciled');
    expect(third.events).toEqual(first.events);
    expect(await inner.getHeadSequence(sessionId)).toBe(first.headSequence);
  });

  it('fails with a sequence conflict when another writer appends between the decision and the append', async () => {
    const { inner, sessionId, head, coordinator, observed } = await setup(op, (store, sessionId) =>
      interceptedStore(store, async () => {
        await store.append(sessionId, [
          { type: 'input_applied', requestId: RequestId('req-a'), data: { inputId: InputId('input-competitor'), priority: 'next' } },
        ]);
      }),
    );
    const error = await rejectionOf(op.run(coordinator, CommandId('rc-1'), observed));
    expect(error).toBeInstanceOf(DurableEventSequenceConflictError);
    expect(error).toMatchObject({ expected: head, actual: head + 1 });
    expect(await eventsOf(inner, sessionId, 'rc-1')).toEqual([]);
  });

  it('lets exactly one of two racing coordinators commit (different commandIds)', async () => {
    const { inner, store, sessionId, head, coordinator, observed } = await setup(op, (store) => racingStore(store));
    const rival = await DurableSessionRecoveryCoordinator.open(store, sessionId);
    const settled = await Promise.allSettled([
      op.run(coordinator, CommandId('rc-a'), observed),
      op.run(rival, CommandId('rc-b'), observed),
    ]);
    const winners = settled.filter((outcome) => outcome.status === 'fulfilled');
    const losers = settled.filter((outcome) => outcome.status === 'rejected');
    expect(winners).toHaveLength(1);
    expect(losers).toHaveLength(1);
    expect(losers[0]?.reason).toBeInstanceOf(DurableEventSequenceConflictError);
    const log = await readAll(inner, sessionId);
    expect(log).toHaveLength(head + op.types.length);
    expect(new Set(log.slice(head).map((event) => event.commandId)).size).toBe(1);
  });

  it('commits once when two racing coordinators submit the same commandId: one commits, one reconciles', async () => {
    const { inner, store, sessionId, head, coordinator, observed } = await setup(op, (store) => racingStore(store));
    const rival = await DurableSessionRecoveryCoordinator.open(store, sessionId);
    const [a, b] = await Promise.all([
      op.run(coordinator, CommandId('rc-same'), observed),
      op.run(rival, CommandId('rc-same'), observed),
    ]);
    expect([a.status, b.status].sort()).toEqual(['committed', 'reconciled']);
    expect(a.events).toEqual(b.events);
    expect(await readAll(inner, sessionId)).toHaveLength(head + op.types.length);
  });
});

describe('a caller-pinned head', () => {
  it('must equal the current head: a stale pin fails and writes nothing; the current one commits', async () => {
    const op = operationCases.find((candidate) => candidate.name === 'reconcileToolOutcome');
    if (op === undefined) throw new Error('missing case');
    const { inner, sessionId, head, coordinator } = await setup(op);
    const call = (expectedHeadSequence: number) =>
      coordinator.reconcileToolOutcome({
        commandId: CommandId(`pinned-${expectedHeadSequence}`),
        expectedHeadSequence: EventSequence(expectedHeadSequence),
        toolAttemptId: ToolAttemptId('tool-1'),
        outcome: { status: 'failed', error: { code: 'E_DEPLOY', message: 'rejected by the API' } },
      });
    const error = await rejectionOf(call(head - 1));
    expect(error).toBeInstanceOf(DurableEventSequenceConflictError);
    expect(await inner.getHeadSequence(sessionId)).toBe(head);
    await expect(call(head)).resolves.toMatchObject({ status: 'committed', headSequence: head + 1 });
  });
});
