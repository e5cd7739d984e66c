/**
 * Protocol v4 events: drafts (what a writer appends) and envelopes (what a store returns).
 *
 * 1. A draft is `{ type, data }` plus the correlation ids its type requires (see
 *    {@link DURABLE_EVENT_CORRELATION}), optionally `commandId`, `causationEventId` and
 *    `occurredAt`. Any other key, including a correlation id its type does not list, fails.
 * 2. The store turns a draft into an envelope by adding `schemaVersion`, `eventId`, `sequence`,
 *    `sessionId` and `recordedAt`, and by defaulting `occurredAt` to `recordedAt`.
 * 3. `parseDurableEventDraft` / `parseDurableEventEnvelope` dispatch on `type` to one strict
 *    schema built at module load, so a parse costs one object walk plus the lossless-JSON walk
 *    of the free-form values. Failures throw `DURABLE_EVENT_INVALID_INPUT` naming the type and
 *    the path of the first problem.
 *
 * Parsed events share their free-form JSON values with the input; use `cloneJson` when a
 * detached copy is needed.
 */
import { z } from 'zod';
import { DurableEventStoreError } from './errors.js';
import type { DurableEventDataMap } from './event-payloads.js';
import {
  commandIdSchema,
  durableEventDataSchemas,
  eventIdSchema,
  eventSequenceSchema,
  modelAttemptIdSchema,
  requestIdSchema,
  sessionIdSchema,
  strictPayloadObject,
  timestampSchema,
  toolAttemptIdSchema,
  turnIdSchema,
} from './event-schemas.js';
import { DURABLE_EVENT_SCHEMA_VERSION, DURABLE_EVENT_TYPES, isDurableEventType, type DurableEventType } from './event-types.js';
import type { CommandId, EventId, EventSequence, ModelAttemptId, RequestId, SessionId, ToolAttemptId, TurnId } from './ids.js';
import { utf8ByteLength } from './json.js';

export * from './event-types.js';
export type * from './event-payloads.js';
export * from './event-schemas.js';
export { isIsoTimestamp, nowIsoTimestamp } from './timestamp.js';

/** Envelope correlation fields that scope an event. */
export type CorrelationKey = 'commandId' | 'requestId' | 'turnId' | 'modelAttemptId' | 'toolAttemptId';

/** Branded type of each correlation field. */
export interface CorrelationIdTypes {
  commandId: CommandId;
  requestId: RequestId;
  turnId: TurnId;
  modelAttemptId: ModelAttemptId;
  toolAttemptId: ToolAttemptId;
}

const TOOL_SCOPE = { required: ['requestId', 'turnId', 'toolAttemptId'], optional: [] } as const;
const MODEL_SCOPE = { required: ['requestId', 'turnId', 'modelAttemptId'], optional: [] } as const;
const TURN_SCOPE = { required: ['requestId', 'turnId'], optional: [] } as const;
const REQUEST_SCOPE = { required: ['requestId'], optional: [] } as const;
const SESSION_SCOPE = { required: [], optional: [] } as const;

/**
 * Correlation fields per event type: `required` must be present, `optional` may be. `commandId`
 * is optional on every type that does not require it; any field not listed here is rejected.
 */
export const DURABLE_EVENT_CORRELATION = {
  session_created: SESSION_SCOPE,
  session_closed: SESSION_SCOPE,
  request_accepted: { required: ['requestId', 'commandId'], optional: [] },
  request_started: REQUEST_SCOPE,
  request_completed: REQUEST_SCOPE,
  request_failed: REQUEST_SCOPE,
  request_interrupted: REQUEST_SCOPE,
  turn_started: TURN_SCOPE,
  turn_completed: TURN_SCOPE,
  turn_aborted: TURN_SCOPE,
  model_request_started: MODEL_SCOPE,
  model_request_completed: MODEL_SCOPE,
  model_request_failed: MODEL_SCOPE,
  model_request_aborted: MODEL_SCOPE,
  tool_scheduled: { required: ['requestId', 'turnId', 'modelAttemptId', 'toolAttemptId'], optional: [] },
  tool_started: TOOL_SCOPE,
  tool_completed: TOOL_SCOPE,
  tool_failed: TOOL_SCOPE,
  tool_cancelled: TOOL_SCOPE,
  tool_outcome_unknown: TOOL_SCOPE,
  permission_requested: TOOL_SCOPE,
  permission_resolved: TOOL_SCOPE,
  input_applied: { required: ['requestId'], optional: ['turnId'] },
} as const satisfies Record<
  DurableEventType,
  { required: readonly CorrelationKey[]; optional: readonly Exclude<CorrelationKey, 'commandId'>[] }
>;

type Correlation = typeof DURABLE_EVENT_CORRELATION;
type RequiredKeys<T extends DurableEventType> = Correlation[T]['required'][number];
type OptionalKeys<T extends DurableEventType> =
  | Correlation[T]['optional'][number]
  | Exclude<'commandId', RequiredKeys<T>>;
