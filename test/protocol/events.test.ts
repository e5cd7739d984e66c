import fc from 'fast-check';
import { describe, expect, expectTypeOf, it } from 'vitest';
import {
  DURABLE_EVENT_CORRELATION,
  DURABLE_EVENT_SCHEMA_VERSION,
  DURABLE_EVENT_TYPES,
  DurableEventStoreError,
  DurableEventType,
  EventId,
  durableEventDataSchemas,
  durableEventDraftSchema,
  durableEventEnvelopeSchema,
  encodedEventBytes,
  isDurableEventType,
  isIsoTimestamp,
  isModelTerminalType,
  isRequestTerminalType,
  isToolTerminalType,
  isTurnTerminalType,
  parseDurableEventDraft,
  parseDurableEventEnvelope,
  safeParseDurableEventDraft,
  safeParseDurableEventEnvelope,
  type CorrelationKey,
  type DurableEventDraft,
  type DurableEventEnvelope,
} from '../../src/protocol/index.js';
import { RECORDED_AT, copy, envelopeOf, invalidDataMutations, validDrafts } from './event-fixtures.js';

const ALL_CORRELATION: CorrelationKey[] = ['commandId', 'requestId', 'turnId', 'modelAttemptId', 'toolAttemptId'];

/** docs/protocol.md "Envelope correlation fields per type", written out independently of the code. */
const SPEC: Record<DurableEventType, { required: CorrelationKey[]; optional: CorrelationKey[] }> = (() => {
  const session = { required: [], optional: [] };
  const request = { required: ['requestId'], optional: [] } as { required: CorrelationKey[]; optional: CorrelationKey[] };
  const turn = { required: ['requestId', 'turnId'], optional: [] } as typeof request;
  const model = { required: ['requestId', 'turnId', 'modelAttemptId'], optional: [] } as typeof request;
  const tool = { required: ['requestId', 'turnId', 'toolAttemptId'], optional: [] } as typeof request;
  return {
    session_created: session,
    session_closed: session,
    request_accepted: { required: ['requestId', 'commandId'], optional: [] },
    request_started: request,
    request_completed: request,
    request_failed: request,
    request_interrupted: request,
    turn_started: turn,
    turn_completed: turn,
    turn_aborted: turn,
    model_request_started: model,
    model_request_completed: model,
    model_request_failed: model,
    model_request_aborted: model,
    tool_scheduled: { required: ['requestId', 'turnId', 'modelAttemptId', 'toolAttemptId'], optional: [] },
    tool_started: tool,
    tool_completed: tool,
    tool_failed: tool,
    tool_cancelled: tool,
    tool_outcome_unknown: tool,
    permission_requested: tool,
    permission_resolved: tool,
    input_applied: { required: ['requestId'], optional: ['turnId'] },
  };
})();

function expectDraftRejected(value: unknown, ...fragments: string[]): void {
  const result = safeParseDurableEventDraft(value);
  expect(result.ok).toBe(false);
  if (result.ok) return;
  for (const fragment of fragments) expect(result.problem).toContain(fragment);
  let thrown: unknown;
  try {
    parseDurableEventDraft(value);
  } catch (error) {
    thrown = error;
  }
  expect(thrown).toBeInstanceOf(DurableEventStoreError);
  expect((thrown as DurableEventStoreError).code).toBe('DURABLE_EVENT_INVALID_INPUT');
  expect((thrown as DurableEventStoreError).message).toBe(result.problem);
}

describe('event type table', () => {
  it('has 23 distinct types, constants matching values', () => {
    expect(DURABLE_EVENT_TYPES).toHaveLength(23);
    expect(new Set(DURABLE_EVENT_TYPES).size).toBe(23);
    expect(Object.values(DurableEventType)).toEqual(DURABLE_EVENT_TYPES);
    expect(Object.keys(durableEventDataSchemas).sort()).toEqual([...DURABLE_EVENT_TYPES].sort());
    expect(Object.keys(DURABLE_EVENT_CORRELATION).sort()).toEqual([...DURABLE_EVENT_TYPES].sort());
    expect(DURABLE_EVENT_SCHEMA_VERSION).toBe(4);
    expect(isDurableEventType('turn_started')).toBe(true);
    expect(isDurableEventType('turn_paused')).toBe(false);
  });

  it('classifies terminal types', () => {
    const pick = (f: (t: DurableEventType) => boolean) => DURABLE_EVENT_TYPES.filter(f);
    expect(pick(isRequestTerminalType)).toEqual(['request_completed', 'request_failed', 'request_interrupted']);
    expect(pick(isTurnTerminalType)).toEqual(['turn_completed', 'turn_aborted']);
    expect(pick(isModelTerminalType)).toEqual(['model_request_completed', 'model_request_failed', 'model_request_aborted']);
    expect(pick(isToolTerminalType)).toEqual(['tool_completed', 'tool_failed', 'tool_cancelled']);
  });
});

