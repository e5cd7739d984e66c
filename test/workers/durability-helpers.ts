/**
 * Helpers of the durability tests inside workerd: a typed stub of the fixture's
 * AgentSessionObject, RPC unwrapping, and bounded waits on a run's state.
 */
import { env } from 'cloudflare:workers';
import type {
  RunDeliveryInput,
  RunDeliveryReceipt,
  RunState,
  StartToolCallInput,
  ToolCallAccepted,
} from '../../src/adapters/durable-object/durability-rpc.js';
import { unwrapRpcResult, type SessionObjectPositionalRpc } from '../../src/adapters/durable-object/rpc.js';
import type { DurabilityRecord } from '../../src/core/durability/record-contract.js';
import type { JsonValue } from '../../src/protocol/json.js';
import type { SessionObject } from '../../src/edge/session-object.js';
import type { UserTimer } from '../../src/edge/timers.js';
import { TEST_AGENT } from './fixtures/test-agents.js';

export { TEST_AGENT };

/** The fixture object's stub: durability RPC plus the test-only methods. */
export interface AgentStub
  extends Pick<SessionObjectPositionalRpc, 'recordDurability' | 'readDurability' | 'startToolCall' | 'runToolCall' | 'deliver' | 'getRun'> {
  effects(): Promise<Record<string, number>>;
  effectLog(): Promise<Array<{ label: string; instance: string }>>;
  instanceId(): Promise<string>;
  timerFirings(): Promise<Array<{ key: string; payload: string }>>;
  currentAlarm(): Promise<number | null>;
  timerState(): Promise<{ alarm: number | null; pending: string[]; fired: string[] }>;
  useManualTime(startMs: number): Promise<void>;
  advanceTime(ms: number): Promise<void>;
  abortInstance(): Promise<void>;
  scheduleTimer(key: string, dueMs: number, payload?: JsonValue): Promise<void>;
  cancelTimer(key: string): Promise<boolean>;
  listTimers(): Promise<UserTimer[]>;
}

/** The object of `sessionId`, as a durable stub (for `cloudflare:test` helpers) and typed. */
export function objectOf(sessionId: string): { stub: DurableObjectStub<SessionObject>; api: AgentStub } {
  const stub = env.SESSIONS.get(env.SESSIONS.idFromName(sessionId));
  // SAFETY: the fixture binds SESSIONS to AgentSessionObject, which has every AgentStub method.
  return { stub, api: stub as unknown as AgentStub };
}

/** A session id no other test uses. */
export function freshSession(label: string): string {
  return `${label}-${crypto.randomUUID()}`;
}

/** Resolves after `ms`. */
export function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export async function start(api: AgentStub, sessionId: string, input: StartToolCallInput): Promise<ToolCallAccepted> {
  return unwrapRpcResult<ToolCallAccepted>(await api.startToolCall(sessionId, input));
}

export async function deliver(api: AgentStub, sessionId: string, input: RunDeliveryInput): Promise<RunDeliveryReceipt> {
  return unwrapRpcResult<RunDeliveryReceipt>(await api.deliver(sessionId, input));
}

export async function runState(api: AgentStub, sessionId: string, runId: string): Promise<RunState> {
  return unwrapRpcResult<RunState>(await api.getRun(sessionId, runId));
}

/** Every record of the session's ledger. */
export async function ledger(api: AgentStub, sessionId: string): Promise<DurabilityRecord[]> {
  const records: DurabilityRecord[] = [];
  let after: number | undefined;
  for (;;) {
    const page = unwrapRpcResult<{ records: DurabilityRecord[]; nextCursor: number | null; hasMore: boolean }>(
      await api.readDurability(sessionId, after === undefined ? { limit: 1000 } : { after, limit: 1000 }),
    );
    records.push(...page.records);
    if (!page.hasMore) return records;
    after = page.nextCursor ?? undefined;
  }
}

/** Polls `read` until `predicate` holds; fails with the last value after `timeoutMs`. */
export async function until<T>(read: () => Promise<T>, predicate: (value: T) => boolean, what: string, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: T = await read();
  while (!predicate(last)) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; last: ${JSON.stringify(last).slice(0, 2000)}`);
    await pause(10);
    last = await read();
  }
  return last;
}

/** Compact view of a ledger for assertions: `kind:key` (plus status for run events). */
export function shape(records: readonly DurabilityRecord[]): string[] {
  return records.map((record) => {
    if (record.kind === 'run_event') return `run_event:${record.key}:${record.status}`;
    return `${record.kind}:${record.key}`;
  });
}
