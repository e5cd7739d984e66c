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
 * Adding an operation: one row here and one method of the same name on its host (the compiler
 * demands the method: see {@link OperationHosts}). The recovery rows are generated, one per entry
 * of `RECOVERY_OPERATIONS` (src/protocol/recovery-operations.ts): add a recovery operation there.
 * Streaming routes (subscribe, long polls) stay hand-written.
 */
import { z } from 'zod';
import {
  DurableCommandOutcomeUnknownError,
  DurableEventStoreError,
  DurableExecutionLeaseTimeoutError,
  type DurableError,
  type DurableErrorCode,
} from '../../protocol/errors.js';
import { sessionIdSchema } from '../../protocol/events.js';
import { HTTP_PATHS, recoveryPathTemplate } from '../../protocol/http-paths.js';
import {
  MAX_ID_LENGTH,
  isValidId,
  type EventId,
  type EventSequence,
  type FencingToken,
  type SessionId,
  type WorkerId,
} from '../../protocol/ids.js';
import { MAX_LEASE_TTL_MS, MAX_READ_LIMIT, MIN_LEASE_TTL_MS } from '../../protocol/limits.js';
import {
  RECOVERY_OPERATION_NAMES,
  RECOVERY_OPERATIONS,
  type RecoveryOperation,
  type RecoveryOperationSpec,
} from '../../protocol/recovery-operations.js';

/**
 * How a transport failure is reported: a `read` is unavailable (safe to retry), a `write` has an
 * unknown outcome, a `command` (input with a `commandId`) has an unknown outcome to reconcile by
 * resubmitting the same command. A `replace` writes derived data that a retry writes again
 * harmlessly (a projection checkpoint): a transport failure is unavailable, as for a read.
 */
export type OperationKind = 'read' | 'write' | 'command' | 'replace';

/** The part of the session object that serves a row (see {@link OperationHosts}). */
export type OperationHostName = 'log' | 'checkpoint' | 'recovery';

/** The HTTP route of a row (`GET` takes the input as the query string, `POST` as the JSON body). */
export interface OperationHttpSpec {
  readonly method: 'get' | 'post';
  readonly path: `/v1/sessions/{sessionId}${string}`;
  /** The token scope the route needs (a `TokenScope` of `src/app/auth.ts`). */
  readonly scope: string;
  /** OpenAPI operationId when it is not the row's name. */
  readonly operationId?: string;
  readonly summary: string;
  readonly description?: string;
  readonly tags: readonly string[];
  /** Domain codes the route may answer with. */
  readonly errors: readonly DurableErrorCode[];
  /** Code of an input that fails the schema (default `DURABLE_EVENT_INVALID_INPUT`). */
  readonly inputErrorCode?: DurableErrorCode;
  /** Code of an input whose field of this name fails the schema, when not `inputErrorCode`. */
  readonly fieldErrorCodes?: Readonly<Record<string, DurableErrorCode>>;
  /** The body may be as large as an append batch's, not only a control body's (64 KiB). */
  readonly largeBody?: boolean;
  readonly responseDescription: string;
  /** The response body when it is not the output itself, and the way back for the HTTP client. */
  readonly answer?: { readonly schema: z.ZodType; fromOutput(output: unknown): unknown; toOutput(body: unknown): unknown };
}

/** One row of {@link SESSION_OPERATIONS}. */
export interface OperationSpec {
  readonly kind: OperationKind;
  readonly host: OperationHostName;
  /** The input (`z.strictObject({})` for none); validated by the route, and by the host over RPC. */
  readonly input: z.ZodType;
  readonly output: z.ZodType;
  readonly http?: OperationHttpSpec;
  /** Arguments after `sessionId` of the positional RPC method of the row's name, turned into the input. */
  readonly rpcArgs?: (...args: never[]) => unknown;
  /** A write whose outcome is unknown is a lease timeout carrying this `leaseId` (retry it to reconcile). */
  readonly leaseIdOf?: (input: unknown) => string | undefined;
}

// ---- schemas shared with the HTTP API (re-exported by src/app/schemas.ts) ----------------------

