/**
 * `JsonlDurableEventStore` with `readOnly: true` on real files: reads serve the complete lines
 * and leave a torn tail in place, nothing is created (no directory, lock sidecar or
 * validated-state sidecar), and every write is refused with `DURABLE_EVENT_UNAVAILABLE`.
 */
import { appendFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { JsonlDurableEventStore } from '../../src/adapters/node/jsonl/jsonl-store.js';
import { SessionId } from '../../src/protocol/ids.js';

const sessionId = SessionId('read-only');

describe('JsonlDurableEventStore readOnly', () => {
  it('reads without writing a byte, and refuses writes', async () => {
    const root = mkdtempSync(path.join(tmpdir(), 'agent-ledger-jsonl-ro-'));
    const writer = new JsonlDurableEventStore(root);
    await writer.append(sessionId, [{ type: 'session_created', data: { source: 'create' } }], { expectedLastSequence: null });
    await writer.recordDurability(sessionId, { kind: 'step', scope: 'run', key: 'one', result: 1 });
    await writer.close();
    const files = writer.pathsOf(sessionId);
    rmSync(files.lock);
    appendFileSync(files.log, '[{"torn');
    const log = readFileSync(files.log);

    const reader = new JsonlDurableEventStore(root, { readOnly: true });
    expect(reader.readOnly).toBe(true);
    const page = await reader.read(sessionId);
    expect(page.events.map((event) => event.sequence)).toEqual([1]);
    expect(await reader.getHeadSequence(sessionId)).toBe(1);
    expect((await reader.readDurability(sessionId)).records).toHaveLength(1);
    expect(await reader.inspectExecutionLease(sessionId)).toBeNull();
    for (const write of [
      () => reader.append(sessionId, [{ type: 'session_closed', data: { reason: 'completed' } }]),
      () => reader.recordDurability(sessionId, { kind: 'step', scope: 'run', key: 'two', result: 2 }),
      () => reader.acquireExecutionLease(sessionId, { ownerId: 'o', leaseId: 'l', ttlMs: 1000 } as never),
      () => reader.writeCheckpoint(sessionId, { sequence: 1, eventId: page.events[0]?.eventId, data: new Uint8Array(8) } as never),
    ]) {
      await expect(write()).rejects.toMatchObject({ code: 'DURABLE_EVENT_UNAVAILABLE', details: { readOnly: true } });
    }
    await reader.close();
    expect(readFileSync(files.log).equals(log)).toBe(true);
    expect(existsSync(files.lock)).toBe(false);
    expect(existsSync(files.validated)).toBe(false);
    expect(existsSync(files.lease)).toBe(false);

    // A store directory that does not exist reads as empty and is not created.
    const missing = path.join(root, 'missing');
    const empty = new JsonlDurableEventStore(missing, { readOnly: true });
    expect((await empty.read(sessionId)).events).toEqual([]);
    expect(existsSync(missing)).toBe(false);
    expect(() => new JsonlDurableEventStore(root, { readOnly: 'yes' as never })).toThrow(/readOnly must be a boolean/);
  });
});
