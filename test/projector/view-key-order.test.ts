import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DurableSessionProjector } from '../../src/core/projector/index.js';
import type { DurableEventEnvelope } from '../../src/protocol/events.js';
import { simulate } from './lifecycle-simulator.js';

// The fold copies Request and Turn views with spelled-out builders (`updateRequest`, `updateTurn`)
// instead of `{ ...view, ...changes }`. Key order is visible (snapshots and checkpoints are JSON),
// so it must stay the one the spreads gave: the fields of `request_accepted` / `turn_started`
// (optional ones where present), then, for a Request, `startedEventId` (added by
// `request_started`) and `lastTurnEventId` (added by the first terminal Turn event).
const REQUEST_KEYS = [
  'requestId',
  'commandId',
  'inputId',
  'input',
  'priority',
  'maxTurns',
  'model',
  'context',
  'recovery',
  'recoveryKind',
  'status',
  'acceptedEventId',
  'latestBoundaryEventId',
  'appliedInputIds',
  'inputAppliedSinceLastTurn',
  'lastTurn',
  'activeTurn',
  'startedEventId',
  'lastTurnEventId',
];
const TURN_KEYS = ['turnId', 'turn', 'model', 'startedEventId', 'modelAttempts', 'toolAttempts', 'permissions'];

const expectedOrder = (order: readonly string[], view: object): string[] => order.filter((key) => Object.hasOwn(view, key));

/** Adds the optional maxTurns/model/context fields the simulator never writes, on every other Request / Turn. */
function withOptionalFields(events: readonly DurableEventEnvelope[]): DurableEventEnvelope[] {
  return events.map((event, index) => {
    if (index % 2 === 0) return event;
    if (event.type === 'request_accepted') {
      return { ...event, data: { ...event.data, maxTurns: 5, model: { provider: 'p', model: 'm' }, context: { tenant: 't' } } };
    }
    if (event.type === 'turn_started') return { ...event, data: { ...event.data, model: { provider: 'p', model: 'm' } } };
    return event;
  });
}

describe('view key order', () => {
  it('Request and Turn views keep the key order of their first construction', () => {
    const seen = new Set<string>();
    fc.assert(
      fc.property(fc.array(fc.nat({ max: 10_000 }), { maxLength: 120 }), fc.boolean(), (choices, optional) => {
        const sim = simulate(choices);
        const events = optional ? withOptionalFields(sim.b.events) : sim.b.events;
        const projector = new DurableSessionProjector({ sessionId: sim.b.sessionId });
        for (const event of events) {
          projector.apply([event]);
          const request = projector.snapshot().activeRequest;
          if (request === null) continue;
          for (const key of Object.keys(request)) seen.add(`request.${key}`);
          expect(Object.keys(request)).toEqual(expectedOrder(REQUEST_KEYS, request));
          const turn = request.activeTurn;
          if (turn === null) continue;
          for (const key of Object.keys(turn)) seen.add(`turn.${key}`);
          expect(Object.keys(turn)).toEqual(expectedOrder(TURN_KEYS, turn));
        }
      }),
      { numRuns: 300 },
    );
    // The runs covered every optional key.
    for (const key of ['maxTurns', 'model', 'context', 'recovery', 'recoveryKind', 'startedEventId', 'lastTurnEventId']) {
      expect(seen).toContain(`request.${key}`);
    }
    expect(seen).toContain('turn.model');
  });
});
