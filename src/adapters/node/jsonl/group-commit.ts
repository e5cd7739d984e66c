/**
 * Group commit of the appends one store object makes to one session.
 *
 * Appends that arrive while the session is busy (waiting for the lock, or writing) wait in
 * `pending`, in arrival order. One drain loop serves them:
 * 1. start in a microtask after the first append (a synchronous burst forms one group), and
 *    between groups yield one event-loop turn, so callers whose append just resolved can queue
 *    again and join the next group;
 * 2. take the process queue and the OS lock once for the whole group (each pending append keeps
 *    its own lock deadline and abort signal; when the last one leaves, the wait stops);
 * 3. hand every pending append to `commit`, which judges each against its own
 *    `expectedLastSequence` in arrival order, then writes all accepted batches with one write and
 *    one fsync (still one line per batch); once a group holds `MAX_GROUP_BYTES` the rest are
 *    deferred, unjudged, to the front of the next group;
 * 4. release the lock, then settle each append on its own and report the successes, so watchers
 *    hear about a batch only after it is durable and the lock is free.
 *
 * Deadlines: each append carries one timer. At `lockTimeoutMs` a still-queued append leaves with
 * `DURABLE_EVENT_LOCK_TIMEOUT`; at `operationTimeoutMs` an append still in flight is rejected with
 * `DURABLE_EVENT_IO_TIMEOUT` (its outcome may be unknown); a commit that finishes after the
 * deadline reports the timeout too, never a late success. A caller abort rejects at once with the
 * signal's reason. Either way a cancelled append that has not been judged yet is never written.
 * (One timer instead of an `AbortController` per call keeps the per-append CPU cost low.)
 * With `lockTimeoutMs: 0` an append makes exactly one attempt: it fails at once with
 * `DURABLE_EVENT_LOCK_TIMEOUT` when the session is already busy or the lock is held elsewhere.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import { abortReason } from '../../../core/abort.js';
import type { DurableAppendOptions, DurableAppendResult } from '../../../core/store.js';
import { DurableEventStoreError } from '../../../protocol/errors.js';
import type { DurableEventDraft } from '../../../protocol/events.js';
import { lockTimeoutError } from './file-lock.js';

/** One validated append waiting to be committed. */
export interface AppendRequest {
  readonly drafts: readonly DurableEventDraft[];
  readonly options: DurableAppendOptions | undefined;
  /** Set once the caller stopped waiting (abort or deadline): the append must not be written. */
  cancelled: boolean;
}

/**
 * What became of one append of a group: committed, refused or failed, or deferred to the next
 * group (the group's byte budget was spent; it has not been judged yet).
 */
export type AppendOutcome =
  | { kind: 'committed'; result: DurableAppendResult }
  | { kind: 'failed'; error: unknown }
  | { kind: 'deferred' };

/** Releases the session lock; returns the error when unlocking failed. */
export type ReleaseLock = () => unknown;

/** What the queue needs from the store. */
interface GroupCommitPort {
  /** Lock wait budget of each append; 0 means exactly one attempt. */
  readonly lockTimeoutMs: number;
  /** Budget of a whole append (at least `lockTimeoutMs`). */
  readonly operationTimeoutMs: number;
  /** One synchronous attempt at the process queue and the session lock (the common, free case). */
  tryLock(): ReleaseLock | 'busy' | 'not-ready';
  /** Takes the process queue and the session lock; gives up when `signal` aborts. */
  lock(signal: AbortSignal): Promise<ReleaseLock>;
  /**
   * Under the lock: one outcome per request, in the same order (cancelled ones are skipped);
   * an array when it finished synchronously.
   */
  commit(requests: readonly AppendRequest[]): AppendOutcome[] | Promise<AppendOutcome[]>;
  /** After the lock is released: the durable appends, in commit order. */
  committed(results: readonly DurableAppendResult[]): void;
  /** Builds the error of an append that outlived `operationTimeoutMs`. */
  ioTimeout(): unknown;
}