describe.each(DURABLE_EVENT_TYPES)('%s draft', (type) => {
  const valid = validDrafts[type];
  const { required, optional } = SPEC[type];

  it('exports the documented correlation table', () => {
    expect(DURABLE_EVENT_CORRELATION[type]).toEqual(SPEC[type]);
  });

  it('accepts each optional correlation id', () => {
    for (const key of optional) expect(parseDurableEventDraft({ ...copy(valid), [key]: `${key}-x` })).toHaveProperty(key);
  });

  it('accepts the valid draft and returns an equal value', () => {
    expect(parseDurableEventDraft(copy(valid))).toEqual(valid);
    expect(durableEventDraftSchema.safeParse(copy(valid)).success).toBe(true);
  });

  it('accepts commandId, causationEventId and occurredAt', () => {
    const full = { ...copy(valid), commandId: 'command-9', causationEventId: 'event-0', occurredAt: RECORDED_AT };
    expect(parseDurableEventDraft(full)).toEqual(full);
  });

  it('rejects an unknown data field', () => {
    expectDraftRejected({ ...copy(valid), data: { ...copy(valid.data), bogus: 1 } }, type, 'bogus');
  });

  it('rejects an unknown envelope field', () => {
    expectDraftRejected({ ...copy(valid), bogus: 1 }, type, 'bogus');
    expectDraftRejected({ ...copy(valid), eventId: 'event-1' }, type, 'eventId');
  });

  it.each(required.length > 0 ? required : ['(none)'])('rejects a missing required %s', (key) => {
    if (key === '(none)') {
      expect(required).toEqual([]);
      return;
    }
    const draft: Record<string, unknown> = copy(valid);
    delete draft[key];
    expectDraftRejected(draft, type, key);
  });

  it('rejects every correlation id its type does not list', () => {
    const forbidden = ALL_CORRELATION.filter((key) => key !== 'commandId' && !required.includes(key) && !optional.includes(key));
    for (const key of forbidden) expectDraftRejected({ ...copy(valid), [key]: `${key}-x` }, type, key);
  });

  it('rejects bad correlation ids', () => {
    for (const key of required) {
      for (const bad of ['', 'x'.repeat(257), 'a\u0007b', 42, null]) {
        expectDraftRejected({ ...copy(valid), [key]: bad }, type, key);
      }
    }
    expectDraftRejected({ ...copy(valid), causationEventId: '' }, type, 'causationEventId');
    expectDraftRejected({ ...copy(valid), commandId: '\u0000' }, type, 'commandId');
  });

  it('rejects bad occurredAt', () => {
    for (const bad of ['2025-01-31T12:00:00Z', '2025-01-31 12:00:00.000Z', '2025-02-30T00:00:00.000Z', 0, '']) {
      expectDraftRejected({ ...copy(valid), occurredAt: bad }, type, 'occurredAt');
    }
  });

  it('rejects explicit undefined correlation fields', () => {
    expectDraftRejected({ ...copy(valid), causationEventId: undefined }, type, 'causationEventId');
  });

  it.each(invalidDataMutations[type])('rejects invalid data: %s', (_label, mutate) => {
    const data = copy(valid.data) as Record<string, unknown>;
    mutate(data);
    expectDraftRejected({ ...copy(valid), data }, type, 'data');
  });

  it('rejects a non-finite number in any data field', () => {
    for (const key of Object.keys(valid.data)) {
      for (const bad of [NaN, Infinity, -Infinity]) {
        expectDraftRejected({ ...copy(valid), data: { ...copy(valid.data), [key]: bad } }, type, `data.${key}`);
      }
    }
  });

  it('rejects a type name that is not one of the 23', () => {
    expectDraftRejected({ ...copy(valid), type: `${type}_v2` }, 'unknown event type');
    expectDraftRejected({ ...copy(valid), type: type.toUpperCase() }, 'unknown event type');
  });

  it('rejects data that is not an object', () => {
    expectDraftRejected({ ...copy(valid), data: null }, type, 'data');
    expectDraftRejected({ ...copy(valid), data: [] }, type, 'data');
  });
});

