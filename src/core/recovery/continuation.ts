/**
 * The turn-recovery continuation: the input of the Request that replaces an interrupted Turn.
 *
 * Format (version 1). The recovery facts are one JSON object, written as canonical JSON text:
 *
 *   { kind: 'agent_ledger.recovery_continuation', version: 1,
 *     source: { requestId, turnId, turn, inputId },
 *     originalInput: { kind: 'text', text } | { kind: 'parts', partCount },
 *     tools: [{ toolAttemptId, toolCallId, toolName, modelAttemptId, modelResponseConfirmed,
 *               sideEffect, input, status, result?, error?, reason? }],
 *     modelResponses: [{ modelAttemptId, model, content, toolCalls: [{ id, name }], stopReason?, truncated }],
 *     discardedUnconfirmedModelResponse }
 *
 * How the continuation input carries it:
 * - a text original input becomes one string: the facts JSON, whose `originalInput.text` holds it;
 * - a content-parts original input stays parts: the original parts, unchanged, followed by one
 *   text part holding the facts JSON (`originalInput.partCount` says how many parts precede it).
 *
 * Tool statuses: `completed` / `failed` (authoritative outcomes, result or error kept), `cancelled`
 * (cancelled after it started), `not_started` (never executed, including tools the rollover
 * cancels), `interrupted_before_trusted_completion` (a retry-safe tool that started but has no
 * trusted outcome), `discarded_unconfirmed_model_response` (an unfinished tool whose model
 * response was never confirmed). Model responses are the confirmed (completed) attempts of the
 * Turn; their content shares one byte budget and is cut at a code point boundary, with
 * `truncated: true`, once the budget runs out.
 */
import { DurableEventStoreError } from '../../protocol/errors.js';
import type {
  ContentPart,
  DurableErrorInfo,
  DurableInput,
  DurableReason,
  ModelStopReason,
  SideEffect,
} from '../../protocol/event-payloads.js';
import { MAX_CONTENT_PARTS } from '../../protocol/event-schemas.js';
import type { InputId, RequestId, TurnId } from '../../protocol/ids.js';
import { canonicalJson, utf8ByteLength, type JsonValue } from '../../protocol/json.js';
import { MAX_TEXT_LENGTH } from '../../protocol/limits.js';
import type { DurableActiveTurnView } from '../projector/projection-types.js';

/** `kind` of the recovery facts object. */
const RECOVERY_CONTINUATION_KIND = 'agent_ledger.recovery_continuation';
/** Version of the recovery facts format. */
const RECOVERY_CONTINUATION_VERSION = 1;
/** Default budget of confirmed model response content in one continuation, in UTF-8 bytes. */
export const DEFAULT_MAX_CONTINUATION_RESPONSE_BYTES = 64 * 1024;
/** Largest accepted `maxContinuationResponseBytes`. */
export const MAX_CONTINUATION_RESPONSE_BYTES = 256 * 1024;

/** Status of one tool in the continuation (see the module header). */
export type DurableContinuationToolStatus =
  | 'completed'
  | 'failed'
  | 'cancelled'
  | 'not_started'
  | 'interrupted_before_trusted_completion'
  | 'discarded_unconfirmed_model_response';

/** One tool attempt of the interrupted Turn. */
export interface DurableContinuationTool {
  toolAttemptId: string;
  toolCallId: string;
  toolName: string;
  modelAttemptId: string;
  /** False when the model attempt that produced the call never completed. */
  modelResponseConfirmed: boolean;
  sideEffect: SideEffect;
  input: JsonValue;
  status: DurableContinuationToolStatus;
  result?: JsonValue;
  error?: DurableErrorInfo;
  reason?: DurableReason;
}

/** One confirmed model response of the interrupted Turn, bounded. */
export interface DurableContinuationModelResponse {
  modelAttemptId: string;
  model: string;
  content: DurableInput;
  toolCalls: Array<{ id: string; name: string }>;
  stopReason?: ModelStopReason;
  truncated: boolean;
}

/** The recovery facts a continuation Request carries. */
export interface DurableRecoveryContinuation {
  kind: typeof RECOVERY_CONTINUATION_KIND;
  version: typeof RECOVERY_CONTINUATION_VERSION;
  source: { requestId: RequestId; turnId: TurnId; turn: number; inputId: InputId };
  originalInput: { kind: 'text'; text: string } | { kind: 'parts'; partCount: number };
  tools: DurableContinuationTool[];
  modelResponses: DurableContinuationModelResponse[];
  discardedUnconfirmedModelResponse: boolean;
}

/** The longest prefix of `text` whose UTF-8 encoding fits `maxBytes`, never splitting a code point. */
function truncateUtf8(text: string, maxBytes: number): string {
  if (utf8ByteLength(text) <= maxBytes) return text;
  let bytes = 0;
  let end = 0;
  for (const char of text) {
    const size = utf8ByteLength(char);
    if (bytes + size > maxBytes) break;
    bytes += size;
    end += char.length;
  }
  return text.slice(0, end);
}

interface Budget {
  remaining: number;
}

