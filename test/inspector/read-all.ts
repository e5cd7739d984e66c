/** Test helper: every event of a session, read page by page. */
import type { DurableEventStore } from '../../src/core/store.js';
import type { DurableEventEnvelope } from '../../src/protocol/events.js';
import type { SessionId } from '../../src/protocol/ids.js';

export async function everyEvent(store: DurableEventStore, sessionId: SessionId): Promise<DurableEventEnvelope[]> {
  const events: DurableEventEnvelope[] = [];
  for (;;) {
    const last = events[events.length - 1];
    const page = await store.read(sessionId, { ...(last === undefined ? {} : { after: last.sequence }), limit: 1000 });
    events.push(...page.events);
    if (!page.hasMore) return events;
  }
}
