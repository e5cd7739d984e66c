/**
 * Draft fixtures for conformance checks.
 *
 * Valid drafts are small and self-describing: {@link markerDraft} carries its label in
 * `data.output`, so a check can read a log back and see which batch each event came from and in
 * which order. {@link invalidDraftCases} lists one batch per way a draft (or a batch) can be
 * malformed; every store must refuse each of them with `DURABLE_EVENT_INVALID_INPUT` and write
 * nothing. The invalid values are typed `unknown`: they exist to get past the compiler.
 */
import { DurableEventType, type DurableEventDraft } from '../protocol/events.js';
import { CommandId, EventId, InputId, RequestId, TurnId } from '../protocol/ids.js';
import { MAX_BATCH_EVENTS, MAX_EVENT_BYTES } from '../protocol/limits.js';
import type { JsonValue } from '../protocol/json.js';

/** Request ID shared by marker drafts (the store does not check lifecycle order). */
export const FIXTURE_REQUEST_ID = RequestId('conformance-request');

/** `session_created`, the usual first event of a session. */
export function sessionCreatedDraft(): DurableEventDraft<'session_created'> {
  return { type: DurableEventType.SESSION_CREATED, data: { source: 'create' } };
}

/** `request_accepted` with its required `requestId` and `commandId`. */
export function requestAcceptedDraft(label: string): DurableEventDraft<'request_accepted'> {
  return {
    type: DurableEventType.REQUEST_ACCEPTED,
    requestId: RequestId(`request-${label}`),
    commandId: CommandId(`command-${label}`),
    data: { inputId: InputId(`input-${label}`), input: `conformance input ${label}`, priority: 'next' },
  };
}

/** `request_started` for `request-<label>`. */
export function requestStartedDraft(label: string): DurableEventDraft<'request_started'> {
  return { type: DurableEventType.REQUEST_STARTED, requestId: RequestId(`request-${label}`), data: {} };
}

/** A `request_completed` event whose `data.output` is `label`: easy to recognise when read back. */
export function markerDraft(label: string, output?: JsonValue): DurableEventDraft<'request_completed'> {
  return {
    type: DurableEventType.REQUEST_COMPLETED,
    requestId: FIXTURE_REQUEST_ID,
    data: { output: output ?? label },
  };
}

/** `count` marker drafts labelled `<prefix>-0`, `<prefix>-1`, ... */
export function markerDrafts(count: number, prefix = 'marker'): DurableEventDraft<'request_completed'>[] {
  return Array.from({ length: count }, (_, index) => markerDraft(`${prefix}-${index}`));
}

/** The label a marker event carries (its `data.output`), or `undefined` for other events. */
export function markerLabel(event: { type: string; data: unknown }): unknown {
  if (event.type !== DurableEventType.REQUEST_COMPLETED) return undefined;
  return (event.data as { output?: unknown }).output;
}

/** A `turn_started` draft carrying every optional envelope field the store must keep. */
export function fullyCorrelatedDraft(occurredAt: string): DurableEventDraft<'turn_started'> {
  return {
    type: DurableEventType.TURN_STARTED,
    requestId: RequestId('request-correlated'),
    turnId: TurnId('turn-correlated'),
    commandId: CommandId('command-correlated'),
    causationEventId: EventId('cause-correlated'),
    occurredAt,
    data: { turn: 1, model: { provider: 'conformance', model: 'fixture-1' } },
  };
}

/** A valid draft whose encoded envelope exceeds `MAX_EVENT_BYTES`. */
export function oversizedDraft(): DurableEventDraft<'request_completed'> {
  return markerDraft('oversized', 'x'.repeat(MAX_EVENT_BYTES + 1));
}

/** `MAX_BATCH_EVENTS + 1` valid drafts: one more than a batch may hold. */
export function overfullBatch(): DurableEventDraft[] {
  return markerDrafts(MAX_BATCH_EVENTS + 1, 'overfull');
}

/** Casts a deliberately malformed batch to the draft type, to reach the store's run-time checks. */
export function asDrafts(value: unknown): readonly DurableEventDraft[] {
  // SAFETY: only for invalid-input checks; the store must validate at run time anyway.
  return value as readonly DurableEventDraft[];
}

/** One malformed batch and why it is malformed. */
export interface InvalidDraftCase {
  name: string;
  /** The whole `drafts` argument (not always an array). */
  batch: unknown;
}

const valid = (): Record<string, unknown> => ({ ...markerDraft('valid') });

/** Every kind of invalid `drafts` argument; each must be refused with `DURABLE_EVENT_INVALID_INPUT`. */
export function invalidDraftCases(): InvalidDraftCase[] {
  const requestId = 'request-invalid';
  return [
    { name: 'unknown event type', batch: [{ type: 'session_exploded', data: {} }] },
    { name: 'missing type', batch: [{ data: {} }] },
    { name: 'unknown envelope field', batch: [{ ...valid(), colour: 'blue' }] },
    { name: 'store-assigned field in a draft', batch: [{ ...valid(), sequence: 1 }] },
    { name: 'unknown payload field', batch: [{ type: 'session_created', data: { source: 'create', extra: 1 } }] },
    { name: 'correlation field the type does not allow', batch: [{ type: 'session_created', requestId, data: {} }] },
    { name: 'missing requestId', batch: [{ type: 'request_started', data: {} }] },
    {
      name: 'missing commandId on request_accepted',
      batch: [{ ...requestAcceptedDraft('no-command'), commandId: undefined }],
    },
    { name: 'missing turnId', batch: [{ type: 'turn_started', requestId, data: { turn: 1 } }] },
    { name: 'empty requestId', batch: [{ type: 'request_started', requestId: '', data: {} }] },
    { name: 'control character in an ID', batch: [{ type: 'request_started', requestId: 'bad\u0000id', data: {} }] },
    { name: 'ID that is not a string', batch: [{ type: 'request_started', requestId: 42, data: {} }] },
    { name: 'overlong ID', batch: [{ type: 'request_started', requestId: 'r'.repeat(257), data: {} }] },
    { name: 'invalid enum value', batch: [{ type: 'session_closed', data: { reason: 'bored' } }] },
    { name: 'missing data', batch: [{ type: 'request_started', requestId }] },
    { name: 'NaN', batch: [{ type: 'turn_started', requestId, turnId: 'turn-1', data: { turn: Number.NaN } }] },
    { name: 'Infinity in a JSON payload', batch: [markerDraft('inf', { value: Number.POSITIVE_INFINITY })] },
    { name: '-0 in a JSON payload', batch: [markerDraft('negative-zero', { value: -0 })] },
    { name: 'undefined inside a JSON payload', batch: [markerDraft('undef', [1, undefined as unknown as JsonValue])] },
    { name: 'explicit undefined optional field', batch: [{ ...markerDraft('u'), data: { output: undefined } }] },
    { name: 'invalid occurredAt', batch: [{ ...valid(), occurredAt: 'yesterday' }] },
    { name: 'undefined draft', batch: [undefined] },
    { name: 'null draft', batch: [null] },
    { name: 'array as draft', batch: [[]] },
    { name: 'empty batch', batch: [] },
    { name: 'batch that is not an array', batch: { 0: valid(), length: 1 } },
    { name: 'batch that is a string', batch: 'session_created' },
    { name: 'null batch', batch: null },
    { name: 'valid drafts followed by an invalid one', batch: [valid(), valid(), { type: 'request_started', data: {} }] },
  ];
}