interface Entry {
  request: AppendRequest;
  resolve: (result: DurableAppendResult) => void;
  reject: (error: unknown) => void;
  signal: AbortSignal | undefined;
  onAbort: (() => void) | undefined;
  timer: ReturnType<typeof setTimeout> | undefined;
  /** `performance.now()` when the append was submitted. */
  submittedAt: number;
  /** `performance.now()` value past which the append must not report success. */
  deadline: number;
  phase: 'queued' | 'taken' | 'settled';
}

const SETTLED = Promise.resolve();

/**
 * Runs `start` in a microtask, after the current synchronous burst. A reaction on a settled
 * promise rather than `queueMicrotask`, which wraps every callback in an async resource of its
 * own (about 1 us per append, once per drain).
 */
function afterBurst(start: () => void): void {
  void SETTLED.then(start);
}

function onOperationDeadline(queue: GroupCommitQueue, entry: Entry): void {
  queue.expire(entry);
}

function onLockDeadline(queue: GroupCommitQueue, entry: Entry): void {
  queue.lockDeadlinePassed(entry);
}

function failAll(group: readonly Entry[], error: unknown): AppendOutcome[] {
  return group.map((): AppendOutcome => ({ kind: 'failed', error }));
}

/** The group-commit queue of one session in one store object. */
export class GroupCommitQueue {
  #pending: Entry[] = [];
  #state: 'idle' | 'scheduled' | 'waiting' | 'committing' = 'idle';
  #wait: AbortController | undefined;

  constructor(private readonly port: GroupCommitPort) {}

  /** True while appends wait or a group is being committed. */
  get busy(): boolean {
    return this.#state !== 'idle' || this.#pending.length > 0;
  }

  /** Queues one append; settles when its group is committed, or at its deadline or abort. */
  submit(
    drafts: readonly DurableEventDraft[],
    options: DurableAppendOptions | undefined,
  ): Promise<DurableAppendResult> {
    const signal = options?.signal;
    if (signal?.aborted) return Promise.reject(abortReason(signal));
    const { lockTimeoutMs, operationTimeoutMs } = this.port;
    const immediate = lockTimeoutMs === 0;
    if (immediate && (this.#state === 'waiting' || this.#state === 'committing')) {
      return Promise.reject(lockTimeoutError(0));
    }
    return new Promise<DurableAppendResult>((resolve, reject) => {
      const entry: Entry = {
        request: { drafts, options, cancelled: false },
        resolve,
        reject,
        signal,
        onAbort: undefined,
        timer: undefined,
        submittedAt: performance.now(),
        deadline: 0,
        phase: 'queued',
      };
      entry.deadline = entry.submittedAt + operationTimeoutMs;
      // An append to an idle session usually commits synchronously in the drain's first step (lock
      // free, cache current): its deadline timer is armed only if the drain has to wait (#armTimers).
      if (this.#state !== 'idle') this.#armTimer(entry);
      if (signal !== undefined) {
        entry.onAbort = () => this.#cancel(entry, abortReason(signal));
        signal.addEventListener('abort', entry.onAbort, { once: true });
      }
      this.#pending.push(entry);
      if (this.#state === 'idle') {
        this.#state = 'scheduled';
        // Start after the current synchronous burst (a microtask), so appends issued together
        // form one group without costing a lone appender an event-loop turn.
        afterBurst(this.#start);
      }
    });
  }

  /** Arms the entry's deadline timer (lock deadline while queued), counting from its submission. */
  #armTimer(entry: Entry): void {
    if (entry.timer !== undefined || entry.phase === 'settled') return;
    const elapsed = performance.now() - entry.submittedAt;
    entry.timer =
      this.port.lockTimeoutMs === 0
        ? setTimeout(onOperationDeadline, Math.max(0, this.port.operationTimeoutMs - elapsed), this, entry)
        : setTimeout(onLockDeadline, Math.max(0, this.port.lockTimeoutMs - elapsed), this, entry);
  }

  /** Arms the timers of every append still waiting, before the drain waits for anything. */
  #armTimers(entries: readonly Entry[]): void {
    for (const entry of entries) this.#armTimer(entry);
  }

  /** @internal Timer callback at `operationTimeoutMs`: the append stops waiting (`DURABLE_EVENT_IO_TIMEOUT`). */
  expire(entry: Entry): void {
    this.#cancel(entry, this.port.ioTimeout());
  }

  /** @internal Timer callback at `lockTimeoutMs`: a queued append leaves; a taken one keeps its operation deadline. */
  lockDeadlinePassed(entry: Entry): void {
    if (entry.phase === 'queued') {
      this.#cancel(entry, lockTimeoutError(this.port.lockTimeoutMs));
    } else if (entry.phase === 'taken') {
      const left = entry.deadline - performance.now();
      if (left <= 0) this.expire(entry);
      else entry.timer = setTimeout(onOperationDeadline, left, this, entry);
    }
  }

  #settle(entry: Entry): boolean {
    if (entry.phase === 'settled') return false;
    entry.phase = 'settled';
    if (entry.timer !== undefined) clearTimeout(entry.timer);
    if (entry.onAbort !== undefined) entry.signal?.removeEventListener('abort', entry.onAbort);
    return true;
  }

