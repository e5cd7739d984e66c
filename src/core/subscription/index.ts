/** Reconnectable event subscriptions. */
export { DurableEventSubscription } from './subscription.js';
export {
  DEFAULT_POLL_INTERVAL_MS,
  MAX_POLL_INTERVAL_MS,
  type DurableEventSubscriptionOptions,
  type DurableSubscriptionCaughtUpMessage,
  type DurableSubscriptionEventMessage,
  type DurableSubscriptionMessage,
} from './subscription-options.js';
