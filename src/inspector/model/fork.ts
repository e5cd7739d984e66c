/**
 * Forking a session: a new session from the first N events of another one.
 *
 * The fork's first event is its own `session_created { source: 'fork', parentSessionId }`; events
 * 2..N are copied with {@link copySessionEvents} (idempotent and resumable: running the same fork
 * again verifies and appends nothing). {@link rerunRepeats} answers the question an operator asks
 * before forking: which tool calls would a rerun from event N execute again, and how dangerous is
 * each (its side-effect class).
 */
import type { DurableEventStore } from '../../core/store.js';
import type { SideEffect } from '../../protocol/event-payloads.js';
import { DurableEventStoreError } from '../../protocol/errors.js';
import type { DurableEventEnvelope } from '../../protocol/events.js';
import type { SessionId } from '../../protocol/ids.js';
import { copySessionEvents, type CopyProgress } from './event-copy.js';
import { correlationOf } from './timeline.js';

/** A tool call a rerun from the fork point would execute again. */
interface RepeatedToolCall {
  toolAttemptId: string;
  toolCallId: string;
  toolName: string;
  sideEffect: SideEffect;
  /** Where it started in the source log. */
  startedSequence: number;
  /**
   * `after_fork_point`: it started after event N, so the fork has not even scheduled or started it;
   * `unfinished_at_fork_point`: it started at or before N and ended after, so the fork holds a started
   * tool with no outcome, which recovery retries (`pure`/`idempotent`) or must reconcile (`non_idempotent`).
   */
  position: 'after_fork_point' | 'unfinished_at_fork_point';
  /** The terminal event type it reached in the source, or `null` if it has none there either. */
  sourceOutcome: string | null;
}

/** What a rerun from the fork point would repeat. */
interface RerunReport {
  at: number;
  tools: RepeatedToolCall[];
  /** Model attempts started after the fork point (they would be paid for again). */
  modelAttempts: number;
}

const TOOL_TERMINALS = new Set(['tool_completed', 'tool_failed', 'tool_cancelled', 'tool_outcome_unknown']);

/**
 * Lists the tool calls a rerun from event `at` would execute again, in source order.
 *
 * @example
 * rerunRepeats(events, 12).tools.filter((tool) => tool.sideEffect === 'non_idempotent');
 */
export function rerunRepeats(events: readonly DurableEventEnvelope[], at: number): RerunReport {
  const started = new Map<string, RepeatedToolCall>();
  let modelAttempts = 0;
  for (const event of events) {
    if (event.type === 'tool_started') {
      started.set(event.toolAttemptId, {
        toolAttemptId: event.toolAttemptId,
        toolCallId: event.data.toolCallId,
        toolName: event.data.toolName,
        sideEffect: event.data.sideEffect,
        startedSequence: event.sequence,
        position: event.sequence > at ? 'after_fork_point' : 'unfinished_at_fork_point',
        sourceOutcome: null,
      });
    } else if (TOOL_TERMINALS.has(event.type) && correlationOf(event, 'toolAttemptId') !== undefined) {
      const attemptId = correlationOf(event, 'toolAttemptId') ?? '';
      const tool = started.get(attemptId);
      if (tool !== undefined) {
        tool.sourceOutcome = event.type;
        // Settled before the fork point: the fork holds its outcome, nothing repeats.
        if (event.sequence <= at) started.delete(attemptId);
      }
    } else if (event.type === 'model_request_started' && event.sequence > at) {
      modelAttempts += 1;
    }
  }
  return { at, tools: [...started.values()].sort((a, b) => a.startedSequence - b.startedSequence), modelAttempts };
}

/** Options of {@link forkSession}. */
interface ForkSessionOptions {
  /** Copy the first `at` events (>= 1). */
  at: number;
  newSessionId: SessionId;
  /** Where the fork is written (default: the source store). */
  target?: DurableEventStore;
  signal?: AbortSignal;
  onProgress?: (progress: CopyProgress) => void;
}

/** What {@link forkSession} did. */
export interface ForkSessionResult {
  sessionId: SessionId;
  parentSessionId: SessionId;
  at: number;
  appended: number;
  verified: number;
  headSequence: number | null;
  rerun: RerunReport;
}

/**
 * Creates (or verifies) the fork and reports what a rerun from its end would repeat.
 *
 * @throws DurableEventStoreError `DURABLE_EVENT_INVALID_INPUT` for `at` outside `1..head`
 */
export async function forkSession(
  store: DurableEventStore,
  sessionId: SessionId,
  options: ForkSessionOptions,
): Promise<ForkSessionResult> {
  if (!Number.isSafeInteger(options.at) || options.at < 1) {
    throw new DurableEventStoreError('DURABLE_EVENT_INVALID_INPUT', `--at must be an integer >= 1, got ${String(options.at)}`);
  }
  if (options.newSessionId === sessionId) {
    throw new DurableEventStoreError('DURABLE_EVENT_INVALID_INPUT', 'the fork needs a session ID other than its parent');
  }
  const events: DurableEventEnvelope[] = [];
  let after: DurableEventEnvelope | undefined;
  for (;;) {
    const page = await store.read(sessionId, {
      ...(after === undefined ? {} : { after: after.sequence }),
      limit: 1000,
      ...(options.signal === undefined ? {} : { signal: options.signal }),
    });
    events.push(...page.events);
    after = page.events[page.events.length - 1];
    if (!page.hasMore || after === undefined) break;
  }
  if (options.at > events.length) {
    throw new DurableEventStoreError(
      'DURABLE_EVENT_INVALID_INPUT',
      `session ${sessionId} has ${events.length} events; --at ${options.at} is past its head`,
    );
  }
  const copied = await copySessionEvents(store, sessionId, options.target ?? store, options.newSessionId, {
    upTo: options.at,
    firstDraft: { type: 'session_created', data: { source: 'fork', parentSessionId: sessionId } },
    ...(options.signal === undefined ? {} : { signal: options.signal }),
    ...(options.onProgress === undefined ? {} : { onProgress: options.onProgress }),
  });
  return {
    sessionId: options.newSessionId,
    parentSessionId: sessionId,
    at: options.at,
    appended: copied.appended,
    verified: copied.verified,
    headSequence: copied.headSequence,
    rerun: rerunRepeats(events, options.at),
  };
}
