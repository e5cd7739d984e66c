/**
 * Caller-chosen Request IDs (`SessionSendOptions.requestId` / `inputId`) and their idempotency.
 *
 * A Request ID names one Request for the life of the session, like a `commandId` names one
 * command: sending again with an ID already used either finds the same Request or is a conflict.
 * - The ID must be a valid protocol ID, else `SessionDurableRecorderError`.
 * - "The same Request" means the same execution snapshot: input, priority, maxTurns, model
 *   selection and runtime context (after defaults), and the same `inputId` when one is given.
 *   Then `send` does not accept anything new: it returns a handle on the existing Request —
 *   the same promise while it is still queued in this process, the running Request's `result`,
 *   or a `result` already settled from the Request's terminal event in the log. A Request a
 *   rollover ended (`request_interrupted`, `process_restart`) answers with `continuation`: the
 *   Request that continued it (`request_accepted.data.recovery` names its source) and that one's
 *   outcome — awaited when it runs in this process, absent while another process still runs it —
 *   so a host that sees `interrupted` does not send the work again under a new ID.
 * - Anything else with a used ID is a `DurableCommandConflictError` (nothing is written). An
 *   explicit `inputId` already used by another Request or steering input is a conflict too.
 *
 * {@link AcceptedRequests} folds what the log says (every `request_accepted`, every applied input,
 * every Request terminal event); it is fed by the history fold, so live commits and a resumed
 * log are seen alike. {@link SentRequests} adds the Requests queued in this process that are not
 * accepted yet.
 */
import { DurableCommandConflictError, SessionDurableRecorderError } from '../protocol/errors.js';
import type { DurableInput, ModelSelection, Priority } from '../protocol/event-payloads.js';
import type { DurableEventEnvelope } from '../protocol/events.js';
import { describeInvalidId, InputId, RequestId } from '../protocol/ids.js';
import { canonicalJson, type JsonObject } from '../protocol/json.js';
import type { SessionIdKind, SessionRequestHandle, SessionRequestResult } from './types.js';

/** What makes two sends "the same Request". */
interface RequestSnapshot {
  input: DurableInput;
  priority: Priority;
  maxTurns: number;
  model: ModelSelection;
  context: JsonObject;
}

let unmatchable = 0;

/**
 * The canonical identity of a snapshot (key order does not matter; absent and `undefined` fields
 * are alike). A snapshot that is not lossless JSON (a send the protocol will refuse at `commit`,
 * with its own validation error) gets a key that matches nothing.
 */
export function snapshotKey(snapshot: RequestSnapshot | { [key: string]: unknown }): string {
  const present = Object.fromEntries(Object.entries(snapshot).filter(([, value]) => value !== undefined));
  try {
    // SAFETY: a value that is not JSON makes canonicalJson throw, handled below.
    return canonicalJson(present as JsonObject);
  } catch {
    unmatchable += 1;
    return `\u0000unmatchable:${unmatchable}`;
  }
}

interface AcceptedRecord {
  inputId: string;
  /** The accepted snapshot as the log has it (its key is computed only when a send asks). */
  snapshot: { [key: string]: unknown };
  result: SessionRequestResult | undefined;
}

/** Requests and inputs the log knows (see the module header). */
export class AcceptedRequests {
  readonly #requests = new Map<string, AcceptedRecord>();
  /** Every input ID the log used, with the Request it belongs to. */
  readonly #inputs = new Map<string, string>();
  /** The content of each steering input the log carries it for. */
  readonly #steeringInputs = new Map<string, DurableInput>();
  /** The Request a rollover accepted to continue each source Request. */
  readonly #continuations = new Map<string, RequestId>();