/** A lease owner (worker) id. */
export const workerIdSchema = z.custom<WorkerId>((value) => isValidId(value), {
  error: `WorkerId must be a non-empty string of at most ${MAX_ID_LENGTH} characters without control characters`,
});
/** A caller-chosen lease acquisition id (same rules as any id). */
export const leaseIdSchema = z.custom<string>((value) => isValidId(value), {
  error: `leaseId must be a non-empty string of at most ${MAX_ID_LENGTH} characters without control characters`,
});
/** A fencing token (integer >= 1). */
export const fencingTokenSchema = z.custom<FencingToken>(
  (value) => typeof value === 'number' && Number.isSafeInteger(value) && value >= 1,
  { error: 'fencingToken must be a safe integer >= 1' },
);

export const executionFenceSchema = z
  .strictObject({
    leaseId: leaseIdSchema,
    ownerId: workerIdSchema,
    fencingToken: fencingTokenSchema,
    sessionId: sessionIdSchema.optional(),
    acquiredAtMs: z.number().optional(),
    expiresAtMs: z.number().optional(),
    released: z.boolean().optional(),
  })
  .meta({
    id: 'ExecutionFence',
    description:
      'The lease a fenced call must name: leaseId, ownerId and fencingToken. The LeaseRecord that acquire and renew answer is accepted as is (its other fields are ignored).',
  });

/** A fence as a caller passes it (only `leaseId`, `ownerId` and `fencingToken` are compared). */
export type ExecutionFenceInput = z.output<typeof executionFenceSchema>;

const ttlMsSchema = z.number().int().min(MIN_LEASE_TTL_MS).max(MAX_LEASE_TTL_MS);

export const leaseAcquireRequestSchema = z
  .strictObject({ ownerId: workerIdSchema, leaseId: leaseIdSchema, ttlMs: ttlMsSchema })
  .meta({ id: 'LeaseAcquireRequest' });

export const leaseRenewRequestSchema = z
  .strictObject({ fence: executionFenceSchema, ttlMs: ttlMsSchema })
  .meta({ id: 'LeaseRenewRequest' });

export const leaseFenceRequestSchema = z.strictObject({ fence: executionFenceSchema }).meta({ id: 'LeaseFenceRequest' });

export const leaseRecordSchema = z
  .strictObject({
    sessionId: sessionIdSchema,
    leaseId: leaseIdSchema,
    ownerId: workerIdSchema,
    fencingToken: fencingTokenSchema,
    acquiredAtMs: z.number(),
    expiresAtMs: z.number(),
    released: z.boolean(),
  })
  .meta({ id: 'LeaseRecord' });

export const leaseInspectResponseSchema = z
  .strictObject({ lease: leaseRecordSchema.nullable(), requiresExecutionLease: z.boolean() })
  .meta({ id: 'LeaseInspectResponse' });

export const okResponseSchema = z.strictObject({ ok: z.literal(true) }).meta({ id: 'OkResponse' });

const noInput = z.strictObject({});

/**
 * Integer query parameter in `min..max`, decimal digits only. The host receives the number (the
 * input type is the schema's output); RPC callers pass numbers, which the host checks itself.
 */
function integerQuery(min: number, max: number, label: string) {
  return z
    .string()
    .regex(/^(0|[1-9][0-9]{0,15})$/, `${label} must be a decimal integer`)
    .transform(Number)
    .pipe(z.number().int().min(min, `${label} must be >= ${min}`).max(max, `${label} must be <= ${max}`));
}

export const eventDigestsResponseSchema = z
  .strictObject({
    digests: z.array(z.strictObject({ sequence: z.number().int().min(1), digest: z.number().int().nullable() })),
  })
  .meta({ id: 'EventDigests', description: 'The stored per-event content digests, in sequence order.' });

/** `{ ok: true }` over HTTP for an operation whose output is `null`. */
const OK_ANSWER = {
  schema: okResponseSchema,
  fromOutput: () => ({ ok: true as const }),
  toOutput: () => null,
};

/**
 * Bytes over RPC (structured clone keeps a `Uint8Array`). The checkpoint rows have no HTTP route of
 * their own: the Worker's checkpoint route carries the bytes as base64url and one `POST` serves
 * three rows (`src/app/routes/checkpoints.ts`).
 */
const bytesSchema = z.custom<Uint8Array>((value) => value instanceof Uint8Array, { error: 'must be a Uint8Array' });
/** A checkpoint's position: the last event it covers (the store checks both against its log). */
const checkpointPosition = {
  sequence: z.custom<EventSequence>((value) => typeof value === 'number' && Number.isSafeInteger(value) && value >= 1),
  eventId: z.custom<EventId>((value) => isValidId(value)),
};

