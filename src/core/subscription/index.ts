/** Reconnectable event subscriptions. */
export { DurableEventSubscription } from './subscription.js';
export {
  type DurableEventSubscriptionOptions,
  type DurableSubscriptionCaughtUpMessage,
  type DurableSubscriptionEventMessage,
  type DurableSubscriptionMessage,
} from './subscription-options.js';
