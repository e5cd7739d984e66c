/**
 * DurableSessionJournal preview: invariant violations and unanchored or stale-boundary Request
 * terminal events are rejected before anything is written.
 */
import { describe, expect, it } from 'vitest';
import { MemoryDurableEventStore } from '../../src/adapters/memory/memory-store.js';
import { lifecycleDrafts as d } from '../../src/conformance/checks-journal.js';
import { DurableSessionJournal } from '../../src/core/journal/index.js';
import { DurableEventProjectionError } from '../../src/protocol/errors.js';
import { CommandId, SessionId } from '../../src/protocol/ids.js';

const sessionId = SessionId('journal-session');

async function openCreated(store = new MemoryDurableEventStore()) {
  const journal = await DurableSessionJournal.open(store, sessionId);
  await journal.commit({ commandId: CommandId('create'), events: [d.sessionCreated()] });
  return { store, journal };
}

describe('DurableSessionJournal: preview', () => {
  it('rejects an invariant violation and writes nothing', async () => {
    const { store, journal } = await openCreated();
    await expect(
      journal.commit({ commandId: CommandId('turn'), events: [d.turnStarted('r1', 't1', 1)] }),
    ).rejects.toBeInstanceOf(DurableEventProjectionError);
    await expect(
      journal.commit({ commandId: CommandId('two'), events: [d.requestAccepted('r1'), d.requestAccepted('r2')] }),
    ).rejects.toBeInstanceOf(DurableEventProjectionError);
    expect(await store.getHeadSequence(sessionId)).toBe(1);
    expect(journal.getProjection().activeRequest).toBeNull();
    expect(journal.getUncertainCommandId()).toBeNull();
  });

  it('rejects unanchored and stale-boundary Request terminal events', async () => {
    const { store, journal } = await openCreated();
    const accepted = await journal.commit({ commandId: CommandId('accept'), events: [d.requestAccepted('r1')] });
    const started = await journal.commit({ commandId: CommandId('start'), events: [d.requestStarted('r1')] });
    const acceptedId = accepted.events[0]!.eventId;
    const startedId = started.events[0]!.eventId;
    const unanchored = await journal
      .commit({ commandId: CommandId('done-1'), events: [d.requestCompleted('r1')] })
      .catch((e: unknown) => e);
    expect(unanchored).toBeInstanceOf(DurableEventProjectionError);
    expect(unanchored).toMatchObject({ details: { rule: 'request_causation', expectedCausationEventId: startedId } });
    await expect(
      journal.commit({ commandId: CommandId('done-2'), events: [d.requestCompleted('r1', acceptedId)] }),
    ).rejects.toMatchObject({ details: { rule: 'request_causation', causationEventId: acceptedId } });
    expect(await store.getHeadSequence(sessionId)).toBe(3);
    await expect(
      journal.commit({ commandId: CommandId('done-3'), events: [d.requestCompleted('r1', startedId)] }),
    ).resolves.toMatchObject({ status: 'committed' });
  });

  it('binds a standalone terminal to the latest boundary: a new input_applied makes the old anchor stale', async () => {
    const { journal } = await openCreated();
    const started = await journal.commit({ commandId: CommandId('accept'), events: [d.requestAccepted('r1'), d.requestStarted('r1')] });
    const startedId = started.events[1]!.eventId;
    const applied = await journal.commit({ commandId: CommandId('apply'), events: [d.inputApplied('r1', 'i2')] });
    await expect(
      journal.commit({ commandId: CommandId('fail'), events: [d.requestInterrupted('r1', startedId)] }),
    ).rejects.toBeInstanceOf(DurableEventProjectionError);
    await expect(
      journal.commit({ commandId: CommandId('fail'), events: [d.requestInterrupted('r1', applied.events[0]!.eventId)] }),
    ).resolves.toMatchObject({ status: 'committed' });
  });

  it('accepts an adjacent Turn/Request termination in one command without a causation', async () => {
    const { journal } = await openCreated();
    await journal.commit({
      commandId: CommandId('begin'),
      events: [d.requestAccepted('r1'), d.requestStarted('r1'), d.turnStarted('r1', 't1', 1)],
    });
    const done = await journal.commit({
      commandId: CommandId('finish'),
      events: [d.turnCompleted('r1', 't1', 1), d.requestCompleted('r1')],
    });
    expect(done.status).toBe('committed');
    expect(done.projection.activeRequest).toBeNull();
    expect(done.projection.lastRequest).toMatchObject({ requestId: 'r1', status: 'completed' });
  });

  it('does not extend the exception to a terminal that is not directly after the Turn terminal', async () => {
    const { store, journal } = await openCreated();
    await journal.commit({
      commandId: CommandId('begin'),
      events: [d.requestAccepted('r1'), d.requestStarted('r1'), d.turnStarted('r1', 't1', 1)],
    });
    await expect(
      journal.commit({
        commandId: CommandId('finish'),
        events: [d.turnAborted('r1', 't1', 1), d.inputApplied('r1', 'i9'), d.requestInterrupted('r1')],
      }),
    ).rejects.toMatchObject({ details: { rule: 'request_causation' } });
    expect(await store.getHeadSequence(sessionId)).toBe(4);
  });

  it('still checks a causation given next to the Turn terminal: it must name that (new) boundary', async () => {
    const { store, journal } = await openCreated();
    const begin = await journal.commit({
      commandId: CommandId('begin'),
      events: [d.requestAccepted('r1'), d.requestStarted('r1'), d.turnStarted('r1', 't1', 1)],
    });
    const startedId = begin.events[1]!.eventId;
    await expect(
      journal.commit({
        commandId: CommandId('finish'),
        events: [d.turnCompleted('r1', 't1', 1), d.requestCompleted('r1', startedId)],
      }),
    ).rejects.toMatchObject({ details: { rule: 'request_causation' } });
    expect(await store.getHeadSequence(sessionId)).toBe(4);
  });
});
