/**
 * The append fast path of draft validation: the common, valid draft accepted without zod.
 *
 * Where `new Function` is forbidden (Cloudflare Workers), zod interprets each schema and a
 * 1,000-event batch spends milliseconds in it. This module restates the draft schemas of
 * `protocol/event-schemas.ts` as plain checks and is used in front of the core validator:
 * 1. {@link fastParseDraft} either returns the parsed draft, or declines (`undefined`). It only
 *    accepts what the zod schema accepts, and returns what zod returns: a fresh object per schema
 *    level with the keys in schema order, free-form JSON values shared with the input.
 * 2. It reads schema-level properties as zod does (each present key once, in schema order) and
 *    free-form JSON values as the lossless rule does (through descriptors). It declines whatever
 *    it does not fully cover: any failure at all, a non-plain object, an inherited or
 *    non-enumerable key, and content-part arrays (`DurableInput` arrays, with their media-type,
 *    base64 and URL rules), which are rare in a hot path.
 * 3. {@link fastParseDraftBatch} runs it on every draft of a batch. The core engine's
 *    `validateDraftBatch` (and `parseDraftBatchJson`, for a batch sent as JSON text) calls it
 *    first and, when it declines, validates the whole batch with zod, so every store gets the fast
 *    path and every refusal carries the zod validator's exact error. What `JSON.parse` returns
 *    cannot hold accessors, prototypes, symbols, holes or cycles, so its JSON values only need the
 *    number and depth rules (`isParsedJsonLossless`): most of the cost is gone.
 * The draft level is built from `DURABLE_EVENT_CORRELATION`, the same table the zod schemas use.
 * `test/protocol/draft-fast-path.test.ts` compares both modes with `safeParseDurableEventDraft` on the
 * protocol fixtures and on generated mutations of them; change both files together.
 */
import {
  DURABLE_EVENT_CORRELATION,
  DURABLE_EVENT_SCHEMA_VERSION,
  MAX_NAME_LENGTH,
  MAX_REQUEST_TURNS,
  isDurableEventType,
  isIsoTimestamp,
  type DurableEventDraft,
  type DurableEventEnvelope,
  type DurableEventType,
} from './events.js';
import { isValidId } from './ids.js';
import { MAX_BATCH_EVENTS, MAX_TEXT_LENGTH } from './limits.js';
import { isLosslessJsonFast, isParsedJsonLossless } from './json-fast-check.js';

/** What a check returns when it does not accept the value. */
const DECLINE: unique symbol = Symbol('decline');
type Check = (value: unknown) => unknown;

interface Field {
  key: string;
  required: boolean;
  check: Check;
}

const required = (key: string, check: Check): Field => ({ key, required: true, check });
const optional = (key: string, check: Check): Field => ({ key, required: false, check });

/**
 * Where the value comes from: `any` (a caller's object) or `parsed` (just returned by
 * `JSON.parse`). It only matters inside free-form JSON values, which the lossless rule walks
 * through descriptors (never invoking a getter) unless `JSON.parse` made them.
 */
type Source = 'any' | 'parsed';

/**
 * A strict object: only the listed keys as enumerable properties, none `undefined`, the required
 * ones present. Like zod, each present key is read once, in `fields` order, with a plain property
 * read (a getter runs once, as it does under zod); the result has the keys in `fields` order.
 * Declined besides every failure: a prototype other than `Object.prototype` or `null`, and a
 * listed key that is inherited or not enumerable.
 */
function object(fields: readonly Field[]): Check {
  return (value) => {
    if (typeof value !== 'object' || value === null) return DECLINE;
    const proto: unknown = Object.getPrototypeOf(value);
    if (proto !== Object.prototype && proto !== null) return DECLINE;
    const record = value as Record<string, unknown>;
    const out: Record<string, unknown> = {};
    let matched = 0;
    for (const field of fields) {
      if (!(field.key in record)) {
        if (field.required) return DECLINE;
        continue;
      }
      const property = record[field.key];
      const parsed = property === undefined ? DECLINE : field.check(property);
      if (parsed === DECLINE) return DECLINE;
      out[field.key] = parsed;
      matched++;
    }
    // Counting enumerable keys (own or inherited): equal to `matched` only when every matched key
    // is enumerable and no other key is, i.e. no unknown key and nothing inherited or hidden.
    let keys = 0;
    for (const _key in record) keys++;
    return keys === matched ? out : DECLINE;
  };
}

const id: Check = (value) => (isValidId(value) ? value : DECLINE);
const timestamp: Check = (value) => (isIsoTimestamp(value) ? value : DECLINE);
const name: Check = (value) =>
  typeof value === 'string' && value.length >= 1 && value.length <= MAX_NAME_LENGTH ? value : DECLINE;
const text: Check = (value) => (typeof value === 'string' && value.length <= MAX_TEXT_LENGTH ? value : DECLINE);
const boolean: Check = (value) => (typeof value === 'boolean' ? value : DECLINE);

