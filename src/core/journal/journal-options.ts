/**
 * Options, inputs and results of {@link DurableSessionJournal}, and their validation.
 *
 * Options are checked once at `open`; a bad value throws `DurableSessionJournalError` before any
 * store call. Commands are checked on every `commit`: the command ID, a non-empty list of drafts,
 * each draft's own `commandId` (absent or equal: the journal stamps it), each draft's strict
 * schema, and the shape of `expectedHeadSequence`.
 */
import { checkTimeoutMs } from '../abort.js';
import type { DurableExecutionFence, DurableExecutionLeaseStore } from '../store.js';
import { fastParseDraft } from '../../protocol/draft-fast-path.js';
import { DurableSessionJournalError } from '../../protocol/errors.js';
import {
  safeParseDurableEventDraft,
  type DurableEventDraft,
  type DurableEventEnvelope,
} from '../../protocol/events.js';
import { describeInvalidId, type CommandId, type EventSequence } from '../../protocol/ids.js';
import {
  DEFAULT_READ_LIMIT,
  DEFAULT_STORE_TIMEOUT_MS,
  MAX_BATCH_EVENTS,
  MAX_DURABLE_STORE_TIMEOUT_MS,
  MAX_READ_LIMIT,
} from '../../protocol/limits.js';
import type { DurableSessionProjection } from '../projector/projection-types.js';
import { resolveCheckpointPolicy, type CheckpointSettings, type DurableCheckpointPolicy } from '../checkpoint/policy.js';

/** Default number of refresh-and-retry rounds after explicit compare-and-append conflicts. */
const DEFAULT_MAX_CONFLICT_RETRIES = 3;
/** Largest accepted `maxConflictRetries`. */
const MAX_CONFLICT_RETRIES = 100;

/** What the journal needs from an execution lease: its fence, and a signal that aborts once ownership is lost. */
export interface DurableJournalExecutionLease {
  readonly fence: DurableExecutionFence;
  readonly signal: AbortSignal;
}

/** Options of {@link DurableSessionJournal.open}. */
export interface DurableSessionJournalOptions {
  /** Deadline of each store call, in ms (default 15 000, at most `MAX_DURABLE_STORE_TIMEOUT_MS`). */
  storeTimeoutMs?: number;
  /** Refresh-and-retry rounds after explicit compare-and-append conflicts (default 3). Never used for unknown outcomes. */
  maxConflictRetries?: number;
  /** Every append carries `executionLease.fence`; no commit starts once `executionLease.signal` aborted. */
  executionLease?: DurableJournalExecutionLease;
  /** When given without `executionLease`, `open` refuses a session whose lease state requires one. */
  executionLeaseStore?: DurableExecutionLeaseStore;
  /** Cancels `open` (loading the log). */
  signal?: AbortSignal;
  /** Events per read while loading and refreshing, 1..1000 (default 100). */
  pageSize?: number;
  /**
   * Projection checkpoints (used when the store implements `readCheckpoint`/`writeCheckpoint`):
   * the policy, or `false` to neither read nor write them. See `docs/checkpoints.md`.
   */
  checkpoints?: DurableCheckpointPolicy | false;
}

/** Validated journal settings. */
export interface JournalSettings {
  storeTimeoutMs: number;
  maxConflictRetries: number;
  pageSize: number;
  executionLease: DurableJournalExecutionLease | undefined;
  executionLeaseStore: DurableExecutionLeaseStore | undefined;
  checkpoints: CheckpointSettings;
}

/** A draft as a command carries it: `commandId` may be omitted (the journal stamps it). */
export type DurableCommandEventDraft = DurableEventDraft extends infer D
  ? D extends DurableEventDraft
    ? Omit<D, 'commandId'> & { commandId?: CommandId }
    : never
  : never;

/** A command to commit. */
export interface DurableJournalCommand {
  /** Caller-chosen, stable identity: retrying the same command must reuse it. */
  commandId: CommandId;
  /** One or more drafts, committed as one atomic batch. */
  events: readonly DurableCommandEventDraft[];
  /**
   * Pins the decision to an observed head: the command commits only while the log's head is
   * exactly this value (`null`: the log is empty). Omit it to commit after whatever the head is.
   */
  expectedHeadSequence?: EventSequence | null;
}

/**
 * How a commit ended:
 * - `committed`: this call appended the command;
 * - `replayed`: the journal already held the identical command; nothing was appended;
 * - `reconciled`: the identical command was found in the log after a conflict or a failed write
 *   (a competitor, or an earlier uncertain attempt, committed it); nothing was appended.
 */
export type DurableCommitStatus = 'committed' | 'replayed' | 'reconciled';

