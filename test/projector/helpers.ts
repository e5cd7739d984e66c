/**
 * Assertions shared by the projector tests.
 */
import { expect } from 'vitest';
import { DurableSessionProjector } from '../../src/core/projector/index.js';
import { projectionRuleOf, type DurableProjectionRule } from '../../src/core/projector/index.js';
import { DurableEventProjectionError } from '../../src/protocol/errors.js';
import type { DurableEventEnvelope } from '../../src/protocol/events.js';

/** Applies `events` in one page and returns the projector (throws on violation). */
export function project(events: readonly DurableEventEnvelope[]): DurableSessionProjector {
  const projector = new DurableSessionProjector();
  projector.apply(events);
  return projector;
}

/** The error `fn` throws (fails the test when it does not throw). */
export function caught(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error('expected a throw');
}

/** Asserts the projector is failed with `error` and every later call rethrows that same error. */
export function expectStaysFailed(projector: DurableSessionProjector, error: unknown): void {
  expect(projector.failed).toBe(true);
  expect(projector.error).toBe(error);
  expect(caught(() => projector.apply([]))).toBe(error);
  expect(caught(() => projector.snapshot())).toBe(error);
  expect(caught(() => projector.recoveryPlan())).toBe(error);
  expect(caught(() => projector.clone())).toBe(error);
}

/**
 * Asserts every event but the last projects cleanly and the last one is rejected for `rule`;
 * the projector then stays failed. Returns the error.
 */
export function expectLastRejected(
  events: readonly DurableEventEnvelope[],
  rule: DurableProjectionRule,
): DurableEventProjectionError {
  const last = events[events.length - 1];
  if (last === undefined) throw new Error('no events');
  const projector = new DurableSessionProjector();
  projector.apply(events.slice(0, -1));
  const head = projector.headSequence;
  const error = caught(() => projector.apply([last]));
  expect(error).toBeInstanceOf(DurableEventProjectionError);
  expect(projectionRuleOf(error)).toBe(rule);
  expect((error as DurableEventProjectionError).details?.['sequence']).toBe(last.sequence);
  expect(projector.headSequence).toBe(head);
  expectStaysFailed(projector, error);
  return error as DurableEventProjectionError;
}

/** A shallow-edited copy of an envelope (for building broken journals). */
export function edit(event: DurableEventEnvelope, patch: Record<string, unknown>): DurableEventEnvelope {
  // SAFETY: tests deliberately produce envelopes that may break invariants; the projector validates them.
  return { ...event, ...patch } as unknown as DurableEventEnvelope;
}

/** A copy of an envelope with its `data` shallow-edited. */
export function editData(event: DurableEventEnvelope, patch: Record<string, unknown>): DurableEventEnvelope {
  return edit(event, { data: { ...(event.data as object), ...patch } });
}