describe('draft specifics', () => {
  it('names the unknown type, and refuses non-objects', () => {
    expectDraftRejected({ type: 'turn_paused', data: {} }, 'turn_paused');
    expectDraftRejected({ data: {} }, 'type');
    expectDraftRejected(null, 'expected an object');
    expectDraftRejected([validDrafts.request_started], 'expected an object');
  });

  it('requires commandId on request_accepted only', () => {
    const { commandId: _omit, ...rest } = validDrafts.request_accepted;
    expectDraftRejected(copy(rest), 'request_accepted', 'commandId');
    expect(parseDurableEventDraft(copy(validDrafts.request_started))).not.toHaveProperty('commandId');
  });

  it('lets input_applied omit its optional turnId', () => {
    const { turnId: _omit, ...rest } = validDrafts.input_applied;
    expect(parseDurableEventDraft(copy(rest))).toEqual(rest);
  });

  it('validates minimal payloads with optional fields absent', () => {
    const minimal: DurableEventDraft[] = [
      { type: 'session_created', data: {} },
      { type: 'request_completed', requestId: validDrafts.request_started.requestId, data: {} },
      {
        type: 'request_accepted',
        requestId: validDrafts.request_accepted.requestId,
        commandId: validDrafts.request_accepted.commandId,
        data: { inputId: validDrafts.request_accepted.data.inputId, input: '', priority: 'later' },
      },
    ];
    for (const draft of minimal) expect(parseDurableEventDraft(copy(draft))).toEqual(draft);
  });

  it('checks free-form values without invoking getters', () => {
    let invoked = false;
    const result = {};
    Object.defineProperty(result, 'secret', {
      enumerable: true,
      get() {
        invoked = true;
        return 1;
      },
    });
    expectDraftRejected({ ...copy(validDrafts.tool_completed), data: { ...validDrafts.tool_completed.data, result } }, 'accessor');
    expect(invoked).toBe(false);
  });

  it('reports the path of the problem inside a free-form value', () => {
    const data = { ...copy(validDrafts.tool_completed.data), result: { rows: [1, 2, -0] } };
    expectDraftRejected({ ...copy(validDrafts.tool_completed), data }, 'data.result', '$.rows[2]: negative zero');
  });

  it('reports the deepest union branch for inputs', () => {
    const data = { ...copy(validDrafts.request_accepted.data), input: [{ type: 'text', text: 5 }] };
    expectDraftRejected({ ...copy(validDrafts.request_accepted), data }, 'data.input[0].text');
  });

  it('prefers the union branch whose type matched', () => {
    const input = Array.from({ length: 257 }, () => ({ type: 'text', text: 'x' }));
    const data = { ...copy(validDrafts.request_accepted.data), input };
    expectDraftRejected({ ...copy(validDrafts.request_accepted), data }, 'data.input', 'Too big');
  });

  it('does not mutate its input', () => {
    const draft = copy(validDrafts.model_request_completed);
    const before = JSON.stringify(draft);
    parseDurableEventDraft(draft);
    expect(JSON.stringify(draft)).toBe(before);
  });
});

describe.each(DURABLE_EVENT_TYPES)('%s envelope', (type) => {
  const envelope = envelopeOf(validDrafts[type], 7);

  it('accepts the valid envelope', () => {
    expect(parseDurableEventEnvelope(copy(envelope))).toEqual(envelope);
    expect(durableEventEnvelopeSchema.safeParse(copy(envelope)).success).toBe(true);
  });

  it('rejects missing store fields, other versions and unknown keys', () => {
    for (const key of ['schemaVersion', 'eventId', 'sequence', 'sessionId', 'recordedAt', 'occurredAt']) {
      const broken: Record<string, unknown> = copy(envelope);
      delete broken[key];
      const result = safeParseDurableEventEnvelope(broken);
      expect(result.ok).toBe(false);
      if (!result.ok) expect(result.problem).toContain(key);
    }
    for (const patch of [
      { schemaVersion: 3 },
      { schemaVersion: '4' },
      { sequence: 0 },
      { sequence: 1.5 },
      { sequence: Number.MAX_SAFE_INTEGER + 1 },
      { sequence: '7' },
      { eventId: '' },
      { sessionId: 'x'.repeat(257) },
      { recordedAt: '2025-01-31T12:00:00.000+00:00' },
      { occurredAt: 'yesterday' },
      { extra: true },
    ]) {
      const result = safeParseDurableEventEnvelope({ ...copy(envelope), ...patch });
      expect(result.ok, JSON.stringify(patch)).toBe(false);
      if (!result.ok) expect(result.problem).toContain(`invalid ${type} envelope`);
    }
    expect(() => parseDurableEventEnvelope({ ...copy(envelope), schemaVersion: 5 })).toThrow(DurableEventStoreError);
  });
});

