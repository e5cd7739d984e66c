/**
 * The registry of built-in conformance checks, in run order: append and compare-and-append,
 * validation and limits, cursor reads, concurrency, cancellation, watch, execution leases, and
 * durability (restart / failed commit), projection checkpoints. Each topic lives in its own `checks-*.ts` file.
 */
import type { DurableEventStore } from '../core/store.js';
import { abortChecks } from './checks-abort.js';
import { appendChecks } from './checks-append.js';
import { checkpointChecks } from './checks-checkpoint.js';
import { concurrencyChecks } from './checks-concurrency.js';
import { leaseChecks } from './checks-lease.js';
import { readChecks } from './checks-read.js';
import { durabilityChecks } from './checks-restart.js';
import { validationChecks } from './checks-validation.js';
import { watchChecks } from './checks-watch.js';
import type { ConformanceCheck } from './types.js';

/** Every built-in check. Names are unique; pass them to `skip` to leave one out (with a reason). */
export const storeConformanceChecks: readonly ConformanceCheck<DurableEventStore>[] = Object.freeze([
  ...appendChecks,
  ...validationChecks,
  ...readChecks,
  ...concurrencyChecks,
  ...abortChecks,
  ...watchChecks,
  ...leaseChecks,
  ...durabilityChecks,
  ...checkpointChecks,
]);
