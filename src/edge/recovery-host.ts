/**
 * The session object's recovery operations (rows with `host: 'recovery'` of `SESSION_OPERATIONS`,
 * one per row of `RECOVERY_OPERATIONS`): each runs the coordinator method of its name through the
 * journal host (`journal.ts`), which pins the head, checks the fence and keeps the command
 * idempotent. The row's input carries an optional `executionFence` beside the coordinator's
 * fields; `splitFence` (`journal.ts`) splits it off, because the coordinator's inputs are strict.
 */
import type { SessionId } from '../protocol/ids.js';
import type { OperationHosts } from '../core/operations/operations.js';
import { RECOVERY_OPERATION_NAMES, type RecoveryOperation } from '../protocol/recovery-operations.js';
import { splitFence, type SessionJournalHost } from './journal.js';

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
