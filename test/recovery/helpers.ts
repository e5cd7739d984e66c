/**
 * Shared helpers of the recovery coordinator tests.
 *
 * - {@link RecoveryJournalBuilder}: the projector's JournalBuilder plus Requests with a complete
 *   execution snapshot (maxTurns, model, context), as the Session writer persists them;
 * - crash states: journals a real writer would have left when its process stopped at each
 *   recovery-relevant point;
 * - {@link seedSession}: writes such a journal into a store, one append per command, as a writer would;
 * - {@link finishAcceptedRequest} / {@link finishActiveTurn}: a minimal writer (through the journal)
 *   that carries a resumed Request to its terminal event;
 * - store wrappers: a barrier that makes two appends race for real, and an interceptor that lets
 *   a competitor write just before an append.
 */
import { expect } from 'vitest';
import { MemoryDurableEventStore } from '../../src/adapters/memory/memory-store.js';
import { DurableSessionJournal } from '../../src/core/journal/index.js';
import {
  DurableSessionRecoveryCoordinator,
  type DurableSessionRecoveryCoordinatorOptions,
} from '../../src/core/recovery/index.js';
import type { DurableEventStore } from '../../src/core/store.js';
import type { DurableEventDraft, DurableEventEnvelope } from '../../src/protocol/events.js';
import {
  CommandId,
  ModelAttemptId,
  SessionId,
  TurnId,
  type EventSequence,
  type RequestId,
} from '../../src/protocol/ids.js';
import { editData } from '../projector/helpers.js';
import { draftOf, JournalBuilder } from '../projector/journal-builder.js';

/** The execution snapshot every "complete" Request of these tests carries. */
export const SNAPSHOT = {
  maxTurns: 8,
  model: { provider: 'test', model: 'test-model' },
  context: { cwd: '/work', user: 'tester' },
} as const;

/** JournalBuilder with Requests that carry a complete execution snapshot. */
export class RecoveryJournalBuilder extends JournalBuilder {
  /** `request_accepted` with maxTurns, model and context (what a Session writer persists). */
  acceptFullRequest(o: { requestId?: string; inputId?: string; input?: string } = {}): this {
    this.acceptRequest({ ...o, maxTurns: SNAPSHOT.maxTurns });
    const index = this.events.length - 1;
    this.events[index] = editData(this.last, { model: { ...SNAPSHOT.model }, context: { ...SNAPSHOT.context } });
    return this;
  }

  /** Replaces the input of the last `request_accepted` (e.g. with content parts). */
  withInput(input: unknown): this {
    const index = this.events.findLastIndex((event) => event.type === 'request_accepted');
    const event = this.events[index];
    if (event === undefined) throw new Error('no request_accepted');
    this.events[index] = editData(event, { input });
    return this;
  }

  /** session_created + a complete Request, started, its initial input applied. */
  static started(sessionId?: string): RecoveryJournalBuilder {
    return new RecoveryJournalBuilder(sessionId === undefined ? {} : { sessionId })
      .createSession()
      .acceptFullRequest({ requestId: 'req-a', inputId: 'input-a', input: 'deploy the service' })
      .startRequest()
      .applyInput();
  }

  /** {@link started} + Turn 1 with one completed model attempt that called `calls`. */
  static inTurn(calls: Array<{ id: string; name: string }> = []): RecoveryJournalBuilder {
    const b = RecoveryJournalBuilder.started();
    b.startTurn({ turnId: 'turn-a1' }).modelStarted({ modelAttemptId: 'model-a1' });
    b.modelCompleted({ toolCalls: calls.map((call) => ({ ...call, arguments: { call: call.id } })) });
    return b;
  }
}

// ---- crash states (the journals the coordinator tests start from) ----

/** Accepted with a complete snapshot, never started: `resume_request`. */
export function acceptedState(): RecoveryJournalBuilder {
  return new RecoveryJournalBuilder()
    .createSession()
    .acceptFullRequest({ requestId: 'req-a', inputId: 'input-a', input: 'deploy the service' });
}

/** Started, initial input applied, no Turn: `rollover_request`. */
export function preTurnState(): RecoveryJournalBuilder {
  return RecoveryJournalBuilder.started();
}

/** Started, initial and one steering input applied, no Turn: `reconcile_request_inputs`. */
export function steeredState(): RecoveryJournalBuilder {
  return RecoveryJournalBuilder.started().applyInput({ inputId: 'input-steer' });
}

