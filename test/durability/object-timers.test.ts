/**
 * The session object's timer table (`src/edge/timers.ts`) over SQLite in
 * Node, with a recording stand-in for the object's alarm: which arms read or set the alarm, and
 * which are answered from the alarm the instance remembers.
 */
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { BetterSqlite3Driver } from '../../src/adapters/node/sqlite/better-sqlite3-driver.js';
import { migrateSqlSchema } from '../../src/adapters/sql/schema.js';
import { OBJECT_SCHEMA } from '../../src/edge/schema.js';
import { TIMER_KINDS, TimerTable, type AlarmStorage } from '../../src/edge/timers.js';

class RecordingAlarm implements AlarmStorage {
  alarm: number | null = null;
  readonly calls: string[] = [];

  async getAlarm(): Promise<number | null> {
    this.calls.push('get');
    return this.alarm;
  }

  async setAlarm(scheduledTimeMs: number): Promise<void> {
    this.calls.push(`set ${scheduledTimeMs}`);
    this.alarm = scheduledTimeMs;
  }

  /** The runtime fired the alarm: it is gone until set again. */
  fire(): void {
    this.alarm = null;
  }
}

function table(): { timers: TimerTable; alarm: RecordingAlarm } {
  const driver = new BetterSqlite3Driver(new Database(':memory:'));
  migrateSqlSchema(driver, OBJECT_SCHEMA);
  const alarm = new RecordingAlarm();
  return { timers: new TimerTable(driver, alarm, () => Date.now()), alarm };
}

describe('TimerTable.arm', () => {
  it('makes no storage call when there is no row', async () => {
    const { timers, alarm } = table();
    await timers.arm();
    expect(alarm.calls).toEqual([]);
  });

  it('sets the alarm once, then trusts the remembered alarm for later rows, and moves it for an earlier one', async () => {
    const { timers, alarm } = table();
    const now = Date.now();
    timers.put(TIMER_KINDS.agent, 'agent', now + 30_000, null);
    await timers.arm();
    expect(alarm.calls).toEqual(['get', `set ${now + 30_000}`]);
    timers.put(TIMER_KINDS.user, 'later', now + 60_000, null);
    await timers.arm();
    // Still ahead and no later than the earliest row: no storage call.
    expect(alarm.calls).toHaveLength(2);
    timers.put(TIMER_KINDS.user, 'sooner', now + 10_000, null);
    await timers.arm();
    expect(alarm.calls.slice(2)).toEqual(['get', `set ${now + 10_000}`]);
    expect(alarm.alarm).toBe(now + 10_000);
  });

  it('reads the alarm again after it fired (forgetAlarm), and never trusts a remembered alarm that is due', async () => {
    const { timers, alarm } = table();
    const now = Date.now();
    timers.put(TIMER_KINDS.agent, 'agent', now + 30_000, null);
    await timers.arm();
    alarm.fire();
    timers.forgetAlarm();
    await timers.arm();
    expect(alarm.calls).toEqual(['get', `set ${now + 30_000}`, 'get', `set ${now + 30_000}`]);

    const past = table();
    past.timers.put(TIMER_KINDS.user, 'due', now - 1, null);
    await past.timers.arm();
    past.timers.put(TIMER_KINDS.user, 'next', now + 30_000, null);
    await past.timers.arm();
    // The remembered alarm is due (it fires or fired): the alarm is read, not assumed.
    expect(past.alarm.calls).toEqual(['get', `set ${now - 1}`, 'get']);
  });

  it('leaves an earlier alarm set by someone else, as before', async () => {
    const { timers, alarm } = table();
    const now = Date.now();
    alarm.alarm = now + 5_000;
    timers.put(TIMER_KINDS.agent, 'agent', now + 30_000, null);
    await timers.arm();
    expect(alarm.calls).toEqual(['get']);
    expect(alarm.alarm).toBe(now + 5_000);
  });
});

describe('TimerTable.delete and remove', () => {
  it('answers whether the timer existed', () => {
    const { timers } = table();
    timers.put(TIMER_KINDS.user, 'k', Date.now() + 1_000, { a: 1 });
    expect(timers.delete(TIMER_KINDS.user, 'k')).toBe(true);
    expect(timers.delete(TIMER_KINDS.user, 'k')).toBe(false);
    expect(timers.get(TIMER_KINDS.user, 'k')).toBeUndefined();
    timers.put(TIMER_KINDS.agent, 'agent', Date.now() + 1_000, null);
    timers.remove(TIMER_KINDS.agent, 'agent');
    timers.remove(TIMER_KINDS.agent, 'agent');
    expect(timers.get(TIMER_KINDS.agent, 'agent')).toBeUndefined();
  });
});
