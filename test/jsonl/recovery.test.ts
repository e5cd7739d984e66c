/**
 * What the JSONL store does with damaged or changed files, written by hand: a torn final line
 * is ignored and cut off before the next write; a complete bad line (invalid JSON or schema,
 * duplicate event ID, sequence gap, foreign session) fails every call with
 * DURABLE_EVENT_CORRUPT_LOG and is never skipped; a truncated or replaced file is revalidated
 * from scratch instead of trusting the cache; a malformed lease file fails closed.
 */
import { appendFileSync, existsSync, mkdirSync, readFileSync, renameSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { JsonlDurableEventStore } from '../../src/advanced.js';
import { DurableEventStoreError } from '../../src/protocol/errors.js';
import { EventSequence, SessionId } from '../../src/protocol/ids.js';
import { tagDraft, tagOf, tempRoot } from './helpers.js';

const { root, cleanup } = tempRoot();
afterAll(cleanup);

let counter = 0;
/** A new session with `batches` one-event batches, through a store that is then closed. */
async function seededSession(batches: number): Promise<{ sessionId: SessionId; log: string }> {
  const sessionId = SessionId(`recovery-${counter++}`);
  const store = new JsonlDurableEventStore(root);
  for (let i = 0; i < batches; i++) await store.append(sessionId, [tagDraft(`b${i}`)]);
  const log = store.pathsOf(sessionId).log;
  await store.close();
  return { sessionId, log };
}

function lines(log: string): string[] {
  return readFileSync(log, 'utf8').split('\n').filter((line) => line.length > 0);
}

async function expectCorrupt(promise: Promise<unknown>): Promise<void> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(DurableEventStoreError);
  expect((error as DurableEventStoreError).code).toBe('DURABLE_EVENT_CORRUPT_LOG');
}

