/**
 * Replay pacing (flow control: `src/edge/socket-pacing.ts`) of the session object's WebSocket
 * subscribers. The frames themselves are declared once, in `src/protocol/frames.ts`.
 */

/** Most events replayed per page when a subscriber connects. */
export const SUBSCRIBER_REPLAY_PAGE_SIZE = 1000;