  /** Folds one committed event. */
  apply(event: DurableEventEnvelope): void {
    switch (event.type) {
      case 'request_accepted': {
        const data = event.data;
        this.#requests.set(event.requestId, {
          inputId: data.inputId,
          snapshot: { input: data.input, priority: data.priority, maxTurns: data.maxTurns, model: data.model, context: data.context },
          result: undefined,
        });
        this.#inputs.set(data.inputId, event.requestId);
        if (data.recovery !== undefined) this.#continuations.set(data.recovery.requestId, event.requestId);
        return;
      }
      case 'input_applied':
        this.#inputs.set(event.data.inputId, event.requestId);
        if (event.data.input !== undefined) this.#steeringInputs.set(event.data.inputId, event.data.input);
        return;
      case 'request_completed':
        this.#settle(event.requestId, {
          requestId: event.requestId,
          status: 'completed',
          ...(typeof event.data.output === 'string' ? { output: event.data.output } : {}),
          ...(event.data.usage === undefined ? {} : { usage: event.data.usage }),
        });
        return;
      case 'request_failed':
        this.#settle(event.requestId, { requestId: event.requestId, status: 'failed', error: event.data.error });
        return;
      case 'request_interrupted':
        this.#settle(event.requestId, { requestId: event.requestId, status: 'interrupted', reason: event.data.reason });
        return;
      default:
        return;
    }
  }

  #settle(requestId: string, result: SessionRequestResult): void {
    const record = this.#requests.get(requestId);
    if (record !== undefined) record.result = result;
  }

  /**
   * The outcome of a Request the log ended, with the continuation a rollover accepted for it (see
   * the module header), or `undefined` while the log holds no terminal event for it. `running`
   * is the Request this process runs: a continuation that is running is awaited.
   */
  settledResult(requestId: string, running: RunningRequest | null): Promise<SessionRequestResult> | undefined {
    const result = this.#requests.get(requestId)?.result;
    if (result === undefined) return undefined;
    const next = this.#continuations.get(requestId);
    if (next === undefined) return Promise.resolve(result);
    const withContinuation = (continued?: SessionRequestResult): SessionRequestResult => ({
      ...result,
      continuation: { requestId: next, ...(continued === undefined ? {} : { result: continued }) },
    });
    const logged = this.settledResult(next, running);
    if (logged !== undefined) return logged.then(withContinuation);
    if (running !== null && running.requestId === next) {
      // A run that stops without a terminal event (lease loss, handoff) leaves the outcome open.
      return running.result.then(withContinuation, () => withContinuation());
    }
    return Promise.resolve(withContinuation());
  }

  /** The accepted Request with this ID, if any. */
  get(requestId: string): Readonly<AcceptedRecord> | undefined {
    return this.#requests.get(requestId);
  }

  /** The content key of an applied steering input (`undefined` when the log has no content for it). */
  steeringKey(inputId: string): string | undefined {
    const input = this.#steeringInputs.get(inputId);
    return input === undefined ? undefined : snapshotKey({ input });
  }

  /** The Request an input ID was used by, if any. */
  inputOwner(inputId: string): string | undefined {
    return this.#inputs.get(inputId);
  }
}

function checkId(value: unknown, label: string): string {
  const problem = describeInvalidId(value);
  if (problem !== undefined) throw new SessionDurableRecorderError(`${label} ${problem}`);
  // SAFETY: describeInvalidId accepts only strings.
  return value as string;
}

function conflict(requestId: string, why: string): DurableCommandConflictError {
  return new DurableCommandConflictError(`Request ${requestId} was already sent ${why}`, { details: { requestId } });
}

/** The Request that is running in this process, as `send` needs to see it. */
interface RunningRequest {
  readonly requestId: RequestId;
  readonly inputId: InputId;
  readonly result: Promise<SessionRequestResult>;
}

/** Sends of this process that are not accepted yet, and the idempotency check of `send`. */
export class SentRequests {
  readonly #pending = new Map<string, { key: string; inputId: string; handle: Promise<SessionRequestHandle> }>();

  constructor(private readonly accepted: AcceptedRequests) {}

  /**
   * The IDs of a send: the caller's (validated) or fresh ones.
   *
   * @throws SessionDurableRecorderError on a malformed ID
   */
  ids(
    options: { requestId?: string; inputId?: string },
    newId: (kind: SessionIdKind) => string,
  ): { requestId: RequestId; inputId: InputId; explicitInput: boolean } {
    const requestId = options.requestId === undefined ? newId('request') : checkId(options.requestId, 'requestId');
    const inputId = options.inputId === undefined ? newId('input') : checkId(options.inputId, 'inputId');
    return { requestId: RequestId(requestId), inputId: InputId(inputId), explicitInput: options.inputId !== undefined };
  }