const checkpointSliceSchema = z.strictObject({
  ...checkpointPosition,
  totalBytes: z.number().int().min(0),
  offset: z.number().int().min(0),
  data: bytesSchema,
});
const checkpointRecordSchema = z.strictObject({ ...checkpointPosition, data: bytesSchema, extendsBytes: z.number().int().optional() });
const checkpointWriteSliceSchema = z.strictObject({
  uploadId: z.string().min(1).max(128),
  sequence: z.number(),
  eventId: z.string(),
  totalBytes: z.number().int().min(1),
  offset: z.number().int().min(0),
  data: bytesSchema,
});
const checkpointExtensionSchema = z.strictObject({ ...checkpointPosition, extendsBytes: z.number().int(), tail: bytesSchema });

const leaseIdOfFence = (input: unknown): string | undefined => {
  const fence = typeof input === 'object' && input !== null ? (input as { fence?: unknown }).fence : undefined;
  const leaseId = typeof fence === 'object' && fence !== null ? (fence as { leaseId?: unknown }).leaseId : undefined;
  return typeof leaseId === 'string' ? leaseId : undefined;
};

const LEASE_FENCE_ERRORS = ['DURABLE_EXECUTION_LEASE_LOST', 'DURABLE_EXECUTION_LEASE_INVALID', 'DURABLE_EXECUTION_LEASE_TIMEOUT'] as const;

