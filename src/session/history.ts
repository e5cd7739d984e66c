/**
 * Message history as a projection of the log.
 *
 * The fold reads committed envelopes in order and keeps, per Request:
 * - the user input (`request_accepted`; a turn-recovery continuation becomes a short user note
 *   carrying the recovery facts, and a pre-Turn rollover replaces its source's input);
 * - every confirmed model response (`model_request_completed`) with its tool calls;
 * - every tool outcome (`tool_completed`, `tool_failed`, and `tool_cancelled` unless a rollover
 *   cancelled it with `process_restart`: the continuation carries that fact instead);
 * - steering inputs (`input_applied` other than the initial one) with the content the event
 *   carries (`data.input`). An `input_applied` without it (a log written before the field existed,
 *   or by another writer) leaves no message: the history omits that steering input, so a
 *   restored history can lack a steering message the original process had shown the model.
 * `messages()` materializes the history the next model call sees: each assistant message keeps
 * only the tool calls that have a paired outcome, followed by those outcomes. Failed and aborted
 * model attempts leave nothing. The same fold runs live and on restore, so both see one history.
 */
import { parseRecoveryContinuation } from '../core/recovery/continuation.js';
import type { DurableInput, ModelResponse, ModelToolCall, ModelUsage, RequestUsage } from '../protocol/event-payloads.js';
import type { DurableEventStore } from '../core/store.js';
import { SessionDurableRecorderError } from '../protocol/errors.js';
import type { DurableEventEnvelope } from '../protocol/events.js';
import { EventSequence, type SessionId } from '../protocol/ids.js';
import type { JsonValue } from '../protocol/json.js';
import { AcceptedRequests } from './request-ids.js';
import type { SessionHistoryMessage } from './types.js';

interface UserEntry {
  kind: 'user';
  requestId: string;
  content: DurableInput;
}
interface AssistantEntry {
  kind: 'assistant';
  requestId: string;
  modelAttemptId: string;
  response: ModelResponse;
}
type Entry = UserEntry | AssistantEntry;

interface ToolOutcome {
  outcome: 'completed' | 'failed' | 'cancelled';
  result: JsonValue;
}

/** Per-Request facts the loop needs besides the messages. */
interface RequestFacts {
  /** `hasToolCalls` of the Request's last completed Turn. */
  lastTurnHadToolCalls: boolean;
  /** The last confirmed response (for `request_completed.output`). */
  lastResponse: ModelResponse | undefined;
  usage: RequestUsage;
}

function textOf(content: DurableInput): string {
  if (typeof content === 'string') return content;
  return content.map((part) => (part.type === 'text' ? part.text : '')).join('');
}

function continuationNote(input: DurableInput): DurableInput | null {
  const parsed = parseRecoveryContinuation(input);
  if (parsed === null) return null;
  const facts = parsed.continuation.tools.map((tool) => ({
    toolName: tool.toolName,
    toolCallId: tool.toolCallId,
    status: tool.status,
    ...(tool.result === undefined ? {} : { result: tool.result }),
  }));
  return (
    'The previous attempt at this request was interrupted by a restart and continues here. ' +
    `Recorded tool facts: ${JSON.stringify(facts)}. Continue the original request.`
  );
}

/** The history fold (see the module header). */
export class HistoryProjection {
  readonly #entries: Entry[] = [];
  /** toolCallId per toolAttemptId, and tool name. */
  readonly #attempts = new Map<string, { toolCallId: string; toolName: string; modelAttemptId: string }>();
  /** Outcome per toolCallId, per `modelAttemptId` (nested: no joined key string per lookup). */
  readonly #outcomes = new Map<string, Map<string, ToolOutcome>>();
  readonly #facts = new Map<string, RequestFacts>();
  readonly #initialInputs = new Map<string, string>();
  /** Requests and input IDs the log used (for `send`'s caller-chosen IDs, see `request-ids.ts`). */
  readonly requests = new AcceptedRequests();

