/**
 * Public types of the agent runtime: mounted agents, tool handlers, their context, and the
 * durability port factory a host may supply.
 */
import type { DeliveryInput, DeliveryReceipt, DurabilityPort, DurabilityPortLike } from '../durability/port-types.js';
import type { SessionId } from '../../protocol/ids.js';

/**
 * What a mounted tool handler receives next to its input. `step`, `sleep` and `waitFor` are
 * `undefined` when the runtime was created without `durability`.
 */
export interface RuntimeToolContext {
  /** The session (conversation) the call belongs to. */
  sessionId: SessionId;
  runId: string;
  agent: string;
  toolName: string;
  /** The tool call's identity: must be the same on every replay of this call. */
  toolCallId: string;
  /** Aborts when the caller cancels; durable facts stay. */
  signal: AbortSignal;
  step: DurabilityPort['step'] | undefined;
  sleep: DurabilityPort['sleep'] | undefined;
  waitFor: DurabilityPort['waitFor'] | undefined;
}

/** A runtime tool: `(input, ctx) => output`. */
export type RuntimeToolHandler<I = unknown, O = unknown> = (input: I, ctx: RuntimeToolContext) => O | Promise<O>;

/** Options of `runtime.mountAgent`. */
export interface MountAgentOptions {
  /** The agent's tools by name (each name a valid ID). */
  // `never` input: any handler, whatever input type it declares, can be mounted.
  tools: Readonly<Record<string, RuntimeToolHandler<never>>>;
}

/** A mounted agent, as `mountAgent` reports it. */
export interface MountedAgent {
  name: string;
  toolNames: string[];
}

/** What a host-owned port factory receives, once per tool call. */
export interface DurabilityPortFactoryArgs<S extends object = object> {
  /** The runtime's store. */
  store: S;
  /** The session (conversation). */
  sessionId: SessionId;
  runId: string;
  toolName: string;
  toolCallId: string;
  /** The tool call's abort signal. */
  signal: AbortSignal;
}

/**
 * Supplies a host-owned port for one tool call. The runtime never closes it: the host owns its
 * lifetime. To keep the built-in scoping, build it with
 * `createDurabilityPort({ ..., scope: toolCallScope(runId, toolName, toolCallId) })`.
 */
export type DurabilityPortFactory<S extends object = object> = (
  args: DurabilityPortFactoryArgs<S>,
) => DurabilityPortLike | Promise<DurabilityPortLike>;

/** Options of `createAgentRuntime`. */
export interface AgentRuntimeOptions<S extends object = object> {
  /** The store; it must implement the durability records when `durability` is `true` or `deliver` is used. */
  store: S;
  /**
   * `true`: each tool call gets a built-in port scoped to `(runId, toolName, toolCallId)`, closed
   * when the call settles. A function: a host-owned port per call. Omitted: no port
   * (`ctx.step`, `ctx.sleep` and `ctx.waitFor` are `undefined`).
   */
  durability?: true | DurabilityPortFactory<S> | undefined;
  /** Clock of built-in ports, in epoch milliseconds (default `Date.now`). */
  clock?: (() => number) | undefined;
}

/**
 * Identifies one tool call. `toolCallId` must be stable: a replay finds the first execution's
 * step results, sleep deadlines and waits under the scope `(runId, toolName, toolCallId)`, so a
 * new ID on replay would silently run every step again.
 */
export interface ToolCallInput {
  sessionId: SessionId | string;
  runId: string;
  agent: string;
  toolName: string;
  toolCallId: string;
  input: unknown;
  signal?: AbortSignal | undefined;
}

/**
 * A replay-safe recovery decision. `'replay'`: the host has seen the previous executor of this
 * call exit (or is sure it cannot write any more), so re-running the handler is safe: completed
 * steps return their records, elapsed sleeps return at once, the rest runs.
 */
export type RecoveryDecision = 'replay';

/** Input of `runtime.recover`. */
export interface RecoverToolCallInput extends ToolCallInput {
  decision: RecoveryDecision;
}

/** Input of `runtime.deliver`: a delivery addressed to `(sessionId, runId, key)`. */
export interface RuntimeDeliveryInput extends DeliveryInput {
  sessionId: SessionId | string;
  runId: string;
  signal?: AbortSignal | undefined;
}

/** The agent runtime. */
export interface AgentRuntime {
  /** Mounts an agent's tools under `name`; mounting a name twice is `DURABILITY_INVALID_INPUT`. */
  mountAgent(name: string, options: MountAgentOptions): MountedAgent;
  /** Runs a mounted tool once; resolves with the handler's output, rejects with its error. */
  callTool(call: ToolCallInput): Promise<unknown>;
  /** Re-runs a tool call after a replay-safe decision (see {@link RecoveryDecision}). */
  recover(call: RecoverToolCallInput): Promise<unknown>;
  /** Records a delivery for `waitFor(key)` in run `runId` and wakes local waiters. */
  deliver(delivery: RuntimeDeliveryInput): Promise<DeliveryReceipt>;
}
