/**
 * Projection checkpoints: the optional store capability, the journal's write policy, what an open
 * reports, and the error a checkpoint-restored projector throws when only the full log can
 * decide. See `docs/checkpoints.md`.
 */
export {
  CHECKPOINT_SLICE_BYTES,
  checkCheckpointExtension,
  checkCheckpointRecord,
  checkpointExtensionOf,
  extendsStoredRecord,
  isCheckpointStore,
  MAX_CHECKPOINT_BYTES,
  readCheckpointSlices,
  sliceCheckpointRecord,
  type DurableCheckpointExtension,
  type DurableCheckpointRecord,
  type DurableCheckpointSlice,
  type DurableCheckpointStore,
} from './contract.js';
export {
  DEFAULT_CHECKPOINT_EVERY_EVENTS,
  DEFAULT_CHECKPOINT_SPACING_DIVISOR,
  type DurableCheckpointPolicy,
  type DurableCheckpointWriteInfo,
} from './policy.js';
export type { DurableCheckpointOutcome } from './load.js';
export {
  eventDigest,
  isEventDigestStore,
  type DurableEventDigestReadOptions,
  type DurableEventDigestRow,
  type DurableEventDigestStore,
} from './event-digest.js';
export { DurableCheckpointInconclusiveError, isCheckpointInconclusive } from '../projector/key-filter.js';
export {
  projectDurableSession,
  type ProjectDurableSessionOptions,
  type ProjectedDurableSession,
} from './project-session.js';
