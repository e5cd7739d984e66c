/**
 * Strict zod schemas of protocol v4 payloads.
 *
 * Built once at module load and reused by every parse. Rules, per `docs/protocol.md`:
 * - every object is strict (unknown keys fail); an optional field is absent or valid (an explicit
 *   `undefined` fails, see {@link strictPayloadObject}, so a parsed event is always lossless JSON);
 * - enums are closed, numbers finite integers where counted (never `-0`);
 * - names are non-empty and at most {@link MAX_NAME_LENGTH}, free text at most `MAX_TEXT_LENGTH`;
 * - identifiers follow `describeInvalidId` and come out branded;
 * - every free-form value goes through the lossless-JSON validator.
 * The bottom of the file pins, at compile time, that each schema's output equals its payload type.
 */
import { z } from 'zod';
import type { DurableEventType } from './event-types.js';
import type {
  ContentPart,
  DurableErrorInfo,
  DurableEventDataMap,
  DurableInput,
  ModelIdentity,
  ModelResponse,
  ModelSelection,
  ModelToolCall,
  ModelUsage,
  RequestRecovery,
  RequestUsage,
} from './event-payloads.js';
import {
  describeInvalidId,
  isValidId,
  type Brand,
  type CommandId,
  type EventId,
  type EventSequence,
  type InputId,
  type ModelAttemptId,
  type PermissionRequestId,
  type RequestId,
  type SessionId,
  type ToolAttemptId,
  type TurnId,
} from './ids.js';
import { jsonObjectSchema, jsonValueSchema } from './json.js';
import { MAX_EVENT_BYTES, MAX_TEXT_LENGTH } from './limits.js';
import { isIsoTimestamp } from './timestamp.js';

/** Longest accepted name (provider, model, tool name, tool call id, error code, media type), in UTF-16 code units. */
export const MAX_NAME_LENGTH = 1024;
/** Most content parts in one {@link DurableInput}. */
export const MAX_CONTENT_PARTS = 256;
/** Largest `maxTurns` of a Request. */
export const MAX_REQUEST_TURNS = 10_000;

/**
 * Fails on own keys whose value is `undefined`: an optional field is absent or valid. (This
 * check on `.optional()` fields costs a key loop, far less than zod's `exactOptional`; the figure
 * is in docs/performance-history.md.)
 */
function rejectExplicitUndefined(ctx: z.core.ParsePayload<object>): void {
  const value = ctx.value as Record<string, unknown>;
  for (const key in value) {
    if (value[key] === undefined) {
      ctx.issues.push({ code: 'custom', message: 'explicit undefined (omit the key instead)', input: undefined, path: [key] });
    }
  }
}

/** A strict object schema whose optional fields may be absent but never `undefined`. */
export function strictPayloadObject<S extends z.core.$ZodLooseShape>(shape: S) {
  return z.strictObject(shape).check(rejectExplicitUndefined);
}

function idSchema<B extends string>(kind: B) {
  return z.custom<Brand<string, B>>((value) => isValidId(value), {
    error: (issue) =>
      issue.input === undefined ? `${kind} is required` : `${kind} ${describeInvalidId(issue.input) ?? 'is invalid'}`,
  });
}

export const sessionIdSchema = idSchema('SessionId') satisfies z.ZodType<SessionId>;
export const requestIdSchema = idSchema('RequestId') satisfies z.ZodType<RequestId>;
export const turnIdSchema = idSchema('TurnId') satisfies z.ZodType<TurnId>;
export const commandIdSchema = idSchema('CommandId') satisfies z.ZodType<CommandId>;
export const inputIdSchema = idSchema('InputId') satisfies z.ZodType<InputId>;
export const modelAttemptIdSchema = idSchema('ModelAttemptId') satisfies z.ZodType<ModelAttemptId>;
export const toolAttemptIdSchema = idSchema('ToolAttemptId') satisfies z.ZodType<ToolAttemptId>;
export const permissionRequestIdSchema = idSchema('PermissionRequestId') satisfies z.ZodType<PermissionRequestId>;
export const eventIdSchema = idSchema('EventId') satisfies z.ZodType<EventId>;
export const eventSequenceSchema = z.custom<EventSequence>(
  (value) => typeof value === 'number' && Number.isSafeInteger(value) && value >= 1,
  { error: (issue) => `EventSequence must be a safe integer >= 1, got ${String(issue.input)}` },
);