describe('JsonlDurableEventStore with damaged files', () => {
  it('ignores a torn final line and cuts it off before the next append', async () => {
    const { sessionId, log } = await seededSession(3);
    const intact = readFileSync(log, 'utf8');
    appendFileSync(log, '[{"schemaVersion":4,"eventId":"torn","sequ');
    const store = new JsonlDurableEventStore(root);
    expect(await store.getHeadSequence(sessionId)).toBe(3);
    expect((await store.read(sessionId)).events.map(tagOf)).toEqual(['b0', 'b1', 'b2']);
    // The torn bytes are still there (reads never write) ...
    expect(readFileSync(log, 'utf8').startsWith(intact)).toBe(true);
    expect(statSync(log).size).toBeGreaterThan(intact.length);
    // ... until the next append repairs the tail under the lock and writes a clean line.
    const result = await store.append(sessionId, [tagDraft('after-tear')], { expectedLastSequence: EventSequence(3) });
    expect(result.lastSequence).toBe(4);
    const after = lines(log);
    expect(after).toHaveLength(4);
    expect(readFileSync(log, 'utf8').endsWith('\n')).toBe(true);
    for (const line of after) expect(() => JSON.parse(line) as unknown).not.toThrow();
    const reopened = new JsonlDurableEventStore(root);
    expect((await reopened.read(sessionId)).events.map(tagOf)).toEqual(['b0', 'b1', 'b2', 'after-tear']);
  });

  it('treats a file holding only a torn line as empty', async () => {
    const sessionId = SessionId('only-torn');
    const store = new JsonlDurableEventStore(root);
    const { log } = store.pathsOf(sessionId);
    await store.append(sessionId, [tagDraft('x')]);
    writeFileSync(log, '[{"half');
    const fresh = new JsonlDurableEventStore(root);
    expect(await fresh.getHeadSequence(sessionId)).toBeNull();
    expect((await fresh.append(sessionId, [tagDraft('first')], { expectedLastSequence: null })).lastSequence).toBe(1);
    expect(lines(log)).toHaveLength(1);
  });

  const corruptions: Array<{ name: string; damage: (log: string) => void }> = [
    { name: 'a line that is not JSON', damage: (log) => appendFileSync(log, 'not json\n') },
    { name: 'an empty line', damage: (log) => appendFileSync(log, '\n') },
    { name: 'an empty batch', damage: (log) => appendFileSync(log, '[]\n') },
    {
      name: 'an event failing the envelope schema',
      damage: (log) => {
        const event = JSON.parse(lines(log)[0] ?? '')[0] as Record<string, unknown>;
        appendFileSync(log, `${JSON.stringify([{ ...event, sequence: 3, eventId: 'e-new', surprise: true }])}\n`);
      },
    },
    {
      name: 'a duplicate event ID among new lines',
      damage: (log) => {
        const event = JSON.parse(lines(log)[0] ?? '')[0] as Record<string, unknown>;
        const copy = { ...event, eventId: 'e-twice' };
        appendFileSync(log, `${JSON.stringify([{ ...copy, sequence: 3 }, { ...copy, sequence: 4 }])}\n`);
      },
    },
    {
      name: 'a sequence gap',
      damage: (log) => {
        const event = JSON.parse(lines(log)[0] ?? '')[0] as Record<string, unknown>;
        appendFileSync(log, `${JSON.stringify([{ ...event, sequence: 4, eventId: 'e-gap' }])}\n`);
      },
    },
    {
      name: 'an event of another session',
      damage: (log) => {
        const event = JSON.parse(lines(log)[0] ?? '')[0] as Record<string, unknown>;
        appendFileSync(log, `${JSON.stringify([{ ...event, sequence: 3, eventId: 'e-x', sessionId: 'other' }])}\n`);
      },
    },
    {
      name: 'a damaged line in the middle',
      damage: (log) => {
        const all = lines(log);
        writeFileSync(log, `${all[0]}\n{"broken":\n`);
      },
    },
  ];

  for (const { name, damage } of corruptions) {
    it(`fails closed on ${name}, for a fresh store and for a store that cached the head`, async () => {
      const { sessionId, log } = await seededSession(2);
      const cached = new JsonlDurableEventStore(root);
      expect(await cached.getHeadSequence(sessionId)).toBe(2);
      damage(log);
      const fresh = new JsonlDurableEventStore(root);
      for (const store of [fresh, cached]) {
        await expectCorrupt(store.read(sessionId));
        await expectCorrupt(store.getHeadSequence(sessionId));
        await expectCorrupt(store.append(sessionId, [tagDraft('never')]));
        // It keeps failing: the bad line is never skipped.
        await expectCorrupt(store.read(sessionId, { after: EventSequence(1) }));
      }
      expect(readFileSync(log, 'utf8')).not.toContain('never');
    });
  }

  it('fails closed on an event ID repeated from an earlier line, whenever the whole file is validated', async () => {
    const { sessionId, log } = await seededSession(2);
    const event = JSON.parse(lines(log)[0] ?? '')[0] as Record<string, unknown>;
    appendFileSync(log, `${JSON.stringify([{ ...event, sequence: 3 }])}\n`);
    // A store object validates the whole file when it first opens a session. (A store that had
    // already cached the head checks only the lines added since; see README, "Validation".)
    const fresh = new JsonlDurableEventStore(root);
    await expectCorrupt(fresh.getHeadSequence(sessionId));
    await expectCorrupt(fresh.getHeadSequence(sessionId));
    await expectCorrupt(fresh.append(sessionId, [tagDraft('never')]));
    expect(readFileSync(log, 'utf8')).not.toContain('never');
  });

  it('revalidates from scratch when the log is truncated below the cached size', async () => {
    const { sessionId, log } = await seededSession(4);
    const store = new JsonlDurableEventStore(root);
    expect(await store.getHeadSequence(sessionId)).toBe(4);
    const keep = lines(log).slice(0, 2).join('\n').length + 1;
    truncateSync(log, keep);
    expect(await store.getHeadSequence(sessionId)).toBe(2);
    expect((await store.read(sessionId)).events.map(tagOf)).toEqual(['b0', 'b1']);
    expect((await store.append(sessionId, [tagDraft('c')], { expectedLastSequence: EventSequence(2) })).lastSequence).toBe(3);
  });

  it('revalidates from scratch when the log file is replaced', async () => {
    const a = await seededSession(3);
    const b = await seededSession(1);
    const store = new JsonlDurableEventStore(root);
    expect(await store.getHeadSequence(a.sessionId)).toBe(3);
    // Same size or larger would fool a size-only check; the new inode must not.
    writeFileSync(`${a.log}.new`, readFileSync(a.log));
    renameSync(`${a.log}.new`, a.log);
    expect(await store.getHeadSequence(a.sessionId)).toBe(3);
    // A file of another session moved into place fails closed instead of being served.
    writeFileSync(`${a.log}.new`, readFileSync(b.log));
    renameSync(`${a.log}.new`, a.log);
    await expectCorrupt(store.read(a.sessionId));
  });

  it('fails a page read closed when validated bytes change in place', async () => {
    const { sessionId, log } = await seededSession(3);
    const store = new JsonlDurableEventStore(root);
    expect(await store.getHeadSequence(sessionId)).toBe(3);
    const text = readFileSync(log, 'utf8');
    // Same length, different sequence digit in the second line.
    const second = text.indexOf('"sequence":2');
    writeFileSync(log, `${text.slice(0, second)}"sequence":7${text.slice(second + '"sequence":2'.length)}`);
    expect(statSync(log).size).toBe(text.length);
    await expectCorrupt(store.read(sessionId));
  });

  it('fails closed with DURABLE_EVENT_LOCK_FAILED when the lock sidecar cannot be opened', async () => {
    const sessionId = SessionId('unlockable');
    const store = new JsonlDurableEventStore(root);
    mkdirSync(store.pathsOf(sessionId).lock, { recursive: true });
    await expect(store.append(sessionId, [tagDraft('x')])).rejects.toMatchObject({ code: 'DURABLE_EVENT_LOCK_FAILED' });
    await expect(store.inspectExecutionLease(sessionId)).rejects.toMatchObject({ code: 'DURABLE_EVENT_LOCK_FAILED' });
    expect(existsSync(store.pathsOf(sessionId).log)).toBe(false);
  });

  it('fails lease calls and appends closed when the lease file is malformed', async () => {
    const { sessionId } = await seededSession(1);
    const store = new JsonlDurableEventStore(root);
    writeFileSync(store.pathsOf(sessionId).lease, '{"version":1,"leaseId":""}');
    await expectCorrupt(store.inspectExecutionLease(sessionId));
    await expectCorrupt(store.append(sessionId, [tagDraft('x')]));
    writeFileSync(store.pathsOf(sessionId).lease, 'garbage');
    await expectCorrupt(store.requiresExecutionLease(sessionId));
  });
});
