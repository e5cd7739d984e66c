/**
 * The stages of the append breakdown (`profile-object.ts`), shared by the bench Worker and the
 * Node driver: for each, what it adds, which stage it is compared with, and what it is sent
 * (`json`: the drafts as JSON text, as every caller sends them to the one append RPC, `appendJson`;
 * `drafts`: the drafts as objects, the what-if of an RPC taking objects and answering the whole result).
 */

/** The stages, in pipeline order; each is a ProfileObject RPC method. */
export const PROFILE_STAGES = [
  'noop',
  'parse',
  'plan',
  'insert',
  'ledger',
  'ledgerReceipt',
  'noopDrafts',
  'validateDrafts',
  'validateDraftsZod',
  'ledgerDraftsResult',
] as const;

/** One stage of {@link PROFILE_STAGES}. */
export type ProfileStage = (typeof PROFILE_STAGES)[number];

/** How each stage is printed, the stage its increment is measured against, and its input. */
export const PROFILE_STAGE_INFO: Record<ProfileStage, { label: string; base: ProfileStage | null; input: 'json' | 'drafts' }> = {
  noop: { label: 'RPC call, drafts JSON text in', base: null, input: 'json' },
  parse: { label: '+ parseDraftBatchJson (JSON.parse, fast-path validation)', base: 'noop', input: 'json' },
  plan: { label: '+ planAppend (envelopes, ids, encodings, size check)', base: 'parse', input: 'json' },
  insert: { label: '+ rows inserted (multi-row INSERTs), one transactionSync', base: 'plan', input: 'json' },
  ledger: { label: 'SqlEventLog.appendJson, count returned (all in-object work)', base: 'noop', input: 'json' },
  ledgerReceipt: { label: '+ compact receipt cloned back (= appendJson RPC)', base: 'ledger', input: 'json' },
  noopDrafts: { label: 'what-if: RPC call, drafts as objects in', base: null, input: 'drafts' },
  validateDrafts: { label: '  + validateDraftBatch (objects: descriptor walk)', base: 'noopDrafts', input: 'drafts' },
  validateDraftsZod: { label: '  + validateDraftBatchStrict (zod) instead', base: 'noopDrafts', input: 'drafts' },
  ledgerDraftsResult: { label: '  SqlEventLog.append, whole result back (objects-in RPC)', base: 'noopDrafts', input: 'drafts' },
};
