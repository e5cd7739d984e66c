/**
 * The coordinator's own argument check of each recovery mutation, by operation name.
 *
 * The mapped type makes the compiler demand a parser for every mutation row of
 * `RECOVERY_OPERATIONS` (src/protocol/recovery-operations.ts). The HTTP layer runs it on a body
 * its zod schema refused, so the answer carries the coordinator's exact error.
 */
import type { RecoveryMutation } from '../../protocol/recovery-operations.js';
import {
  parseReconcileModelOutcome,
  parseReconcileRequestOutcome,
  parseReconcileToolOutcome,
  parseResolvePermission,
  parseStartToolAttempt,
} from './outcomes.js';
import { parsePrepareRequestRecovery, parsePrepareTurnRecovery } from './rollover.js';

/** Parses (and throws the coordinator's typed error for) the input of each mutation. */
export const RECOVERY_INPUT_PARSERS: { readonly [O in RecoveryMutation]: (value: unknown) => unknown } = Object.freeze({
  reconcileToolOutcome: parseReconcileToolOutcome,
  reconcileModelOutcome: parseReconcileModelOutcome,
  resolvePermission: parseResolvePermission,
  startToolAttempt: parseStartToolAttempt,
  prepareRequestRecovery: parsePrepareRequestRecovery,
  prepareTurnRecovery: parsePrepareTurnRecovery,
  reconcileRequestOutcome: parseReconcileRequestOutcome,
});
