/**
 * Journal conformance checks: `DurableSessionJournal` run against the store under test.
 *
 * The journal's decisions live in core, but they rest on the store keeping its promises: a
 * compare-and-append that refuses a stale head, reads that show exactly what was written, and
 * failures that do not pretend nothing was written. These checks drive the journal through
 * commits, idempotent replays, conflicts, pinned heads, previews that must write nothing,
 * read-after-failure reconciliation, the uncertain-command fence, and two journals racing on one
 * session. The lifecycle draft builders and the failing-store wrapper are exported for tests.
 */
import { DurableSessionJournal } from '../core/journal/journal.js';
import type { DurableCommandEventDraft, DurableCommitResult } from '../core/journal/journal-options.js';
import type { DurableEventStore } from '../core/store.js';
import {
  DurableEventStoreError,
  isDurableCommandConflictError,
  isDurableCommandOutcomeUnknownError,
  isDurableEventProjectionError,
  isDurableEventSequenceConflictError,
} from '../protocol/errors.js';
import { DurableEventType, type DurableEventEnvelope } from '../protocol/events.js';
import { CommandId, EventSequence, InputId, RequestId, TurnId, type EventId, type SessionId } from '../protocol/ids.js';
import { assert, assertDeepEqual, assertEqual, describeValue, expectRejection, fail } from './assertions.js';
import type { ConformanceContext, ConformanceRequirement } from './types.js';

/**
 * The part of the check context the journal and subscription suites use. It names the store only
 * as a {@link DurableEventStore}, so these checks run unchanged with any store type
 * (`runStoreConformance<MyStore>({ extraChecks: journalConformanceChecks })`).
 */
export type StoreCheckContext = Pick<
  ConformanceContext<DurableEventStore>,
  'store' | 'newSessionId' | 'readAll' | 'expectHead' | 'failNextCommit' | 'checkName'
>;

/** A check that needs only the {@link DurableEventStore} surface: assignable to `ConformanceCheck<S>` for every store type `S`. */
export interface StoreAgnosticCheck {
  name: string;
  requires?: ConformanceRequirement[];
  run(ctx: StoreCheckContext): Promise<void>;
}

type Check = StoreAgnosticCheck;
type Ctx = StoreCheckContext;

/** Builders of valid lifecycle drafts, for journal commands. */
export const lifecycleDrafts = {
  sessionCreated(): DurableCommandEventDraft {
    return { type: DurableEventType.SESSION_CREATED, data: { source: 'create' } };
  },
  sessionClosed(): DurableCommandEventDraft {
    return { type: DurableEventType.SESSION_CLOSED, data: { reason: 'completed' } };
  },
  requestAccepted(requestId: string, input = `input of ${requestId}`): DurableCommandEventDraft {
    return {
      type: DurableEventType.REQUEST_ACCEPTED,
      requestId: RequestId(requestId),
      data: { inputId: InputId(`${requestId}-input`), input, priority: 'next' },
    };
  },
  requestStarted(requestId: string): DurableCommandEventDraft {
    return { type: DurableEventType.REQUEST_STARTED, requestId: RequestId(requestId), data: {} };
  },
  inputApplied(requestId: string, inputId: string): DurableCommandEventDraft {
    return {
      type: DurableEventType.INPUT_APPLIED,
      requestId: RequestId(requestId),
      data: { inputId: InputId(inputId), priority: 'next' },
    };
  },
  turnStarted(requestId: string, turnId: string, turn: number): DurableCommandEventDraft {
    return { type: DurableEventType.TURN_STARTED, requestId: RequestId(requestId), turnId: TurnId(turnId), data: { turn } };
  },
  turnCompleted(requestId: string, turnId: string, turn: number): DurableCommandEventDraft {
    return {
      type: DurableEventType.TURN_COMPLETED,
      requestId: RequestId(requestId),
      turnId: TurnId(turnId),
      data: { turn, hasToolCalls: false },
    };
  },
  turnAborted(requestId: string, turnId: string, turn: number): DurableCommandEventDraft {
    return {
      type: DurableEventType.TURN_ABORTED,
      requestId: RequestId(requestId),
      turnId: TurnId(turnId),
      data: { turn, reason: 'user_abort' },
    };
  },
  /** `request_completed`; pass the Request's latest boundary event as `causationEventId` unless it directly follows a terminal Turn draft. */
  requestCompleted(requestId: string, causationEventId?: EventId, output = `output of ${requestId}`): DurableCommandEventDraft {
    return {
      type: DurableEventType.REQUEST_COMPLETED,
      requestId: RequestId(requestId),
      ...(causationEventId === undefined ? {} : { causationEventId }),
      data: { output },
    };
  },
  requestInterrupted(requestId: string, causationEventId?: EventId): DurableCommandEventDraft {
    return {
      type: DurableEventType.REQUEST_INTERRUPTED,
      requestId: RequestId(requestId),
      ...(causationEventId === undefined ? {} : { causationEventId }),
      data: { reason: 'user_abort' },
    };
  },
};