  /**
   * The caller stops waiting (deadline or abort). A queued append leaves the queue; one already
   * taken is marked so the commit skips it if it has not been judged yet. When the last queued
   * append leaves, the lock wait stops.
   */
  #cancel(entry: Entry, error: unknown): void {
    const wasQueued = entry.phase === 'queued';
    if (!this.#settle(entry)) return;
    entry.request.cancelled = true;
    entry.reject(error);
    if (!wasQueued) return;
    const index = this.#pending.indexOf(entry);
    if (index >= 0) this.#pending.splice(index, 1);
    if (this.#pending.length === 0) this.#wait?.abort();
  }

  #failPending(error: unknown): void {
    for (const entry of this.#pending.splice(0)) {
      if (this.#settle(entry)) entry.reject(error);
    }
  }

  /**
   * The drain's first group, run as a microtask after the burst that woke the queue. The common
   * case (lock free, cache current) commits right here, synchronously, without an async frame;
   * anything else (a wait for the lock, a catch-up read, appends queued meanwhile) continues in
   * {@link #drain}.
   */
  readonly #start = (): void => {
    let handedOff = false;
    try {
      if (this.#pending.length === 0) return;
      this.#state = 'waiting';
      const release = this.#tryAcquire();
      if (release === 'wait') {
        handedOff = true;
        void this.#drain('wait');
        return;
      }
      if (release !== undefined) {
        this.#state = 'committing';
        const committing = this.#commitGroup(release);
        if (committing !== undefined) {
          handedOff = true;
          void this.#drain(committing);
          return;
        }
      }
      this.#state = 'scheduled';
      if (this.#pending.length > 0) {
        handedOff = true;
        void this.#drain(undefined);
      }
    } finally {
      if (!handedOff) this.#idle();
    }
  };

  /** The queue goes idle; an append that arrived meanwhile starts the next drain. */
  #idle(): void {
    this.#state = 'idle';
    if (this.#pending.length > 0) {
      this.#state = 'scheduled';
      afterBurst(this.#start);
    }
  }

  /**
   * Serves groups until none is pending, picking up where {@link #start} stopped: waiting for the
   * lock (`'wait'`), finishing a commit that went asynchronous (a promise), or between groups.
   */
  async #drain(resume: 'wait' | Promise<void> | undefined): Promise<void> {
    try {
      if (resume === 'wait') {
        this.#armTimers(this.#pending);
        const release = await this.#waitForLock();
        resume = undefined;
        if (release !== undefined) {
          this.#state = 'committing';
          resume = this.#commitGroup(release);
        }
      }
      if (resume !== undefined) await resume;
      this.#state = 'scheduled';
      while (this.#pending.length > 0) {
        // Between groups, yield one turn so callers of the group just settled can queue again.
        this.#armTimers(this.#pending);
        await nextTurn();
        if (this.#pending.length === 0) break;
        this.#state = 'waiting';
        let release = this.#tryAcquire();
        if (release === 'wait') {
          this.#armTimers(this.#pending);
          release = await this.#waitForLock();
        }
        if (release === undefined) continue;
        this.#state = 'committing';
        const committing = this.#commitGroup(release);
        if (committing !== undefined) await committing;
        this.#state = 'scheduled';
      }
    } finally {
      this.#idle();
    }
  }

  /**
   * One synchronous attempt at the lock for the next group: the release function, `'wait'` when
   * the caller must wait (`#waitForLock`), or `undefined` when no append is left to serve
   * (a single-attempt store found the lock busy, or the lock failed: they all got the error).
   */
  #tryAcquire(): ReleaseLock | 'wait' | undefined {
    try {
      const attempt = this.port.tryLock();
      if (typeof attempt === 'function') return attempt;
      if (attempt === 'busy' && this.port.lockTimeoutMs === 0) throw lockTimeoutError(0);
      return 'wait';
    } catch (error) {
      this.#failPending(error);
      return undefined;
    }
  }

