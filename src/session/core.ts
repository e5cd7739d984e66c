/**
 * What every part of a Session shares: the journal writer, the history fold, the frame hub, the
 * lease, settings, and the internal signals that unwind a run.
 *
 * `commit` is the only way the Session writes: it stamps `occurredAt` from the injected clock,
 * resubmits a command whose outcome is unknown (the journal then only reconciles by reading, it
 * never writes twice), maps a lost lease or an unreconcilable command to {@link ExecutionStopped},
 * and, once the command is in the log, folds it into the history and publishes it on the stream.
 * `commitBeforeEffect` is the commit that licenses a side effect (see there).
 */
import type { LanguageModelV3CallOptions } from '@ai-sdk/provider';
import type { DurableCommandEventDraft, DurableCommitResult } from '../core/journal/journal-options.js';
import type { DurableSessionJournal } from '../core/journal/journal.js';
import type { DurableExecutionLease } from '../core/lease/execution-lease.js';
import type { DurableEventStore } from '../core/store.js';
import type { TimeSource } from '../core/time.js';
import { isoOf } from '../core/log-engine.js';
import {
  isDurableCommandOutcomeUnknownError,
  isDurableEventSequenceConflictError,
  isDurableExecutionLeaseError,
  isDurableExecutionLeaseTimeoutError,
} from '../protocol/errors.js';
import type { DurableReason, ModelIdentity, ModelSelection } from '../protocol/event-payloads.js';
import { CommandId, type EventSequence, type InputId, type SessionId } from '../protocol/ids.js';
import type { FrameHub } from './frames.js';
import type { HistoryProjection } from './history.js';
import type { AnySessionTool, SessionClock, SessionIdKind, SessionLanguageModel, SessionPermissionHandler } from './types.js';

/** Resubmissions of a command whose outcome is unknown before the Session stops. */
const UNKNOWN_OUTCOME_RESUBMITS = 3;

/** Local execution must stop without a durable terminal event. */
export class ExecutionStopped extends Error {
  constructor(
    readonly reason: 'lease_lost' | 'outcome_unknown' | 'handoff' | 'superseded' | 'error',
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'ExecutionStopped';
  }
}

/** The run was asked to stop (abort, a `now` Request, handoff); unwinds the driver to its stop handling. */
export class StopRequested extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StopRequested';
  }
}

/** The Request reached its terminal event (already committed); unwinds the driver. */
export class RequestEnded extends Error {
  constructor() {
    super('request ended');
    this.name = 'RequestEnded';
  }
}

/** Why a run is being stopped on purpose. */
export type StopIntent =
  | { kind: 'interrupt'; reason: DurableReason; byInputId?: InputId }
  | { kind: 'handoff' }
  | { kind: 'lost'; error: unknown };

/** Settings after defaults. */
export interface SessionSettings {
  model: SessionLanguageModel;
  modelIdentity: ModelIdentity | undefined;
  resolveModel: ((selection: ModelSelection) => SessionLanguageModel | undefined) | undefined;
  callSettings: Omit<LanguageModelV3CallOptions, 'prompt' | 'tools' | 'abortSignal'> | undefined;
  streaming: boolean;
  system: string | undefined;
  tools: Readonly<Record<string, AnySessionTool>>;
  maxTurns: number;
  onPermission: SessionPermissionHandler | undefined;
  clock: SessionClock;
  /** Timers of the tools' durability port, lease heartbeats and lease-window deadlines. */
  time: TimeSource;
  durability: boolean;
}

/** Shared state of one Session object. */
export interface SessionCore {
  readonly sessionId: SessionId;
  /** The store as the host gave it (the journal reads through a tap that feeds the history). */
  readonly store: DurableEventStore;
  readonly journal: DurableSessionJournal;
  readonly lease: DurableExecutionLease | undefined;
  readonly history: HistoryProjection;
  readonly hub: FrameHub;
  readonly settings: SessionSettings;
  newId(kind: SessionIdKind): string;
}

/** The selection persisted for a model. */
export function selectionOf(model: SessionLanguageModel): ModelSelection {
  return { provider: model.provider, model: model.modelId };
}

/**
 * Commits one command (see the module header) and returns the journal's result.
 *
 * `events` are drafts the caller built for this command alone: `commit` stamps `occurredAt` on
 * them in place (the key lands last, where a spread copy put it), because copying drafts of a
 * dozen shapes through one spread site is a slow generic clone in V8, once per event.
 */
export async function commit(
  core: SessionCore,
  commandId: string,
  events: DurableCommandEventDraft[],
  expectedHeadSequence?: EventSequence | null,
): Promise<DurableCommitResult> {
  const occurredAt = isoOf(core.settings.clock());
  for (const event of events) event.occurredAt = occurredAt;
  const command =
    expectedHeadSequence === undefined ? { commandId: CommandId(commandId), events } : { commandId: CommandId(commandId), events, expectedHeadSequence };
  let result: DurableCommitResult;
  for (let attempt = 0; ; attempt++) {
    try {
      result = await core.journal.commit(command);
      break;
    } catch (error) {
      if (isDurableExecutionLeaseError(error) || isDurableExecutionLeaseTimeoutError(error)) {
        throw new ExecutionStopped('lease_lost', `the execution lease was lost: ${(error as Error).message}`, { cause: error });
      }
      if (isDurableCommandOutcomeUnknownError(error)) {
        if (attempt < UNKNOWN_OUTCOME_RESUBMITS) continue;
        throw new ExecutionStopped('outcome_unknown', `command ${commandId} has an unknown outcome`, { cause: error });
      }
      throw error;
    }
  }
  if (result.status !== 'replayed') {
    core.history.apply(result.events);
    if (core.hub.listening) for (const event of result.events) core.hub.publish({ type: 'durable_event', event });
  }
  return result;
}

/**
 * Commits the command that licenses a side effect — `tool_started`, `model_request_started`, the
 * mark of an in-place tool retry — so that returning means this Session's own append put it in the
 * log, on the very state it decided from. The side effect runs only after this returns.
 * - The command ID is `<prefix>:<random>`, unique to this call (kept across its resubmissions after
 *   an unknown outcome): a `reconciled` or `replayed` answer can only be this call's own earlier
 *   write, never another writer's command with the same content (two processes resuming one
 *   session build identical events, to the millisecond under an injected clock).
 * - The command is pinned to the journal's head: if anyone else wrote since (a competitor that
 *   started the same call, or anything else), it fails with `ExecutionStopped('superseded')`,
 *   which stops this Session without writing anything more; the side effect does not run.
 */
export async function commitBeforeEffect(core: SessionCore, prefix: string, events: DurableCommandEventDraft[]): Promise<DurableCommitResult> {
  const head = core.journal.getHeadSequence();
  try {
    return await commit(core, `${prefix}:${crypto.randomUUID()}`, events, head);
  } catch (error) {
    if (isDurableEventSequenceConflictError(error)) {
      throw new ExecutionStopped(
        'superseded',
        `another writer advanced session ${core.sessionId} before this Session could start a side effect (${prefix}); nothing was run or written`,
        { cause: error },
      );
    }
    throw error;
  }
}

/**
 * Confirms with the lease store, right before model or tool I/O, that this worker still owns the
 * session (no-op without a lease).
 */
export async function validateOwnership(core: SessionCore): Promise<void> {
  const lease = core.lease;
  if (lease === undefined) return;
  try {
    await lease.assert();
  } catch (error) {
    throw new ExecutionStopped('lease_lost', `the execution lease was lost: ${(error as Error).message}`, { cause: error });
  }
}