/**
 * Wraps a store so that its next `failures` appends are performed for real and then reported as
 * `DURABLE_EVENT_WRITE_FAILED`: the "written, but the acknowledgement failed" case (an fsync or
 * unlock error after the bytes reached the log).
 */
export function writtenButFailedStore(store: DurableEventStore, failures = 1): DurableEventStore & { remaining(): number } {
  let left = failures;
  const wrapper: DurableEventStore & { remaining(): number } = {
    async append(sessionId, drafts, options) {
      const result = await store.append(sessionId, drafts, options);
      if (left > 0) {
        left -= 1;
        throw new DurableEventStoreError('DURABLE_EVENT_WRITE_FAILED', 'injected: written, then the acknowledgement failed');
      }
      return result;
    },
    read: (sessionId, options) => store.read(sessionId, options),
    getHeadSequence: (sessionId, options) => store.getHeadSequence(sessionId, options),
    remaining: () => left,
  };
  const watch = store.watch;
  if (typeof watch === 'function') wrapper.watch = (sessionId, listener) => watch.call(store, sessionId, listener);
  return wrapper;
}

async function expectError(
  promise: Promise<unknown>,
  guard: (error: unknown) => boolean,
  name: string,
  what: string,
): Promise<unknown> {
  const error = await expectRejection(promise, what);
  if (!guard(error)) fail(`${what}: expected ${name}, got ${describeValue(error)}`, error);
  return error;
}

function expectStatus(result: DurableCommitResult, status: DurableCommitResult['status'], what: string): void {
  assertEqual(result.status, status, `${what}: status`);
}

function commandSlice(events: readonly DurableEventEnvelope[], commandId: string): DurableEventEnvelope[] {
  return events.filter((event) => event.commandId === commandId);
}

async function createdSession(ctx: Ctx): Promise<{ sessionId: SessionId; journal: DurableSessionJournal }> {
  const sessionId = ctx.newSessionId();
  const journal = await DurableSessionJournal.open(ctx.store, sessionId);
  const created = await journal.commit({ commandId: CommandId('create'), events: [lifecycleDrafts.sessionCreated()] });
  expectStatus(created, 'committed', 'session creation');
  return { sessionId, journal };
}

const commitReplayConflict: Check = {
  name: 'journal-commit-replay-conflict',
  async run(ctx) {
    const { sessionId, journal } = await createdSession(ctx);
    const command = {
      commandId: CommandId('accept-r1'),
      events: [lifecycleDrafts.requestAccepted('r1'), lifecycleDrafts.requestStarted('r1')],
    };
    const committed = await journal.commit(command);
    expectStatus(committed, 'committed', 'first commit');
    assertDeepEqual(
      committed.events.map((event) => [event.sequence, event.type, event.commandId]),
      [
        [2, 'request_accepted', 'accept-r1'],
        [3, 'request_started', 'accept-r1'],
      ],
      'committed events carry sequences and the stamped commandId',
    );
    assertEqual(committed.headSequence, 3, 'head after commit');
    assertEqual(committed.projection.activeRequest?.status, 'started', 'projection after commit');

    const replayed = await journal.commit(command);
    expectStatus(replayed, 'replayed', 'identical resubmission');
    assertDeepEqual(replayed.events, committed.events, 'a replay returns the stored events');
    await ctx.expectHead(sessionId, 3, 'a replay appends nothing');

    await expectError(
      journal.commit({ commandId: command.commandId, events: [lifecycleDrafts.requestAccepted('r1', 'other input')] }),
      isDurableCommandConflictError,
      'DurableCommandConflictError',
      'same commandId, different content',
    );

    const reopened = await DurableSessionJournal.open(ctx.store, sessionId);
    expectStatus(await reopened.commit(command), 'replayed', 'replay through a reopened journal');
    assertEqual((await ctx.readAll(sessionId)).length, 3, 'log length');
  },
};

