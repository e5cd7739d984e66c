/**
 * The durability port: `step`, `sleep` and `waitFor` over a session's durability records.
 *
 * How a call works:
 * 1. The port keeps a {@link DurabilityRecordView} of the records, filled by cursor reads that
 *    start where the previous one stopped (one read at a time; concurrent requests share it).
 * 2. `step(key, body)`: a record already in the view is returned (as a detached copy). Otherwise
 *    the step becomes in-flight work on the store object — a concurrent call with the same key on
 *    the same store joins it — which catches the view up, runs `body` only if the record is still
 *    missing, validates the result and records it. If another writer recorded first, its result wins.
 * 3. `sleep(key, d)`: the deadline is recorded once; the wait itself is local and timer-based.
 * 4. `waitFor(key)`: subscribe to wake-ups first (host `subscribe`, store `watchDurability`, local
 *    deliveries), then read, then record the wait (with its timeout deadline) once. The first
 *    delivery to `(runId, key)` in record order wins unless the wait's `wait_timeout` record comes
 *    first; at the deadline the port records `wait_timeout` and lets the record order decide.
 *    Unsubscription runs however the wait ends. Nothing polls: reads happen at the start, on a
 *    wake-up and at the deadline.
 * 5. The port's signal (or `close()`) rejects pending calls with an `AbortError`; records already
 *    written stay, and a step whose body already ran still records its result.
 */
import { abortReason, newAbortError, throwIfAborted } from '../abort.js';
import { DurabilityError } from '../../protocol/errors.js';
import { isTimeSource, systemTime } from '../time.js';
import { cloneJson, describeLosslessJsonProblem, type JsonValue } from '../../protocol/json.js';
import { deliverDurably } from './deliver.js';
import {
  isDurabilityRecordStore,
  MAX_DURABILITY_READ_LIMIT,
  type DurabilityRecord,
  type DurabilityRecordKind,
} from './record-contract.js';
import {
  checkDurabilityKey,
  checkDurabilityScope,
  checkDurabilitySessionId,
  describeInvalidDeadline,
} from './record-engine.js';
import { DurabilityRecordView, type WaitDecision } from './record-view.js';
import { MAX_TIMER_INTERVAL_MS, waitLocally, Waker } from './local-wait.js';
import type {
  DeliveryInput,
  DurabilityPort,
  DurabilityPortOptions,
  SleepDuration,
  WaitForOptions,
  WaitForResult,
} from './port-types.js';
import { addLocalWaiter, findInFlight, inFlightKey, trackInFlight } from './store-local.js';

function invalidInput(message: string): DurabilityError {
  return new DurabilityError('DURABILITY_INVALID_INPUT', message);
}

function checkDuration(value: unknown, label: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0 || Object.is(value, -0)) {
    throw invalidInput(`${label} must be an integer number of milliseconds >= 0, got ${String(value)}`);
  }
  return value;
}

/** Parses a sleep request into a function of "now" that gives the deadline to record. */
function parseSleep(duration: unknown): (nowMs: number) => number {
  if (typeof duration === 'object' && duration !== null && !Array.isArray(duration)) {
    const until = (duration as { until?: unknown }).until;
    const problem = describeInvalidDeadline(until);
    if (problem !== undefined) throw invalidInput(`sleep({ until }) ${problem}`);
    return () => until as number;
  }
  const ms = checkDuration(duration, 'sleep duration');
  return (nowMs) => nowMs + ms;
}

/** The record a store returned must be the one asked for; anything else is a corrupt record stream. */
function expectRecord<K extends DurabilityRecordKind>(
  record: DurabilityRecord,
  kind: K,
  identity: { scope?: string; key: string },
): DurabilityRecord<K> {
  const same =
    record.kind === kind &&
    record.key === identity.key &&
    (identity.scope === undefined || ('scope' in record && record.scope === identity.scope));
  if (!same) {
    throw new DurabilityError(
      'DURABILITY_CORRUPT_RECORD',
      `recordDurability returned a ${record.kind} record for ${JSON.stringify(record.key)} ` +
        `instead of the ${kind} record for ${JSON.stringify(identity.key)}`,
      { details: { sequence: record.sequence } },
    );
  }
  // SAFETY: the kind was checked just above.
  return record as DurabilityRecord<K>;
}

let closedPortError: Error | undefined;
/**
 * The reason a closed port's signal carries: one shared `AbortError`. A port is closed after every
 * tool call, and building a DOM exception each time (it captures a stack) cost ~0.06 ms per call.
 */
function portClosedError(): Error {
  closedPortError ??= newAbortError('the durability port was closed');
  return closedPortError;
}

/**
 * Creates a durability port over `store` for one session and run. The port's scope is the
 * `runId` unless `scope` is given (the agent runtime uses `toolCallScope(...)`).
 *
 * @example
 * const port = createDurabilityPort({ store, sessionId: 'session-1', runId: 'run-1' });
 * const charge = await port.step('charge', async () => ({ chargeId: await chargeCard() }));
 * await port.sleep('cool-down', 5_000);
 * const approval = await port.waitFor('approval', { timeoutMs: 60_000 });
 * if (approval.status === 'delivered') console.log(approval.payload);
 * port.close();
 */
