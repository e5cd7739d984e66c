/**
 * Timers of a SessionObject: many deadlines, one Durable Object alarm.
 *
 * A Durable Object has a single alarm. Every deadline the object cares about is a row of the
 * `timers` table `(kind, key, due_ms, payload)` instead:
 * - `durability.sleep` / `durability.wait`: the deadline of a `sleep` / `waitFor` timeout in a
 *   tool call the object runs (inserted in the transaction that records the sleep or wait);
 * - `durability.retry`: the next attempt of a tool call whose handler threw;
 * - `durability.resume`: a check one minute after a call's last step (or start), so a call that
 *   an eviction interrupted between steps resumes without waiting for a request;
 * - `user`: the object owner's own schedules (`scheduleTimer`), handed to `onTimer`;
 * - `agent.watch`: while an agent Session runs in the object, a check every `AGENT_WATCH_MS`
 *   (3 s) that resumes it after an eviction or a restart of the runtime without waiting for a
 *   client request (`agent-host.ts`); put and armed before any model or tool I/O.
 * `arm()` keeps the alarm at the earliest due row: it sets the alarm when there is none or when
 * the current one is LATER than the earliest row, and never moves an earlier alarm back, so an
 * alarm someone else set is never lost (at worst it fires and finds nothing due). `getAlarm()`
 * returns `null` inside `alarm()` until it is set again, so re-arming after a wake-up works the
 * same way. Arming calls are chained: each reads the table only after the previous `setAlarm`
 * went through, so two concurrent arms cannot leave the alarm at the later of two deadlines.
 * The instance remembers the alarm it last read or set (forgotten when the alarm fires): an arm
 * whose earliest row is no earlier than a remembered alarm still ahead makes no storage call.
 */
import type { SqlDriver } from '../adapters/sql/driver.js';
import { checkDurabilityKey } from '../core/durability/record-engine.js';
import { DurabilityError } from '../protocol/errors.js';
import type { SessionId } from '../protocol/ids.js';
import type { JsonValue } from '../protocol/json.js';

/** Kinds of timer rows. */
export const TIMER_KINDS = {
  sleep: 'durability.sleep',
  wait: 'durability.wait',
  retry: 'durability.retry',
  resume: 'durability.resume',
  user: 'user',
  /** The watchdog of an agent Session running in the object (`agent-host.ts`). */
  agent: 'agent.watch',
} as const;

/** One kind of timer row. */
export type TimerKind = (typeof TIMER_KINDS)[keyof typeof TIMER_KINDS];

/** Internal kinds: rows that belong to a tool call, removed when the call finishes. */
const RUN_TIMER_KINDS: readonly TimerKind[] = [TIMER_KINDS.sleep, TIMER_KINDS.wait, TIMER_KINDS.retry, TIMER_KINDS.resume];
/** Deadlines that will resume a call by themselves (a sleep, a wait timeout, a retry). */
const DEADLINE_KINDS: readonly TimerKind[] = [TIMER_KINDS.sleep, TIMER_KINDS.wait, TIMER_KINDS.retry];

/** A timer row. */
export interface TimerRow {
  kind: string;
  key: string;
  dueMs: number;
  payload: JsonValue;
}

/** A user's timer, as `onTimer` receives it. */
export interface UserTimer {
  key: string;
  dueMs: number;
  payload: JsonValue;
}

/** The alarm part of `DurableObjectStorage`. */
export interface AlarmStorage {
  getAlarm(): Promise<number | null>;
  setAlarm(scheduledTimeMs: number): Promise<void>;
}

/** Most rows one alarm pass handles; more due rows re-arm the alarm at once. */
export const MAX_TIMERS_PER_ALARM = 100;

interface Row {
  kind: string;
  key: string;
  due_ms: number;
  payload: string;
}

const UPSERT =
  'INSERT INTO timers (kind, key, due_ms, payload) VALUES (?, ?, ?, ?) ON CONFLICT (kind, key) DO UPDATE SET due_ms = excluded.due_ms, payload = excluded.payload';

function toTimer(row: Row): TimerRow {
  return { kind: row.kind, key: row.key, dueMs: row.due_ms, payload: JSON.parse(row.payload) as JsonValue };
}

