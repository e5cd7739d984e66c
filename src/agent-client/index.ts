/**
 * The agent client of `agent-ledger/browser`: {@link AgentSessionClient} talks to one agent
 * session of an agent-ledger Worker with `fetch` alone (browsers, Workers, Node 20). See
 * `docs/agent-client.md`.
 */
export {
  AGENT_CLIENT_TIMEOUT_MS,
  AgentSessionClient,
  webStorageCursorStore,
  type AgentClientFetch,
  type AgentCursorStore,
  type AgentReconnectInfo,
  type AgentSendOptions,
  type AgentSessionClientOptions,
  type AgentStream,
  type AgentStreamItem,
  type AgentStreamOptions,
  type WebStorageLike,
} from './agent-session-client.js';
export type {
  AgentAbortResult,
  AgentPermissionReceipt,
  AgentRequestAccepted,
  AgentRequestStatus,
  AgentStatus,
  AgentSteerAccepted,
} from '../adapters/durable-object/agent-rpc.js';
export type {
  SubscriberDeltaFrame,
  SubscriberPartialResponseFrame,
  SubscriberToolProgressFrame,
  TransientSubscriberFrame,
} from '../protocol/frames.js';
export {
  AgentChatTransport,
  createAgentChatTransport,
  type AgentChatTransportOptions,
  type AgentReconnectToStreamOptions,
  type AgentSendMessagesOptions,
  type AgentUIMessageChunk,
  type AgentUIMessageLike,
  type AgentUIPartLike,
} from './chat-transport.js';