// ---- the recovery rows: one per row of RECOVERY_OPERATIONS --------------------------------------

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
interface RecoveryRow extends OperationSpec {
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
const RECOVERY_ROWS = Object.fromEntries(RECOVERY_OPERATION_NAMES.map((name) => [name, recoveryRow(name)])) as {
  readonly [O in RecoveryOperation]: RecoveryRow;
};

/** Every session operation, by name. See the module header. */
export const SESSION_OPERATIONS = {
  acquireExecutionLease: {
    kind: 'write',
    host: 'log',
    input: leaseAcquireRequestSchema,
    output: leaseRecordSchema,
    rpcArgs: (options: z.output<typeof leaseAcquireRequestSchema>) => options,
    leaseIdOf: (input) => {
      const leaseId = typeof input === 'object' && input !== null ? (input as { leaseId?: unknown }).leaseId : undefined;
      return typeof leaseId === 'string' ? leaseId : undefined;
    },
    http: {
      method: 'post',
      path: HTTP_PATHS.leaseAcquire,
      scope: 'lease',
      summary: 'Acquire the execution lease (or reconcile a retried acquisition)',
      description:
        'A takeover issues the next fencing token. Retrying with the same leaseId and ownerId while the lease is active returns the current record.',
      tags: ['lease'],
      errors: ['DURABLE_EXECUTION_LEASE_CONFLICT', 'DURABLE_EXECUTION_LEASE_INVALID', 'DURABLE_EXECUTION_LEASE_TIMEOUT'],
      inputErrorCode: 'DURABLE_EXECUTION_LEASE_INVALID',
      responseDescription: 'The lease now held.',
    },
  },
  renewExecutionLease: {
    kind: 'write',
    host: 'log',
    input: leaseRenewRequestSchema,
    output: leaseRecordSchema,
    rpcArgs: (fence: ExecutionFenceInput, options: { ttlMs: number }) => ({
      fence,
      ttlMs: typeof options === 'object' && options !== null ? options.ttlMs : undefined,
    }),
    leaseIdOf: leaseIdOfFence,
    http: {
      method: 'post',
      path: HTTP_PATHS.leaseRenew,
      scope: 'lease',
      summary: 'Heartbeat: extend the current lease',
      tags: ['lease'],
      errors: LEASE_FENCE_ERRORS,
      inputErrorCode: 'DURABLE_EXECUTION_LEASE_INVALID',
      responseDescription: 'The renewed lease.',
    },
  },
  releaseExecutionLease: {
    kind: 'write',
    host: 'log',
    input: leaseFenceRequestSchema,
    output: z.null(),
    rpcArgs: (fence: ExecutionFenceInput) => ({ fence }),
    leaseIdOf: leaseIdOfFence,
    http: {
      method: 'post',
      path: HTTP_PATHS.leaseRelease,
      scope: 'lease',
      summary: 'Release the current lease (idempotent for its holder)',
      tags: ['lease'],
      errors: LEASE_FENCE_ERRORS,
      inputErrorCode: 'DURABLE_EXECUTION_LEASE_INVALID',
      responseDescription: 'Released.',
      answer: OK_ANSWER,
    },
  },
  assertExecutionLease: {
    // Changes nothing, but a fence check whose answer is lost reports the lease timeout, as over HTTP.
    kind: 'write',
    host: 'log',
    input: leaseFenceRequestSchema,
    output: z.null(),
    rpcArgs: (fence: ExecutionFenceInput) => ({ fence }),
    leaseIdOf: leaseIdOfFence,
    http: {
      method: 'post',
      path: HTTP_PATHS.leaseAssert,
      scope: 'lease',
      summary: 'Check that a fence names the current active lease',
      tags: ['lease'],
      errors: ['DURABLE_EXECUTION_LEASE_LOST', 'DURABLE_EXECUTION_LEASE_REQUIRED', 'DURABLE_EXECUTION_LEASE_INVALID'],
      inputErrorCode: 'DURABLE_EXECUTION_LEASE_INVALID',
      responseDescription: 'The fence is current.',
      answer: OK_ANSWER,
    },
  },
  inspectExecutionLease: {
    kind: 'read',
    host: 'log',
    input: noInput,
    output: leaseRecordSchema.nullable(),
    rpcArgs: () => ({}),
  },
  requiresExecutionLease: {
    kind: 'read',
    host: 'log',
    input: noInput,
    output: z.boolean(),
    rpcArgs: () => ({}),
  },
  leaseState: {
    kind: 'read',
    host: 'log',
    input: noInput,
    output: leaseInspectResponseSchema,
    http: {
      method: 'get',
      path: HTTP_PATHS.lease,
      scope: 'lease',
      operationId: 'inspectExecutionLease',
      summary: 'The persisted lease state and whether appends must be fenced',
      tags: ['lease'],
      errors: ['DURABLE_EVENT_UNAVAILABLE'],
      responseDescription: 'Lease state.',
    },
  },
  readEventDigests: {
    kind: 'read',
    host: 'log',
    input: z.strictObject({
      after: integerQuery(0, Number.MAX_SAFE_INTEGER, 'after').optional(),
      limit: integerQuery(1, MAX_READ_LIMIT, 'limit').optional(),
    }),
    output: eventDigestsResponseSchema,
    http: {
      method: 'get',
      path: HTTP_PATHS.digests,
      scope: 'read',
      summary: 'The stored content digest of each event after `after` (default 0), at most `limit` (default and maximum 1000)',
      description:
        'One row per stored event, in sequence order; `digest` is `eventDigest` of the event as written (null for rows written before storage schema 5). `agent-ledger verify` compares them with the events it reads.',
      tags: ['events'],
      errors: ['DURABLE_EVENT_INVALID_INPUT'],
      responseDescription: 'The digests.',
    },
  },
  readCheckpoint: {
    // The slice at `offset` (default 0) of the stored checkpoint, at most `length` bytes (default
    // and maximum CHECKPOINT_SLICE_BYTES), or null: a record may exceed one RPC value (32 MiB).
    kind: 'read',
    host: 'checkpoint',
    input: z.strictObject({ offset: z.number().int().min(0).optional(), length: z.number().int().min(1).optional() }),
    output: checkpointSliceSchema.nullable(),
    rpcArgs: (offset?: number, length?: number) => ({ offset, length }),
  },
  writeCheckpoint: {
    // Replaces the stored checkpoint with a record that crosses in one RPC value.
    kind: 'replace',
    host: 'checkpoint',
    input: checkpointRecordSchema,
    output: z.null(),
    rpcArgs: (record: z.output<typeof checkpointRecordSchema>) => record,
  },
  writeCheckpointSlice: {
    // One slice of a whole record larger than one RPC value, in order from offset 0
    // (`src/edge/checkpoint-uploads.ts`): true once the last one is in and the record is written.
    kind: 'replace',
    host: 'checkpoint',
    input: checkpointWriteSliceSchema,
    output: z.boolean(),
    rpcArgs: (slice: z.output<typeof checkpointWriteSliceSchema>) => slice,
  },
  extendCheckpoint: {
    // Appends the tail of a record that extends the stored one when the stored record is exactly
    // the prefix it builds on: true; otherwise nothing is written, false (send the record whole).
    kind: 'replace',
    host: 'checkpoint',
    input: checkpointExtensionSchema,
    output: z.boolean(),
    rpcArgs: (extension: z.output<typeof checkpointExtensionSchema>) => extension,
  },
  ...RECOVERY_ROWS,
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
