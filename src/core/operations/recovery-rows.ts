/** The recovery rows of the session operation table: one per row of `RECOVERY_OPERATIONS` (host `recovery`). */
import { z } from 'zod';
import { DurableEventStoreError, type DurableErrorCode } from '../../protocol/errors.js';
import { recoveryPathTemplate } from '../../protocol/http-paths.js';
import {
  RECOVERY_OPERATION_NAMES,
  RECOVERY_OPERATIONS,
  type RecoveryOperation,
  type RecoveryOperationSpec,
} from '../../protocol/recovery-operations.js';
import { executionFenceSchema } from './lease-rows.js';
import { noInput, type OperationHttpSpec, type OperationSpec } from './spec.js';

/** Codes every recovery command's route may answer with. */
const RECOVERY_COMMAND_ERRORS: readonly DurableErrorCode[] = [
  'DURABLE_EVENT_INVALID_INPUT',
  'DURABLE_EVENT_LIMIT_EXCEEDED',
  'DURABLE_EVENT_SEQUENCE_CONFLICT',
  'DURABLE_COMMAND_CONFLICT',
  'DURABLE_RECOVERY_INVALID_STATE',
  'DURABLE_RECOVERY_TARGET_NOT_FOUND',
  'DURABLE_EVENT_PROJECTION_INVALID',
  'DURABLE_EXECUTION_LEASE_REQUIRED',
  'DURABLE_EXECUTION_LEASE_LOST',
  'DURABLE_EXECUTION_LEASE_INVALID',
  'DURABLE_COMMAND_OUTCOME_UNKNOWN',
];

/**
 * The coordinator method's result (its exact shape per `RecoveryResponseKind` is documented by
 * the HTTP layer, `RECOVERY_RESPONSE_SCHEMAS` in `src/app/schemas-recovery.ts`).
 */
const recoveryResultSchema = z.record(z.string(), z.unknown());

/**
 * The row of a recovery operation. Its input is the HTTP body: the coordinator's input plus an
 * optional `executionFence`, which the host passes beside the input (the coordinator's inputs are
 * strict). `planResume` takes none (a fence, when given, is checked and unused).
 */
export interface RecoveryRow extends OperationSpec {
  readonly kind: 'command' | 'read';
  readonly host: 'recovery';
  readonly input: z.ZodType<Record<string, unknown>>;
  readonly output: typeof recoveryResultSchema;
  readonly http: OperationHttpSpec;
}

function recoveryRow(name: RecoveryOperation): RecoveryRow {
  const spec: RecoveryOperationSpec = RECOVERY_OPERATIONS[name];
  const route = {
    path: recoveryPathTemplate(name),
    scope: 'recover',
    summary: spec.summary,
    description: spec.description,
    tags: ['recovery'],
  };
  if (!spec.mutates || spec.input === undefined) {
    return {
      kind: 'read',
      host: 'recovery',
      input: noInput,
      output: recoveryResultSchema,
      http: {
        ...route,
        method: 'get',
        errors: ['DURABLE_EVENT_INVALID_INPUT', 'DURABLE_EVENT_PROJECTION_INVALID', 'DURABLE_EVENT_UNAVAILABLE'],
        responseDescription: 'The decision and the head it was taken on.',
      },
    };
  }
  const id = `${name.charAt(0).toUpperCase()}${name.slice(1)}Request`;
  return {
    kind: 'command',
    host: 'recovery',
    input: spec.input.extend({ executionFence: executionFenceSchema.optional() }).meta({ id }),
    output: recoveryResultSchema,
    http: {
      ...route,
      method: 'post',
      errors: [...RECOVERY_COMMAND_ERRORS, ...(spec.extraErrors ?? [])],
      fieldErrorCodes: { executionFence: 'DURABLE_EXECUTION_LEASE_INVALID' },
      largeBody: true,
      responseDescription: 'The recovery command as stored, with the new projection and plan.',
    },
  };
}

/**
 * The input of a recovery row from the positional form `recover(operation, input, options)`: the
 * coordinator's input with `options.executionFence` beside its fields. `options` is an untrusted
 * shape over RPC: anything but an object whose only key is `executionFence` is refused.
 */
export function recoveryRowInput(input: unknown, options: unknown): unknown {
  let executionFence: unknown;
  if (options !== undefined && options !== null) {
    if (typeof options !== 'object' || Array.isArray(options)) {
      throw new DurableEventStoreError('DURABLE_EVENT_INVALID_INPUT', 'options must be an object');
    }
    for (const key of Object.keys(options)) {
      if (key !== 'executionFence') throw new DurableEventStoreError('DURABLE_EVENT_INVALID_INPUT', `options has an unknown key "${key}"`);
    }
    executionFence = (options as { executionFence?: unknown }).executionFence;
  }
  if (executionFence === undefined) return input ?? {};
  const fields = typeof input === 'object' && input !== null && !Array.isArray(input) ? input : {};
  return { ...fields, executionFence };
}

/** One row per recovery operation, named like the coordinator method, in `RECOVERY_OPERATIONS` order. */
/** One row per recovery operation, named like the coordinator method, in `RECOVERY_OPERATIONS` order. */
export const RECOVERY_ROWS = Object.fromEntries(RECOVERY_OPERATION_NAMES.map((name) => [name, recoveryRow(name)])) as {
  readonly [O in RecoveryOperation]: RecoveryRow;
};
