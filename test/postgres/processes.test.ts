/**
 * Several Node processes against one PostgreSQL server, each with its own store and pool:
 * 1. they race compare-and-append on one session and append freely to many while the test
 *    SIGKILLs them at random (and starts replacements): every acknowledged append is present
 *    exactly once, at the sequences it was acknowledged with, every log is contiguous (the store's
 *    reads check it), and no two compare-and-appends succeeded on the same head;
 * 2. lease takeover across processes: the holder is paused with SIGSTOP past its TTL, a second
 *    process takes the lease over and appends; resumed, the first process never commits again
 *    (its next append is refused as DURABLE_EXECUTION_LEASE_LOST), and in the log every event of
 *    the old token precedes the new owner's first event.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresDurableEventStore } from '../../src/postgres.js';
import { SessionId } from '../../src/protocol/ids.js';
import { dropSchema, freshSchema, postgresUrl, readAll } from './helpers.js';
import { tsChildArgs } from '../ts-child.js';

const url = postgresUrl();
const schema = freshSchema('processes');
const workerFile = fileURLToPath(new URL('./fixtures/worker.ts', import.meta.url));
const dir = mkdtempSync(path.join(os.tmpdir(), 'agent-ledger-pg-processes-'));
const children = new Set<ChildProcess>();
let store: PostgresDurableEventStore;

beforeAll(async () => {
  store = await PostgresDurableEventStore.open({ connectionString: url, schema, poolSize: 2 });
});
afterAll(async () => {
  for (const child of children) child.kill('SIGKILL');
  await store.close();
  await dropSchema(url, schema);
  rmSync(dir, { recursive: true, force: true });
});

function startWorker(mode: 'race' | 'lease', config: Record<string, unknown>): ChildProcess {
  const child = spawn(process.execPath, [...tsChildArgs(workerFile), mode, JSON.stringify({ url, schema, ...config })], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

function acks<T>(file: string): T[] {
  if (!existsSync(file)) return [];
  const lines = readFileSync(file, 'utf8').split('\n');
  const parsed: T[] = [];
  for (const line of lines) {
    try {
      parsed.push(JSON.parse(line) as T);
    } catch {
      // A torn last line of a killed process: not an acknowledgement.
    }
  }
  return parsed;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function waitForOutput(child: ChildProcess, pattern: RegExp): Promise<RegExpMatchArray> {
  return new Promise((resolve, reject) => {
    let text = '';
    let errors = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      const match = pattern.exec(text);
      if (match !== null) resolve(match);
    });
    child.stderr?.on('data', (chunk: Buffer) => {
      errors += chunk.toString();
    });
    child.once('exit', (code, signal) => reject(new Error(`worker exited (${String(code ?? signal)}) before ${pattern}: ${errors}`)));
  });
}

interface AppendAck {
  kind: 'cas' | 'free';
  session: string;
  previous: number | null;
  last: number;
  eventIds: string[];
}

describe('PostgreSQL store across processes', () => {
  it('keeps every acknowledged append exactly once while racing processes are SIGKILLed', async () => {
    const WORKERS = 3;
    const KILLS = 6;
    const casSession = 'race-cas';
    const freePrefix = 'race-free';
    const ackFiles: string[] = [];
    let generation = 0;
    const launch = (): ChildProcess => {
      const ackFile = path.join(dir, `race-${generation}.jsonl`);
      ackFiles.push(ackFile);
      const child = startWorker('race', { ackFile, name: `w${generation}`, casSession, freePrefix, freeCount: 5 });
      generation++;
      return child;
    };
    const running = Array.from({ length: WORKERS }, launch);
    const counted = (): { cas: number; free: number } => {
      const all = ackFiles.flatMap((file) => acks<AppendAck>(file));
      return { cas: all.filter((a) => a.kind === 'cas').length, free: all.filter((a) => a.kind === 'free').length };
    };
    /** Waits (bounded, load-independent) until at least `more` new appends were acknowledged. */
    const progress = async (more: number): Promise<void> => {
      const start = counted();
      const deadline = Date.now() + 60_000;
      while (Date.now() < deadline) {
        const now = counted();
        if (now.cas + now.free >= start.cas + start.free + more) return;
        await sleep(50);
      }
    };
    for (let kill = 0; kill < KILLS; kill++) {
      // Let the workers make progress, then kill one at random, at a random moment.
      await progress(10);
      await sleep(Math.floor(Math.random() * 300));
      const victim = Math.floor(Math.random() * running.length);
      const child = running[victim] as ChildProcess;
      child.kill('SIGKILL');
      await exited(child);
      running[victim] = launch();
    }
    const deadline = Date.now() + 60_000;
    while ((counted().cas < 20 || counted().free < 20) && Date.now() < deadline) await sleep(50);
    for (const child of running) child.kill('SIGKILL');
    await Promise.all(running.map(exited));

    const acknowledged = ackFiles.flatMap((file) => acks<AppendAck>(file));
    expect(acknowledged.filter((a) => a.kind === 'cas').length).toBeGreaterThan(10);
    expect(acknowledged.filter((a) => a.kind === 'free').length).toBeGreaterThan(10);
    const sessions = [casSession, ...Array.from({ length: 5 }, (_, i) => `${freePrefix}-${i}`)];
    const logs = new Map<string, Map<string, number>>();
    for (const session of sessions) {
      // `read` refuses a gap: contiguity is checked on every page.
      const events = await readAll(store, SessionId(session));
      events.forEach((event, index) => expect(event.sequence).toBe(index + 1));
      const ids = new Map(events.map((event) => [event.eventId as string, event.sequence as number]));
      expect(ids.size).toBe(events.length);
      logs.set(session, ids);
    }
    for (const append of acknowledged) {
      const log = logs.get(append.session) as Map<string, number>;
      append.eventIds.forEach((eventId, index) => {
        expect(log.get(eventId), `acknowledged event ${eventId} of ${append.session}`).toBe((append.previous ?? 0) + index + 1);
      });
    }
    const casHeads = acknowledged.filter((a) => a.kind === 'cas').map((a) => a.previous ?? 0);
    expect(new Set(casHeads).size).toBe(casHeads.length);
  });

  it('refuses a SIGSTOPped holder that resumes after another process took the lease over', async () => {
    const session = 'lease-takeover';
    const ttlMs = 400;
    const firstAcks = path.join(dir, 'lease-a.jsonl');
    const secondAcks = path.join(dir, 'lease-b.jsonl');
    const first = startWorker('lease', { ackFile: firstAcks, name: 'holder-a', session, ttlMs });
    expect((await waitForOutput(first, /acquired (\d+)/))[1]).toBe('1');
    while (acks(firstAcks).length < 3) await sleep(20);
    first.kill('SIGSTOP');
    const pausedAt = acks<{ sequence?: number }>(firstAcks).length;
    // Well past the TTL: the second process retries acquisition until the lease has expired anyway.
    await sleep(ttlMs * 3);
    const second = startWorker('lease', { ackFile: secondAcks, name: 'holder-b', session, ttlMs: 60_000 });
    expect((await waitForOutput(second, /acquired (\d+)/))[1]).toBe('2');
    while (acks(secondAcks).length < 3) await sleep(20);
    first.kill('SIGCONT');
    await exited(first);
    second.kill('SIGKILL');
    await exited(second);

    const firstLines = acks<{ sequence?: number; lost?: boolean }>(firstAcks);
    expect(firstLines[firstLines.length - 1]).toEqual({ owner: 'holder-a', lost: true });
    // At most the append that was already in flight when it was paused was acknowledged later.
    expect(firstLines.filter((line) => line.sequence !== undefined).length).toBeLessThanOrEqual(pausedAt + 1);
    const events = await readAll(store, SessionId(session));
    const owners = events.map((event) => String((event.data as { output?: unknown }).output ?? '').split('|')[0]);
    const firstOfB = owners.indexOf('holder-b');
    expect(firstOfB).toBeGreaterThan(0);
    expect(owners.slice(firstOfB).every((owner) => owner === 'holder-b')).toBe(true);
  });
});