type Expand<T> = { [K in keyof T]: T[K] } & {};
type CorrelationOf<T extends DurableEventType> = { [K in RequiredKeys<T>]: CorrelationIdTypes[K] } & {
  [K in OptionalKeys<T>]?: CorrelationIdTypes[K];
};

/** The draft of one event type: what a writer passes to `append`. */
export type DurableEventDraftOf<T extends DurableEventType> = T extends DurableEventType
  ? Expand<
      { type: T; data: DurableEventDataMap[T] } & CorrelationOf<T> & {
          causationEventId?: EventId;
          /** Domain time; defaults to the store's `recordedAt`. */
          occurredAt?: string;
        }
    >
  : never;

/**
 * A draft event, discriminated on `type`. `DurableEventDraft<'turn_started'>` is one member.
 *
 * @example
 * const draft: DurableEventDraft = { type: 'request_started', requestId, data: {} };
 */
export type DurableEventDraft<T extends DurableEventType = DurableEventType> = DurableEventDraftOf<T>;

/** The stored envelope of one event type. */
export type DurableEventEnvelopeOf<T extends DurableEventType> = T extends DurableEventType
  ? Expand<
      {
        schemaVersion: typeof DURABLE_EVENT_SCHEMA_VERSION;
        eventId: EventId;
        sequence: EventSequence;
        sessionId: SessionId;
        type: T;
        data: DurableEventDataMap[T];
        /** Store commit time. */
        recordedAt: string;
        /** Domain time (defaults to `recordedAt`). */
        occurredAt: string;
      } & CorrelationOf<T> & { causationEventId?: EventId }
    >
  : never;

/** A stored event, discriminated on `type`. `DurableEventEnvelope<'turn_started'>` is one member. */
export type DurableEventEnvelope<T extends DurableEventType = DurableEventType> = DurableEventEnvelopeOf<T>;

const CORRELATION_SCHEMAS = {
  commandId: commandIdSchema,
  requestId: requestIdSchema,
  turnId: turnIdSchema,
  modelAttemptId: modelAttemptIdSchema,
  toolAttemptId: toolAttemptIdSchema,
} as const;

function correlationShape(type: DurableEventType): Record<string, z.ZodType> {
  const { required, optional }: { required: readonly CorrelationKey[]; optional: readonly CorrelationKey[] } =
    DURABLE_EVENT_CORRELATION[type];
  const shape: Record<string, z.ZodType> = {};
  for (const key of required) shape[key] = CORRELATION_SCHEMAS[key];
  for (const key of optional) shape[key] = CORRELATION_SCHEMAS[key].optional();
  if (!required.includes('commandId')) shape['commandId'] = commandIdSchema.optional();
  shape['causationEventId'] = eventIdSchema.optional();
  return shape;
}

function buildSchemas(kind: 'draft' | 'envelope'): Record<DurableEventType, z.ZodObject> {
  const out: Partial<Record<DurableEventType, z.ZodObject>> = {};
  for (const type of DURABLE_EVENT_TYPES) {
    const common = { type: z.literal(type), data: durableEventDataSchemas[type], ...correlationShape(type) };
    out[type] =
      kind === 'draft'
        ? strictPayloadObject({ ...common, occurredAt: timestampSchema.optional() })
        : strictPayloadObject({
            schemaVersion: z.literal(DURABLE_EVENT_SCHEMA_VERSION),
            eventId: eventIdSchema,
            sequence: eventSequenceSchema,
            sessionId: sessionIdSchema,
            ...common,
            recordedAt: timestampSchema,
            occurredAt: timestampSchema,
          });
  }
  // SAFETY: the loop filled every event type.
  return out as Record<DurableEventType, z.ZodObject>;
}

const DRAFT_SCHEMAS = buildSchemas('draft');
const ENVELOPE_SCHEMAS = buildSchemas('envelope');

function unionOf(schemas: Record<DurableEventType, z.ZodObject>) {
  // SAFETY: DURABLE_EVENT_TYPES is non-empty, so the option list is a non-empty tuple.
  const options = DURABLE_EVENT_TYPES.map((type) => schemas[type]) as [z.ZodObject, ...z.ZodObject[]];
  return z.discriminatedUnion('type', options);
}

/**
 * Strict schema of {@link DurableEventDraft} (a discriminated union on `type`), for embedding in
 * larger schemas such as an HTTP body. Standalone parsing should use {@link parseDurableEventDraft}.
 */
// SAFETY: built from the same correlation table and payload schemas the types are derived from;
// test/protocol pins each member's accepted keys.
export const durableEventDraftSchema = unionOf(DRAFT_SCHEMAS) as unknown as z.ZodType<DurableEventDraft>;
/** Strict schema of {@link DurableEventEnvelope} (a discriminated union on `type`). */
// SAFETY: as for durableEventDraftSchema.
export const durableEventEnvelopeSchema = unionOf(ENVELOPE_SCHEMAS) as unknown as z.ZodType<DurableEventEnvelope>;