  /**
   * The handle of an earlier send of the same Request, or `undefined` when the ID is new.
   *
   * @throws DurableCommandConflictError when the ID (or an explicit input ID) was used otherwise
   */
  earlier(
    ids: { requestId: RequestId; inputId: InputId; explicitInput: boolean },
    key: string,
    running: RunningRequest | null,
  ): Promise<SessionRequestHandle> | undefined {
    const { requestId, inputId, explicitInput } = ids;
    const sameInput = (recorded: string): boolean => !explicitInput || recorded === inputId;
    const pending = this.#pending.get(requestId);
    if (pending !== undefined) {
      if (pending.key !== key || !sameInput(pending.inputId)) throw conflict(requestId, 'with another input or options');
      return pending.handle;
    }
    const record = this.accepted.get(requestId);
    if (record !== undefined) {
      if (snapshotKey(record.snapshot) !== key || !sameInput(record.inputId)) throw conflict(requestId, 'with another input or options');
      const recordedInput = InputId(record.inputId);
      if (running !== null && running.requestId === requestId) {
        return Promise.resolve({ requestId, inputId: recordedInput, result: running.result });
      }
      const settled = this.accepted.settledResult(requestId, running);
      if (settled !== undefined) {
        settled.catch(() => undefined);
        return Promise.resolve({ requestId, inputId: recordedInput, result: settled });
      }
      throw conflict(requestId, 'and is active in the log, but this Session does not run it');
    }
    if (explicitInput) {
      const owner = this.accepted.inputOwner(inputId) ?? [...this.#pending.entries()].find(([, entry]) => entry.inputId === inputId)?.[0];
      if (owner !== undefined) {
        throw new DurableCommandConflictError(`input ${inputId} is already used by Request ${owner}`, { details: { requestId, inputId } });
      }
    }
    return undefined;
  }

  /** Remembers a send until it is accepted (it is in the log then) or refused (the ID is free again). */
  track(requestId: RequestId, inputId: InputId, key: string, handle: Promise<SessionRequestHandle>): void {
    this.#pending.set(requestId, { key, inputId, handle });
    const forget = (): void => {
      if (this.#pending.get(requestId)?.handle === handle) this.#pending.delete(requestId);
    };
    handle.then(forget, forget);
  }
}

/** A steering input waiting in the running Request, as `steer` needs to see it. */
interface WaitingSteer {
  readonly inputId: string;
  readonly input: DurableInput;
  readonly applied?: Promise<void>;
}

/**
 * The validated ID of a steering input and, when this Session already took it, the handle on it
 * (see `SessionSteerOptions.inputId`).
 *
 * @throws SessionDurableRecorderError on a malformed ID
 * @throws DurableCommandConflictError when another Request used the ID
 */
export function steerIdentity(
  accepted: AcceptedRequests,
  inputId: unknown,
  input: DurableInput,
  running: { readonly requestId: RequestId; readonly steering: readonly WaitingSteer[] } | null,
): { inputId: InputId; earlier: Promise<void> | undefined } {
  const id = InputId(checkId(inputId, 'inputId'));
  const used = (owner: string): DurableCommandConflictError =>
    new DurableCommandConflictError(`input ${id} is already used by Request ${owner} (or with another content)`, { details: { inputId: id } });
  const key = snapshotKey({ input });
  const owner = accepted.inputOwner(id);
  if (owner !== undefined) {
    const recorded = accepted.steeringKey(id);
    if (running === null || owner !== running.requestId || accepted.get(owner)?.inputId === id || (recorded !== undefined && recorded !== key)) {
      throw used(owner);
    }
    return { inputId: id, earlier: Promise.resolve() };
  }
  const waiting = running?.steering.find((steer) => steer.inputId === id);
  if (waiting !== undefined && (snapshotKey({ input: waiting.input }) !== key || waiting.applied === undefined)) throw used(running?.requestId ?? '');
  return { inputId: id, earlier: waiting?.applied };
}