/** Checks a user timer's due time: an integer epoch-millisecond instant. */
export function checkDueMs(dueMs: unknown): number {
  if (typeof dueMs !== 'number' || !Number.isSafeInteger(dueMs) || dueMs < 0) {
    throw new DurabilityError('DURABILITY_INVALID_INPUT', `dueMs must be an integer epoch-millisecond time, got ${String(dueMs)}`);
  }
  return dueMs;
}

/** The timers table and the alarm that follows it (see the module header). */
export class TimerTable {
  readonly #driver: SqlDriver;
  readonly #alarm: AlarmStorage;
  #arming: Promise<void> = Promise.resolve();
  /** The alarm as this instance last read or set it (`undefined`: not known); see {@link arm}. */
  #knownAlarm: number | null | undefined;
  /** Bumped by {@link forgetAlarm}: an arming in flight then records nothing. */
  #alarmEpoch = 0;

  readonly #now: () => number;

  /** `now`: the object's wall clock (`SessionObject.time()`), against which the alarm is judged. */
  constructor(driver: SqlDriver, alarm: AlarmStorage, now: () => number) {
    this.#driver = driver;
    this.#alarm = alarm;
    this.#now = now;
  }

  /** The object's wall clock in epoch milliseconds: timer rows are due against it. */
  now(): number {
    return this.#now();
  }

  /** Inserts or moves a timer (synchronous: callable inside a transaction). Call {@link arm} after commit. */
  put(kind: TimerKind, key: string, dueMs: number, payload: JsonValue): void {
    this.#driver.exec(UPSERT, kind, key, dueMs, JSON.stringify(payload));
  }

  /** The timer `(kind, key)`, if any. */
  get(kind: TimerKind, key: string): TimerRow | undefined {
    const row = this.#driver.query<Row>('SELECT kind, key, due_ms, payload FROM timers WHERE kind = ? AND key = ?', kind, key)[0];
    return row === undefined ? undefined : toTimer(row);
  }

  /** Removes `(kind, key)`; returns whether it existed. Synchronous: callable inside a transaction. */
  delete(kind: TimerKind, key: string): boolean {
    if (this.get(kind, key) === undefined) return false;
    this.remove(kind, key);
    return true;
  }

  /**
   * Removes `(kind, key)` if it exists, without saying whether it did: one plain DELETE, no read
   * (in the edge-agent bench's profile a `DELETE ... RETURNING` cost several times a plain one:
   * SQLite collects `RETURNING` rows in a temporary table). Synchronous: callable inside a
   * transaction.
   */
  remove(kind: TimerKind, key: string): void {
    this.#driver.exec('DELETE FROM timers WHERE kind = ? AND key = ?', kind, key);
  }

