/**
 * Sizes of the heavier test variants.
 *
 * `npm test` runs every test at a size meant for a run of the whole suite; `npm run test:deep`
 * (scripts/test-deep.mjs, also run by `.ci/run`) runs the files that import this module again
 * with `AGENT_LEDGER_DEEP=1`: more property runs, more kill rounds, longer soaks. A heavier variant
 * that is a test of its own (larger records, another restart scenario) goes in a `*.deep.test.ts`
 * file beside the quick one: `npm test` leaves those files out, `test:deep` runs them.
 *
 * @example
 * fc.assert(property, { numRuns: sized(50, 200) });
 */

/** True in `npm run test:deep`. */
export const DEEP = process.env['AGENT_LEDGER_DEEP'] === '1';

/** `quick` in a normal run, `deep` in `npm run test:deep`. */
export function sized(quick: number, deep: number): number {
  return DEEP ? deep : quick;
}