export function createDurabilityPort(options: DurabilityPortOptions): DurabilityPort {
  const { store } = options;
  if (!isDurabilityRecordStore(store)) {
    throw invalidInput('store does not implement the durability records (recordDurability / readDurability)');
  }
  const sessionId = checkDurabilitySessionId(options.sessionId);
  const runId = checkDurabilityKey(options.runId, 'runId');
  const scope = checkDurabilityScope(options.scope ?? runId);
  if (options.time !== undefined && !isTimeSource(options.time)) throw invalidInput('time must be a TimeSource');
  const time = options.time ?? systemTime;
  const clock = options.clock ?? ((): number => time.wallNow());
  const maxIntervalMs = options.maxTimerIntervalMs ?? MAX_TIMER_INTERVAL_MS;
  if (!Number.isSafeInteger(maxIntervalMs) || maxIntervalMs < 1 || maxIntervalMs > MAX_TIMER_INTERVAL_MS) {
    throw invalidInput(`maxTimerIntervalMs must be an integer in 1..${MAX_TIMER_INTERVAL_MS}`);
  }
  const subscribe = options.subscribe;
  const now = (): number => Math.floor(clock());

  // The port's own signal: aborts with the caller's signal, or on close().
  const controller = new AbortController();
  const signal = controller.signal;
  const outer = options.signal;
  const onOuterAbort = (): void => {
    if (outer !== undefined) controller.abort(abortReason(outer));
  };
  if (outer?.aborted === true) onOuterAbort();
  else outer?.addEventListener('abort', onOuterAbort, { once: true });

  const view = new DurabilityRecordView(sessionId);

  // --- incremental reads: one at a time, a request made during a read queues exactly one more ---
  let readTail: Promise<void> = Promise.resolve();
  let queuedRead: Promise<void> | undefined;
  const readToHead = async (): Promise<void> => {
    for (;;) {
      throwIfAborted(signal);
      const page = await store.readDurability(sessionId, {
        after: view.cursor ?? undefined,
        limit: MAX_DURABILITY_READ_LIMIT,
        signal,
      });
      if (!view.applyPage(page)) return;
    }
  };
  /** Resolves once a read that started after this call has reached the head. */
  const refresh = (): Promise<void> => {
    if (queuedRead !== undefined) return queuedRead;
    const start = (): Promise<void> => {
      queuedRead = undefined;
      return readToHead();
    };
    const read = readTail.then(start, start);
    queuedRead = read;
    readTail = read.catch(() => undefined);
    return read;
  };

  /** Settles like `work`, or rejects as soon as the port's signal aborts (work goes on). */
  const untilAborted = <T>(work: Promise<T>): Promise<T> => {
    if (signal.aborted) return Promise.reject(abortReason(signal));
    return new Promise<T>((resolve, reject) => {
      const onAbort = (): void => reject(abortReason(signal));
      signal.addEventListener('abort', onAbort, { once: true });
      work.then(
        (value) => {
          signal.removeEventListener('abort', onAbort);
          resolve(value);
        },
        (error: unknown) => {
          signal.removeEventListener('abort', onAbort);
          reject(error);
        },
      );
    });
  };

  const runStep = async (key: string, body: () => unknown): Promise<DurabilityRecord> => {
    await refresh();
    const recorded = view.find('step', scope, key);
    if (recorded !== undefined) return recorded;
    throwIfAborted(signal);
    const value = await body();
    if (value === undefined) {
      throw new DurabilityError(
        'DURABILITY_INVALID_VALUE',
        `step ${JSON.stringify(key)} returned undefined; a body run only for its effects must return null`,
        { details: { key } },
      );
    }
    const problem = describeLosslessJsonProblem(value);
    if (problem !== undefined) {
      const message = `step ${JSON.stringify(key)} result is not lossless JSON: ${problem}`;
      throw new DurabilityError('DURABILITY_INVALID_VALUE', message, { details: { key, problem } });
    }
    // No signal: the body's effects happened, so their record is worth keeping even if the
    // caller gave up meanwhile.
    const { record } = await store.recordDurability(sessionId, {
      kind: 'step',
      scope,
      key,
      // SAFETY: lossless JSON, checked just above; the store copies it.
      result: value as JsonValue,
    });
    return record;
  };

  const step = async <T extends JsonValue>(key: string, body: () => T | Promise<T>): Promise<T> => {
    const checkedKey = checkDurabilityKey(key);
    if (typeof body !== 'function') throw invalidInput('step body must be a function');
    throwIfAborted(signal);
    let record: DurabilityRecord | undefined = view.find('step', scope, checkedKey);
    if (record === undefined) {
      const flightKey = inFlightKey(sessionId, scope, checkedKey);
      let work = findInFlight(store, flightKey);
      if (work === undefined) {
        work = runStep(checkedKey, body);
        trackInFlight(store, flightKey, work);
      }
      record = expectRecord(await untilAborted(work), 'step', { scope, key: checkedKey });
      view.remember(record);
    }
    const stepRecord = expectRecord(record, 'step', { scope, key: checkedKey });
    // SAFETY: the recorded result is what a body of this step returned (lossless JSON of type T).
    return cloneJson(stepRecord.result) as T;
  };

  const sleep = async (key: string, duration: SleepDuration): Promise<void> => {
    const checkedKey = checkDurabilityKey(key);
    const deadlineFrom = parseSleep(duration);
    throwIfAborted(signal);
    let record = view.find('sleep', scope, checkedKey);
    if (record === undefined) {
      await refresh();
      record = view.find('sleep', scope, checkedKey);
    }
    if (record === undefined) {
      const untilMs = deadlineFrom(now());
      const problem = describeInvalidDeadline(untilMs);
      if (problem !== undefined) throw invalidInput(`sleep deadline ${problem}`);
      const result = await store.recordDurability(sessionId, { kind: 'sleep', scope, key: checkedKey, untilMs }, { signal });
      record = expectRecord(result.record, 'sleep', { scope, key: checkedKey });
      view.remember(record);
    }
    await waitLocally({ deadlineMs: record.untilMs, clock, time, signal, maxIntervalMs });
  };

  const toResult = <T extends JsonValue>(decision: WaitDecision): WaitForResult<T> =>
    decision.status === 'delivered'
      ? {
          status: 'delivered',
          // SAFETY: the payload is lossless JSON; its type is the caller's assertion about the deliverer.
          payload: cloneJson(decision.record.payload) as T,
          deliveryId: decision.record.deliveryId,
          sequence: decision.record.sequence,
        }
      : { status: 'timed_out', sequence: decision.record.sequence };

  const waitFor = async <T extends JsonValue = JsonValue>(
    key: string,
    waitOptions: WaitForOptions = {},
  ): Promise<WaitForResult<T>> => {
    const checkedKey = checkDurabilityKey(key);
    const timeoutMs = waitOptions.timeoutMs === undefined ? undefined : checkDuration(waitOptions.timeoutMs, 'timeoutMs');
    throwIfAborted(signal);
    const waker = new Waker();
    const cleanups: Array<() => void> = [];
    try {
      // Subscribe first, read second: a delivery racing the subscription is then either read
      // or heard.
      if (subscribe !== undefined) {
        const unsubscribe = subscribe(waker.wake);
        if (typeof unsubscribe !== 'function') throw invalidInput('subscribe(wake) must return an unsubscribe function');
        cleanups.push(unsubscribe);
      }
      if (store.watchDurability !== undefined) cleanups.push(store.watchDurability(sessionId, waker.wake));
      cleanups.push(addLocalWaiter(store, sessionId, waker.wake));
      waker.reset();
      await refresh();
      // A delivery that arrived before the wait began answers it without any new record.
      const early = view.decideWait(scope, runId, checkedKey);
      if (early !== undefined) return toResult<T>(early);
      let wait = view.find('wait', scope, checkedKey);
      if (wait === undefined) {
        const deadlineMs = timeoutMs === undefined ? null : now() + timeoutMs;
        const result = await store.recordDurability(sessionId, { kind: 'wait', scope, key: checkedKey, deadlineMs }, { signal });
        wait = expectRecord(result.record, 'wait', { scope, key: checkedKey });
        view.remember(wait);
      }
      for (;;) {
        const decision = view.decideWait(scope, runId, checkedKey);
        if (decision !== undefined) return toResult<T>(decision);
        if (wait.deadlineMs !== null && clock() >= wait.deadlineMs) {
          const result = await store.recordDurability(sessionId, { kind: 'wait_timeout', scope, key: checkedKey }, { signal });
          const timeout = expectRecord(result.record, 'wait_timeout', { scope, key: checkedKey });
          view.remember(timeout);
          waker.reset();
          await refresh();
          if ((view.cursor ?? 0) < timeout.sequence) {
            throw new DurabilityError('DURABILITY_CORRUPT_RECORD', `the durability head is behind record ${timeout.sequence}`);
          }
          continue;
        }
        await waitLocally({ deadlineMs: wait.deadlineMs, clock, time, signal, maxIntervalMs, waker });
        waker.reset();
        await refresh();
      }
    } finally {
      for (const cleanup of cleanups.reverse()) {
        try {
          cleanup();
        } catch {
          // An unsubscribe that throws must not hide the wait's own outcome.
        }
      }
    }
  };

  const deliver = (input: DeliveryInput) => {
    throwIfAborted(signal);
    return deliverDurably(store, sessionId, { ...input, runId: input.runId ?? runId }, { signal });
  };

  const close = (): void => {
    outer?.removeEventListener('abort', onOuterAbort);
    if (!signal.aborted) controller.abort(portClosedError());
  };

  return {
    sessionId,
    runId,
    scope,
    step,
    sleep,
    waitFor,
    deliver: async (input) => deliver(input),
    close,
  };
}
