/**
 * Progress frames: every durability record created in a session goes to the session's WebSocket
 * subscribers as one text frame `{ "type": "durability", "record": ... }`, after its commit.
 *
 * Subscribers are the object's hibernatable sockets; a socket counts once its subscription was
 * accepted, which is when `sockets.ts` writes the session into its attachment (the
 * attachment survives hibernation). Sending never waits and never throws: a broken socket is
 * dropped by the event path, and a progress frame is best effort (the durability records have it).
 */
import type { SubscriberDurabilityMessage } from '../adapters/durable-object/durability-rpc.js';
import type { DurabilityRecord } from '../core/durability/record-contract.js';
import { subscriberSocketsOf } from './sockets.js';

/** Sends `record` to every subscribed socket of its session. */
export function broadcastDurability(ctx: DurableObjectState, record: DurabilityRecord): void {
  const sockets = subscriberSocketsOf(ctx);
  if (sockets !== undefined) {
    // Counted in each socket's flow-control window; skipped for sockets without room.
    sockets.broadcastBestEffort(record.sessionId, JSON.stringify({ type: 'durability', record } satisfies SubscriberDurabilityMessage));
    return;
  }
  let frame: string | undefined;
  for (const ws of ctx.getWebSockets()) {
    let attachment: unknown;
    try {
      attachment = ws.deserializeAttachment();
    } catch {
      continue;
    }
    if (typeof attachment !== 'object' || attachment === null) continue;
    if ((attachment as { sessionId?: unknown }).sessionId !== record.sessionId) continue;
    frame ??= JSON.stringify({ type: 'durability', record } satisfies SubscriberDurabilityMessage);
    try {
      ws.send(frame);
    } catch {
      // Best effort: see the module header.
    }
  }
}
