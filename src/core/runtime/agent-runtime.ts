/**
 * The agent runtime: mounted agents whose tool handlers get a durability port.
 *
 * 1. `mountAgent(name, { tools })` registers handlers by agent and tool name.
 * 2. `callTool(call)` validates the call, gives the handler a context — with `step`, `sleep` and
 *    `waitFor` from a port scoped to `(runId, toolName, toolCallId)` when durability is on — runs
 *    it, and closes a built-in port when it settles (host-owned ports are left to the host).
 * 3. `recover(call)` is `callTool` after a replay-safe decision: because the scope is derived
 *    from the call's identity, the re-run finds the first execution's records, so completed
 *    steps return them and only the rest executes.
 * 4. One call identity runs at most once at a time in a runtime: a second `callTool` or a
 *    `recover` while it runs is `DURABILITY_CONFLICT` (the old executor has not exited).
 *    Across processes there is no lease: the host decides when a replay is safe.
 */
import { DurabilityError } from '../../protocol/errors.js';
import { describeInvalidId } from '../../protocol/ids.js';
import { deliverDurably } from '../durability/deliver.js';
import { isDurabilityRecordStore, type DurabilityRecordStore } from '../durability/record-contract.js';
import { checkDurabilityKey, checkDurabilitySessionId } from '../durability/record-engine.js';
import { createDurabilityPort } from '../durability/port.js';
import type { DurabilityPort, DurabilityPortLike } from '../durability/port-types.js';
import { toolCallScope } from '../durability/scope.js';
import type {
  AgentRuntime,
  AgentRuntimeOptions,
  MountAgentOptions,
  MountedAgent,
  RecoverToolCallInput,
  RuntimeToolContext,
  RuntimeToolHandler,
  ToolCallInput,
} from './runtime-types.js';

function invalidInput(message: string): DurabilityError {
  return new DurabilityError('DURABILITY_INVALID_INPUT', message);
}

function durabilityStoreOf(store: object, what: string): DurabilityRecordStore {
  if (!isDurabilityRecordStore(store)) {
    throw invalidInput(`${what} needs a store that implements the durability records (recordDurability / readDurability)`);
  }
  return store;
}

/**
 * Creates an agent runtime over `store`.
 *
 * @example
 * const runtime = createAgentRuntime({ store, durability: true });
 * runtime.mountAgent('billing', {
 *   tools: {
 *     charge: async (input: { amount: number }, ctx) => {
 *       const charge = await ctx.step!('charge', () => chargeCard(input.amount));
 *       await ctx.sleep!('settle', 60_000);
 *       return ctx.step!('receipt', () => sendReceipt(charge));
 *     },
 *   },
 * });
 * await runtime.callTool({
 *   sessionId: 'session-1', runId: 'run-1', agent: 'billing', toolName: 'charge',
 *   toolCallId: 'call-1', input: { amount: 5 },
 * });
 */
