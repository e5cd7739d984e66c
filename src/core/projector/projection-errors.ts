/**
 * How the projector reports a broken invariant.
 *
 * Every rejection is a `DurableEventProjectionError` whose `details` name the offending event
 * (`sequence`, `eventId`, `type`) and the invariant it broke (`rule`, one of
 * {@link DurableProjectionRule}), so callers and tests classify failures without parsing messages.
 */
import { DurableEventProjectionError } from '../../protocol/errors.js';

/** The invariant families the projector enforces (see `invariants.ts` for the full list). */
export type DurableProjectionRule =
  | 'schema'
  | 'sequence'
  | 'session_mismatch'
  | 'duplicate_event_id'
  | 'causation_unknown'
  | 'command_range'
  | 'session_lifecycle'
  | 'request_lifecycle'
  | 'id_reused'
  | 'correlation'
  | 'turn_lifecycle'
  | 'turn_number'
  | 'turn_blocked'
  | 'request_causation'
  | 'model_lifecycle'
  | 'tool_lifecycle'
  | 'tool_call_mismatch'
  | 'permission'
  | 'side_effect'
  | 'input_applied'
  | 'recovery_provenance';

/** Identifies the event being folded, for error details. Fields may be missing on malformed input. */
export interface EventLocation {
  readonly sequence?: unknown;
  readonly eventId?: unknown;
  readonly type?: unknown;
}

function describe(location: EventLocation): string {
  const type = typeof location.type === 'string' ? location.type : 'event';
  const sequence = typeof location.sequence === 'number' ? `#${location.sequence}` : '#?';
  const id = typeof location.eventId === 'string' ? ` ${location.eventId}` : '';
  return `${type} ${sequence}${id}`;
}

/** Builds the error for `rule` broken by the event at `location`. */
export function projectionViolation(
  location: EventLocation,
  rule: DurableProjectionRule,
  message: string,
  cause?: unknown,
): DurableEventProjectionError {
  return new DurableEventProjectionError(`${describe(location)}: ${message}`, {
    ...(cause === undefined ? {} : { cause }),
    details: {
      rule,
      sequence: typeof location.sequence === 'number' ? location.sequence : null,
      eventId: typeof location.eventId === 'string' ? location.eventId : null,
      type: typeof location.type === 'string' ? location.type : null,
    },
  });
}

/** The `rule` recorded on a projection error, if any. */
export function projectionRuleOf(error: unknown): DurableProjectionRule | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const details = (error as { details?: unknown }).details;
  if (typeof details !== 'object' || details === null) return undefined;
  const rule = (details as { rule?: unknown }).rule;
  return typeof rule === 'string' ? (rule as DurableProjectionRule) : undefined;
}
