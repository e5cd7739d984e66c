/**
 * Crash safety with real processes: writers appending to one session are killed with SIGKILL
 * at random moments, four at a time, in waves. After every wave a fresh store (new cache) must
 * find every acknowledged batch exactly once, contiguous sequences, and must keep appending.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { JsonlDurableEventStore } from '../../src/advanced.js';
import type { DurableEventEnvelope } from '../../src/protocol/events.js';
import { SessionId, type EventSequence } from '../../src/protocol/ids.js';
import { finished, startFixture, tagDraft, tagOf, tempRoot } from './helpers.js';
import { sized } from '../deep.js';

const { root, cleanup } = tempRoot();
/** Writers still running: killed when the test ends, also when it fails or times out. */
const running = new Set<ReturnType<typeof startFixture>>();
afterAll(() => {
  for (const child of running) child.kill('SIGKILL');
  cleanup();
});

/**
 * Two waves kill writers on a fresh log and again on a log that already survived killed writers
 * (reopened, probed, appended to); more waves repeat the second (20 killed writers in test:deep).
 */
const WAVES = sized(2, 5);
const WRITERS_PER_WAVE = 4;

interface Ack {
  batch: string;
  size: number;
  lastSequence: number;
}

/** Starts a writer, kills it with SIGKILL after it acknowledged `acks` batches, returns its acks. */
async function killWriterAfter(sessionId: SessionId, prefix: string, acks: number): Promise<Ack[]> {
  const child = startFixture('ack-writer', [root, sessionId, prefix]);
  running.add(child);
  child.on('exit', () => running.delete(child));
  const seen: Ack[] = [];
  let buffered = '';
  const done = finished(child);
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${prefix} acknowledged only ${seen.length} batches`));
    }, 20_000);
    child.stdout?.on('data', (chunk: Buffer) => {
      buffered += chunk.toString();
      let newline = buffered.indexOf('\n');
      while (newline !== -1) {
        const line = buffered.slice(0, newline);
        buffered = buffered.slice(newline + 1);
        newline = buffered.indexOf('\n');
        const match = /^ack (\S+) (\d+) (\d+)$/.exec(line);
        if (match === null) continue;
        seen.push({ batch: match[1] ?? '', size: Number(match[2]), lastSequence: Number(match[3]) });
        if (seen.length === acks) {
          clearTimeout(timer);
          child.kill('SIGKILL');
          resolve();
        }
      }
    });
    child.on('exit', () => {
      clearTimeout(timer);
      resolve();
    });
  });
  const result = await done;
  expect(result.signal).toBe('SIGKILL');
  return seen;
}

async function readAll(store: JsonlDurableEventStore, sessionId: SessionId): Promise<DurableEventEnvelope[]> {
  const events: DurableEventEnvelope[] = [];
  let after: EventSequence | undefined;
  for (;;) {
    const page = await store.read(sessionId, { after, limit: 1000 });
    events.push(...page.events);
    if (!page.hasMore || page.nextCursor === null) return events;
    after = page.nextCursor;
  }
}

describe('JsonlDurableEventStore under SIGKILL', () => {
  it(`keeps every acknowledged batch exactly once across ${WAVES * WRITERS_PER_WAVE} killed writers`, async () => {
    const sessionId = SessionId('killed-writers');
    const acknowledged: Ack[] = [];
    for (let wave = 0; wave < WAVES; wave++) {
      const acks = await Promise.all(
        Array.from({ length: WRITERS_PER_WAVE }, (_, w) =>
          killWriterAfter(sessionId, `w${wave}x${w}`, 3 + Math.floor(Math.random() * 40)),
        ),
      );
      acknowledged.push(...acks.flat());

      // A fresh store object (empty cache) reopens the log and validates it from byte 0.
      const store = new JsonlDurableEventStore(root);
      const events = await readAll(store, sessionId);
      expect(events.map((event) => event.sequence)).toEqual(events.map((_, index) => index + 1));
      const tags = events.map(tagOf);
      expect(new Set(tags).size).toBe(tags.length);
      const position = new Map(tags.map((tag, index) => [tag, index]));
      for (const ack of acknowledged) {
        // The batch is present, whole, contiguous, and ends at the sequence the writer was told.
        for (let k = 0; k < ack.size; k++) {
          const index = position.get(`${ack.batch}-${k}`);
          expect(index, `${ack.batch}-${k}`).toBeDefined();
          expect(index).toBe(ack.lastSequence - ack.size + k);
        }
      }
      // Batches are atomic even when unacknowledged: every batch present is complete.
      const sizes = new Map<string, number>();
      for (const tag of tags) {
        const batch = tag.slice(0, tag.lastIndexOf('-'));
        sizes.set(batch, (sizes.get(batch) ?? 0) + 1);
      }
      for (const [batch, size] of sizes) {
        const n = Number(batch.slice(batch.lastIndexOf('-') + 1));
        expect(size, batch).toBe(1 + (n % 3));
      }
      // And the log keeps accepting compare-and-append at its head.
      const head = await store.getHeadSequence(sessionId);
      expect(head).toBe(events.length === 0 ? null : events.length);
      await store.append(sessionId, [tagDraft(`probe${wave}-0-0`)], { expectedLastSequence: head });
      acknowledged.push({ batch: `probe${wave}-0`, size: 1, lastSequence: (head ?? 0) + 1 });
      await store.close();
    }
    expect(acknowledged.length).toBeGreaterThan(WAVES * WRITERS_PER_WAVE * 3);
    // 20 child processes, each starting tsx: on a machine with both cores taken by other work this
    // took over 30 s (the default), so it gets a budget of its own.
  }, 180_000);
});