/** A model attempt started without an outcome: `reconcile_model_outcome`. */
export function unknownModelState(): RecoveryJournalBuilder {
  const b = RecoveryJournalBuilder.started();
  b.startTurn({ turnId: 'turn-a1' }).modelStarted({ modelAttemptId: 'model-a1' });
  return b;
}

/** A pure tool awaiting permission: `resolve_permissions`. */
export function pendingPermissionState(): RecoveryJournalBuilder {
  const b = RecoveryJournalBuilder.inTurn([{ id: 'call-1', name: 'deploy' }]);
  b.scheduleTool({ toolAttemptId: 'tool-1', toolCallId: 'call-1', sideEffect: 'pure' });
  b.requestPermission({ permissionRequestId: 'perm-1', input: { target: 'prod' } });
  return b;
}

/** A permitted tool that has not started yet: `resume_turn` (the tool is cancelable). */
export function permittedToolState(): RecoveryJournalBuilder {
  return pendingPermissionState().resolvePermission({ decision: 'allow' });
}

/** A non_idempotent tool started without an outcome: `reconcile_tool_outcomes`. */
export function unknownToolState(): RecoveryJournalBuilder {
  const b = RecoveryJournalBuilder.inTurn([{ id: 'call-1', name: 'deploy' }]);
  b.scheduleTool({ toolAttemptId: 'tool-1', toolCallId: 'call-1', sideEffect: 'non_idempotent' });
  b.startTool({ sideEffect: 'non_idempotent', input: { call: 'call-1' } });
  return b;
}

/**
 * An active Turn that can roll over (`resume_turn`): one tool completed, one pure tool started
 * without an outcome, one idempotent tool never started.
 */
export function activeTurnState(): RecoveryJournalBuilder {
  const b = RecoveryJournalBuilder.inTurn([
    { id: 'call-1', name: 'read' },
    { id: 'call-2', name: 'search' },
    { id: 'call-3', name: 'write' },
  ]);
  b.scheduleTool({ toolAttemptId: 'tool-1', toolCallId: 'call-1', sideEffect: 'pure' }).startTool().completeTool({ result: { text: 'file body' } });
  b.scheduleTool({ toolAttemptId: 'tool-2', toolCallId: 'call-2', sideEffect: 'pure' }).startTool({ input: { call: 'call-2' } });
  b.scheduleTool({ toolAttemptId: 'tool-3', toolCallId: 'call-3', sideEffect: 'idempotent' });
  return b;
}

/** Turn 1 completed, no Request terminal event: `reconcile_request_outcome`. */
export function terminalPendingState(): RecoveryJournalBuilder {
  const b = RecoveryJournalBuilder.inTurn();
  b.completeTurn();
  return b;
}

/** A finished Request: `none`. */
export function finishedState(): RecoveryJournalBuilder {
  const b = terminalPendingState();
  b.completeRequest();
  return b;
}

// ---- seeding and inspection ----

/** Writes `events` into `store` under `sessionId`, one append per command (or per event outside commands). */
export async function seedSession(
  store: DurableEventStore,
  sessionId: SessionId,
  events: readonly DurableEventEnvelope[],
): Promise<EventSequence | null> {
  const batches: DurableEventDraft[][] = [];
  let lastCommand: string | undefined;
  for (const event of events) {
    const draft = draftOf(event);
    const current = batches[batches.length - 1];
    if (current !== undefined && event.commandId !== undefined && event.commandId === lastCommand) current.push(draft);
    else batches.push([draft]);
    lastCommand = event.commandId;
  }
  let head: EventSequence | null = null;
  for (const batch of batches) {
    const result = await store.append(sessionId, batch, { expectedLastSequence: head });
    head = result.lastSequence;
  }
  return head;
}

/** Every event of a session. */
export async function readAll(store: DurableEventStore, sessionId: SessionId): Promise<DurableEventEnvelope[]> {
  const events: DurableEventEnvelope[] = [];
  let after: EventSequence | undefined;
  for (;;) {
    const page = await store.read(sessionId, { after, limit: 1000 });
    events.push(...page.events);
    if (!page.hasMore) return events;
    after = page.nextCursor ?? undefined;
  }
}

/** The events of one command. */
export async function eventsOf(store: DurableEventStore, sessionId: SessionId, commandId: string): Promise<DurableEventEnvelope[]> {
  return (await readAll(store, sessionId)).filter((event) => event.commandId === commandId);
}

/** The error a promise rejects with (fails the test when it resolves). */
export async function rejectionOf(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  expect.fail('expected a rejection');
}

// ---- a minimal writer that finishes resumed work ----

