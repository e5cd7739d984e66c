/**
 * The coordinator as a whole: open and its options, planResume's decision table, refresh, store
 * deadlines, and what happens when the store cannot say whether a recovery command was written
 * (the journal's uncertain outcome: reconciled by reading, never retried blindly).
 */
import { describe, expect, it } from 'vitest';
import { MemoryDurableEventStore } from '../../src/adapters/memory/memory-store.js';
import { DurableSessionJournal } from '../../src/core/journal/index.js';
import { DurableSessionRecoveryCoordinator } from '../../src/core/recovery/index.js';
import type { DurableEventStore } from '../../src/core/store.js';
import { DurableCommandOutcomeUnknownError } from '../../src/protocol/errors.js';
import { CommandId, RequestId, SessionId, ToolAttemptId, TurnId } from '../../src/protocol/ids.js';
import {
  acceptedState,
  eventsOf,
  openOn,
  preTurnState,
  RecoveryJournalBuilder,
  rejectionOf,
  SNAPSHOT,
  seedSession,
  unknownToolState,
} from './helpers.js';

const reconcileInput = (commandId: string) => ({
  commandId: CommandId(commandId),
  toolAttemptId: ToolAttemptId('tool-1'),
  outcome: { status: 'completed' as const, result: { deploymentId: 'dep-42' } },
});

describe('planResume', () => {
  it('resumes an accepted Request with a complete execution snapshot in place', async () => {
    const { coordinator } = await openOn(acceptedState());
    expect(coordinator.planResume()).toEqual({
      action: 'resume_accepted_request',
      request: { requestId: 'req-a', inputId: 'input-a', input: 'deploy the service', priority: 'next', ...SNAPSHOT },
    });
  });

  it('requires recovery for an accepted Request without maxTurns, model or context', async () => {
    for (const missing of ['maxTurns', 'model', 'context']) {
      const state = acceptedState();
      const index = state.events.findIndex((event) => event.type === 'request_accepted');
      const event = state.events[index];
      if (event === undefined) throw new Error('no request_accepted');
      const data: Record<string, unknown> = { ...(event.data as object) };
      delete data[missing];
      state.events[index] = { ...event, data } as typeof event;
      const { coordinator } = await openOn(state);
      expect(coordinator.planResume()).toMatchObject({ action: 'recovery_required', plan: { action: 'resume_request' } });
    }
  });

  it('requires recovery once the Request crossed input_applied or request_started', async () => {
    const applied = await openOn(acceptedState().applyInput({ inputId: 'input-a' }));
    expect(applied.coordinator.planResume()).toMatchObject({ action: 'recovery_required', plan: { action: 'reconcile_request_inputs' } });
    const started = await openOn(new RecoveryJournalBuilder().createSession().acceptFullRequest({ requestId: 'req-a' }).startRequest());
    expect(started.coordinator.planResume()).toMatchObject({ action: 'recovery_required', plan: { action: 'reconcile_request_inputs' } });
    const preTurn = await openOn(preTurnState());
    expect(preTurn.coordinator.planResume()).toMatchObject({ action: 'recovery_required', plan: { action: 'rollover_request' } });
  });

  it('has nothing to resume in an empty, idle or closed session', async () => {
    const empty = await DurableSessionRecoveryCoordinator.open(new MemoryDurableEventStore(), SessionId('empty'));
    expect(empty.planResume()).toEqual({ action: 'none' });
    const idle = await openOn(new RecoveryJournalBuilder().createSession());
    expect(idle.coordinator.planResume()).toEqual({ action: 'none' });
    const closed = await openOn(new RecoveryJournalBuilder().createSession().closeSession());
    expect(closed.coordinator.planResume()).toEqual({ action: 'none' });
  });
});

