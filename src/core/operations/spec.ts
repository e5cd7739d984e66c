/**
 * The shape of one row of the session operation table (`SESSION_OPERATIONS`, ./operations.ts) and
 * small schema helpers the row files share.
 */
import { z } from 'zod';
import type { DurableErrorCode } from '../../protocol/errors.js';

/**
 * How a transport failure is reported: a `read` is unavailable (safe to retry), a `write` has an
 * unknown outcome, a `command` (input with a `commandId`) has an unknown outcome to reconcile by
 * resubmitting the same command. A `replace` writes derived data that a retry writes again
 * harmlessly (a projection checkpoint): a transport failure is unavailable, as for a read.
 */
export type OperationKind = 'read' | 'write' | 'command' | 'replace';

/** The part of the session object that serves a row (see {@link OperationHosts}). */
export type OperationHostName = 'log' | 'checkpoint' | 'recovery' | 'journal' | 'durability' | 'agent';

/** The HTTP route of a row (`GET` takes the input as the query string, `POST` as the JSON body). */
export interface OperationHttpSpec {
  readonly method: 'get' | 'post';
  readonly path: `/v1/sessions/{sessionId}${string}`;
  /** The token scope the route needs (a `TokenScope` of `src/app/auth.ts`). */
  readonly scope: string;
  /** OpenAPI operationId when it is not the row's name. */
  readonly operationId?: string;
  readonly summary: string;
  readonly description?: string;
  readonly tags: readonly string[];
  /** Domain codes the route may answer with. */
  readonly errors: readonly DurableErrorCode[];
  /** Code of an input that fails the schema (default `DURABLE_EVENT_INVALID_INPUT`). */
  readonly inputErrorCode?: DurableErrorCode;
  /** Code of an input whose field of this name fails the schema, when not `inputErrorCode`. */
  readonly fieldErrorCodes?: Readonly<Record<string, DurableErrorCode>>;
  /** The body may be as large as an append batch's, not only a control body's (64 KiB). */
  readonly largeBody?: boolean;
  readonly responseDescription: string;
  /** The response body when it is not the output itself, and the way back for the HTTP client. */
  readonly answer?: { readonly schema: z.ZodType; fromOutput(output: unknown): unknown; toOutput(body: unknown): unknown };
}

/** One row of {@link SESSION_OPERATIONS}. */
export interface OperationSpec {
  readonly kind: OperationKind;
  readonly host: OperationHostName;
  /** The input (`z.strictObject({})` for none); validated by the route, and by the host over RPC. */
  readonly input: z.ZodType;
  readonly output: z.ZodType;
  readonly http?: OperationHttpSpec;
  /** Arguments after `sessionId` of the positional RPC method of the row's name, turned into the input. */
  readonly rpcArgs?: (...args: never[]) => unknown;
  /** A write whose outcome is unknown is a lease timeout carrying this `leaseId` (retry it to reconcile). */
  readonly leaseIdOf?: (input: unknown) => string | undefined;
}

/** The input of an operation that takes none. */
export const noInput = z.strictObject({});

/** `{ ok: true }`: the HTTP answer of an operation whose output is `null`. */
export const okResponseSchema = z.strictObject({ ok: z.literal(true) }).meta({ id: 'OkResponse' });

/**
 * Integer query parameter in `min..max`, decimal digits only. The host receives the number (the
 * input type is the schema's output); RPC callers pass numbers, which the host checks itself.
 */
export function integerQuery(min: number, max: number, label: string) {
  return z
    .string()
    .regex(/^(0|[1-9][0-9]{0,15})$/, `${label} must be a decimal integer`)
    .transform(Number)
    .pipe(z.number().int().min(min, `${label} must be >= ${min}`).max(max, `${label} must be <= ${max}`));
}

/** `{ ok: true }` over HTTP for an operation whose output is `null`. */
export const OK_ANSWER = {
  schema: okResponseSchema,
  fromOutput: () => ({ ok: true as const }),
  toOutput: () => null,
};