let writerCounter = 0;
function writerId(prefix: string): string {
  writerCounter += 1;
  return `${prefix}-w${writerCounter}`;
}

/**
 * Resumes an accepted Request the way a Session writer would and runs it to completion:
 * request_started + input_applied, Turn 1 with one model call, turn_completed + request_completed.
 */
export async function finishAcceptedRequest(store: DurableEventStore, sessionId: SessionId): Promise<DurableSessionJournal> {
  const journal = await DurableSessionJournal.open(store, sessionId);
  const request = journal.getProjection().activeRequest;
  if (request === null || request.status !== 'accepted') throw new Error('no accepted Request to resume');
  const requestId = request.requestId;
  await journal.commit({
    commandId: CommandId(writerId('start')),
    events: [
      { type: 'request_started', requestId, data: {} },
      { type: 'input_applied', requestId, data: { inputId: request.inputId, priority: request.priority } },
    ],
  });
  await finishWithNewTurn(journal, requestId, 1);
  return journal;
}

/** Runs one more Turn of the active, started Request and completes the Request. */
export async function finishWithNewTurn(journal: DurableSessionJournal, requestId: RequestId, turn: number): Promise<void> {
  const turnId = TurnId(writerId('turn'));
  await journal.commit({
    commandId: CommandId(writerId('turn')),
    events: [{ type: 'turn_started', requestId, turnId, data: { turn } }],
  });
  await finishActiveTurn(journal, requestId, turnId, turn);
}

/** Continues the active Turn in place: one more model call, then turn_completed + request_completed. */
export async function finishActiveTurn(journal: DurableSessionJournal, requestId: RequestId, turnId: TurnId, turn: number): Promise<void> {
  const modelAttemptId = ModelAttemptId(writerId('model'));
  const scope = { requestId, turnId, modelAttemptId };
  await journal.commit({
    commandId: CommandId(writerId('model')),
    events: [{ type: 'model_request_started', ...scope, data: { model: 'test-model', streaming: false } }],
  });
  await journal.commit({
    commandId: CommandId(writerId('finish')),
    events: [
      { type: 'model_request_completed', ...scope, data: { response: { content: 'all done', stopReason: 'end_turn' } } },
      { type: 'turn_completed', requestId, turnId, data: { turn, hasToolCalls: false } },
      { type: 'request_completed', requestId, data: { output: 'done' } },
    ],
  });
}

/** Asserts that the session has no unfinished work. */
export function expectNoUnfinishedWork(journal: DurableSessionJournal): void {
  expect(journal.getRecoveryPlan().action).toBe('none');
  expect(journal.getProjection().activeRequest).toBeNull();
}

// ---- store wrappers ----

/**
 * A store whose first `parties` appends wait for each other before reaching `inner`, so callers
 * that decided on the same head really race on the compare-and-append.
 */
export function racingStore(inner: DurableEventStore, parties = 2): DurableEventStore {
  const waiting: Array<() => void> = [];
  let open = false;
  return {
    read: (sessionId, options) => inner.read(sessionId, options),
    getHeadSequence: (sessionId, options) => inner.getHeadSequence(sessionId, options),
    append: async (sessionId, drafts, options) => {
      if (!open) {
        await new Promise<void>((resolve) => {
          waiting.push(resolve);
          if (waiting.length >= parties) {
            open = true;
            for (const release of waiting) release();
          }
        });
      }
      return inner.append(sessionId, drafts, options);
    },
  };
}

/** A store that runs `competitor` (once) right before the next append reaches `inner`. */
export function interceptedStore(inner: DurableEventStore, competitor: () => Promise<void>): DurableEventStore {
  let pending = true;
  return {
    read: (sessionId, options) => inner.read(sessionId, options),
    getHeadSequence: (sessionId, options) => inner.getHeadSequence(sessionId, options),
    append: async (sessionId, drafts, options) => {
      if (pending) {
        pending = false;
        await competitor();
      }
      return inner.append(sessionId, drafts, options);
    },
  };
}


let openCounter = 0;

/** A memory store holding `state` under a fresh session, and a coordinator opened on it. */
export async function openOn(
  state: RecoveryJournalBuilder,
  options: DurableSessionRecoveryCoordinatorOptions = {},
) {
  const store = new MemoryDurableEventStore();
  const sessionId = SessionId(`recovery-${openCounter++}`);
  const head = (await seedSession(store, sessionId, state.events)) ?? 0;
  const coordinator = await DurableSessionRecoveryCoordinator.open(store, sessionId, options);
  return { store, sessionId, head, coordinator };
}
