/**
 * Session identity on disk: the lease file names its session, so two session IDs whose file names
 * coincide (as base64url names differing only in case do on a case-insensitive filesystem) fail
 * closed instead of sharing a lease, its fences and a log; and a complete line that starts with a
 * byte-order mark is refused the same way by the append path and the read path.
 *
 * Linux filesystems here are case-sensitive, so the coincidence is reproduced with hard links: the
 * second session's names point at the first session's files, which is what a case-folding
 * filesystem shows the second session.
 */
import { appendFileSync, linkSync, readFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { JsonlDurableEventStore } from '../../src/advanced.js';
import { sessionFileStem } from '../../src/adapters/node/jsonl/session-paths.js';
import { SessionId, WorkerId } from '../../src/protocol/ids.js';
import { tagDraft, tempRoot } from './helpers.js';

const { root, cleanup } = tempRoot();
afterAll(cleanup);

async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    return String((error as { code?: unknown }).code);
  }
  return 'resolved';
}

/** Makes `b`'s file names point at `a`'s files (only those that exist). */
function foldOnto(store: JsonlDurableEventStore, a: SessionId, b: SessionId, suffixes: Array<'log' | 'lock' | 'lease'>): void {
  const from = store.pathsOf(a);
  const to = store.pathsOf(b);
  for (const key of suffixes) linkSync(from[key], to[key]);
}

describe('session IDs whose file names coincide', () => {
  const a = SessionId('session-aaa');
  const b = SessionId('session-Gaa');

  it('are distinct IDs whose base64url names differ only in case', () => {
    expect(sessionFileStem(a)).not.toBe(sessionFileStem(b));
    expect(sessionFileStem(a).toLowerCase()).toBe(sessionFileStem(b).toLowerCase());
  });

  it('the lease file records its session ID', async () => {
    const store = new JsonlDurableEventStore(root);
    const id = SessionId('records-its-id');
    await store.acquireExecutionLease(id, { ownerId: WorkerId('w'), leaseId: 'l', ttlMs: 60_000 });
    const lease = JSON.parse(readFileSync(store.pathsOf(id).lease, 'utf8')) as Record<string, unknown>;
    expect(lease).toMatchObject({ version: 2, sessionId: 'records-its-id' });
  });

  it('a lease held by one is neither visible to nor usable by the other (fail closed)', async () => {
    const writer = new JsonlDurableEventStore(root);
    const x = SessionId('lease-only-aaa');
    const y = SessionId('lease-only-Gaa');
    const lease = await writer.acquireExecutionLease(x, { ownerId: WorkerId('owner-x'), leaseId: 'lease-x', ttlMs: 60_000 });
    foldOnto(writer, x, y, ['lock', 'lease']);
    const other = new JsonlDurableEventStore(root);
    const fence = { leaseId: lease.leaseId, ownerId: lease.ownerId, fencingToken: lease.fencingToken };
    expect(await codeOf(other.inspectExecutionLease(y))).toBe('DURABLE_EVENT_CORRUPT_LOG');
    expect(await codeOf(other.requiresExecutionLease(y))).toBe('DURABLE_EVENT_CORRUPT_LOG');
    expect(await codeOf(other.assertExecutionLease(y, fence))).toBe('DURABLE_EVENT_CORRUPT_LOG');
    // A fence issued for x must not authorize an append to y.
    expect(await codeOf(other.append(y, [tagDraft('stolen')], { executionFence: fence }))).toBe('DURABLE_EVENT_CORRUPT_LOG');
    expect(await codeOf(other.releaseExecutionLease(y, fence, {}))).toBe('DURABLE_EVENT_CORRUPT_LOG');
    expect(
      await codeOf(other.acquireExecutionLease(y, { ownerId: WorkerId('owner-y'), leaseId: 'lease-y', ttlMs: 60_000 })),
    ).toBe('DURABLE_EVENT_CORRUPT_LOG');
    // x is untouched: still held by its owner, nothing was appended.
    expect((await writer.inspectExecutionLease(x))?.leaseId).toBe('lease-x');
    expect(await writer.getHeadSequence(x)).toBeNull();
  });

  it('a log written by one fails closed for the other, lease calls included', async () => {
    const writer = new JsonlDurableEventStore(root);
    await writer.append(a, [tagDraft('a1')]);
    foldOnto(writer, a, b, ['lock', 'log']);
    const other = new JsonlDurableEventStore(root);
    expect(await codeOf(other.read(b))).toBe('DURABLE_EVENT_CORRUPT_LOG');
    expect(await codeOf(other.append(b, [tagDraft('b1')]))).toBe('DURABLE_EVENT_CORRUPT_LOG');
    expect(
      await codeOf(other.acquireExecutionLease(b, { ownerId: WorkerId('owner-b'), leaseId: 'lease-b', ttlMs: 60_000 })),
    ).toBe('DURABLE_EVENT_CORRUPT_LOG');
    // Nothing of b reached a's files.
    const fresh = new JsonlDurableEventStore(root);
    expect((await fresh.read(a)).events.map((event) => event.sessionId)).toEqual(['session-aaa']);
    expect(await fresh.inspectExecutionLease(a)).toBeNull();
  });
});

describe('a complete line with a byte-order mark', () => {
  it('is refused by the append path as by the read path', async () => {
    const first = new JsonlDurableEventStore(root);
    const sessionId = SessionId('bom-session');
    const { events } = await first.append(sessionId, [tagDraft('one')]);
    const copy = { ...events[0], sequence: 2, eventId: `${events[0]?.eventId ?? ''}-bom` };
    appendFileSync(first.pathsOf(sessionId).log, `\uFEFF${JSON.stringify([copy])}\n`);
    const writer = new JsonlDurableEventStore(root);
    expect(await codeOf(writer.append(sessionId, [tagDraft('two')]))).toBe('DURABLE_EVENT_CORRUPT_LOG');
    const reader = new JsonlDurableEventStore(root);
    expect(await codeOf(reader.read(sessionId))).toBe('DURABLE_EVENT_CORRUPT_LOG');
    expect(await codeOf(reader.getHeadSequence(sessionId))).toBe('DURABLE_EVENT_CORRUPT_LOG');
  });
});
