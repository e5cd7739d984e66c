/**
 * SQLite with real processes: a writer killed with SIGKILL mid-loop loses no acknowledged batch
 * and leaves a file that opens; two processes appending to the same file stay contiguous.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { SqliteDurableEventStore } from '../../src/adapters/node/sqlite/sqlite-store.js';
import { SessionId } from '../../src/protocol/ids.js';
import { readAll, tempDir } from './helpers.js';
import { tsChildArgs } from '../ts-child.js';

const FIXTURE = fileURLToPath(new URL('./fixtures/append-loop.ts', import.meta.url));

interface Ack {
  lastSequence: number;
  eventIds: string[];
}

interface Writer {
  child: ChildProcessWithoutNullStreams;
  acks: Ack[];
  /** Resolves once `count` acknowledgements arrived. */
  acked(count: number): Promise<void>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>;
}

function startWriter(file: string, session: string, label: string, batches: number, perBatch: number): Writer {
  const child = spawn(process.execPath, [...tsChildArgs(FIXTURE), file, session, label, String(batches), String(perBatch)], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const acks: Ack[] = [];
  const waiters: Array<{ count: number; resolve: () => void }> = [];
  let buffered = '';
  let stderr = '';
  child.stdout.setEncoding('utf8');
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (chunk: string) => (stderr += chunk));
  child.stdout.on('data', (chunk: string) => {
    buffered += chunk;
    let newline = buffered.indexOf('\n');
    while (newline >= 0) {
      const line = buffered.slice(0, newline);
      buffered = buffered.slice(newline + 1);
      const [tag, sequence, ids] = line.split(' ');
      if (tag === 'ack' && sequence !== undefined && ids !== undefined) {
        acks.push({ lastSequence: Number(sequence), eventIds: ids.split(',') });
      }
      newline = buffered.indexOf('\n');
    }
    for (const waiter of [...waiters]) {
      if (acks.length >= waiter.count) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve();
      }
    }
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>((resolve) => {
    child.on('exit', (code, signal) => resolve({ code, signal, stderr }));
  });
  return {
    child,
    acks,
    acked: (count) =>
      acks.length >= count
        ? Promise.resolve()
        : Promise.race([
            new Promise<void>((resolve) => waiters.push({ count, resolve })),
            exited.then(({ code, stderr: err }) => {
              throw new Error(`writer exited (${String(code)}) before ${count} acks: ${err}`);
            }),
          ]),
    exited,
  };
}

const cleanups: Array<() => void> = [];
afterEach(() => {
  while (cleanups.length > 0) cleanups.pop()?.();
});

describe('SqliteDurableEventStore across processes', () => {
  it('keeps every acknowledged batch when the writer is killed with SIGKILL', async () => {
    const tmp = tempDir();
    cleanups.push(tmp.cleanup);
    const file = tmp.file('crash.db');
    const session = 'crash-session';
    const writer = startWriter(file, session, 'victim', 0, 3);
    cleanups.push(() => writer.child.kill('SIGKILL'));

    await writer.acked(25);
    writer.child.kill('SIGKILL');
    const exit = await writer.exited;
    expect(exit.signal).toBe('SIGKILL');

    const store = new SqliteDurableEventStore(file);
    cleanups.push(() => store.close());
    const events = await readAll(store, SessionId(session));
    // Contiguous from 1, and whole batches only (a batch of 3 is atomic).
    expect(events.map((e) => e.sequence)).toEqual(events.map((_, index) => index + 1));
    expect(events.length % 3).toBe(0);
    const stored = new Map(events.map((e) => [e.eventId as string, e.sequence as number]));
    for (const ack of writer.acks) {
      ack.eventIds.forEach((eventId, index) => {
        expect(stored.get(eventId)).toBe(ack.lastSequence - ack.eventIds.length + 1 + index);
      });
    }
    expect(events.length).toBeGreaterThanOrEqual(writer.acks.length * 3);
    // The reopened file still accepts writes after the crash.
    await expect(store.append(SessionId(session), [{ type: 'session_created', data: {} }])).resolves.toMatchObject({
      lastSequence: events.length + 1,
    });
  });

  it('serializes two processes appending to the same session', async () => {
    const tmp = tempDir();
    cleanups.push(tmp.cleanup);
    const file = tmp.file('shared.db');
    const session = 'shared-session';
    // Create the schema first so both writers start on a migrated file.
    new SqliteDurableEventStore(file).close();
    const batches = 40;
    const perBatch = 3;
    const writers = [startWriter(file, session, 'a', batches, perBatch), startWriter(file, session, 'b', batches, perBatch)];
    for (const writer of writers) cleanups.push(() => writer.child.kill('SIGKILL'));
    const exits = await Promise.all(writers.map((w) => w.exited));
    for (const exit of exits) expect(exit).toMatchObject({ code: 0, stderr: '' });

    const store = new SqliteDurableEventStore(file);
    cleanups.push(() => store.close());
    const events = await readAll(store, SessionId(session));
    expect(events).toHaveLength(2 * batches * perBatch);
    expect(events.map((e) => e.sequence)).toEqual(events.map((_, index) => index + 1));
    // Each batch is contiguous and in order: events come in runs of `perBatch` from one writer.
    for (let start = 0; start < events.length; start += perBatch) {
      const run = events.slice(start, start + perBatch).map((e) => (e.data as { output: { writer: string; batch: number; index: number } }).output);
      expect(run.map((o) => o.index)).toEqual([0, 1, 2]);
      expect(new Set(run.map((o) => `${o.writer}/${o.batch}`)).size).toBe(1);
    }
    // Every acknowledgement names the events stored at exactly those sequences.
    const byId = new Map(events.map((e) => [e.eventId as string, e.sequence as number]));
    for (const writer of writers) {
      expect(writer.acks).toHaveLength(batches);
      for (const ack of writer.acks) expect(byId.get(ack.eventIds.at(-1) ?? '')).toBe(ack.lastSequence);
    }
  });
});
