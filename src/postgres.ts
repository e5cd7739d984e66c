/**
 * `agent-ledger/postgres`: the PostgreSQL store for Node fleets. Needs the `pg` package (an
 * optional peer dependency, loaded when a store opens). See docs/postgres.md.
 */
export * from './adapters/postgres/index.js';
