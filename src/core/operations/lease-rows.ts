/** The execution-lease rows of the session operation table, and the lease schemas the HTTP API shares. */
import { z } from 'zod';
import { sessionIdSchema } from '../../protocol/events.js';
import { HTTP_PATHS } from '../../protocol/http-paths.js';
import { MAX_ID_LENGTH, isValidId, type FencingToken, type WorkerId } from '../../protocol/ids.js';
import { MAX_LEASE_TTL_MS, MIN_LEASE_TTL_MS } from '../../protocol/limits.js';
import { noInput, OK_ANSWER, type OperationSpec } from './spec.js';


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

const leaseIdOfFence = (input: unknown): string | undefined => {
  const fence = typeof input === 'object' && input !== null ? (input as { fence?: unknown }).fence : undefined;
  const leaseId = typeof fence === 'object' && fence !== null ? (fence as { leaseId?: unknown }).leaseId : undefined;
  return typeof leaseId === 'string' ? leaseId : undefined;
};

const LEASE_FENCE_ERRORS = ['DURABLE_EXECUTION_LEASE_LOST', 'DURABLE_EXECUTION_LEASE_INVALID', 'DURABLE_EXECUTION_LEASE_TIMEOUT'] as const;

/** The lease rows (host `log`). */
export const LEASE_ROWS = {
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
} as const satisfies Record<string, OperationSpec>;
