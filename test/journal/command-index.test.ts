/**
 * The journal's command index and content matching, as units.
 */
import { describe, expect, it } from 'vitest';
import { lifecycleDrafts as d } from '../../src/conformance/checks-journal.js';
import { CommandIndex } from '../../src/core/command-index.js';
import { commandContentKeys, eventContentKey, findCommandMismatch } from '../../src/core/journal/command-matching.js';
import { DURABLE_EVENT_SCHEMA_VERSION, type DurableEventDraft, type DurableEventEnvelope } from '../../src/protocol/events.js';
import { CommandId, EventId, EventSequence, SessionId } from '../../src/protocol/ids.js';
import { withCommand } from './store-wrappers.js';

function envelope(sequence: number, draft: DurableEventDraft, occurredAt = '2030-01-01T00:00:00.000Z'): DurableEventEnvelope {
  // SAFETY: test envelopes built like the store builds them.
  return {
    schemaVersion: DURABLE_EVENT_SCHEMA_VERSION,
    eventId: EventId(`e-${sequence}`),
    sequence: EventSequence(sequence),
    sessionId: SessionId('s'),
    recordedAt: '2030-01-01T00:00:00.000Z',
    occurredAt,
    ...draft,
  } as DurableEventEnvelope;
}

describe('CommandIndex', () => {
  it('records contiguous ranges and flags an ID that reappears after another event', () => {
    const index = new CommandIndex();
    index.observe([
      envelope(1, withCommand(d.sessionCreated(), 'a')),
      envelope(2, withCommand(d.requestAccepted('r'), 'b')),
      envelope(3, withCommand(d.requestStarted('r'), 'b')),
    ]);
    index.observe([envelope(4, d.inputApplied('r', 'i') as DurableEventDraft), envelope(5, withCommand(d.inputApplied('r', 'j'), 'a'))]);
    expect(index.get(CommandId('b'))).toEqual({ commandId: 'b', firstSequence: 2, lastSequence: 3, eventCount: 2, contiguous: true });
    expect(index.get(CommandId('a'))).toMatchObject({ firstSequence: 1, lastSequence: 5, eventCount: 2, contiguous: false });
    expect(index.get(CommandId('missing'))).toBeUndefined();
    expect(index.size).toBe(2);
  });

  it('toCheckpoint keeps the latest commands by first appearance, also after a reappearance and a restore', () => {
    const index = new CommandIndex();
    const ids = ['a', 'b', 'c', 'b', 'd', 'a', 'e'];
    index.observe(ids.map((id, i) => envelope(i + 1, withCommand(d.sessionCreated(), id))));
    const saved = index.toCheckpoint(3);
    expect(saved.ranges.map((r) => r.commandId)).toEqual(['c', 'd', 'e']);
    expect(index.toCheckpoint(10).ranges.map((r) => r.commandId)).toEqual(['a', 'b', 'c', 'd', 'e']);
    expect(index.toCheckpoint(10).ranges.find((r) => r.commandId === 'b')).toMatchObject({ firstSequence: 2, lastSequence: 4, eventCount: 2 });
    const restored = CommandIndex.fromCheckpoint(saved);
    restored.observe([envelope(8, withCommand(d.sessionCreated(), 'c')), envelope(9, withCommand(d.sessionCreated(), 'f'))]);
    expect(restored.toCheckpoint(3).ranges.map((r) => r.commandId)).toEqual(['d', 'e', 'f']);
    expect(restored.toCheckpoint(3).ranges.length).toBe(3);
    expect(restored.toCheckpoint(10).ranges.find((r) => r.commandId === 'c')).toMatchObject({ lastSequence: 8, contiguous: false });
  });

  it('continues a range across pages', () => {
    const index = new CommandIndex();
    index.observe([envelope(1, withCommand(d.requestAccepted('r'), 'c'))]);
    index.observe([envelope(2, withCommand(d.requestStarted('r'), 'c'))]);
    expect(index.get(CommandId('c'))).toMatchObject({ firstSequence: 1, lastSequence: 2, contiguous: true });
  });
});

describe('command content', () => {
  it('ignores store fields and the stamped commandId', () => {
    const draft = withCommand(d.requestAccepted('r'), 'c');
    const stored = envelope(7, withCommand(d.requestAccepted('r'), 'other-id'));
    expect(eventContentKey(stored, false)).toBe(eventContentKey(draft, false));
    expect(findCommandMismatch([draft], [stored])).toBe(-1);
  });

  it('compares occurredAt only when the draft states it', () => {
    const stored = envelope(1, d.requestStarted('r') as DurableEventDraft, '2030-05-05T00:00:00.000Z');
    const without = d.requestStarted('r') as DurableEventDraft;
    const same = { ...without, occurredAt: '2030-05-05T00:00:00.000Z' } as DurableEventDraft;
    const other = { ...without, occurredAt: '2030-06-06T00:00:00.000Z' } as DurableEventDraft;
    expect(findCommandMismatch([without], [stored])).toBe(-1);
    expect(findCommandMismatch([same], [stored])).toBe(-1);
    expect(findCommandMismatch([other], [stored])).toBe(0);
    expect(commandContentKeys([same])).not.toEqual(commandContentKeys([without]));
  });

  it('reports the first differing event, or the shorter length', () => {
    const a = d.requestAccepted('r') as DurableEventDraft;
    const b = d.requestStarted('r') as DurableEventDraft;
    expect(findCommandMismatch([a, b], [envelope(1, a), envelope(2, a)])).toBe(1);
    expect(findCommandMismatch([a], [envelope(1, a), envelope(2, b)])).toBe(1);
    expect(findCommandMismatch([a, b], [envelope(1, a)])).toBe(1);
  });
});
