/** The command journal. */
export { DurableSessionJournal } from './journal.js';
export {
  DEFAULT_MAX_CONFLICT_RETRIES,
  MAX_CONFLICT_RETRIES,
  type DurableCommandEventDraft,
  type DurableCommitResult,
  type DurableCommitStatus,
  type DurableJournalCallOptions,
  type DurableJournalCommand,
  type DurableJournalExecutionLease,
  type DurableSessionJournalOptions,
} from './journal-options.js';
