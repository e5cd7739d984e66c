/**
 * One Request being driven by this process: its execution snapshot, the signals that stop its
 * work, the steering inputs waiting for it, and the promise its caller awaits.
 *
 * Two signals: `cancel` stops the model call, permission waits and tools with
 * `interruptBehavior: 'cancel'`; `kill` (lease loss) stops every tool, `block` ones included.
 * The model call in flight has its own controller (a `now` steering input aborts only the call);
 * `requestStop` aborts it directly, with the reason `cancel` gets, instead of through a listener
 * on `cancel`'s signal. Successive model calls of a run share that controller until an abort
 * reaches it, so a provider sees the same `abortSignal` on each call of a run that nothing
 * interrupted. Node creates an `AbortSignal` only when `.signal` is first read (a few
 * microseconds each), so neither `cancel`'s nor `kill`'s signal exists until something needs it.
 */
import type { DurableInput, InterruptBehavior, ModelSelection, Priority } from '../protocol/event-payloads.js';
import type { InputId, RequestId } from '../protocol/ids.js';
import type { JsonObject } from '../protocol/json.js';
import { newAbortError } from '../core/abort.js';
import { StopRequested, type StopIntent } from './core.js';
import type { SessionLanguageModel, SessionRequestResult } from './types.js';

/** A steering input waiting for its `input_applied`. */
export interface PendingSteer {
  inputId: InputId;
  input: DurableInput;
  priority: Priority;
  /** The promise `steer`'s handle carries (a re-steer with the same input ID returns it). */
  applied?: Promise<void>;
  resolve(): void;
  reject(error: unknown): void;
}

/** See the module header. */
export class RequestRun {
  readonly cancel = new AbortController();
  readonly kill = new AbortController();
  stop: StopIntent | null = null;
  /** The controller of the model call in flight (see {@link RequestRun.startModelCall}). */
  modelCall: AbortController | null = null;
  /** The model calls' controller, reused while no abort reached it (see `startModelCall`). */
  #modelController: AbortController | null = null;
  /** Whether `cancel` was aborted, and with what, read without creating its signal. */
  #cancelled = false;
  #cancelReason: unknown = undefined;
  steering: PendingSteer[] = [];
  steeredSinceTurn = false;
  readonly result: Promise<SessionRequestResult>;
  #resolve!: (result: SessionRequestResult) => void;
  #reject!: (error: unknown) => void;
  #settled = false;

  constructor(
    readonly requestId: RequestId,
    readonly inputId: InputId,
    readonly maxTurns: number,
    readonly model: SessionLanguageModel,
    readonly selection: ModelSelection,
    readonly context: JsonObject,
  ) {
    this.result = new Promise<SessionRequestResult>((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
    // A caller that never awaits `result` must not see an unhandled rejection.
    this.result.catch(() => undefined);
  }

  get settled(): boolean {
    return this.#settled;
  }

  settle(result: SessionRequestResult): void {
    if (this.#settled) return;
    this.#settled = true;
    this.#resolve(result);
  }

  fail(error: unknown): void {
    if (this.#settled) return;
    this.#settled = true;
    for (const steer of this.steering) steer.reject(error);
    this.steering = [];
    this.#reject(error);
  }

  /** Stops the run's cancelable work for `intent` (the first intent wins). */
  requestStop(intent: StopIntent): void {
    // A settled run wrote its last event and has nothing left to cancel (a `close()` right after
    // `run()` resolved lands here); building an AbortError for it costs a stack capture.
    if (this.#settled && intent.kind !== 'lost') return;
    if (this.stop === null || intent.kind === 'lost') this.stop = intent;
    if (intent.kind === 'lost') this.kill.abort(intent.error);
    // Building an AbortError captures a stack (costly in Node): only when the signal still listens.
    if (this.#cancelled) return;
    const reason = intent.kind === 'lost' ? intent.error : newAbortError(`stopped: ${intent.kind}`);
    this.#cancelled = true;
    this.#cancelReason = reason;
    this.cancel.abort(reason);
    this.modelCall?.abort(reason);
  }

  /**
   * The controller of a new model call, current until {@link RequestRun.endModelCall}: aborted by
   * `requestStop` (with `cancel`'s reason) or `interruptModelCall`, and already aborted when the
   * run was stopped before the call.
   */
  startModelCall(): AbortController {
    // A call that ended without an abort leaves its controller clean: the next call of this run
    // reuses it (an `AbortSignal` costs several microseconds to create in Node). An aborted one
    // (a `now` steering input, a stop) is never reused.
    let controller = this.#modelController;
    if (controller === null || controller.signal.aborted) {
      controller = new AbortController();
      this.#modelController = controller;
    }
    this.modelCall = controller;
    if (this.#cancelled) controller.abort(this.#cancelReason);
    return controller;
  }

  endModelCall(): void {
    this.modelCall = null;
  }

  /** The signal a tool with `behavior` listens to (`block`: only a lost lease stops it). */
  toolSignal(behavior: InterruptBehavior): AbortSignal {
    return behavior === 'block' ? this.kill.signal : this.cancel.signal;
  }

  /** Aborts only the model call in flight (a `now` steering input). */
  interruptModelCall(): void {
    this.modelCall?.abort(newAbortError('superseded by a steering input'));
  }

  /** The error that unwinds the driver for the current stop intent. */
  stopError(): Error {
    return new StopRequested(`Request ${this.requestId} is stopping (${this.stop?.kind ?? 'unknown'})`);
  }
}