function integer(min: number, max: number = Number.MAX_SAFE_INTEGER): Check {
  return (value) => (Number.isSafeInteger(value) && (value as number) >= min && (value as number) <= max ? value : DECLINE);
}
/** A count: a safe integer >= 0, never `-0`. */
const count: Check = (value) => (Number.isSafeInteger(value) && (value as number) >= 0 && !Object.is(value, -0) ? value : DECLINE);
const turnNumber = integer(1);

function oneOf(...values: string[]): Check {
  const allowed = new Set(values);
  return (value) => (typeof value === 'string' && allowed.has(value) ? value : DECLINE);
}

/** A plain array whose every element passes `item` (read like zod: `value[index]`). */
function arrayOf(item: Check): Check {
  return (value) => {
    if (!Array.isArray(value) || Object.getPrototypeOf(value) !== Array.prototype) return DECLINE;
    const out: unknown[] = [];
    for (let index = 0; index < value.length; index++) {
      const parsed = item(value[index]);
      if (parsed === DECLINE) return DECLINE;
      out.push(parsed);
    }
    return out;
  };
}

/** `DurableInput`: the text form only; content-part arrays go to zod. */
const durableInput = text;

const reason = oneOf(
  'user_abort',
  'process_restart',
  'timeout',
  'superseded',
  'lease_lost',
  'permission_denied',
  'permission_cancelled',
  'max_turns',
  'recovery',
  'completed',
  'error',
);
const sideEffect = oneOf('pure', 'idempotent', 'non_idempotent');
const interruptBehavior = oneOf('cancel', 'block');
const priority = oneOf('now', 'next', 'later');
const permissionDecision = oneOf('allow', 'deny', 'cancel');
const sessionSource = oneOf('create', 'fork', 'restore');
const stopReason = oneOf('end_turn', 'tool_use', 'max_tokens', 'stop_sequence', 'refusal', 'other');

/** Every draft check, per event type, for values from `source`. */
function draftChecks(source: Source, kind: 'draft' | 'envelope' = 'draft'): Map<string, Check> {
  const json: Check =
    source === 'parsed'
      ? (value) => (isParsedJsonLossless(value) ? value : DECLINE)
      : (value) => (isLosslessJsonFast(value) ? value : DECLINE);
  const jsonObject: Check = (value) =>
    typeof value === 'object' && value !== null && !Array.isArray(value) && json(value) !== DECLINE ? value : DECLINE;
  const strict = (...fields: Field[]): Check => object(fields);
  const errorInfo = strict(
    required('code', name),
    required('message', text),
    optional('retryable', boolean),
    optional('details', json),
  );
  const modelSelection = strict(required('provider', name), required('model', name), optional('api', name));
  const modelIdentity = strict(required('provider', name), required('api', name));
  const requestUsage = strict(
    required('inputTokens', count),
    required('outputTokens', count),
    required('totalTokens', count),
    optional('cacheReadTokens', count),
    optional('cacheWriteTokens', count),
  );
  const modelUsage = strict(required('promptTokens', count), required('completionTokens', count), required('totalTokens', count));
  const modelToolCall = strict(required('id', name), required('name', name), required('arguments', json));
  const modelResponse = strict(
    required('content', durableInput),
    optional('toolCalls', arrayOf(modelToolCall)),
    optional('stopReason', stopReason),
    optional('usage', modelUsage),
  );
  const requestRecovery = strict(required('requestId', id), required('turnId', id), required('turn', turnNumber));
  const toolIdentity = [required('toolCallId', name), required('toolName', name)];

  /** The payload check of each event type, field for field as `durableEventDataSchemas`. */
  const data: Record<DurableEventType, Check> = {
    session_created: strict(optional('source', sessionSource), optional('parentSessionId', id)),
    session_closed: strict(required('reason', reason)),
    request_accepted: strict(
      required('inputId', id),
      required('input', durableInput),
      required('priority', priority),
      optional('maxTurns', integer(1, MAX_REQUEST_TURNS)),
      optional('model', modelSelection),
      optional('context', jsonObject),
      optional('recovery', requestRecovery),
    ),
    request_started: strict(),
    request_completed: strict(optional('output', json), optional('usage', requestUsage)),
    request_failed: strict(required('error', errorInfo)),
    request_interrupted: strict(required('reason', reason), optional('byInputId', id)),
    turn_started: strict(required('turn', turnNumber), optional('model', modelSelection)),
    turn_completed: strict(required('turn', turnNumber), required('hasToolCalls', boolean)),
    turn_aborted: strict(required('turn', turnNumber), required('reason', reason)),
    model_request_started: strict(
      required('model', name),
      optional('modelIdentity', modelIdentity),
      required('streaming', boolean),
    ),
    model_request_completed: strict(required('response', modelResponse)),
    model_request_failed: strict(required('error', errorInfo)),
    model_request_aborted: strict(required('reason', reason)),
    tool_scheduled: strict(
      ...toolIdentity,
      required('modelInput', json),
      required('input', json),
      required('sideEffect', sideEffect),
      required('interruptBehavior', interruptBehavior),
    ),
    tool_started: strict(...toolIdentity, required('input', json), required('sideEffect', sideEffect)),
    tool_completed: strict(...toolIdentity, required('result', json)),
    tool_failed: strict(...toolIdentity, required('error', errorInfo)),
    tool_cancelled: strict(...toolIdentity, required('reason', reason)),
    tool_outcome_unknown: strict(...toolIdentity, required('reason', reason)),
    permission_requested: strict(
      required('permissionRequestId', id),
      ...toolIdentity,
      required('input', json),
      optional('message', text),
    ),
    permission_resolved: strict(
      required('permissionRequestId', id),
      required('decision', permissionDecision),
      optional('message', text),
    ),
    input_applied: strict(required('inputId', id), required('priority', priority), optional('input', durableInput)),
  };

  // The draft level, keys in the order the draft schemas declare them (see `protocol/events.ts`).
  const draft = (type: DurableEventType): Check => {
    const correlation: { required: readonly string[]; optional: readonly string[] } = DURABLE_EVENT_CORRELATION[type];
    const common = [
      required('type', (value) => (value === type ? value : DECLINE)),
      required('data', data[type]),
      ...correlation.required.map((key) => required(key, id)),
      ...correlation.optional.map((key) => optional(key, id)),
      ...(correlation.required.includes('commandId') ? [] : [optional('commandId', id)]),
      optional('causationEventId', id),
    ];
    if (kind === 'draft') return strict(...common, optional('occurredAt', timestamp));
    // The envelope schema of `events.ts`, key for key and in its order.
    return strict(
      required('schemaVersion', (value) => (value === DURABLE_EVENT_SCHEMA_VERSION ? value : DECLINE)),
      required('eventId', id),
      required('sequence', (value) => (typeof value === 'number' && Number.isSafeInteger(value) && value >= 1 ? value : DECLINE)),
      required('sessionId', id),
      ...common,
      required('recordedAt', timestamp),
      required('occurredAt', timestamp),
    );
  };
  return new Map((Object.keys(data) as DurableEventType[]).map((type) => [type, draft(type)]));
}

