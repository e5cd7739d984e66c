/**
 * problem+json (RFC 9457) as the ledger's HTTP error format, both directions.
 *
 * The Worker answers every failure with a {@link ProblemDocument}: the standard members plus
 * `code` (the domain error code, unchanged) and `details` (the error's machine-readable facts).
 * The client reads it back with {@link errorFromProblemResponse}, which rebuilds the same error
 * class through `durableErrorFromJson`, so callers classify remote errors exactly like local ones.
 * Runtime-neutral: only `Response` and JSON.
 */
import {
  DurableEventStoreError,
  durableErrorFromJson,
  isDurableErrorCode,
  type DurableError,
  type DurableErrorDetails,
} from '../../protocol/errors.js';

/** Media type of error bodies. */
export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

/** Body of every error response the Worker sends. */
export interface ProblemDocument {
  /** URI naming the problem kind: `urn:agent-ledger:problem:<code>`. */
  type: string;
  /** The error class name, e.g. `DurableEventSequenceConflictError`. */
  title: string;
  /** The HTTP status, repeated for convenience. */
  status: number;
  /** Domain error code (or an HTTP-only code such as `HTTP_UNAUTHORIZED`). */
  code: string;
  /** Human-readable message. */
  detail: string;
  /** Machine-readable facts, e.g. `{ expected, actual }` for a sequence conflict. */
  details?: DurableErrorDetails;
}

/** The `type` URI of a code. */
export function problemTypeUri(code: string): string {
  return `urn:agent-ledger:problem:${code}`;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Rebuilds the error a problem document stands for. A domain code yields its own class; any
 * other code (authentication, routing) or a body that is not a problem document yields a
 * `DURABLE_EVENT_UNAVAILABLE` store error whose details keep the HTTP status and remote code.
 */
export function errorFromProblem(status: number, body: unknown): DurableError {
  if (isRecord(body) && isDurableErrorCode(body['code'])) {
    return durableErrorFromJson({ code: body['code'], message: body['detail'], details: body['details'] });
  }
  const remoteCode = isRecord(body) && typeof body['code'] === 'string' ? body['code'] : undefined;
  const detail = isRecord(body) && typeof body['detail'] === 'string' ? body['detail'] : `HTTP ${status}`;
  return new DurableEventStoreError(
    'DURABLE_EVENT_UNAVAILABLE',
    remoteCode === undefined ? detail : `${detail} (${remoteCode})`,
    { details: { httpStatus: status, ...(remoteCode === undefined ? {} : { remoteCode }) } },
  );
}

/** Reads a failed response's body (problem+json or anything else) into the error it stands for. */
export async function errorFromProblemResponse(response: Response): Promise<DurableError> {
  let body: unknown;
  try {
    const text = await response.text();
    body = text === '' ? undefined : JSON.parse(text);
  } catch {
    body = undefined;
  }
  return errorFromProblem(response.status, body);
}
