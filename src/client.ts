/**
 * `agent-ledger/client`: the ledger over HTTP, from anywhere with `fetch`.
 *
 * {@link HttpDurableEventStore} implements the whole store contract (events and execution leases,
 * plus `watch` over a WebSocket) against an agent-ledger Worker, and runs journal commands,
 * projections and recovery operations inside the session's object (`commit`, `projection`,
 * `recover`), so `DurableSessionJournal`,
 * `DurableEventSubscription`, `DurableExecutionLease` and the recovery coordinator run unchanged
 * against the edge from Node 20, a browser or another Worker. Errors come back as the same
 * classes with the same codes. Runtime-neutral: no `node:*` imports.
 *
 * @example
 * import WebSocket from 'ws'; // only on Node 20, which has no global WebSocket
 * import { HttpDurableEventStore } from 'agent-ledger/client';
 * const store = new HttpDurableEventStore({ baseUrl: 'http://127.0.0.1:8787', token, WebSocket });
 */
export {
  DEFAULT_HTTP_TIMEOUT_MS,
  HttpDurableEventStore,
  type HttpDurableEventStoreOptions,
  type HttpJournalCallOptions,
} from './adapters/http/http-store.js';
export type {
  PlanResumeResult,
  RecoveryInputs,
  RecoveryResults,
  SessionProjectionResult,
} from './adapters/durable-object/journal-rpc.js';
export { HTTP_PATHS, httpPath, recoveryPathTemplate, type HttpPathParams, type HttpPathTemplate } from './protocol/http-paths.js';
export {
  SUBSCRIBER_PING,
  SUBSCRIBER_POLICY_CLOSE_CODE,
  SUBSCRIBER_PONG,
  SUBSCRIBER_SLOW_CLOSE_CODE,
  SUBSCRIBER_SLOW_ERROR_CODE,
  SUBSCRIPTION_FRAME_KINDS,
  isSubscriberSlowNotice,
  parseSubscriptionFrame,
  subscriptionFrameSchema,
  type DurabilityFrameRecord,
  type SubscriberCaughtUpMessage,
  type SubscriberDurabilityFrame,
  type SubscriberErrorMessage,
  type SubscriberEventMessage,
  type SubscriberMessage,
  type SubscriptionFrame,
  type SubscriptionFrameKind,
  type SubscriptionFrameType,
} from './protocol/frames.js';
export {
  PROBLEM_CONTENT_TYPE,
  errorFromProblem,
  errorFromProblemResponse,
  problemTypeUri,
  type ProblemDocument,
} from './adapters/http/problem.js';
export {
  BEARER_SUBPROTOCOL_PREFIX,
  LEDGER_SUBPROTOCOL,
  WATCH_PING_INTERVAL_MS,
  type WebSocketConstructorLike,
} from './adapters/http/websocket-watch.js';
