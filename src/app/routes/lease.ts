/**
 * Execution-lease routes: acquire, renew (heartbeat), release, assert, inspect.
 *
 * Each maps one-to-one onto a `DurableExecutionLeaseStore` method of the session object. A lease
 * call whose RPC fails in transit has an unknown outcome; it is reported as
 * `DURABLE_EXECUTION_LEASE_TIMEOUT` (carrying the `leaseId` on acquisition), the code that tells a
 * caller to retry with the same `leaseId` so the store reconciles instead of conflicting.
 */
import type { DurableExecutionLeaseRecord } from '../../core/store.js';
import { DurableExecutionLeaseTimeoutError, DurableEventStoreError } from '../../protocol/errors.js';
import { defineSessionRoute, type RouteDefinition } from '../route-kit.js';
import {
  leaseAcquireRequestSchema,
  leaseFenceRequestSchema,
  leaseInspectResponseSchema,
  leaseRecordSchema,
  leaseRenewRequestSchema,
  okResponseSchema,
  fenceOf,
} from '../schemas.js';
import { callObject } from '../session-rpc.js';
import { HTTP_PATHS } from '../../protocol/http-paths.js';

function leaseOutcomeUnknown(leaseId: string | undefined): (cause: unknown) => DurableExecutionLeaseTimeoutError {
  return (cause) =>
    new DurableExecutionLeaseTimeoutError('the session object did not answer; the lease call outcome is unknown', {
      cause,
      ...(leaseId === undefined ? {} : { leaseId }),
    });
}

function unavailable(cause: unknown): DurableEventStoreError {
  return new DurableEventStoreError('DURABLE_EVENT_UNAVAILABLE', 'the session object did not answer', { cause });
}

const leaseInvalid = () => 'DURABLE_EXECUTION_LEASE_INVALID' as const;

/** The lease routes. */
export function leaseRoutes(): RouteDefinition[] {
  return [
    defineSessionRoute({
      method: 'post',
      path: HTTP_PATHS.leaseAcquire,
      operationId: 'acquireExecutionLease',
      summary: 'Acquire the execution lease (or reconcile a retried acquisition)',
      description:
        'A takeover issues the next fencing token. Retrying with the same leaseId and ownerId while the lease is active returns the current record.',
      tags: ['lease'],
      scope: 'lease',
      body: leaseAcquireRequestSchema,
      bodyErrorCode: leaseInvalid,
      response: { schema: leaseRecordSchema, description: 'The lease now held.' },
      errors: ['DURABLE_EXECUTION_LEASE_CONFLICT', 'DURABLE_EXECUTION_LEASE_INVALID', 'DURABLE_EXECUTION_LEASE_TIMEOUT'],
      async handle({ sessionId, object, body }): Promise<DurableExecutionLeaseRecord> {
        return callObject(
          () => object.acquireExecutionLease(sessionId, { ownerId: body.ownerId, leaseId: body.leaseId, ttlMs: body.ttlMs }),
          leaseOutcomeUnknown(body.leaseId),
        );
      },
    }),
    defineSessionRoute({
      method: 'post',
      path: HTTP_PATHS.leaseRenew,
      operationId: 'renewExecutionLease',
      summary: 'Heartbeat: extend the current lease',
      tags: ['lease'],
      scope: 'lease',
      body: leaseRenewRequestSchema,
      bodyErrorCode: leaseInvalid,
      response: { schema: leaseRecordSchema, description: 'The renewed lease.' },
      errors: ['DURABLE_EXECUTION_LEASE_LOST', 'DURABLE_EXECUTION_LEASE_INVALID', 'DURABLE_EXECUTION_LEASE_TIMEOUT'],
      async handle({ sessionId, object, body }): Promise<DurableExecutionLeaseRecord> {
        return callObject(
          () => object.renewExecutionLease(sessionId, fenceOf(body.fence), { ttlMs: body.ttlMs }),
          leaseOutcomeUnknown(body.fence.leaseId),
        );
      },
    }),
    defineSessionRoute({
      method: 'post',
      path: HTTP_PATHS.leaseRelease,
      operationId: 'releaseExecutionLease',
      summary: 'Release the current lease (idempotent for its holder)',
      tags: ['lease'],
      scope: 'lease',
      body: leaseFenceRequestSchema,
      bodyErrorCode: leaseInvalid,
      response: { schema: okResponseSchema, description: 'Released.' },
      errors: ['DURABLE_EXECUTION_LEASE_LOST', 'DURABLE_EXECUTION_LEASE_INVALID', 'DURABLE_EXECUTION_LEASE_TIMEOUT'],
      async handle({ sessionId, object, body }) {
        await callObject(() => object.releaseExecutionLease(sessionId, fenceOf(body.fence)), leaseOutcomeUnknown(body.fence.leaseId));
        return { ok: true as const };
      },
    }),
    defineSessionRoute({
      method: 'post',
      path: HTTP_PATHS.leaseAssert,
      operationId: 'assertExecutionLease',
      summary: 'Check that a fence names the current active lease',
      tags: ['lease'],
      scope: 'lease',
      body: leaseFenceRequestSchema,
      bodyErrorCode: leaseInvalid,
      response: { schema: okResponseSchema, description: 'The fence is current.' },
      errors: ['DURABLE_EXECUTION_LEASE_LOST', 'DURABLE_EXECUTION_LEASE_REQUIRED', 'DURABLE_EXECUTION_LEASE_INVALID'],
      async handle({ sessionId, object, body }) {
        await callObject(() => object.assertExecutionLease(sessionId, fenceOf(body.fence)), leaseOutcomeUnknown(body.fence.leaseId));
        return { ok: true as const };
      },
    }),
    defineSessionRoute({
      method: 'get',
      path: HTTP_PATHS.lease,
      operationId: 'inspectExecutionLease',
      summary: 'The persisted lease state and whether appends must be fenced',
      tags: ['lease'],
      scope: 'lease',
      response: { schema: leaseInspectResponseSchema, description: 'Lease state.' },
      errors: ['DURABLE_EVENT_UNAVAILABLE'],
      async handle({ sessionId, object }) {
        const [lease, requiresExecutionLease] = await Promise.all([
          callObject(() => object.inspectExecutionLease(sessionId), unavailable),
          callObject(() => object.requiresExecutionLease(sessionId), unavailable),
        ]);
        return { lease, requiresExecutionLease };
      },
    }),
  ];
}
