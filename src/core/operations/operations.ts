/**
 * The session operations: ONE table, runtime-neutral. Each row is one operation on a session's
 * object; everything a transport needs is derived from the row:
 * - the object's one RPC entry `operation(sessionId, name, input)` dispatches by name to the
 *   row's host method (`src/edge/session-object.ts`, hosts typed by {@link OperationHosts}); a
 *   row with `rpcArgs` also gets a positional RPC method of its name (`acquireExecutionLease(sessionId, options)`);
 * - the one RPC client (`src/adapters/durable-object/operation-client.ts`) used by the Worker's
 *   routes, `sessionClient` and `DurableObjectEventStore`: a transport failure is reported by the
 *   row's kind ({@link operationOutcomeUnknown});
 * - the Worker route, its validation, OpenAPI entry and route-table line (`src/app/routes/operations.ts`);
 * - the HTTP client's call (`HttpDurableEventStore`).
 *
 * Adding an operation: one row in a row file (`*-rows.ts` here) and one method of the same name on its host (the compiler
 * demands the method: see {@link OperationHosts}). The recovery rows are generated, one per entry
 * of `RECOVERY_OPERATIONS` (src/protocol/recovery-operations.ts): add a recovery operation there.
 * Streaming routes (subscribe, long polls) stay hand-written.
 */
import type { z } from 'zod';
import {
  DurableCommandOutcomeUnknownError,
  DurableEventStoreError,
  DurableExecutionLeaseTimeoutError,
  type DurableError,
} from '../../protocol/errors.js';
import type { SessionId } from '../../protocol/ids.js';
import { AGENT_ROWS } from './agent-rows.js';
import { CHECKPOINT_ROWS } from './checkpoint-rows.js';
import { DURABILITY_ROWS } from './durability-rows.js';
import { JOURNAL_ROWS } from './journal-rows.js';
import { LEASE_ROWS } from './lease-rows.js';
import { LOG_ROWS } from './log-rows.js';
import { RECOVERY_ROWS } from './recovery-rows.js';
import type { OperationHostName, OperationSpec } from './spec.js';

export * from './spec.js';
export * from './lease-rows.js';
export { eventDigestsResponseSchema } from './log-rows.js';
export { recoveryRowInput } from './recovery-rows.js';

/** Every session operation, by name. See the module header. */
export const SESSION_OPERATIONS = {
  ...LEASE_ROWS,
  ...LOG_ROWS,
  ...CHECKPOINT_ROWS,
  ...RECOVERY_ROWS,
  ...JOURNAL_ROWS,
  ...DURABILITY_ROWS,
  ...AGENT_ROWS,
} as const satisfies Record<string, OperationSpec>;

/** Any operation name. */
export type OperationName = keyof typeof SESSION_OPERATIONS;
/** The input of an operation (as its host receives it). */
export type OperationInput<N extends OperationName> = z.output<(typeof SESSION_OPERATIONS)[N]['input']>;
/** The output of an operation. */
export type OperationOutput<N extends OperationName> = z.output<(typeof SESSION_OPERATIONS)[N]['output']>;

/**
 * What each host of the session object implements: one method per row it serves, named after the
 * row, taking the bound session and the row's input. Input over RPC is an untrusted shape: the
 * host checks it (the HTTP route has already validated it with the row's schema).
 */
export type OperationHosts = {
  readonly [H in OperationHostName]: {
    [N in OperationName as (typeof SESSION_OPERATIONS)[N]['host'] extends H ? N : never]: (
      sessionId: SessionId,
      input: OperationInput<N>,
    ) => OperationOutput<N> | Promise<OperationOutput<N>>;
  };
};

/** The rows that have a positional RPC method of their name. */
export type PositionalOperationName = {
  [N in OperationName]: (typeof SESSION_OPERATIONS)[N] extends { rpcArgs: unknown } ? N : never;
}[OperationName];

/** The arguments after `sessionId` of the positional RPC method of `N`. */
export type PositionalArgs<N extends PositionalOperationName> = (typeof SESSION_OPERATIONS)[N] extends {
  rpcArgs: (...args: infer A) => unknown;
}
  ? A
  : never;

/** True when `value` names an operation. */
export function isOperationName(value: unknown): value is OperationName {
  return typeof value === 'string' && Object.hasOwn(SESSION_OPERATIONS, value);
}

/** The row of an operation. */
export function operationSpec(name: OperationName): OperationSpec {
  return SESSION_OPERATIONS[name];
}

/** Every operation name, in table order. */
export const OPERATION_NAMES = Object.freeze(Object.keys(SESSION_OPERATIONS) as OperationName[]);

/**
 * The error of a call to `name` whose answer never came (`what`: e.g. "the session object did not
 * answer"), by the row's kind: a read or a replace is `DURABLE_EVENT_UNAVAILABLE`; a write
 * whose row names a lease is `DURABLE_EXECUTION_LEASE_TIMEOUT` with the `leaseId` (retry it to
 * reconcile), any other write `DURABLE_EVENT_WRITE_FAILED`; a command `DURABLE_COMMAND_OUTCOME_UNKNOWN` with its
 * `commandId` (resubmit the same command).
 */
export function operationOutcomeUnknown(name: OperationName, input: unknown, what: string, cause: unknown): DurableError {
  const row: OperationSpec = SESSION_OPERATIONS[name];
  if (row.kind === 'read' || row.kind === 'replace') return new DurableEventStoreError('DURABLE_EVENT_UNAVAILABLE', `${name}: ${what}`, { cause });
  if (row.kind === 'command') {
    const commandId = typeof input === 'object' && input !== null ? (input as { commandId?: unknown }).commandId : undefined;
    const id = typeof commandId === 'string' ? commandId : '(unknown)';
    return new DurableCommandOutcomeUnknownError(
      `${name}: ${what}; the outcome of command ${id} is unknown (resubmit the same command to reconcile)`,
      { cause, details: { commandId: id } },
    );
  }
  if (row.leaseIdOf !== undefined) {
    const leaseId = row.leaseIdOf(input);
    return new DurableExecutionLeaseTimeoutError(`${name}: ${what}; the lease call outcome is unknown`, {
      cause,
      ...(leaseId === undefined ? {} : { leaseId }),
    });
  }
  return new DurableEventStoreError('DURABLE_EVENT_WRITE_FAILED', `${name}: ${what}; the write may or may not have happened`, {
    cause,
  });
}