  /** Removes `(kind, key)` if it is still due at `dueMs` with `payload` (it was not moved meanwhile). */
  deleteIfUnchanged(timer: TimerRow): void {
    this.#driver.exec(
      'DELETE FROM timers WHERE kind = ? AND key = ? AND due_ms = ? AND payload = ?',
      timer.kind,
      timer.key,
      timer.dueMs,
      JSON.stringify(timer.payload),
    );
  }

  /** Moves `timer` to `dueMs` unless it was moved or removed meanwhile. */
  postponeIfUnchanged(timer: TimerRow, dueMs: number): void {
    this.#driver.exec(
      'UPDATE timers SET due_ms = ? WHERE kind = ? AND key = ? AND due_ms = ? AND payload = ?',
      dueMs,
      timer.kind,
      timer.key,
      timer.dueMs,
      JSON.stringify(timer.payload),
    );
  }

  /** Removes every sleep, wait and retry timer of a tool call's scope. */
  deleteRunTimers(scope: string): void {
    const kinds = RUN_TIMER_KINDS.map(() => '?').join(', ');
    this.#driver.exec(
      `DELETE FROM timers WHERE kind IN (${kinds}) AND json_extract(payload, '$.scope') = ?`,
      ...RUN_TIMER_KINDS,
      scope,
    );
  }

  /** True when the scope has a sleep, wait or retry timer (a pending deadline will resume it). */
  hasDeadline(scope: string): boolean {
    const kinds = DEADLINE_KINDS.map(() => '?').join(', ');
    const rows = this.#driver.query<{ n: number }>(
      `SELECT COUNT(*) AS n FROM timers WHERE kind IN (${kinds}) AND json_extract(payload, '$.scope') = ?`,
      ...DEADLINE_KINDS,
      scope,
    );
    return (rows[0]?.n ?? 0) > 0;
  }

  /** Rows due at `nowMs`, earliest first (at most {@link MAX_TIMERS_PER_ALARM}). */
  due(nowMs: number): TimerRow[] {
    return this.#driver
      .query<Row>(
        'SELECT kind, key, due_ms, payload FROM timers WHERE due_ms <= ? ORDER BY due_ms, kind, key LIMIT ?',
        nowMs,
        MAX_TIMERS_PER_ALARM,
      )
      .map(toTimer);
  }

  /** Every row of `kind`, earliest first. */
  list(kind: TimerKind): TimerRow[] {
    return this.#driver
      .query<Row>('SELECT kind, key, due_ms, payload FROM timers WHERE kind = ? ORDER BY due_ms, key', kind)
      .map(toTimer);
  }

  /** The earliest due time, or `null` when the table is empty. */
  earliest(): number | null {
    return this.#driver.query<{ due: number | null }>('SELECT MIN(due_ms) AS due FROM timers')[0]?.due ?? null;
  }

  /**
   * The alarm fired (`alarm()` calls this first): what this instance knew of it is stale, as
   * `getAlarm()` answers `null` inside `alarm()` until it is set again.
   */
  forgetAlarm(): void {
    this.#knownAlarm = undefined;
    this.#alarmEpoch++;
  }

  /**
   * Sets the alarm to the earliest row when no alarm is set or the alarm is later than that row.
   * Calls are chained; the returned promise settles when this call's `setAlarm` went through.
   * No storage call when there is no row, or when the alarm this instance last read or set is
   * still ahead and no later than the earliest row (it fires in time; only this class sets the
   * object's alarm, and a fired alarm is forgotten in `alarm()` before anything else).
   */
  arm(): Promise<void> {
    const run = async (): Promise<void> => {
      const before = this.earliest();
      if (before === null) return;
      const known = this.#knownAlarm;
      if (typeof known === 'number' && known > this.#now() && known <= before) return;
      const epoch = this.#alarmEpoch;
      const current = await this.#alarm.getAlarm();
      if (epoch === this.#alarmEpoch) this.#knownAlarm = current;
      // Read the table again now: rows inserted while getAlarm was pending are included.
      const earliest = this.earliest();
      if (earliest !== null && (current === null || current > earliest)) {
        await this.#alarm.setAlarm(earliest);
        if (epoch === this.#alarmEpoch) this.#knownAlarm = earliest;
      }
    };
    const next = this.#arming.then(run, run);
    this.#arming = next.catch(() => undefined);
    return next;
  }
}

/** The payload of a sleep, wait, retry or resume row: the call it belongs to. */
interface RunTimerPayload {
  sessionId: SessionId;
  scope: string;
  key?: string;
  sequence?: number;
}

/** Reads a run timer's payload; `undefined` when it is not one this module wrote. */
export function parseRunTimerPayload(timer: TimerRow): RunTimerPayload | undefined {
  const payload = timer.payload;
  if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) return undefined;
  const { sessionId, scope, key, sequence } = payload as Record<string, JsonValue>;
  if (typeof sessionId !== 'string' || typeof scope !== 'string') return undefined;
  return {
    // SAFETY: run timer payloads are written with the object's bound, validated session ID.
    sessionId: sessionId as SessionId,
    scope,
    ...(typeof key === 'string' ? { key } : {}),
    ...(typeof sequence === 'number' ? { sequence } : {}),
  };
}

/** Validates a user timer key (the ID rules: 1..256 characters, no control characters). */
export function checkTimerKey(key: unknown): string {
  return checkDurabilityKey(key, 'timer key');
}
