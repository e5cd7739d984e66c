/**
 * `agent-ledger/browser`: the browser-safe subset. The whole root entry is runtime-neutral, so
 * this is the same surface (protocol parsers, journal, projector, subscriptions, leases,
 * coordinator, memory store) plus the HTTP client that talks to an agent-ledger Worker.
 */
export * from './index.js';
export * from './client.js';
export * from './agent-client/index.js';
