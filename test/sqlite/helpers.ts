/** Shared helpers of the SQLite tests: temporary database files and whole-log reads. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DurableEventStore } from '../../src/core/store.js';
import type { DurableEventEnvelope } from '../../src/protocol/events.js';
import type { EventSequence, SessionId } from '../../src/protocol/ids.js';

/** A fresh directory under the OS temp dir; `cleanup` removes it. */
export function tempDir(prefix = 'agent-ledger-sqlite-'): { dir: string; file: (name: string) => string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, file: (name) => join(dir, name), cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Every event of a session, page by page. */
export async function readAll(store: DurableEventStore, sessionId: SessionId): Promise<DurableEventEnvelope[]> {
  const events: DurableEventEnvelope[] = [];
  let after: EventSequence | undefined;
  for (;;) {
    const page = await store.read(sessionId, { after, limit: 1000 });
    events.push(...page.events);
    if (!page.hasMore) return events;
    after = page.nextCursor ?? undefined;
  }
}