/** Result of {@link DurableSessionJournal.commit}. */
export interface DurableCommitResult {
  status: DurableCommitStatus;
  commandId: CommandId;
  /** The command's events as stored. */
  events: DurableEventEnvelope[];
  /** The journal's head after the call. */
  headSequence: EventSequence;
  /** The projection after the call. */
  projection: DurableSessionProjection;
}

/** Options of a single journal call. */
export interface DurableJournalCallOptions {
  signal?: AbortSignal;
}

/** A command after validation: stamped, strictly parsed drafts. */
export interface PreparedCommand {
  commandId: CommandId;
  drafts: DurableEventDraft[];
  /** True when the caller pinned the head. */
  pinned: boolean;
  expectedHeadSequence: EventSequence | null;
}

function invalid(message: string, details?: Record<string, unknown>): DurableSessionJournalError {
  return new DurableSessionJournalError(message, details === undefined ? undefined : { details });
}

function checkInteger(name: string, value: unknown, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min || value > max) {
    throw invalid(`${name} must be an integer in ${min}..${max}, got ${String(value)}`);
  }
  return value;
}

/** Validates `open` options. */
export function resolveJournalOptions(options: DurableSessionJournalOptions | undefined): JournalSettings {
  const o = options ?? {};
  const storeTimeoutMs =
    o.storeTimeoutMs === undefined
      ? DEFAULT_STORE_TIMEOUT_MS
      : checkTimeoutMs(o.storeTimeoutMs, MAX_DURABLE_STORE_TIMEOUT_MS, (message) => invalid(`storeTimeoutMs: ${message}`));
  const maxConflictRetries =
    o.maxConflictRetries === undefined
      ? DEFAULT_MAX_CONFLICT_RETRIES
      : checkInteger('maxConflictRetries', o.maxConflictRetries, 0, MAX_CONFLICT_RETRIES);
  const pageSize = o.pageSize === undefined ? DEFAULT_READ_LIMIT : checkInteger('pageSize', o.pageSize, 1, MAX_READ_LIMIT);
  const lease = o.executionLease;
  if (
    lease !== undefined &&
    (typeof lease !== 'object' ||
      lease === null ||
      typeof lease.fence !== 'object' ||
      lease.fence === null ||
      typeof lease.signal?.aborted !== 'boolean')
  ) {
    throw invalid('executionLease must provide a fence and an AbortSignal');
  }
  return {
    storeTimeoutMs,
    maxConflictRetries,
    pageSize,
    executionLease: lease,
    executionLeaseStore: o.executionLeaseStore,
    checkpoints: resolveCheckpointPolicy(o.checkpoints),
  };
}

/** Validates a command and stamps its ID on every draft. */
export function prepareCommand(command: unknown): PreparedCommand {
  if (typeof command !== 'object' || command === null) throw invalid('a command must be an object');
  const c = command as Partial<Record<keyof DurableJournalCommand, unknown>>;
  const idProblem = describeInvalidId(c.commandId);
  if (idProblem !== undefined) throw invalid(`commandId ${idProblem}`);
  // SAFETY: validated just above.
  const commandId = c.commandId as CommandId;
  if (!Array.isArray(c.events) || c.events.length === 0) {
    throw invalid(`command ${commandId} needs a non-empty array of events`);
  }
  if (c.events.length > MAX_BATCH_EVENTS) {
    throw invalid(`command ${commandId} has ${c.events.length} events; a command holds at most ${MAX_BATCH_EVENTS}`);
  }
  const drafts = c.events.map((event: unknown, index: number) => {
    if (typeof event !== 'object' || event === null || Array.isArray(event)) {
      throw invalid(`events[${index}] must be an event draft object`, { index });
    }
    const own = (event as { commandId?: unknown }).commandId;
    if (own !== undefined && own !== commandId) {
      throw invalid(`events[${index}] carries commandId ${String(own)}, not the command's ${commandId}`, { index });
    }
    const stamped = { ...event, commandId };
    // The zod-free fast path returns exactly what zod would, or declines; zod then decides (and names the problem).
    const fast = fastParseDraft(stamped);
    if (fast !== undefined) return fast;
    const parsed = safeParseDurableEventDraft(stamped);
    if (!parsed.ok) throw invalid(`events[${index}]: ${parsed.problem}`, { index });
    return parsed.value;
  });
  const pinned = c.expectedHeadSequence !== undefined;
  const expected = c.expectedHeadSequence ?? null;
  if (expected !== null && (typeof expected !== 'number' || !Number.isSafeInteger(expected) || expected < 1)) {
    throw invalid('expectedHeadSequence must be undefined, null or an integer sequence >= 1');
  }
  // SAFETY: validated just above.
  return { commandId, drafts, pinned, expectedHeadSequence: expected as EventSequence | null };
}