  /** The waiting path: `undefined` when every waiter left or the wait failed for all of them. */
  async #waitForLock(): Promise<ReleaseLock | undefined> {
    const wait = new AbortController();
    this.#wait = wait;
    try {
      return await this.port.lock(wait.signal);
    } catch (error) {
      // Aborted because every waiter left: nothing to report. Otherwise the error (lock
      // timeout of a single attempt, lock failure) belongs to every waiting append.
      if (!wait.signal.aborted) this.#failPending(error);
      return undefined;
    } finally {
      this.#wait = undefined;
    }
  }

  /** Commits the pending appends as one group; a promise only when the commit went asynchronous. */
  #commitGroup(release: ReleaseLock): Promise<void> | undefined {
    const group = this.#pending.splice(0);
    const requests: AppendRequest[] = [];
    for (const entry of group) {
      entry.phase = 'taken';
      requests.push(entry.request);
    }
    let outcomes: AppendOutcome[] | Promise<AppendOutcome[]>;
    try {
      outcomes = this.port.commit(requests);
    } catch (error) {
      outcomes = failAll(group, error);
    }
    if (Array.isArray(outcomes)) {
      this.#finishGroup(group, release, outcomes);
      return undefined;
    }
    // The commit went asynchronous (a catch-up read): the group's deadlines must run meanwhile.
    this.#armTimers(group);
    return outcomes.then(
      (settled) => this.#finishGroup(group, release, settled),
      (error: unknown) => this.#finishGroup(group, release, failAll(group, error)),
    );
  }

  /** Releases the lock, settles each append of the group, and reports the durable ones. */
  #finishGroup(group: Entry[], release: ReleaseLock, outcomes: AppendOutcome[]): void {
    const unlockError = release();
    const committed: DurableAppendResult[] = [];
    let deferred: Entry[] | undefined;
    for (let index = 0; index < group.length; index++) {
      // SAFETY: `index` is within `group`.
      const entry = group[index] as Entry;
      const outcome = outcomes[index] ?? { kind: 'failed', error: new Error('missing commit outcome') };
      if (outcome.kind === 'deferred') {
        if (entry.phase === 'taken') (deferred ??= []).push(entry);
        continue;
      }
      if (outcome.kind === 'committed') committed.push(outcome.result);
      if (!this.#settle(entry)) continue;
      if (outcome.kind === 'failed') entry.reject(outcome.error);
      // The flush is synchronous, so timers cannot fire during it: a commit that ended past the
      // deadline reports the timeout now rather than a late success.
      else if (performance.now() > entry.deadline) entry.reject(this.port.ioTimeout());
      else if (unlockError === undefined) entry.resolve(outcome.result);
      else {
        // The batch is durable, but the caller cannot be told so reliably: report the outcome as
        // unknown, like any other failure after the bytes reached the log.
        entry.reject(
          new DurableEventStoreError(
            'DURABLE_EVENT_WRITE_FAILED',
            'unlocking the session failed after the write; the batch may or may not be in the log',
            { cause: unlockError },
          ),
        );
      }
    }
    if (deferred !== undefined) {
      // Deferred appends go back to the front, still in arrival order, for the next group.
      for (const entry of deferred) entry.phase = 'queued';
      this.#pending.unshift(...deferred);
    }
    if (committed.length > 0) this.port.committed(committed);
  }
}
