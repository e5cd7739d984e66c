/** Execution leases: the process-local handle with heartbeats, fencing and a fail-closed watchdog. */
export { DurableExecutionLease, withExecutionLease, type DurableExecutionLeaseBody } from './execution-lease.js';
export { type DurableExecutionLeaseOptions } from './lease-options.js';
