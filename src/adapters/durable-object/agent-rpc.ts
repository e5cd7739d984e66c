/**
 * The SessionObject's agent mount and the shapes its agent operations exchange, runtime-neutral
 * (no `cloudflare:*` imports): the object's host (`src/edge/agent-host.ts`) serves the agent rows
 * of the operation table (`src/core/operations/agent-rows.ts`, whose schemas match these types).
 *
 * A session object with an agent mounted (`SessionObject.sessionAgent()`) runs the agent
 * `Session` INSIDE itself: requests are accepted here, run by the object (the session's single
 * writer, under the execution lease), and stream to the session's WebSocket subscribers. Like
 * every other method of the object, each answers with an `RpcResult` envelope so domain errors
 * keep their class and code across RPC. See `docs/edge-agents.md`.
 */
import type { DurableRecoveryPlan } from '../../core/projector/projection-types.js';
import type { DurableInput, PermissionDecision, Priority } from '../../protocol/event-payloads.js';
import type { JsonObject } from '../../protocol/json.js';
import type { AnySessionTool, SessionLanguageModel, SessionOptions, SessionRecoveryPolicy } from '../../session/types.js';
import type { SessionObjectPositionalRpc } from './rpc.js';

/** The agent name of a mount that names none: what `agent` a run names (`POST .../runs/:runId/tool-calls`). */
export const DEFAULT_AGENT_NAME = 'agent';

/**
 * The agent a session object runs, as its owner mounts it (see `SessionObject.sessionAgent()`):
 * its tools serve both the model (agent requests) and runs started over the runs routes.
 *
 * @example
 * protected override sessionAgent(): SessionAgentMount {
 *   const openai = createOpenAICompatible({ name: 'openai', baseURL, apiKey: this.env.OPENAI_KEY });
 *   return { model: openai.chatModel('gpt-4.1-mini'), tools: { lookup }, system: 'Be brief.' };
 * }
 */
export interface SessionAgentMount {
  /** The agent's name: the `agent` a run names (default {@link DEFAULT_AGENT_NAME}). */
  name?: string;
  /**
   * The default model (any AI SDK `LanguageModelV4` or `LanguageModelV3` provider model). Without
   * one the object takes no agent requests; its tools still run as runs.
   */
  model?: SessionLanguageModel;
  /** Other models a request may choose by name (`model` in the request body). */
  models?: Readonly<Record<string, SessionLanguageModel>>;
  /**
   * Tools by name (`defineTool` of `agent-ledger/session`): the model calls them in requests, and
   * each can be started as a run (`POST .../runs/:runId/tool-calls`), with the same durability port.
   */
  tools?: Readonly<Record<string, AnySessionTool>>;
  /** System prompt. */
  system?: string;
  /** Default `maxTurns` of a request. */
  maxTurns?: number;
  /** Provider call settings passed on every model call. */
  callSettings?: SessionOptions['callSettings'];
  /** Use `doStream` (default `true`): token deltas reach subscribers only when streaming. */
  streaming?: boolean;
  /**
   * What the object does with a recovery plan after an eviction or crash (default
   * `EDGE_RECOVERY_POLICY`: resume never-started requests, continue an interrupted turn in place —
   * retrying pure/idempotent tools, asking pending permissions again — and continue a reconciled
   * turn). Whatever it says, a non_idempotent tool with an unknown outcome is parked for a
   * decision, never replayed; a model call with an unknown outcome too, unless the policy answers
   * it (`EDGE_AUTO_RECOVERY_POLICY` records it as cut off and calls the model again).
   */
  recoveryPolicy?: SessionRecoveryPolicy;
  /** Execution lease TTL the object holds while it runs the session (default 30 s, renewed). */
  leaseTtlMs?: number;
}

/** Body of `submitRequest` (`POST /v1/sessions/:sessionId/requests`). */
export interface AgentRequestInput {
  /** Idempotency key: the same `commandId` answers the same IDs and runs once. */
  commandId: string;
  input: DurableInput;
  /** `now` interrupts the running request; `next` (default) and `later` queue behind it. */
  priority?: Priority;
  maxTurns?: number;
  /** A model name of `SessionAgentMount.models` (default: the mount's `model`). */
  model?: string;
  /** Runtime context persisted with the request and handed to tools. */
  context?: JsonObject;
}

/** Answer of `submitRequest`. */
export interface AgentRequestAccepted {
  commandId: string;
  requestId: string;
  inputId: string;
  /** `false` when this `commandId` had been submitted before (nothing new was queued). */
  created: boolean;
  /** Where the request stands (see {@link AgentRequestStatus}). */
  status: AgentRequestStatus;
}

/**
 * `queued` (stored, not yet accepted by the session), `running` (accepted into the log and not
 * finished), `completed` / `failed` / `interrupted` (its terminal event is in the log), `cancelled`
 * (aborted before it ever started: nothing of it is in the log).
 */
export type AgentRequestStatus = 'queued' | 'running' | 'completed' | 'failed' | 'interrupted' | 'cancelled';

/**
 * Body of `submitInput` (`POST .../inputs`): steering input for the running request. The answer
 * comes once the input is stored in the object (it survives an eviction); it is applied
 * (`input_applied`, with its text) at the running request's next turn boundary.
 */
export interface AgentSteerInput {
  input: DurableInput;
  /**
   * `next` (default): applied after the running turn's tools. `now`: also aborts the model call in
   * flight (called again with the input); running tools and permission waits are not interrupted.
   */
  priority?: 'now' | 'next';
}

/** Answer of `submitInput` (see {@link AgentSteerInput} for when the input is applied). */
export interface AgentSteerAccepted {
  inputId: string;
  /** The request the input steers (a new request when none was running). */
  requestId: string;
}

/** Answer of `abortRequest`. */
export interface AgentAbortResult {
  requestId: string;
  status: AgentRequestStatus;
}

/** Body of `answerPermission` (`POST .../permissions/:permissionRequestId`). */
export interface AgentPermissionAnswer {
  decision: PermissionDecision;
  message?: string;
}

/** Answer of `answerPermission`. */
export interface AgentPermissionReceipt {
  permissionRequestId: string;
  decision: PermissionDecision;
  /** `false` when an earlier answer was already stored (the first answer wins). */
  created: boolean;
}

/**
 * What the object's agent is doing: `idle`, `running` (a request runs), `waiting_permission` (a
 * run is parked on a permission), `needs_recovery` (the recovery plan needs a decision the policy
 * may not take: see `plan`, act through the recovery routes), `stopped` (local execution stopped
 * without a terminal event, e.g. the lease was taken).
 */
export interface AgentStatus {
  state: 'idle' | 'running' | 'waiting_permission' | 'needs_recovery' | 'stopped';
  /** The request running now. */
  activeRequestId: string | null;
  /** Requests stored but not yet started, in run order. */
  queued: string[];
  /** Permissions waiting for an answer. */
  pendingPermissions: string[];
  /** The plan the object parked on (`needs_recovery`). */
  plan: DurableRecoveryPlan | null;
  /** Why the object parked or stopped. */
  message: string | null;
}

/** The agent methods of a SessionObject over RPC: the positional methods of the agent rows. */
export type SessionObjectAgentRpc = Pick<
  SessionObjectPositionalRpc,
  'submitRequest' | 'submitInput' | 'abortRequest' | 'answerPermission' | 'agentStatus'
>;