  facts(requestId: string): RequestFacts {
    let facts = this.#facts.get(requestId);
    if (facts === undefined) {
      facts = { lastTurnHadToolCalls: false, lastResponse: undefined, usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0 } };
      this.#facts.set(requestId, facts);
    }
    return facts;
  }

  /** Highest sequence folded; events at or below it are skipped (the live and read paths may both see one event). */
  #lastSequence = 0;

  /** Highest sequence folded (0 before any). */
  get lastSequence(): number {
    return this.#lastSequence;
  }

  /**
   * Folds the events that continue the history: already folded ones are skipped, and the fold
   * stops at a gap (a journal opened from a projection checkpoint reads only the tail; the gap is
   * filled by {@link catchUp}, which reads the log from the first missing event).
   */
  apply(events: readonly DurableEventEnvelope[]): void {
    for (const event of events) {
      if (event.sequence <= this.#lastSequence) continue;
      if (event.sequence !== this.#lastSequence + 1) return;
      this.#lastSequence = event.sequence;
      this.#apply(event);
    }
  }

  /** Reads and folds the log up to `head` from the first event not folded yet (no-op when current). */
  async catchUp(store: DurableEventStore, sessionId: SessionId, head: EventSequence | null, pageSize: number): Promise<void> {
    while (head !== null && this.#lastSequence < head) {
      const page = await store.read(sessionId, {
        ...(this.#lastSequence === 0 ? {} : { after: EventSequence(this.#lastSequence) }),
        limit: pageSize,
      });
      const before = this.#lastSequence;
      this.apply(page.events);
      if (this.#lastSequence === before) throw new SessionDurableRecorderError(`the log of session ${sessionId} has a gap after sequence ${before}`);
    }
  }

  #apply(event: DurableEventEnvelope): void {
    this.requests.apply(event);
    switch (event.type) {
      case 'request_accepted': {
        this.#initialInputs.set(event.requestId, event.data.inputId);
        const recovery = event.data.recovery;
        const note = recovery === undefined ? null : continuationNote(event.data.input);
        if (recovery !== undefined && note === null) {
          // A pre-Turn rollover: the prepared input replaces the source's input.
          const index = this.#entries.findIndex((entry) => entry.kind === 'user' && entry.requestId === recovery.requestId);
          if (index !== -1) this.#entries.splice(index, 1);
        }
        this.#entries.push({ kind: 'user', requestId: event.requestId, content: note ?? event.data.input });
        return;
      }
      case 'input_applied': {
        if (this.#initialInputs.get(event.requestId) === event.data.inputId) return;
        const content = event.data.input;
        if (content !== undefined) this.#entries.push({ kind: 'user', requestId: event.requestId, content });
        return;
      }
      case 'model_request_completed': {
        const response = event.data.response;
        this.#entries.push({ kind: 'assistant', requestId: event.requestId, modelAttemptId: event.modelAttemptId, response });
        const facts = this.facts(event.requestId);
        facts.lastResponse = response;
        if (response.usage !== undefined) addUsage(facts.usage, response.usage);
        return;
      }
      case 'tool_scheduled':
        this.#attempts.set(event.toolAttemptId, {
          toolCallId: event.data.toolCallId,
          toolName: event.data.toolName,
          modelAttemptId: event.modelAttemptId,
        });
        return;
      case 'tool_completed':
        this.#setOutcome(event.toolAttemptId, { outcome: 'completed', result: event.data.result });
        return;
      case 'tool_failed':
        this.#setOutcome(event.toolAttemptId, {
          outcome: 'failed',
          result: { code: event.data.error.code, message: event.data.error.message },
        });
        return;
      case 'tool_cancelled':
        if (event.data.reason !== 'process_restart') {
          this.#setOutcome(event.toolAttemptId, { outcome: 'cancelled', result: `cancelled: ${event.data.reason}` });
        }
        return;
      case 'turn_completed':
        this.facts(event.requestId).lastTurnHadToolCalls = event.data.hasToolCalls;
        return;
      default:
        return;
    }
  }

  #setOutcome(toolAttemptId: string, outcome: ToolOutcome): void {
    const attempt = this.#attempts.get(toolAttemptId);
    if (attempt === undefined) return;
    let outcomes = this.#outcomes.get(attempt.modelAttemptId);
    if (outcomes === undefined) {
      outcomes = new Map();
      this.#outcomes.set(attempt.modelAttemptId, outcomes);
    }
    outcomes.set(attempt.toolCallId, outcome);
  }

  /** The history the next model call sees. */
  messages(): SessionHistoryMessage[] {
    const messages: SessionHistoryMessage[] = [];
    for (const entry of this.#entries) {
      if (entry.kind === 'user') {
        messages.push({ role: 'user', content: entry.content });
        continue;
      }
      const calls = entry.response.toolCalls;
      const outcomes = calls === undefined ? undefined : this.#outcomes.get(entry.modelAttemptId);
      const paired: Array<{ call: ModelToolCall; outcome: ToolOutcome }> = [];
      if (calls !== undefined && outcomes !== undefined) {
        for (const call of calls) {
          const outcome = outcomes.get(call.id);
          if (outcome !== undefined) paired.push({ call, outcome });
        }
      }
      if (paired.length === 0 && textOf(entry.response.content).length === 0) continue;
      const toolCalls: Array<{ toolCallId: string; toolName: string; input: JsonValue }> = [];
      for (const { call } of paired) toolCalls.push({ toolCallId: call.id, toolName: call.name, input: call.arguments });
      messages.push({ role: 'assistant', content: entry.response.content, toolCalls });
      for (const { call, outcome } of paired) {
        messages.push({ role: 'tool', toolCallId: call.id, toolName: call.name, outcome: outcome.outcome, result: outcome.result });
      }
    }
    return messages;
  }
}

function addUsage(total: RequestUsage, usage: ModelUsage): void {
  total.inputTokens += usage.promptTokens;
  total.outputTokens += usage.completionTokens;
  total.totalTokens += usage.totalTokens;
}

/** The answer text of a response. */
export function responseText(response: ModelResponse | undefined): string {
  return response === undefined ? '' : textOf(response.content);
}
