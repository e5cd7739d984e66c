/**
 * `agent-ledger/browser`: what a browser app calls. The agent client (`AgentSessionClient`,
 * `createAgentChatTransport` for the AI SDK's `useChat`), the HTTP client of the store contract
 * (`HttpDurableEventStore`, and `DurableEventSubscription` to follow a session over it), and the
 * protocol they speak: IDs, event types, drafts and envelopes with their parsers, cursors, the
 * error classes. The rest of `agent-ledger` (journal, projector, coordinator, leases, memory store)
 * is runtime-neutral too: a browser app that runs those imports them from `agent-ledger`.
 */
export {
  CommandId,
  EventId,
  EventSequence,
  FencingToken,
  InputId,
  ModelAttemptId,
  PermissionRequestId,
  RequestId,
  SessionId,
  ToolAttemptId,
  TurnId,
  WorkerId,
} from './protocol/ids.js';
export * from './protocol/errors.js';
export type * from './protocol/event-payloads.js';
export {
  DURABLE_EVENT_SCHEMA_VERSION,
  DURABLE_EVENT_TYPES,
  DurableEventType,
  isDurableEventType,
  type ModelTerminalType,
  type RequestTerminalType,
  type ToolTerminalType,
  type TurnTerminalType,
} from './protocol/event-types.js';
export {
  parseDurableEventDraft,
  parseDurableEventEnvelope,
  safeParseDurableEventDraft,
  safeParseDurableEventEnvelope,
  type DurableEventDraft,
  type DurableEventDraftOf,
  type DurableEventEnvelope,
  type DurableEventEnvelopeOf,
  type DurableParseResult,
} from './protocol/events.js';
export {
  decodeDurableEventCursor,
  durableEventCursor,
  encodeDurableEventCursor,
  parseDurableEventCursor,
  type DurableEventCursor,
} from './protocol/cursor.js';
export type { JsonObject, JsonValue } from './protocol/json.js';
export type { RecoveryMutation, RecoveryOperation } from './protocol/recovery-operations.js';
export {
  DurableEventSubscription,
  type DurableEventSubscriptionOptions,
  type DurableSubscriptionCaughtUpMessage,
  type DurableSubscriptionEventMessage,
  type DurableSubscriptionMessage,
} from './core/subscription/index.js';
export * from './client.js';
export * from './agent-client/index.js';