/** Protocol timestamp (see `timestamp.ts`). */
export const timestampSchema = z.custom<string>((value) => isIsoTimestamp(value), {
  error: (issue) => `expected an ISO-8601 UTC timestamp like 2025-01-31T12:00:00.000Z, got ${JSON.stringify(issue.input) ?? String(issue.input)}`,
});

const nameSchema = z.string().min(1).max(MAX_NAME_LENGTH);
const textSchema = z.string().max(MAX_TEXT_LENGTH);
const countSchema = z
  .number()
  .int()
  .min(0)
  .refine((value) => !Object.is(value, -0), 'negative zero');
const turnNumberSchema = z.number().int().min(1);

export const durableReasonSchema = z.enum([
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
]);
export const sideEffectSchema = z.enum(['pure', 'idempotent', 'non_idempotent']);
export const interruptBehaviorSchema = z.enum(['cancel', 'block']);
export const prioritySchema = z.enum(['now', 'next', 'later']);
export const permissionDecisionSchema = z.enum(['allow', 'deny', 'cancel']);
export const sessionSourceSchema = z.enum(['create', 'fork', 'restore']);
export const modelStopReasonSchema = z.enum(['end_turn', 'tool_use', 'max_tokens', 'stop_sequence', 'refusal', 'other']);

export const durableErrorInfoSchema = strictPayloadObject({
  code: nameSchema,
  message: textSchema,
  retryable: z.boolean().optional(),
  details: jsonValueSchema.optional(),
});

