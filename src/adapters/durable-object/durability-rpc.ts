/**
 * The shapes the SessionObject's durability operations exchange (their rows are in
 * `src/core/operations/durability-rows.ts`), and the frame its subscribers receive for each
 * durability record. A tool call started over RPC runs INSIDE the session's object; its progress
 * is recorded in the session's durability records and pushed to WebSocket subscribers as
 * {@link SubscriberDurabilityMessage} frames.
 */
import type { DurabilityRecord } from '../../core/durability/record-contract.js';
import type { SubscriberDurabilityFrame } from '../../protocol/frames.js';

export type {
  RpcDurabilityReadOptions,
  RunDeliveryInput,
  RunDeliveryReceipt,
  RunState,
  StartToolCallInput,
  ToolCallAccepted,
  ToolCallState,
  ToolRunStatus,
} from '../../core/operations/durability-rows.js';

/**
 * The WebSocket frame a session's subscribers receive for every durability record created in the
 * session (steps, sleeps, waits, deliveries, run progress), once it committed: the `durability`
 * row of `src/protocol/frames.ts`, with the record typed. It carries no cursor (records have their
 * own `sequence`) and is not replayed on connect — read the durability records (`readDurability`) for history.
 */
export type SubscriberDurabilityMessage = SubscriberDurabilityFrame<DurabilityRecord>;
