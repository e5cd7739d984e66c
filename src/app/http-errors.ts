/**
 * HTTP statuses and problem+json responses: the one place that knows HTTP numbers.
 *
 * 1. Domain errors keep their string `code` end to end; `src/protocol/http-status.ts` maps each
 *    code to a status (`STATUS_BY_CODE`, exhaustive over `DurableErrorCode`, so a new code fails to
 *    compile until it gets a status).
 * 2. Failures that are not domain errors (authentication, unknown routes) carry their own
 *    {@link HttpOnlyCode}s; they exist only at this boundary.
 * 3. {@link problemResponse} renders `application/problem+json` (RFC 9457) with the extra members
 *    `code` and `details`; the HTTP client turns it back into the same error class.
 */
import {
  DurableEventStoreError,
  isDurableError,
  type DurableErrorDetails,
  type DurableErrorJson,
} from '../protocol/errors.js';
import {
  HTTP_ONLY_CODES,
  HttpStatus,
  statusOfCode,
  STATUS_BY_CODE,
  type HttpOnlyCode,
  type HttpStatusCode,
} from '../protocol/http-status.js';
import {
  PROBLEM_CONTENT_TYPE,
  problemTypeUri,
  type ProblemDocument,
} from '../adapters/http/problem.js';

export { HTTP_ONLY_CODES, HttpStatus, statusOfCode, STATUS_BY_CODE, type HttpOnlyCode, type HttpStatusCode };

/** An HTTP-only failure (auth, routing). Thrown inside the Worker, rendered by {@link problemResponse}. */
export class HttpProblem extends Error {
  readonly code: HttpOnlyCode;
  constructor(code: HttpOnlyCode, message: string) {
    super(message);
    this.name = 'HttpProblem';
    this.code = code;
  }
}

/** Wire form of anything the Worker can fail with. */
interface ProblemSource {
  name: string;
  code: string;
  message: string;
  details?: DurableErrorDetails | undefined;
}

/**
 * The problem document of an error. Domain errors and {@link HttpProblem}s keep their code and
 * message; anything else becomes `DURABLE_EVENT_UNAVAILABLE` without leaking internals.
 */
function problemOf(error: unknown): ProblemDocument {
  const source = sourceOf(error);
  const status = statusOfCode(source.code);
  return {
    type: problemTypeUri(source.code),
    title: source.name,
    status,
    code: source.code,
    detail: source.message,
    ...(source.details === undefined ? {} : { details: source.details }),
  };
}

function sourceOf(error: unknown): ProblemSource {
  if (error instanceof HttpProblem) return { name: error.name, code: error.code, message: error.message };
  if (isDurableError(error)) {
    // Works for DurableError instances and for their wire form (an RPC result's `error`).
    const { name, code, message, details } = error as DurableErrorJson;
    return { name: typeof name === 'string' ? name : 'DurableError', code, message: String(message), details };
  }
  const fallback = new DurableEventStoreError('DURABLE_EVENT_UNAVAILABLE', 'the ledger could not complete the request');
  return fallback.toJSON();
}

/** Renders an error as an `application/problem+json` response. */
export function problemResponse(error: unknown, headers?: Record<string, string>): Response {
  const problem = problemOf(error);
  const out = new Headers(headers);
  out.set('content-type', PROBLEM_CONTENT_TYPE);
  out.set('cache-control', 'no-store');
  if (problem.status === HttpStatus.UNAUTHORIZED) out.set('www-authenticate', 'Bearer realm="agent-ledger"');
  return new Response(JSON.stringify(problem), { status: problem.status, headers: out });
}