const pinnedHead: Check = {
  name: 'journal-pinned-head',
  async run(ctx) {
    const { sessionId, journal } = await createdSession(ctx);
    const observed = journal.getHeadSequence();
    assertEqual(observed, 1, 'observed head');
    // An external writer advances the log behind the journal's back.
    const external = await DurableSessionJournal.open(ctx.store, sessionId);
    await external.commit({ commandId: CommandId('external-accept'), events: [lifecycleDrafts.requestAccepted('ext')] });

    const stale = { commandId: CommandId('pinned-accept'), events: [lifecycleDrafts.requestAccepted('pinned')], expectedHeadSequence: observed };
    const error = await expectError(
      journal.commit(stale),
      isDurableEventSequenceConflictError,
      'DurableEventSequenceConflictError',
      'a command pinned to a stale head',
    );
    assert(isDurableEventSequenceConflictError(error) && error.actual === 2, 'the conflict reports the fresh head 2');
    await ctx.expectHead(sessionId, 2, 'a stale pinned command writes nothing');
    assertEqual(journal.getHeadSequence(), 2, 'the journal refreshed to the external head');

    const fresh = await journal.commit({
      commandId: CommandId('pinned-start'),
      events: [lifecycleDrafts.requestStarted('ext')],
      expectedHeadSequence: EventSequence(2),
    });
    expectStatus(fresh, 'committed', 'a command pinned to the current head');
    // A replay of an already committed command skips the head check.
    const replay = await journal.commit({
      commandId: CommandId('pinned-start'),
      events: [lifecycleDrafts.requestStarted('ext')],
      expectedHeadSequence: EventSequence(2),
    });
    expectStatus(replay, 'replayed', 'a pinned replay');
    const competitorReplay = await external.commit({
      commandId: CommandId('pinned-start'),
      events: [lifecycleDrafts.requestStarted('ext')],
      expectedHeadSequence: EventSequence(2),
    });
    expectStatus(competitorReplay, 'reconciled', "a pinned replay of a competitor's command");
  },
};

const previewWritesNothing: Check = {
  name: 'journal-preview-rejects-and-writes-nothing',
  async run(ctx) {
    const { sessionId, journal } = await createdSession(ctx);
    await expectError(
      journal.commit({ commandId: CommandId('orphan-turn'), events: [lifecycleDrafts.turnStarted('none', 't1', 1)] }),
      isDurableEventProjectionError,
      'DurableEventProjectionError',
      'a Turn without a Request',
    );
    const accepted = await journal.commit({
      commandId: CommandId('accept'),
      events: [lifecycleDrafts.requestAccepted('r1'), lifecycleDrafts.requestStarted('r1')],
    });
    const boundary = accepted.events[1]?.eventId;
    assert(boundary !== undefined, 'request_started was stored');
    await expectError(
      journal.commit({ commandId: CommandId('unanchored'), events: [lifecycleDrafts.requestCompleted('r1')] }),
      isDurableEventProjectionError,
      'DurableEventProjectionError',
      'an unanchored request_completed',
    );
    await expectError(
      journal.commit({
        commandId: CommandId('stale-anchor'),
        events: [lifecycleDrafts.requestCompleted('r1', accepted.events[0]?.eventId)],
      }),
      isDurableEventProjectionError,
      'DurableEventProjectionError',
      'a request_completed bound to a stale boundary',
    );
    await ctx.expectHead(sessionId, 3, 'rejected previews write nothing');
    assertEqual(journal.getUncertainCommandId(), null, 'a rejected preview is not uncertain');
    const anchored = await journal.commit({
      commandId: CommandId('complete'),
      events: [lifecycleDrafts.requestCompleted('r1', boundary)],
    });
    expectStatus(anchored, 'committed', 'an anchored request_completed');
    assertEqual(anchored.projection.activeRequest, null, 'the Request ended');
  },
};

const reconcilesWrittenFailure: Check = {
  name: 'journal-reconciles-written-but-failed-append',
  async run(ctx) {
    const sessionId = ctx.newSessionId();
    const failing = writtenButFailedStore(ctx.store);
    const journal = await DurableSessionJournal.open(failing, sessionId);
    const result = await journal.commit({ commandId: CommandId('create'), events: [lifecycleDrafts.sessionCreated()] });
    assertEqual(failing.remaining(), 0, 'the injected failure fired');
    expectStatus(result, 'reconciled', 'a written append whose acknowledgement failed');
    assertEqual(journal.getUncertainCommandId(), null, 'a reconciled command is not uncertain');
    assertEqual((await ctx.readAll(sessionId)).length, 1, 'exactly one copy in the log');
    const next = await journal.commit({ commandId: CommandId('accept'), events: [lifecycleDrafts.requestAccepted('r1')] });
    expectStatus(next, 'committed', 'the journal continues after reconciliation');
  },
};