/** Result of a non-throwing parse. */
export type DurableParseResult<T> = { ok: true; value: T } | { ok: false; problem: string };

function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const key of path) {
    if (typeof key === 'number') out += `[${key}]`;
    else out += out === '' ? String(key) : `.${String(key)}`;
  }
  return out === '' ? '(root)' : out;
}

type Issue = z.core.$ZodIssue;

/** The most specific issue: inside a union, the branch that got furthest. */
function deepestIssue(issue: Issue, prefix: readonly PropertyKey[]): { issue: Issue; path: PropertyKey[] } {
  const path = [...prefix, ...issue.path];
  if (issue.code === 'invalid_union' && issue.errors.length > 0) {
    let best: { issue: Issue; path: PropertyKey[] } | undefined;
    for (const branch of issue.errors) {
      const first = branch[0];
      if (first === undefined) continue;
      const candidate = deepestIssue(first, path);
      if (best === undefined || isMoreSpecific(candidate, best)) best = candidate;
    }
    if (best !== undefined) return best;
  }
  return { issue, path };
}

/** Longer paths got further; on a tie, a branch whose type matched beats a type mismatch. */
function isMoreSpecific(candidate: { issue: Issue; path: PropertyKey[] }, best: { issue: Issue; path: PropertyKey[] }): boolean {
  if (candidate.path.length !== best.path.length) return candidate.path.length > best.path.length;
  return best.issue.code === 'invalid_type' && candidate.issue.code !== 'invalid_type';
}

function describeZodError(error: z.ZodError): string {
  const first = error.issues[0];
  if (first === undefined) return 'invalid';
  const { issue, path } = deepestIssue(first, []);
  return `${formatPath(path)}: ${issue.message}`;
}

function describeType(value: unknown): { type: DurableEventType | undefined; problem?: string } {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { type: undefined, problem: '(root): expected an object' };
  }
  const type: unknown = (value as { type?: unknown }).type;
  if (isDurableEventType(type)) return { type };
  const shown = typeof type === 'string' ? JSON.stringify(type.slice(0, 64)) : String(type);
  return { type: undefined, problem: `type: unknown event type ${shown}` };
}

function safeParseWith<T>(
  schemas: Record<DurableEventType, z.ZodObject>,
  kind: 'draft' | 'envelope',
  value: unknown,
): DurableParseResult<T> {
  const { type, problem } = describeType(value);
  if (type === undefined) return { ok: false, problem: `invalid event ${kind}: ${problem ?? 'unknown type'}` };
  const result = schemas[type].safeParse(value);
  if (result.success) {
    // SAFETY: the per-type schema accepts exactly DurableEvent{Draft,Envelope}Of<type>.
    return { ok: true, value: result.data as T };
  }
  return { ok: false, problem: `invalid ${type} ${kind}: ${describeZodError(result.error)}` };
}

/** Parses a draft without throwing. */
export function safeParseDurableEventDraft(value: unknown): DurableParseResult<DurableEventDraft> {
  return safeParseWith<DurableEventDraft>(DRAFT_SCHEMAS, 'draft', value);
}

/** Parses a stored envelope without throwing. */
export function safeParseDurableEventEnvelope(value: unknown): DurableParseResult<DurableEventEnvelope> {
  return safeParseWith<DurableEventEnvelope>(ENVELOPE_SCHEMAS, 'envelope', value);
}

/**
 * Validates a draft strictly; throws `DurableEventStoreError('DURABLE_EVENT_INVALID_INPUT')`
 * naming the event type and the path of the first problem.
 *
 * @example
 * const draft = parseDurableEventDraft({ type: 'request_started', requestId: 'r-1', data: {} });
 */
export function parseDurableEventDraft(value: unknown): DurableEventDraft {
  const result = safeParseDurableEventDraft(value);
  if (!result.ok) throw new DurableEventStoreError('DURABLE_EVENT_INVALID_INPUT', result.problem);
  return result.value;
}

/**
 * Validates a stored envelope strictly (schema version 4 only); throws
 * `DurableEventStoreError('DURABLE_EVENT_INVALID_INPUT')` naming the type and the problem path.
 * A store reading its own log maps this to `DURABLE_EVENT_CORRUPT_LOG`.
 */
export function parseDurableEventEnvelope(value: unknown): DurableEventEnvelope {
  const result = safeParseDurableEventEnvelope(value);
  if (!result.ok) throw new DurableEventStoreError('DURABLE_EVENT_INVALID_INPUT', result.problem);
  return result.value;
}

/** UTF-8 byte length of `JSON.stringify(envelope)`, for `MAX_EVENT_BYTES` checks. */
export function encodedEventBytes(envelope: DurableEventEnvelope | DurableEventDraft): number {
  return utf8ByteLength(JSON.stringify(envelope));
}
