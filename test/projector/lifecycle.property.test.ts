import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DurableSessionProjector } from '../../src/core/projector/index.js';
import { DurableEventProjectionError } from '../../src/protocol/errors.js';
import { caught } from './helpers.js';
import { mutate, type MutationKind } from './journal-mutations.js';
import { expectedPlan, simulate } from './lifecycle-simulator.js';
import { sized } from '../deep.js';

const NUM_RUNS = sized(60, 200);
const choicesArb = fc.array(fc.nat({ max: 10_000 }), { minLength: 0, maxLength: 120, size: 'large' });

describe('random valid lifecycles', () => {
  it('always project, and the plan matches the naive model', () => {
    fc.assert(
      fc.property(choicesArb, (choices) => {
        const sim = simulate(choices);
        const projector = new DurableSessionProjector({ sessionId: sim.b.sessionId });
        projector.apply(sim.b.events);
        const plan = projector.recoveryPlan();
        const expected = expectedPlan(sim);
        expect({
          action: plan.action,
          retryable: plan.retryableToolAttempts.length,
          cancelable: plan.cancelableToolAttempts.length,
          unknown: plan.unknownToolAttempts.length,
          permissions: plan.pendingPermissions.length,
          activeModel: plan.activeModelAttempt !== null,
          discarded: plan.discardedUnconfirmedModelResponse,
          applied: [...plan.appliedInputIds],
          lastTurn: plan.lastTurn,
        }).toEqual(expected);
        expect(projector.snapshot().status).toBe(sim.phase === 'closed' ? 'closed' : 'open');
      }),
      { numRuns: NUM_RUNS },
    );
  });

  it('project identically page by page, and through clones taken at any point', () => {
    fc.assert(
      fc.property(choicesArb, fc.array(fc.integer({ min: 1, max: 7 }), { minLength: 1, maxLength: 20 }), (choices, sizes) => {
        const events = simulate(choices).b.events;
        const oneShot = new DurableSessionProjector();
        oneShot.apply(events);
        let paged = new DurableSessionProjector();
        let position = 0;
        let turn = 0;
        while (position < events.length) {
          const size = sizes[turn++ % sizes.length] ?? 1;
          const before = paged;
          paged = paged.clone();
          paged.apply(events.slice(position, position + size));
          // The projector we cloned from is still at the old position.
          expect(before.headSequence).toBe(position === 0 ? null : position);
          position += size;
        }
        expect(paged.snapshot()).toEqual(oneShot.snapshot());
        expect(paged.recoveryPlan()).toEqual(oneShot.recoveryPlan());
      }),
      { numRuns: NUM_RUNS },
    );
  });

  it('reach every recovery action', () => {
    const seen = new Set<string>();
    fc.assert(
      fc.property(choicesArb, (choices) => {
        seen.add(expectedPlan(simulate(choices)).action);
      }),
      { numRuns: sized(250, 1000), seed: 42 },
    );
    expect([...seen].sort()).toEqual(
      [
        'none',
        'resume_request',
        'rollover_request',
        'resume_turn',
        'resolve_permissions',
        'reconcile_tool_outcomes',
        'reconcile_model_outcome',
        'reconcile_request_inputs',
        'reconcile_request_outcome',
      ].sort(),
    );
  });
});

describe('single mutations of valid lifecycles', () => {
  const kinds: MutationKind[] = ['drop', 'reorder', 'duplicate_id', 'change_correlation'];
  it('are always rejected, and the projector stays failed', () => {
    fc.assert(
      fc.property(choicesArb, fc.constantFrom(...kinds), fc.nat(), (choices, kind, seed) => {
        const events = simulate(choices).b.events;
        const broken = mutate(events, kind, seed);
        const projector = new DurableSessionProjector();
        const error = caught(() => projector.apply(broken));
        expect(error).toBeInstanceOf(DurableEventProjectionError);
        expect(projector.failed).toBe(true);
        expect(caught(() => projector.snapshot())).toBe(error);
      }),
      { numRuns: NUM_RUNS },
    );
  });
});