const CHECKS: Record<Source, Map<string, Check>> = { any: draftChecks('any'), parsed: draftChecks('parsed') };
const ENVELOPE_CHECKS = draftChecks('any', 'envelope');

function parseWith(checks: Map<string, Check>, value: unknown): DurableEventDraft | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  // zod reads `type` first too, to pick the schema.
  const type: unknown = (value as { type?: unknown }).type;
  if (!isDurableEventType(type)) return undefined;
  const parsed = checks.get(type)?.(value);
  // SAFETY: the checks accept exactly (a subset of) what the draft schema of `type` accepts.
  return parsed === DECLINE || parsed === undefined ? undefined : (parsed as DurableEventDraft);
}

/**
 * The draft zod would return for `value`, or `undefined` when the fast path declines (which says
 * nothing about validity: ask `parseDurableEventDraft`).
 */
export function fastParseDraft(value: unknown): DurableEventDraft | undefined {
  return parseWith(CHECKS.any, value);
}

/**
 * The envelope zod would return for `value` (`safeParseDurableEventEnvelope`), or `undefined`
 * when the fast path declines. The projector calls it first, so folding a stored log does not
 * run zod on every event.
 */
export function fastParseEnvelope(value: unknown): DurableEventEnvelope | undefined {
  // SAFETY: the envelope checks accept exactly (a subset of) what the envelope schema accepts.
  return parseWith(ENVELOPE_CHECKS, value) as DurableEventEnvelope | undefined;
}

/**
 * {@link fastParseDraft} for a value `JSON.parse` returned (and nobody touched since): the same
 * answer, for less work. Passing anything else is a bug.
 */
export function fastParseParsedDraft(value: unknown): DurableEventDraft | undefined {
  return parseWith(CHECKS.parsed, value);
}

/**
 * The fast path over a whole batch: every draft parsed as zod would, or `undefined` as soon as the
 * batch itself is malformed or any draft is declined — the caller then runs the zod validator on
 * the whole batch, so every refusal carries its exact error. `source: 'parsed'` is for a value
 * `JSON.parse` returned (cheaper JSON checks).
 */
export function fastParseDraftBatch(drafts: unknown, source: Source): DurableEventDraft[] | undefined {
  if (
    !Array.isArray(drafts) ||
    Object.getPrototypeOf(drafts) !== Array.prototype ||
    drafts.length === 0 ||
    drafts.length > MAX_BATCH_EVENTS
  ) {
    return undefined;
  }
  const checks = CHECKS[source];
  const out: DurableEventDraft[] = [];
  for (let index = 0; index < drafts.length; index++) {
    const parsed = parseWith(checks, drafts[index]);
    if (parsed === undefined) return undefined;
    out.push(parsed);
  }
  return out;
}