const fencesUnknownOutcome: Check = {
  name: 'journal-fences-unknown-outcome',
  requires: ['failNextCommit'],
  async run(ctx) {
    const { sessionId, journal } = await createdSession(ctx);
    const command = { commandId: CommandId('accept-unknown'), events: [lifecycleDrafts.requestAccepted('r1')] };
    await ctx.failNextCommit();
    const error = await expectRejection(journal.commit(command), 'a commit whose write fails');
    await ctx.expectHead(sessionId, 1, 'the failed commit wrote nothing');
    if (!isDurableCommandOutcomeUnknownError(error)) {
      // The backend's failure proved nothing was written: the command must not be uncertain.
      assertEqual(journal.getUncertainCommandId(), null, `after ${describeValue(error)}`);
      expectStatus(await journal.commit(command), 'committed', 'a retry after a proven failure');
      return;
    }
    assertEqual(journal.getUncertainCommandId(), command.commandId, 'the uncertain command');
    await expectError(
      journal.commit({ commandId: CommandId('other'), events: [lifecycleDrafts.requestAccepted('r2')] }),
      isDurableCommandOutcomeUnknownError,
      'DurableCommandOutcomeUnknownError',
      'another command while one is uncertain',
    );
    await expectError(
      journal.commit(command),
      isDurableCommandOutcomeUnknownError,
      'DurableCommandOutcomeUnknownError',
      'resubmitting an uncertain command that is still absent',
    );
    await ctx.expectHead(sessionId, 1, 'resubmission only reads');
    // The way out: a new journal, opened after the host verified the log.
    const fresh = await DurableSessionJournal.open(ctx.store, sessionId);
    expectStatus(await fresh.commit(command), 'committed', 'the command through a fresh journal');
  },
};

const racingJournals: Check = {
  name: 'journal-racing-journals-converge',
  async run(ctx) {
    const { sessionId, journal: first } = await createdSession(ctx);
    const second = await DurableSessionJournal.open(ctx.store, sessionId);
    // Pinned to the same observed head: exactly one wins, the other sees the conflict.
    const pinned = await Promise.allSettled([
      first.commit({ commandId: CommandId('pin-a'), events: [lifecycleDrafts.requestAccepted('ra')], expectedHeadSequence: EventSequence(1) }),
      second.commit({ commandId: CommandId('pin-b'), events: [lifecycleDrafts.requestAccepted('rb')], expectedHeadSequence: EventSequence(1) }),
    ]);
    const winners = pinned.filter((result) => result.status === 'fulfilled');
    assertEqual(winners.length, 1, 'pinned racers: winners');
    const loser = pinned.find((result) => result.status === 'rejected');
    assert(loser !== undefined && isDurableEventSequenceConflictError(loser.reason), 'the pinned loser gets a sequence conflict');
    await ctx.expectHead(sessionId, 2, 'one pinned winner');

    // The same command from both journals: one commits, the other reconciles; one copy in the log.
    const winner = await first.refresh();
    assertEqual(winner, 2, 'refreshed head');
    const active = first.getProjection().activeRequest?.requestId;
    assert(active !== undefined, 'a Request is active');
    const same = { commandId: CommandId('same-start'), events: [lifecycleDrafts.requestStarted(active)] };
    const both = await Promise.all([first.commit(same), second.commit(same)]);
    assertDeepEqual(
      both.map((result) => result.status).sort(),
      ['committed', 'reconciled'],
      'the same command from two journals',
    );

    // Unpinned, non-conflicting commands retry after conflicts and all land, once each.
    const inputs = Array.from({ length: 6 }, (_, index) => `in-${index}`);
    await Promise.all(
      inputs.map((inputId, index) =>
        (index % 2 === 0 ? first : second).commit({
          commandId: CommandId(`apply-${inputId}`),
          events: [lifecycleDrafts.inputApplied(active, inputId)],
        }),
      ),
    );
    const events = await ctx.readAll(sessionId);
    assertEqual(events.length, 3 + inputs.length, 'every retried command landed');
    for (const inputId of inputs) {
      assertEqual(commandSlice(events, `apply-${inputId}`).length, 1, `command apply-${inputId} copies`);
    }
    assertDeepEqual(
      events.map((event) => event.sequence),
      events.map((_, index) => index + 1),
      'contiguous log',
    );
  },
};

/** Every journal check, for `runStoreConformance({ extraChecks })`. */
export const journalConformanceChecks: readonly Check[] = Object.freeze([
  commitReplayConflict,
  pinnedHead,
  previewWritesNothing,
  reconcilesWrittenFailure,
  fencesUnknownOutcome,
  racingJournals,
]);
