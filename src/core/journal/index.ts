/** The command journal. */
export { DurableSessionJournal } from './journal.js';
export {
  type DurableCommandEventDraft,
  type DurableCommitResult,
  type DurableCommitStatus,
  type DurableJournalCallOptions,
  type DurableJournalCommand,
  type DurableJournalExecutionLease,
  type DurableSessionJournalOptions,
} from './journal-options.js';
