/**
 * Type-level tests of the main generics (checked by `tsc -p tsconfig.json`, part of
 * `npm run typecheck`): envelopes narrow by `type`, drafts require the correlation IDs of their
 * type, journal results and subscription messages are discriminated unions. A wrong type fails
 * the compile; each `@ts-expect-error` fails it when the error it expects disappears.
 */
import { describe, expectTypeOf, it } from 'vitest';
import {
  type CommandId,
  type DurableCommitResult,
  type DurableEventDraft,
  type DurableEventEnvelope,
  type DurableEventEnvelopeOf,
  type DurableEventStore,
  type DurableSubscriptionMessage,
  type EventSequence,
  type InputId,
  type RequestAcceptedData,
  type RequestId,
  type ToolAttemptId,
  type ToolStartedData,
  type TurnId,
  RequestId as requestId,
  InputId as inputId,
  CommandId as commandId,
} from '../../src/index.js';

describe('DurableEventEnvelope', () => {
  it('narrows data and correlation IDs by type', () => {
    const handle = (event: DurableEventEnvelope): void => {
      if (event.type === 'request_accepted') {
        expectTypeOf(event.data).toEqualTypeOf<RequestAcceptedData>();
        expectTypeOf(event.requestId).toEqualTypeOf<RequestId>();
      }
      if (event.type === 'tool_started') {
        expectTypeOf(event.data).toEqualTypeOf<ToolStartedData>();
        expectTypeOf(event.toolAttemptId).toEqualTypeOf<ToolAttemptId>();
        expectTypeOf(event.turnId).toEqualTypeOf<TurnId>();
      }
      expectTypeOf(event.sequence).toEqualTypeOf<EventSequence>();
    };
    expectTypeOf(handle).toBeFunction();
  });

  it('names one member with DurableEventEnvelopeOf', () => {
    expectTypeOf<DurableEventEnvelopeOf<'session_created'>['type']>().toEqualTypeOf<'session_created'>();
    expectTypeOf<DurableEventEnvelope<'session_created'>>().toEqualTypeOf<DurableEventEnvelopeOf<'session_created'>>();
  });
});

describe('append drafts', () => {
  it('require the correlation IDs of their type (request_accepted: commandId and requestId) and the data of their type', () => {
    const accepted: DurableEventDraft = {
      type: 'request_accepted',
      commandId: commandId('c-1'),
      requestId: requestId('r-1'),
      data: { inputId: inputId('i-1'), input: 'go', priority: 'next' },
    };
    expectTypeOf(accepted).toMatchTypeOf<DurableEventDraft>();
    // @ts-expect-error request_accepted needs requestId
    const missing: DurableEventDraft = { type: 'request_accepted', commandId: commandId('c-1'), data: { inputId: inputId('i-1'), input: 'go', priority: 'next' } };
    // @ts-expect-error session_created data has no `inputId`
    const wrongData: DurableEventDraft<'session_created'> = { type: 'session_created', data: { inputId: inputId('x') } };
    // @ts-expect-error a plain string is not a branded RequestId
    const unbranded: DurableEventDraft = { type: 'request_started', requestId: 'r-1', data: {} };
    expectTypeOf([missing, wrongData, unbranded]).toBeArray();
  });

  it('append takes drafts and answers envelopes', () => {
    type Append = DurableEventStore['append'];
    expectTypeOf<Parameters<Append>[1]>().toEqualTypeOf<readonly DurableEventDraft[]>();
    expectTypeOf<Awaited<ReturnType<Append>>['events']>().toEqualTypeOf<DurableEventEnvelope[]>();
  });
});

describe('journal command results', () => {
  it('carry a status union, the command ID and envelopes', () => {
    expectTypeOf<DurableCommitResult['status']>().toEqualTypeOf<'committed' | 'replayed' | 'reconciled'>();
    expectTypeOf<DurableCommitResult['commandId']>().toEqualTypeOf<CommandId>();
    expectTypeOf<DurableCommitResult['events']>().toEqualTypeOf<DurableEventEnvelope[]>();
  });
});

describe('subscription messages', () => {
  it('discriminate on type', () => {
    const handle = (message: DurableSubscriptionMessage): void => {
      if (message.type === 'event') {
        expectTypeOf(message.event).toEqualTypeOf<DurableEventEnvelope>();
        expectTypeOf(message.live).toEqualTypeOf<boolean>();
      } else {
        expectTypeOf(message.headSequence).toEqualTypeOf<EventSequence | null>();
      }
    };
    expectTypeOf(handle).toBeFunction();
    expectTypeOf<InputId>().not.toEqualTypeOf<RequestId>();
  });
});
