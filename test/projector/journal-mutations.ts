/**
 * Single mutations of a valid journal that must always break an invariant.
 *
 * Each mutation is chosen so that rejection is certain, not merely likely:
 * - `drop`: remove an event that creates an entity (session, Request, Turn, model attempt, tool
 *   attempt, permission request) which a later event references; sequences are renumbered, so the
 *   failure is the dangling reference, not a gap;
 * - `reorder`: move the first event that references an entity in front of the event creating it;
 * - `duplicate_id`: give a creating event (or `input_applied`) the ID of an earlier one of its kind,
 *   or give any event an earlier event's ID;
 * - `change_correlation`: point a referencing event at an ID that never existed, or at another
 *   session.
 */
import type { DurableEventEnvelope } from '../../src/protocol/events.js';
import { edit, editData } from './helpers.js';

export type MutationKind = 'drop' | 'reorder' | 'duplicate_id' | 'change_correlation';

/** The entity an event creates, as `kind:id`, if any. */
function createdKey(event: DurableEventEnvelope): string | undefined {
  switch (event.type) {
    case 'session_created':
      return 'session';
    case 'request_accepted':
      return `r:${event.requestId}`;
    case 'turn_started':
      return `t:${event.turnId}`;
    case 'model_request_started':
      return `m:${event.modelAttemptId}`;
    case 'tool_scheduled':
      return `a:${event.toolAttemptId}`;
    case 'permission_requested':
      return `p:${event.data.permissionRequestId}`;
    case 'input_applied':
      return `i:${event.data.inputId}`;
    default:
      return undefined;
  }
}

/** The entities an event refers to (not the one it creates). */
function referencedKeys(event: DurableEventEnvelope): string[] {
  const keys: string[] = [];
  if (event.type !== 'session_created') keys.push('session');
  if ('requestId' in event && event.type !== 'request_accepted') keys.push(`r:${event.requestId}`);
  if ('turnId' in event && event.turnId !== undefined && event.type !== 'turn_started') keys.push(`t:${event.turnId}`);
  if ('modelAttemptId' in event && event.type !== 'model_request_started') keys.push(`m:${event.modelAttemptId}`);
  if ('toolAttemptId' in event && event.type !== 'tool_scheduled') keys.push(`a:${event.toolAttemptId}`);
  if (event.type === 'permission_resolved') keys.push(`p:${event.data.permissionRequestId}`);
  return keys;
}

function renumber(events: DurableEventEnvelope[]): DurableEventEnvelope[] {
  return events.map((event, index) => (event.sequence === index + 1 ? event : edit(event, { sequence: index + 1 })));
}

/** Pairs (creator index, first referencing index). */
function creatorReferencePairs(events: readonly DurableEventEnvelope[]): Array<[number, number]> {
  const pairs: Array<[number, number]> = [];
  events.forEach((event, index) => {
    const key = createdKey(event);
    if (key === undefined || key.startsWith('i:')) return;
    const reference = events.findIndex((later, at) => at > index && referencedKeys(later).includes(key));
    if (reference !== -1) pairs.push([index, reference]);
  });
  return pairs;
}

function pickFrom<T>(items: readonly T[], seed: number): T | undefined {
  return items.length === 0 ? undefined : items[seed % items.length];
}

function withIdOf(event: DurableEventEnvelope, donor: DurableEventEnvelope): DurableEventEnvelope {
  switch (event.type) {
    case 'request_accepted':
      return edit(event, { requestId: (donor as typeof event).requestId });
    case 'turn_started':
      return edit(event, { turnId: (donor as typeof event).turnId });
    case 'model_request_started':
      return edit(event, { modelAttemptId: (donor as typeof event).modelAttemptId });
    case 'tool_scheduled':
      return edit(event, { toolAttemptId: (donor as typeof event).toolAttemptId });
    case 'permission_requested':
      return editData(event, { permissionRequestId: (donor as typeof event).data.permissionRequestId });
    case 'input_applied':
      return editData(event, { inputId: (donor as typeof event).data.inputId });
    default:
      return edit(event, { eventId: donor.eventId });
  }
}

/**
 * Applies one mutation of `kind` chosen by `seed` to a journal of at least two events. Always
 * returns a journal that breaks an invariant.
 */
export function mutate(events: readonly DurableEventEnvelope[], kind: MutationKind, seed: number): DurableEventEnvelope[] {
  const copy = events.slice();
  switch (kind) {
    case 'drop': {
      // The session_created -> next event pair always exists.
      const [creator] = pickFrom(creatorReferencePairs(events), seed) ?? [0, 1];
      copy.splice(creator, 1);
      return renumber(copy);
    }
    case 'reorder': {
      const [creator, reference] = pickFrom(creatorReferencePairs(events), seed) ?? [0, 1];
      const [moved] = copy.splice(reference, 1);
      copy.splice(creator, 0, moved as DurableEventEnvelope);
      return renumber(copy);
    }
    case 'duplicate_id': {
      const candidates: Array<[number, number]> = [];
      events.forEach((event, index) => {
        const kindOf = createdKey(event)?.split(':')[0];
        if (kindOf === undefined || kindOf === 'session') return;
        const donor = events.findIndex((earlier, at) => at < index && createdKey(earlier)?.split(':')[0] === kindOf);
        if (donor !== -1) candidates.push([index, donor]);
      });
      const chosen = pickFrom(candidates, seed);
      if (chosen !== undefined && seed % 4 !== 0) {
        const [index, donor] = chosen;
        copy[index] = withIdOf(events[index] as DurableEventEnvelope, events[donor] as DurableEventEnvelope);
        return copy;
      }
      const index = 1 + (seed % (events.length - 1));
      copy[index] = edit(events[index] as DurableEventEnvelope, { eventId: events[seed % index]!.eventId });
      return copy;
    }
    case 'change_correlation': {
      const candidates: Array<[number, string]> = [];
      events.forEach((event, index) => {
        for (const key of referencedKeys(event)) if (key !== 'session') candidates.push([index, key]);
      });
      const chosen = pickFrom(candidates, seed);
      if (chosen === undefined || seed % 5 === 0) {
        const index = seed % events.length;
        copy[index] = edit(events[index] as DurableEventEnvelope, { sessionId: 'mutant-session' });
        return copy;
      }
      const [index, key] = chosen;
      const event = events[index] as DurableEventEnvelope;
      const field = { r: 'requestId', t: 'turnId', m: 'modelAttemptId', a: 'toolAttemptId', p: 'permissionRequestId' }[
        key.split(':')[0] as 'r' | 't' | 'm' | 'a' | 'p'
      ];
      copy[index] = field === 'permissionRequestId' ? editData(event, { [field]: 'mutant-id' }) : edit(event, { [field]: 'mutant-id' });
      return copy;
    }
  }
}