describe('encodedEventBytes', () => {
  it('counts UTF-8 bytes of the JSON encoding', () => {
    const envelope = envelopeOf({ ...validDrafts.tool_completed, data: { ...validDrafts.tool_completed.data, result: 'é😀\u2028' } });
    expect(encodedEventBytes(envelope)).toBe(new TextEncoder().encode(JSON.stringify(envelope)).length);
  });
});

describe('timestamps', () => {
  it('accepts only toISOString output naming a real instant', () => {
    expect(isIsoTimestamp(new Date().toISOString())).toBe(true);
    expect(isIsoTimestamp('2024-02-29T23:59:59.999Z')).toBe(true);
    for (const bad of ['2023-02-29T00:00:00.000Z', '2025-13-01T00:00:00.000Z', '2025-01-01T24:00:00.000Z', '2025-01-01T00:00:00.000z', ' 2025-01-01T00:00:00.000Z', '+012025-01-01T00:00:00.000Z']) {
      expect(isIsoTimestamp(bad), bad).toBe(false);
    }
  });
});

describe('types', () => {
  it('discriminates and brands', () => {
    const envelope = parseDurableEventEnvelope(copy(envelopeOf(validDrafts.turn_started)));
    if (envelope.type === 'turn_started') {
      expectTypeOf(envelope.data.turn).toEqualTypeOf<number>();
      expectTypeOf(envelope.turnId).not.toEqualTypeOf<string>();
    }
    expectTypeOf<DurableEventEnvelope<'tool_scheduled'>['modelAttemptId']>().toEqualTypeOf<
      DurableEventEnvelope['sessionId'] extends string ? import('../../src/protocol/ids.js').ModelAttemptId : never
    >();
    // @ts-expect-error request_accepted requires commandId
    const missingCommand: DurableEventDraft<'request_accepted'> = { type: 'request_accepted', requestId: validDrafts.request_accepted.requestId, data: validDrafts.request_accepted.data };
    // @ts-expect-error session_created takes no requestId
    const extraScope: DurableEventDraft<'session_created'> = { type: 'session_created', requestId: validDrafts.request_started.requestId, data: {} };
    // @ts-expect-error a plain string is not an EventId
    const unbranded: DurableEventDraft<'session_closed'> = { type: 'session_closed', causationEventId: 'e', data: { reason: 'error' } };
    const withCause: DurableEventDraft<'session_closed'> = { type: 'session_closed', causationEventId: EventId('e'), data: { reason: 'error' } };
    expect([missingCommand, extraScope, unbranded, withCause]).toHaveLength(4);
  });
});

describe('isIsoTimestamp equals the Date round trip', () => {
  const reference = (text: string) =>
    /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/.test(text) && Number.isFinite(Date.parse(text)) && new Date(Date.parse(text)).toISOString() === text;
  const pad = (n: number, width: number) => String(n).padStart(width, '0');

  it('on generated near-valid strings', () => {
    const arb = fc
      .record({
        year: fc.integer({ min: 0, max: 9999 }),
        month: fc.integer({ min: 0, max: 13 }),
        day: fc.integer({ min: 0, max: 32 }),
        hour: fc.integer({ min: 0, max: 25 }),
        minute: fc.integer({ min: 0, max: 61 }),
        second: fc.integer({ min: 0, max: 61 }),
        millis: fc.integer({ min: 0, max: 999 }),
      })
      .map((t) => `${pad(t.year, 4)}-${pad(t.month, 2)}-${pad(t.day, 2)}T${pad(t.hour, 2)}:${pad(t.minute, 2)}:${pad(t.second, 2)}.${pad(t.millis, 3)}Z`);
    fc.assert(fc.property(arb, (text) => {
      expect(isIsoTimestamp(text)).toBe(reference(text));
    }), { numRuns: 2000 });
  });

  it('on real instants and on arbitrary strings', () => {
    const instant = fc.integer({ min: Date.parse('-000100-01-01T00:00:00.000Z'), max: Date.parse('+010000-12-31T00:00:00.000Z') }).map((ms) => new Date(ms).toISOString());
    fc.assert(fc.property(instant, (text) => {
      expect(isIsoTimestamp(text)).toBe(reference(text));
    }));
    fc.assert(fc.property(fc.string({ maxLength: 30 }), (text) => {
      expect(isIsoTimestamp(text)).toBe(reference(text));
    }));
  });
});
