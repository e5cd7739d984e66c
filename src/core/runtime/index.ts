/**
 * The agent runtime: mount agents, call their tools with a durability port, recover a call by
 * replay, and deliver to waiting tools. See `docs/durability.md`.
 */
export { createAgentRuntime } from './agent-runtime.js';
export type {
  AgentRuntime,
  AgentRuntimeOptions,
  DurabilityPortFactory,
  DurabilityPortFactoryArgs,
  MountAgentOptions,
  MountedAgent,
  RecoverToolCallInput,
  RecoveryDecision,
  RuntimeDeliveryInput,
  RuntimeToolContext,
  RuntimeToolHandler,
  ToolCallInput,
} from './runtime-types.js';