describe('open and refresh', () => {
  it('validates its own options before any store call', async () => {
    const store = new MemoryDurableEventStore();
    for (const maxContinuationResponseBytes of [-1, 1.5, 10_000_000]) {
      await expect(
        DurableSessionRecoveryCoordinator.open(store, SessionId('s'), { maxContinuationResponseBytes }),
      ).rejects.toMatchObject({ code: 'DURABLE_EVENT_INVALID_INPUT' });
    }
    await expect(DurableSessionRecoveryCoordinator.open(store, SessionId('s'), { storeTimeoutMs: 0 })).rejects.toMatchObject({
      code: 'DURABLE_SESSION_JOURNAL_INVALID',
    });
  });

  it('refresh() shows what other writers appended', async () => {
    const { store, sessionId, coordinator } = await openOn(unknownToolState());
    const writer = await DurableSessionJournal.open(store, sessionId);
    await writer.commit({
      commandId: CommandId('external'),
      events: [
        {
          type: 'tool_failed',
          requestId: RequestId('req-a'),
          turnId: TurnId('turn-a1'),
          toolAttemptId: ToolAttemptId('tool-1'),
          data: { toolCallId: 'call-1', toolName: 'deploy', error: { code: 'E', message: 'failed' } },
        },
      ],
    });
    expect(coordinator.getRecoveryPlan().action).toBe('reconcile_tool_outcomes');
    const state = await coordinator.refresh();
    expect(state.recoveryPlan.action).toBe('resume_turn');
    expect(state.headSequence).toBe(coordinator.getHeadSequence());
  });

  it('bounds every store call by storeTimeoutMs', async () => {
    const inner = new MemoryDurableEventStore();
    const sessionId = SessionId('slow');
    await seedSession(inner, sessionId, unknownToolState().events);
    let hang = false;
    const slow: DurableEventStore = {
      append: (s, d, o) => inner.append(s, d, o),
      getHeadSequence: (s, o) => inner.getHeadSequence(s, o),
      read: (s, o) => (hang ? new Promise(() => undefined) : inner.read(s, o)),
    };
    const coordinator = await DurableSessionRecoveryCoordinator.open(slow, sessionId, { storeTimeoutMs: 50 });
    hang = true;
    await expect(coordinator.reconcileToolOutcome(reconcileInput('rc-1'))).rejects.toMatchObject({ code: 'DURABLE_EVENT_IO_TIMEOUT' });
  });
});

describe('a recovery command whose write outcome is unknown', () => {
  /** A store whose next append fails after (or instead of) writing. */
  function failingStore(inner: MemoryDurableEventStore, mode: 'after-write' | 'before-write'): { store: DurableEventStore; arm: () => void } {
    let armed = false;
    return {
      arm: () => (armed = true),
      store: {
        read: (s, o) => inner.read(s, o),
        getHeadSequence: (s, o) => inner.getHeadSequence(s, o),
        append: async (s, d, o) => {
          if (!armed) return inner.append(s, d, o);
          armed = false;
          if (mode === 'after-write') await inner.append(s, d, o);
          throw new Error('connection reset');
        },
      },
    };
  }

  it('reconciles by reading when the write landed', async () => {
    const inner = new MemoryDurableEventStore();
    const sessionId = SessionId('lost-ack');
    await seedSession(inner, sessionId, unknownToolState().events);
    const { store, arm } = failingStore(inner, 'after-write');
    const coordinator = await DurableSessionRecoveryCoordinator.open(store, sessionId);
    arm();
    await expect(coordinator.reconcileToolOutcome(reconcileInput('rc-1'))).resolves.toMatchObject({ status: 'reconciled' });
    expect(await eventsOf(inner, sessionId, 'rc-1')).toHaveLength(1);
  });

  it('stays unknown, never retried automatically, until it is resolved by reading', async () => {
    const inner = new MemoryDurableEventStore();
    const sessionId = SessionId('lost-write');
    const head = await seedSession(inner, sessionId, unknownToolState().events);
    const { store, arm } = failingStore(inner, 'before-write');
    const coordinator = await DurableSessionRecoveryCoordinator.open(store, sessionId);
    arm();
    expect(await rejectionOf(coordinator.reconcileToolOutcome(reconcileInput('rc-1')))).toBeInstanceOf(DurableCommandOutcomeUnknownError);
    // The same command only reconciles by reading: still absent, still unknown, still nothing written.
    expect(await rejectionOf(coordinator.reconcileToolOutcome(reconcileInput('rc-1')))).toBeInstanceOf(DurableCommandOutcomeUnknownError);
    // Any other command is refused while the first one is uncertain.
    expect(await rejectionOf(coordinator.reconcileToolOutcome(reconcileInput('rc-2')))).toBeInstanceOf(DurableCommandOutcomeUnknownError);
    expect(await inner.getHeadSequence(sessionId)).toBe(head);
    // Once the caller knows nothing landed, a new coordinator starts from the log as it is.
    const fresh = await DurableSessionRecoveryCoordinator.open(inner, sessionId);
    await expect(fresh.reconcileToolOutcome(reconcileInput('rc-1'))).resolves.toMatchObject({ status: 'committed' });
  });
});
