/**
 * The HTTP status of every error code: a protocol fact shared by the Worker (which answers with it),
 * the inspector (which renders it) and clients. `STATUS_BY_CODE` is exhaustive over
 * `DurableErrorCode`, so a new code fails to compile until it gets a status.
 */
import type { DurableErrorCode } from './errors.js';

/** Success and protocol statuses the routes use, by name. */
export const HttpStatus = {
  OK: 200,
  CREATED: 201,
  ACCEPTED: 202,
  NO_CONTENT: 204,
  SWITCHING_PROTOCOLS: 101,
  BAD_REQUEST: 400,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  NOT_ACCEPTABLE: 406,
  CONFLICT: 409,
  PAYLOAD_TOO_LARGE: 413,
  UPGRADE_REQUIRED: 426,
  PRECONDITION_REQUIRED: 428,
  UNPROCESSABLE: 422,
  INTERNAL: 500,
  UNAVAILABLE: 503,
  GATEWAY_TIMEOUT: 504,
} as const;

/** A status this Worker answers with. */
export type HttpStatusCode = (typeof HttpStatus)[keyof typeof HttpStatus];

/** Codes of failures that only exist at the HTTP boundary (never thrown by the library). */
export const HTTP_ONLY_CODES = {
  /** No bearer token, or one that is malformed, expired or wrongly signed. */
  HTTP_UNAUTHORIZED: HttpStatus.UNAUTHORIZED,
  /** A valid token without the right: another session, a missing scope, or not admin. */
  HTTP_FORBIDDEN: HttpStatus.FORBIDDEN,
  /** No route matches the path. */
  HTTP_NOT_FOUND: HttpStatus.NOT_FOUND,
  /** The path exists, the method does not. */
  HTTP_METHOD_NOT_ALLOWED: HttpStatus.METHOD_NOT_ALLOWED,
  /** `/subscribe` without a WebSocket upgrade or an `Accept: text/event-stream`. */
  HTTP_UPGRADE_REQUIRED: HttpStatus.UPGRADE_REQUIRED,
} as const;

/** Code of an HTTP-only failure. */
export type HttpOnlyCode = keyof typeof HTTP_ONLY_CODES;

/** Status of every domain code. Exhaustive: adding a code to `errors.ts` requires a line here. */
export const STATUS_BY_CODE: Readonly<Record<DurableErrorCode, HttpStatusCode>> = {
  DURABLE_EVENT_INVALID_INPUT: HttpStatus.BAD_REQUEST,
  DURABLE_EVENT_INVALID_CURSOR: HttpStatus.BAD_REQUEST,
  DURABLE_EVENT_INVALID_OPTIONS: HttpStatus.BAD_REQUEST,
  DURABLE_EVENT_LIMIT_EXCEEDED: HttpStatus.PAYLOAD_TOO_LARGE,
  DURABLE_EVENT_LOCK_FAILED: HttpStatus.UNAVAILABLE,
  DURABLE_EVENT_LOCK_TIMEOUT: HttpStatus.GATEWAY_TIMEOUT,
  DURABLE_EVENT_IO_TIMEOUT: HttpStatus.GATEWAY_TIMEOUT,
  DURABLE_EVENT_WRITE_FAILED: HttpStatus.INTERNAL,
  DURABLE_EVENT_READ_FAILED: HttpStatus.INTERNAL,
  DURABLE_EVENT_CORRUPT_LOG: HttpStatus.INTERNAL,
  DURABLE_EVENT_UNAVAILABLE: HttpStatus.UNAVAILABLE,
  DURABLE_EVENT_SEQUENCE_CONFLICT: HttpStatus.CONFLICT,
  DURABLE_COMMAND_CONFLICT: HttpStatus.CONFLICT,
  DURABLE_COMMAND_OUTCOME_UNKNOWN: HttpStatus.INTERNAL,
  DURABLE_SESSION_JOURNAL_INVALID: HttpStatus.BAD_REQUEST,
  DURABLE_EVENT_SUBSCRIPTION_INVALID: HttpStatus.BAD_REQUEST,
  DURABLE_SESSION_RECOVERY_REQUIRED: HttpStatus.CONFLICT,
  DURABLE_EXECUTION_LEASE_CONFLICT: HttpStatus.CONFLICT,
  DURABLE_EXECUTION_LEASE_REQUIRED: HttpStatus.PRECONDITION_REQUIRED,
  DURABLE_EXECUTION_LEASE_LOST: HttpStatus.CONFLICT,
  DURABLE_EXECUTION_LEASE_INVALID: HttpStatus.BAD_REQUEST,
  DURABLE_EXECUTION_LEASE_TIMEOUT: HttpStatus.GATEWAY_TIMEOUT,
  SESSION_DURABLE_RECORDER_INVALID: HttpStatus.CONFLICT,
  DURABLE_RECOVERY_INVALID_STATE: HttpStatus.CONFLICT,
  DURABLE_RECOVERY_TARGET_NOT_FOUND: HttpStatus.NOT_FOUND,
  DURABLE_RECOVERY_UNSAFE_ROLLOVER: HttpStatus.CONFLICT,
  DURABLE_EVENT_PROJECTION_INVALID: HttpStatus.UNPROCESSABLE,
  DURABILITY_INVALID_VALUE: HttpStatus.BAD_REQUEST,
  DURABILITY_INVALID_INPUT: HttpStatus.BAD_REQUEST,
  DURABILITY_CORRUPT_RECORD: HttpStatus.INTERNAL,
  DURABILITY_CONFLICT: HttpStatus.CONFLICT,
  DURABILITY_RUN_FAILED: HttpStatus.INTERNAL,
};

/** Status of a domain or HTTP-only code; unknown codes are treated as an unavailable backend. */
export function statusOfCode(code: string): HttpStatusCode {
  if (Object.hasOwn(STATUS_BY_CODE, code)) return STATUS_BY_CODE[code as DurableErrorCode];
  if (Object.hasOwn(HTTP_ONLY_CODES, code)) return HTTP_ONLY_CODES[code as HttpOnlyCode];
  return HttpStatus.UNAVAILABLE;
}