const MEDIA_TYPE = /^[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*\/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*(\s*;.*)?$/;
const mediaTypeSchema = nameSchema.regex(MEDIA_TYPE, 'expected a media type like image/png');
const base64Schema = z.base64().min(1).max(MAX_EVENT_BYTES);
const urlSchema = z.url().max(MAX_TEXT_LENGTH);

function exactlyOneSource(part: { data?: string; url?: string }): boolean {
  return (part.data === undefined) !== (part.url === undefined);
}
const ONE_SOURCE = { error: 'exactly one of data or url is required' } as const;

export const contentPartSchema = z.discriminatedUnion('type', [
  strictPayloadObject({ type: z.literal('text'), text: textSchema }),
  strictPayloadObject({
      type: z.literal('image'),
      mediaType: mediaTypeSchema,
      data: base64Schema.optional(),
      url: urlSchema.optional(),
    })
    .refine(exactlyOneSource, ONE_SOURCE),
  strictPayloadObject({
      type: z.literal('file'),
      mediaType: mediaTypeSchema,
      name: nameSchema.optional(),
      data: base64Schema.optional(),
      url: urlSchema.optional(),
    })
    .refine(exactlyOneSource, ONE_SOURCE),
]);

export const durableInputSchema = z.union([
  textSchema,
  z.array(contentPartSchema).min(1).max(MAX_CONTENT_PARTS),
]);

export const modelSelectionSchema = strictPayloadObject({
  provider: nameSchema,
  model: nameSchema,
  api: nameSchema.optional(),
});

export const modelIdentitySchema = strictPayloadObject({ provider: nameSchema, api: nameSchema });

export const requestUsageSchema = strictPayloadObject({
  inputTokens: countSchema,
  outputTokens: countSchema,
  totalTokens: countSchema,
  cacheReadTokens: countSchema.optional(),
  cacheWriteTokens: countSchema.optional(),
});

export const modelUsageSchema = strictPayloadObject({
  promptTokens: countSchema,
  completionTokens: countSchema,
  totalTokens: countSchema,
});

export const modelToolCallSchema = strictPayloadObject({ id: nameSchema, name: nameSchema, arguments: jsonValueSchema });

export const modelResponseSchema = strictPayloadObject({
  content: durableInputSchema,
  toolCalls: z.array(modelToolCallSchema).optional(),
  stopReason: modelStopReasonSchema.optional(),
  usage: modelUsageSchema.optional(),
});

export const requestRecoverySchema = strictPayloadObject({
  requestId: requestIdSchema,
  turnId: turnIdSchema,
  turn: turnNumberSchema,
});

const toolIdentity = { toolCallId: nameSchema, toolName: nameSchema };

/** The strict payload schema of each event type. */
export const durableEventDataSchemas = {
  session_created: strictPayloadObject({
    source: sessionSourceSchema.optional(),
    parentSessionId: sessionIdSchema.optional(),
  }),
  session_closed: strictPayloadObject({ reason: durableReasonSchema }),
  request_accepted: strictPayloadObject({
    inputId: inputIdSchema,
    input: durableInputSchema,
    priority: prioritySchema,
    maxTurns: z.number().int().min(1).max(MAX_REQUEST_TURNS).optional(),
    model: modelSelectionSchema.optional(),
    context: jsonObjectSchema.optional(),
    recovery: requestRecoverySchema.optional(),
  }),
  request_started: strictPayloadObject({}),
  request_completed: strictPayloadObject({
    output: jsonValueSchema.optional(),
    usage: requestUsageSchema.optional(),
  }),
  request_failed: strictPayloadObject({ error: durableErrorInfoSchema }),
  request_interrupted: strictPayloadObject({ reason: durableReasonSchema, byInputId: inputIdSchema.optional() }),
  turn_started: strictPayloadObject({ turn: turnNumberSchema, model: modelSelectionSchema.optional() }),
  turn_completed: strictPayloadObject({ turn: turnNumberSchema, hasToolCalls: z.boolean() }),
  turn_aborted: strictPayloadObject({ turn: turnNumberSchema, reason: durableReasonSchema }),
  model_request_started: strictPayloadObject({
    model: nameSchema,
    modelIdentity: modelIdentitySchema.optional(),
    streaming: z.boolean(),
  }),
  model_request_completed: strictPayloadObject({ response: modelResponseSchema }),
  model_request_failed: strictPayloadObject({ error: durableErrorInfoSchema }),
  model_request_aborted: strictPayloadObject({ reason: durableReasonSchema }),
  tool_scheduled: strictPayloadObject({
    ...toolIdentity,
    modelInput: jsonValueSchema,
    input: jsonValueSchema,
    sideEffect: sideEffectSchema,
    interruptBehavior: interruptBehaviorSchema,
  }),
  tool_started: strictPayloadObject({ ...toolIdentity, input: jsonValueSchema, sideEffect: sideEffectSchema }),
  tool_completed: strictPayloadObject({ ...toolIdentity, result: jsonValueSchema }),
  tool_failed: strictPayloadObject({ ...toolIdentity, error: durableErrorInfoSchema }),
  tool_cancelled: strictPayloadObject({ ...toolIdentity, reason: durableReasonSchema }),
  tool_outcome_unknown: strictPayloadObject({ ...toolIdentity, reason: durableReasonSchema }),
  permission_requested: strictPayloadObject({
    permissionRequestId: permissionRequestIdSchema,
    ...toolIdentity,
    input: jsonValueSchema,
    message: textSchema.optional(),
  }),
  permission_resolved: strictPayloadObject({
    permissionRequestId: permissionRequestIdSchema,
    decision: permissionDecisionSchema,
    message: textSchema.optional(),
  }),
  input_applied: strictPayloadObject({ inputId: inputIdSchema, priority: prioritySchema, input: durableInputSchema.optional() }),
} as const;

// ---- compile-time agreement between schemas and payload types ----
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type Assert<T extends true> = T;
type SchemaAgreement = {
  [T in DurableEventType]: Same<z.output<(typeof durableEventDataSchemas)[T]>, DurableEventDataMap[T]>;
};
type _PayloadSchemasAgree = Assert<SchemaAgreement[DurableEventType]>;
type _SharedSchemasAgree = Assert<
  Same<z.output<typeof durableErrorInfoSchema>, DurableErrorInfo> &
    Same<z.output<typeof contentPartSchema>, ContentPart> &
    Same<z.output<typeof durableInputSchema>, DurableInput> &
    Same<z.output<typeof modelSelectionSchema>, ModelSelection> &
    Same<z.output<typeof modelIdentitySchema>, ModelIdentity> &
    Same<z.output<typeof requestUsageSchema>, RequestUsage> &
    Same<z.output<typeof modelUsageSchema>, ModelUsage> &
    Same<z.output<typeof modelToolCallSchema>, ModelToolCall> &
    Same<z.output<typeof modelResponseSchema>, ModelResponse> &
    Same<z.output<typeof requestRecoverySchema>, RequestRecovery>
>;
