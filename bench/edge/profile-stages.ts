/**
 * The stages of the append breakdown (`profile-object.ts`), shared by the bench Worker and the
 * Node driver: for each, what it adds and which stage it is compared with.
 */

/** The stages, in pipeline order; each is a ProfileObject RPC method. */
export const PROFILE_STAGES = [
  'noop',
  'validate',
  'plan',
  'stringify',
  'reads',
  'insert',
  'insertNoUnique',
  'ledger',
  'ledgerResult',
] as const;

/** One stage of {@link PROFILE_STAGES}. */
export type ProfileStage = (typeof PROFILE_STAGES)[number];

/** How each stage is printed, and the stage its increment is measured against. */
export const PROFILE_STAGE_INFO: Record<ProfileStage, { label: string; base: ProfileStage | null }> = {
  noop: { label: 'RPC call, drafts cloned in', base: null },
  validate: { label: '+ validateDraftBatch (zod)', base: 'noop' },
  plan: { label: '+ planAppend (envelopes, ids, size check)', base: 'validate' },
  stringify: { label: '+ JSON.stringify per row', base: 'plan' },
  reads: { label: '  the head and lease SELECTs alone (on top of stringify)', base: 'stringify' },
  insert: { label: '+ INSERTs into a copy of `events`, one transactionSync', base: 'stringify' },
  insertNoUnique: { label: '  what-if: the same without UNIQUE(event_id)', base: 'stringify' },
  ledger: { label: 'SqlLedger.append, count returned (all in-object work)', base: 'noop' },
  ledgerResult: { label: '+ DurableAppendResult cloned back', base: 'ledger' },
};