/** Keeps what fits of `content`; reports whether anything was cut. */
function boundContent(content: DurableInput, budget: Budget): { content: DurableInput; truncated: boolean } {
  if (typeof content === 'string') {
    const kept = truncateUtf8(content, budget.remaining);
    budget.remaining -= utf8ByteLength(kept);
    return { content: kept, truncated: kept.length !== content.length };
  }
  const parts: ContentPart[] = [];
  for (const part of content) {
    if (part.type === 'text') {
      const text = truncateUtf8(part.text, budget.remaining);
      budget.remaining -= utf8ByteLength(text);
      if (text.length > 0 || part.text.length === 0) parts.push({ type: 'text', text });
      if (text.length !== part.text.length) return { content: parts.length === 0 ? '' : parts, truncated: true };
      continue;
    }
    const size = utf8ByteLength(JSON.stringify(part));
    if (size > budget.remaining) {
      budget.remaining = 0;
      return { content: parts.length === 0 ? '' : parts, truncated: true };
    }
    budget.remaining -= size;
    parts.push(part);
  }
  return { content: parts, truncated: false };
}

/** The confirmed model responses of `turn`, content bounded by `maxBytes` in total. */
export function boundedModelResponses(turn: DurableActiveTurnView, maxBytes: number): DurableContinuationModelResponse[] {
  const budget: Budget = { remaining: maxBytes };
  const responses: DurableContinuationModelResponse[] = [];
  for (const key of Object.keys(turn.modelAttempts)) {
    const attempt = turn.modelAttempts[key];
    if (attempt === undefined || attempt.status !== 'completed' || attempt.response === undefined) continue;
    const response = attempt.response;
    const { content, truncated } = boundContent(response.content, budget);
    responses.push({
      modelAttemptId: attempt.modelAttemptId,
      model: attempt.model,
      content,
      toolCalls: (response.toolCalls ?? []).map((call) => ({ id: call.id, name: call.name })),
      ...(response.stopReason === undefined ? {} : { stopReason: response.stopReason }),
      truncated,
    });
  }
  return responses;
}

function limitExceeded(message: string): DurableEventStoreError {
  return new DurableEventStoreError('DURABLE_EVENT_LIMIT_EXCEEDED', message);
}

/** The facts object without `originalInput`, as the rollover assembles it. */
type DurableContinuationFacts = Omit<DurableRecoveryContinuation, 'kind' | 'version' | 'originalInput'>;

/**
 * Builds the continuation input (see the module header) and the facts it carries.
 * Throws `DURABLE_EVENT_LIMIT_EXCEEDED` when the facts text or the part count would exceed the
 * protocol's limits (nothing is written then).
 */
export function buildContinuationInput(
  originalInput: DurableInput,
  facts: DurableContinuationFacts,
): { input: DurableInput; continuation: DurableRecoveryContinuation } {
  const continuation: DurableRecoveryContinuation = {
    kind: RECOVERY_CONTINUATION_KIND,
    version: RECOVERY_CONTINUATION_VERSION,
    source: facts.source,
    originalInput:
      typeof originalInput === 'string'
        ? { kind: 'text', text: originalInput }
        : { kind: 'parts', partCount: originalInput.length },
    tools: facts.tools,
    modelResponses: facts.modelResponses,
    discardedUnconfirmedModelResponse: facts.discardedUnconfirmedModelResponse,
  };
  // SAFETY: the continuation is built from lossless JSON values only (IDs, numbers, strings and
  // payload values taken from parsed events); canonical JSON keeps a retry byte-identical.
  const text = canonicalJson(continuation as unknown as JsonValue);
  if (text.length > MAX_TEXT_LENGTH) {
    throw limitExceeded(
      `the recovery continuation is ${text.length} characters; a text input holds at most ${MAX_TEXT_LENGTH} (tool results or inputs are too large)`,
    );
  }
  if (typeof originalInput === 'string') return { input: text, continuation };
  if (originalInput.length + 1 > MAX_CONTENT_PARTS) {
    throw limitExceeded(`the original input has ${originalInput.length} parts; no room for the recovery facts part`);
  }
  return { input: [...originalInput, { type: 'text', text }], continuation };
}

function isContinuationFacts(value: unknown): value is DurableRecoveryContinuation {
  if (typeof value !== 'object' || value === null) return false;
  const facts = value as Partial<DurableRecoveryContinuation>;
  return (
    facts.kind === RECOVERY_CONTINUATION_KIND &&
    facts.version === RECOVERY_CONTINUATION_VERSION &&
    typeof facts.originalInput === 'object' &&
    facts.originalInput !== null &&
    Array.isArray(facts.tools) &&
    Array.isArray(facts.modelResponses)
  );
}

function parseFacts(text: string): DurableRecoveryContinuation | null {
  try {
    const value: unknown = JSON.parse(text);
    return isContinuationFacts(value) ? value : null;
  } catch {
    return null;
  }
}

/**
 * Reads a continuation input back: the recovery facts and the original input, or `null` when
 * `input` is not a version-1 continuation.
 *
 * @example
 * const parsed = parseRecoveryContinuation(request.input);
 * if (parsed) for (const tool of parsed.continuation.tools) console.log(tool.toolName, tool.status);
 */
export function parseRecoveryContinuation(
  input: DurableInput,
): { originalInput: DurableInput; continuation: DurableRecoveryContinuation } | null {
  if (typeof input === 'string') {
    const facts = parseFacts(input);
    if (facts === null || facts.originalInput.kind !== 'text') return null;
    return { originalInput: facts.originalInput.text, continuation: facts };
  }
  const last = input[input.length - 1];
  if (last === undefined || last.type !== 'text') return null;
  const facts = parseFacts(last.text);
  if (facts === null || facts.originalInput.kind !== 'parts' || facts.originalInput.partCount !== input.length - 1) return null;
  return { originalInput: input.slice(0, -1), continuation: facts };
}
