/**
 * Entry of the chat page's copy of the agent client: what `scripts/build-chat-client.ts` bundles
 * (with esbuild, as an IIFE that sets `window.AgentLedgerAgentClient`) into
 * `agent-client-bundle.ts`, served as `/chat/assets/agent-client.js`. The page's own script
 * (`assets.ts`) drives the session through it.
 */
export { AgentSessionClient } from '../agent-client/agent-session-client.js';
