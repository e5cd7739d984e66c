/**
 * The session object's recovery operations (rows with `host: 'recovery'` of `SESSION_OPERATIONS`,
 * one per row of `RECOVERY_OPERATIONS`): each runs the coordinator method of its name through the
 * journal host (`journal.ts`), which pins the head, checks the fence and keeps the command
 * idempotent. The row's input carries an optional `executionFence` beside the coordinator's
 * fields; it is split off here, because the coordinator's inputs are strict.
 */
import type { DurableExecutionFence } from '../core/store.js';
import type { RpcJournalCallOptions } from '../adapters/durable-object/journal-rpc.js';
import type { SessionId } from '../protocol/ids.js';
import type { OperationHosts } from '../core/operations/operations.js';
import { RECOVERY_OPERATION_NAMES, type RecoveryOperation } from '../protocol/recovery-operations.js';
import type { SessionJournalHost } from './journal.js';

/** Only the three fence fields reach the gate (a lease record carries more). */
function fenceFields(fence: unknown): unknown {
  if (typeof fence !== 'object' || fence === null || Array.isArray(fence)) return fence;
  const { leaseId, ownerId, fencingToken } = fence as DurableExecutionFence;
  return { leaseId, ownerId, fencingToken };
}

/** The coordinator's input and the call options of a row's input (an untrusted shape over RPC). */
function splitFence(input: unknown): { input: unknown; options: RpcJournalCallOptions } {
  if (typeof input !== 'object' || input === null || Array.isArray(input) || !('executionFence' in input)) {
    return { input, options: {} };
  }
  const { executionFence, ...rest } = input as Record<string, unknown>;
  // SAFETY: the gate checks the fence's shape at run time (DURABLE_EXECUTION_LEASE_INVALID).
  const fence = fenceFields(executionFence) as DurableExecutionFence | undefined;
  return { input: rest, options: fence === undefined ? {} : { executionFence: fence } };
}

/**
 * The host of the recovery rows: `journal` runs them; `afterRecovery` runs after each one that
 * succeeded (a parked agent may be able to go on).
 */
export function recoveryHost(journal: () => SessionJournalHost, afterRecovery: () => void): OperationHosts['recovery'] {
  const run = async (sessionId: SessionId, name: RecoveryOperation, rowInput: unknown): Promise<Record<string, unknown>> => {
    const { input, options } = splitFence(rowInput);
    const result = await journal().recover(sessionId, name, input, options);
    afterRecovery();
    // SAFETY: every coordinator result is an object (the row's output schema).
    return result as Record<string, unknown>;
  };
  // SAFETY: one method per recovery row, named after it (the keys of OperationHosts['recovery']).
  return Object.fromEntries(
    RECOVERY_OPERATION_NAMES.map((name) => [name, (sessionId: SessionId, input: unknown) => run(sessionId, name, input)]),
  ) as unknown as OperationHosts['recovery'];
}