export function createAgentRuntime<S extends object>(options: AgentRuntimeOptions<S>): AgentRuntime {
  const { store, durability, clock } = options;
  if (typeof store !== 'object' || store === null) throw invalidInput('store is required');
  if (durability === true) durabilityStoreOf(store, 'durability: true');
  else if (durability !== undefined && typeof durability !== 'function') {
    throw invalidInput('durability must be true, a port factory, or omitted');
  }
  const agents = new Map<string, Map<string, RuntimeToolHandler<never>>>();
  const running = new Set<string>();

  const mountAgent = (name: string, mount: MountAgentOptions): MountedAgent => {
    const agent = checkDurabilityKey(name, 'agent name');
    if (agents.has(agent)) throw invalidInput(`agent ${JSON.stringify(agent)} is already mounted`);
    const tools = mount?.tools;
    if (typeof tools !== 'object' || tools === null) throw invalidInput('mountAgent needs { tools }');
    const table = new Map<string, RuntimeToolHandler<never>>();
    for (const [toolName, handler] of Object.entries(tools)) {
      const problem = describeInvalidId(toolName);
      if (problem !== undefined) throw invalidInput(`tool name ${JSON.stringify(toolName)} ${problem}`);
      if (typeof handler !== 'function') throw invalidInput(`tool ${JSON.stringify(toolName)} must be a function`);
      table.set(toolName, handler);
    }
    agents.set(agent, table);
    return { name: agent, toolNames: [...table.keys()] };
  };

  const openPort = async (
    call: { sessionId: RuntimeToolContext['sessionId']; runId: string; toolName: string; toolCallId: string },
    signal: AbortSignal,
  ): Promise<{ port: DurabilityPortLike | undefined; owned: DurabilityPort | undefined }> => {
    if (durability === undefined) return { port: undefined, owned: undefined };
    if (durability === true) {
      const owned = createDurabilityPort({
        store: durabilityStoreOf(store, 'durability: true'),
        sessionId: call.sessionId,
        runId: call.runId,
        scope: toolCallScope(call.runId, call.toolName, call.toolCallId),
        signal,
        clock,
      });
      return { port: owned, owned };
    }
    const port = await durability({ store, ...call, signal });
    if (typeof port !== 'object' || port === null) throw invalidInput('the durability port factory returned no port');
    return { port, owned: undefined };
  };

  const run = async (call: ToolCallInput): Promise<unknown> => {
    const sessionId = checkDurabilitySessionId(call.sessionId);
    const runId = checkDurabilityKey(call.runId, 'runId');
    const agent = checkDurabilityKey(call.agent, 'agent');
    const toolName = checkDurabilityKey(call.toolName, 'toolName');
    const toolCallId = checkDurabilityKey(call.toolCallId, 'toolCallId');
    const handler = agents.get(agent)?.get(toolName);
    if (handler === undefined) {
      throw invalidInput(`no tool ${JSON.stringify(toolName)} is mounted on agent ${JSON.stringify(agent)}`);
    }
    const identity = JSON.stringify([sessionId, runId, toolName, toolCallId]);
    if (running.has(identity)) {
      throw new DurabilityError(
        'DURABILITY_CONFLICT',
        `tool call ${toolCallId} (${toolName}, run ${runId}) is still running in this runtime`,
        { details: { runId, toolName, toolCallId } },
      );
    }
    running.add(identity);
    const signal = call.signal ?? new AbortController().signal;
    let owned: DurabilityPort | undefined;
    try {
      const opened = await openPort({ sessionId, runId, toolName, toolCallId }, signal);
      owned = opened.owned;
      const port = opened.port;
      const ctx: RuntimeToolContext = {
        sessionId,
        runId,
        agent,
        toolName,
        toolCallId,
        signal,
        step: port === undefined ? undefined : port.step.bind(port),
        sleep: port === undefined ? undefined : port.sleep.bind(port),
        waitFor: port === undefined ? undefined : port.waitFor.bind(port),
      };
      // SAFETY: the runtime cannot know a handler's input type; the host passes the input the
      // tool declares (mounting widened it to `never`).
      return await (handler as RuntimeToolHandler<unknown>)(call.input, ctx);
    } finally {
      owned?.close();
      running.delete(identity);
    }
  };

  return {
    mountAgent,
    callTool: run,
    async recover(call: RecoverToolCallInput) {
      if (call?.decision !== 'replay') {
        throw invalidInput(`recover needs a replay-safe decision ('replay'), got ${JSON.stringify(String(call?.decision))}`);
      }
      return run(call);
    },
    async deliver(delivery) {
      const durability = durabilityStoreOf(store, 'deliver');
      return deliverDurably(
        durability,
        delivery.sessionId,
        {
          runId: checkDurabilityKey(delivery.runId, 'runId'),
          key: delivery.key,
          deliveryId: delivery.deliveryId,
          payload: delivery.payload,
        },
        { signal: delivery.signal },
      );
    },
  };
}
