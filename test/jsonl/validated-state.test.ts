/**
 * The validated-state sidecar (`{name}.jsonl.validated`): a first open trusts the validated prefix
 * only when the sidecar checks out against the log, and validates everything otherwise.
 *
 * Most cases corrupt a middle line of the log in place (same length): a store that trusted the
 * sidecar would not see it on open, a full validation reports `DURABLE_EVENT_CORRUPT_LOG`. So an
 * open that fails proves the fallback, and the first case (a good sidecar) shows it is trusted.
 */
import { copyFileSync, existsSync, readdirSync, readFileSync, renameSync, truncateSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { JsonlDurableEventStore } from '../../src/advanced.js';
import { EventId, EventSequence, RequestId, SessionId } from '../../src/protocol/ids.js';
import { finished, startFixture, tagDraft, tagOf, tempRoot, waitForLine } from './helpers.js';
import { sized } from '../deep.js';

let root: string;
let cleanup: () => void;
beforeEach(() => {
  ({ root, cleanup } = tempRoot());
});
afterEach(() => cleanup());

const A = SessionId('session-a');
/** Events per test log: ~230-byte lines, so line {@link MIDDLE} lies past the first 4 KiB (hashed). */
const N = 30;
const MIDDLE = 24;
const B = SessionId('session-b');

async function build(store: JsonlDurableEventStore, id: SessionId, count: number, prefix = 'e'): Promise<void> {
  for (let i = 0; i < count; i++) await store.append(id, [tagDraft(`${prefix}-${i}`)]);
}

/** Builds `count` one-event batches and writes a checkpoint (which saves the sidecar). */
async function buildWithSidecar(id: SessionId, count: number, prefix = 'e'): Promise<JsonlDurableEventStore> {
  const store = new JsonlDurableEventStore(root);
  await build(store, id, count, prefix);
  const page = await store.read(id);
  const last = page.events[page.events.length - 1];
  await store.writeCheckpoint(id, { sequence: EventSequence(count), eventId: EventId(String(last?.eventId)), data: new Uint8Array([1]) });
  await store.close();
  expect(existsSync(store.pathsOf(id).validated)).toBe(true);
  return store;
}

function lines(file: string): string[] {
  return readFileSync(file, 'utf8').split('\n').slice(0, -1);
}

/** Replaces line `index` by as many `x` (same length): invalid JSON a full validation refuses. */
function corruptLine(file: string, index: number): void {
  const all = lines(file);
  all[index] = 'x'.repeat(all[index]?.length ?? 0);
  writeFileSync(file, `${all.join('\n')}\n`);
}

const fresh = (): JsonlDurableEventStore => new JsonlDurableEventStore(root);

describe('validated-state sidecar', () => {
  it('is trusted when it matches the log: the prefix is not parsed again, reads after it work, appends go on', async () => {
    const store = await buildWithSidecar(A, N);
    const log = store.pathsOf(A).log;
    corruptLine(log, MIDDLE); // in place, same length, same inode, past the hashed first bytes
    const reader = fresh();
    expect(await reader.getHeadSequence(A)).toBe(N);
    // Page reads still re-check what they return: the edited line fails closed.
    await expect(reader.read(A)).rejects.toMatchObject({ code: 'DURABLE_EVENT_CORRUPT_LOG' });
    // The sparse index of so small a log holds the first and the last line: a read of the last
    // line starts there and never meets the edited one.
    const tail = await reader.read(A, { after: EventSequence(N - 1) });
    expect(tail.events.map(tagOf)).toEqual([`e-${N - 1}`]);
    await reader.append(A, [tagDraft('e-30')], { expectedLastSequence: EventSequence(N) });
    expect(await fresh().getHeadSequence(A)).toBe(N + 1);
  });

  it('a good log opens the same with or without the sidecar', async () => {
    const store = await buildWithSidecar(A, 5);
    const withSidecar = await fresh().read(A);
    renameSync(store.pathsOf(A).validated, path.join(root, 'moved-away'));
    const without = await fresh().read(A);
    expect(withSidecar).toEqual(without);
  });

  it('stale sidecar (log appended without updating it): the tail is validated from the recorded size', async () => {
    const store = await buildWithSidecar(A, 4);
    const before = readFileSync(store.pathsOf(A).validated, 'utf8');
    const writer = fresh();
    await build(writer, A, 3, 'late');
    await writer.close();
    expect(readFileSync(store.pathsOf(A).validated, 'utf8')).toBe(before); // not rewritten below 8 MiB
    const reader = fresh();
    expect(await reader.getHeadSequence(A)).toBe(7);
    expect((await reader.read(A, { after: EventSequence(3) })).events.map(tagOf)).toEqual(['e-3', 'late-0', 'late-1', 'late-2']);
    // A bad line past the recorded size is still found.
    writeFileSync(store.pathsOf(A).log, `${readFileSync(store.pathsOf(A).log, 'utf8')}[{"not":"an envelope"}]\n`);
    await expect(fresh().getHeadSequence(A)).rejects.toMatchObject({ code: 'DURABLE_EVENT_CORRUPT_LOG' });
  });

  it('sidecar ahead of the log (an older log restored): validates everything', async () => {
    const store = await buildWithSidecar(A, 5);
    const log = store.pathsOf(A).log;
    const keep = lines(log).slice(0, 3);
    truncateSync(log, Buffer.byteLength(`${keep.join('\n')}\n`));
    expect(await fresh().getHeadSequence(A)).toBe(3);
    // Regrown past the recorded size with other lines: the recorded last line no longer matches.
    await build(fresh(), A, N, 'regrown');
    corruptLine(log, MIDDLE);
    await expect(fresh().getHeadSequence(A)).rejects.toMatchObject({ code: 'DURABLE_EVENT_CORRUPT_LOG' });
  });

  it('corrupt sidecar (garbage, cut short, or a tampered head): validates everything', async () => {
    const store = await buildWithSidecar(A, N);
    const { log, validated } = store.pathsOf(A);
    const good = readFileSync(validated, 'utf8');
    corruptLine(log, MIDDLE);
    expect(await fresh().getHeadSequence(A)).toBe(N); // trusted while intact
    for (const bad of [
      'garbage',
      good.slice(0, Math.floor(good.length / 2)),
      good.replace(`"head":${N}`, `"head":${N + 1}`),
      good.replace(`"lastLineFirst":${N}`, `"lastLineFirst":${N - 1}`),
      good.replace(/"lastEventId":"[^"]+"/, '"lastEventId":"another-event"'),
      good.replace('"index":[[1,0]', '"index":[[1,1]'),
      good.replace(/"lastLineSha256":"[^"]+"/, '"lastLineSha256":"AAAA"'),
      good.replace(/"firstBytesSha256":"[^"]+"/, '"firstBytesSha256":"AAAA"'),
      good.replace(/"ino":"[^"]+"/, '"ino":"1"'),
      good.replace('"version":1', '"version":2'),
    ]) {
      expect(bad).not.toBe(good);
      writeFileSync(validated, bad);
      await expect(fresh().getHeadSequence(A), bad.slice(0, 60)).rejects.toMatchObject({ code: 'DURABLE_EVENT_CORRUPT_LOG' });
    }
  });

  it("foreign sidecar (another session's): validates everything", async () => {
    const store = await buildWithSidecar(A, N);
    await buildWithSidecar(B, N);
    copyFileSync(store.pathsOf(B).validated, store.pathsOf(A).validated);
    corruptLine(store.pathsOf(A).log, MIDDLE);
    await expect(fresh().getHeadSequence(A)).rejects.toMatchObject({ code: 'DURABLE_EVENT_CORRUPT_LOG' });
    expect(await fresh().getHeadSequence(B)).toBe(N);
  });

  it('a log replaced by a different one of the same size (renamed over, or copied in place): validates everything', async () => {
    const store = await buildWithSidecar(A, N);
    const { log } = store.pathsOf(A);
    const other = tempRoot();
    try {
      const otherStore = new JsonlDurableEventStore(other.root);
      await build(otherStore, A, N);
      await otherStore.close();
      const replacement = otherStore.pathsOf(A).log;
      expect(readFileSync(replacement).length).toBe(readFileSync(log).length);
      corruptLine(replacement, MIDDLE);
      const staged = path.join(root, 'staged.jsonl');
      copyFileSync(replacement, staged);
      renameSync(staged, log); // a new inode
      await expect(fresh().getHeadSequence(A)).rejects.toMatchObject({ code: 'DURABLE_EVENT_CORRUPT_LOG' });
      // Same inode, other bytes: the sidecar still names the old inode, so restore a sidecar for
      // this inode first, then copy the replacement into it.
      const good = await buildWithSidecar(B, N);
      const logB = good.pathsOf(B).log;
      const otherB = new JsonlDurableEventStore(other.root);
      await build(otherB, B, N);
      await otherB.close();
      corruptLine(otherB.pathsOf(B).log, MIDDLE);
      copyFileSync(otherB.pathsOf(B).log, logB); // truncates and rewrites the same inode
      await expect(fresh().getHeadSequence(B)).rejects.toMatchObject({ code: 'DURABLE_EVENT_CORRUPT_LOG' });
    } finally {
      other.cleanup();
    }
  });

  it('kill -9 during a sidecar write: an orphaned temp file or a torn sidecar only costs a full validation', async () => {
    const store = await buildWithSidecar(A, N);
    const { log, validated } = store.pathsOf(A);
    const good = readFileSync(validated, 'utf8');
    // Killed before the rename: an orphaned temp file next to the previous sidecar.
    writeFileSync(`${validated}.12345.abcdef.tmp`, good.slice(0, 20));
    expect(await fresh().getHeadSequence(A)).toBe(N);
    // A sidecar torn by a filesystem that lost the rename's data: not trusted.
    writeFileSync(validated, good.slice(0, good.length - 30));
    corruptLine(log, MIDDLE);
    await expect(fresh().getHeadSequence(A)).rejects.toMatchObject({ code: 'DURABLE_EVENT_CORRUPT_LOG' });
    expect(readdirSync(path.dirname(log)).some((name) => name.endsWith('.tmp'))).toBe(true);
  });

  it('is rewritten by the next checkpoint after more appends, and reads span the sparse index', async () => {
    const store = new JsonlDurableEventStore(root);
    // Lines of ~1 KiB: 300 of them span several sparse index entries (one per 64 KiB).
    for (let i = 0; i < 300; i++) {
      await store.append(A, [
        { type: 'request_completed', requestId: RequestId(`big-${i}`), data: { output: { pad: 'p'.repeat(1000) } } },
      ]);
    }
    const last = (await store.read(A, { after: EventSequence(299) })).events[0];
    await store.writeCheckpoint(A, { sequence: EventSequence(300), eventId: EventId(String(last?.eventId)), data: new Uint8Array([1]) });
    const sidecar = JSON.parse(readFileSync(store.pathsOf(A).validated, 'utf8')) as { index: unknown[]; head: number };
    expect(sidecar.head).toBe(300);
    expect(sidecar.index.length).toBeGreaterThan(3);
    const reader = fresh();
    for (const after of [0, 1, 63, 64, 65, 150, 298]) {
      const page = await reader.read(A, { after: after === 0 ? undefined : EventSequence(after), limit: 7 });
      expect(page.events.map(tagOf)).toEqual(Array.from({ length: Math.min(7, 300 - after) }, (_, k) => `big-${after + k}`));
    }
    const all = await reader.read(A, { limit: 1000 });
    expect(all.events.length).toBeGreaterThan(0);
    expect(all.events.map(tagOf)).toEqual(Array.from({ length: all.events.length }, (_, k) => `big-${k}`));
  });

  it('kill -9 of a process rewriting the sidecar at random moments: every acknowledged event is there and the log opens', async () => {
    const paths = new JsonlDurableEventStore(root).pathsOf(A);
    let acked = 0;
    // Two rounds kill a writer on a fresh log and again on the log and sidecar a kill left; more
    // rounds repeat the second at other random moments (four in test:deep).
    for (let round = 0; round < sized(2, 4); round++) {
      const child = startFixture('sidecar-writer', [root, A]);
      const done = finished(child);
      child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
        for (const match of chunk.matchAll(/acked (\d+)/g)) acked = Math.max(acked, Number(match[1]));
      });
      await waitForLine(child, 'ready', 20_000);
      await new Promise((resolve) => setTimeout(resolve, 20 + Math.random() * 80));
      child.kill('SIGKILL');
      await done;
      const reader = fresh();
      const head = (await reader.getHeadSequence(A)) ?? 0;
      expect(head).toBeGreaterThanOrEqual(acked);
      const tags: string[] = [];
      for (let after = 0; after < head; after = tags.length) {
        const page = await reader.read(A, { after: after === 0 ? undefined : EventSequence(after), limit: 1000 });
        tags.push(...page.events.map(tagOf));
      }
      expect(tags).toEqual(Array.from({ length: head }, (_, k) => `k-${k}`));
      // Whatever sidecar the kill left, it is either trusted correctly or ignored.
      expect(existsSync(paths.validated)).toBe(true);
    }
  }, 120_000);
});
