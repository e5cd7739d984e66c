/**
 * Types of the store conformance harness.
 *
 * A backend author hands {@link runStoreConformance} a factory and a few test controls
 * ({@link StoreConformanceOptions}); the runner turns the controls into a
 * {@link ConformanceContext} and passes it to each {@link ConformanceCheck}. A check is a named
 * async function that throws a plain `Error` when the store breaks the contract. Checks declare
 * what they need (`requires`); the runner skips, and reports, a check whose needs the store or
 * the options cannot meet.
 */
import type { DurableEventStore } from '../core/store.js';
import type { DurableEventEnvelope } from '../protocol/events.js';
import type { EventSequence, SessionId } from '../protocol/ids.js';

/**
 * A capability a check depends on:
 * - `restart`: the `restart` option is given (a durable backend);
 * - `failNextCommit`: the `failNextCommit` option is given;
 * - `lease`: the store implements `DurableExecutionLeaseStore`;
 * - `watch`: the store has a `watch` method;
 * - `checkpoint`: the store implements `DurableCheckpointStore` (projection checkpoints).
 */
export type ConformanceRequirement = 'restart' | 'failNextCommit' | 'lease' | 'watch' | 'checkpoint';

/** Options of {@link runStoreConformance}. */
export interface StoreConformanceOptions<S extends DurableEventStore> {
  /** Returns a store. It may return the same object every time: every check uses fresh session IDs. */
  createStore: () => S | Promise<S>;
  /**
   * Reopens the same durable namespace and returns a NEW store object that sees everything
   * committed through `store`. Giving it declares the backend durable (mode `'durable'`).
   */
  restart?(store: S): S | Promise<S>;
  /** Makes the NEXT commit on `store` fail before it is acknowledged, with nothing written. */
  failNextCommit?(store: S): void | Promise<void>;
  /** Prefix of every session ID the run creates (default: `conformance-<random>`). */
  sessionPrefix?: string;
  /** Checks not to run, each group with its reason. Skipped checks appear in the result. */
  skip?: Array<{ reason: string; checks: string[] }>;
  /**
   * TTL, in milliseconds, of the short leases the expiry checks let lapse. Without
   * `advanceClock` those checks sleep real time a little longer than this. Default 60 ms.
   */
  leaseTtlMs?: number;
  /**
   * TTL, in milliseconds, of the lease handles the lease-handle checks hold (they heartbeat every
   * eighth of it). Default 2 000. A store whose round trips can take a sizeable part of a second
   * (a remote store, a busy machine) takes a longer one; without `advanceClock` the checks then
   * sleep real time in proportion.
   */
  leaseHandleTtlMs?: number;
  /**
   * Moves the store's lease clock forward by `ms` (stores built with a controllable clock).
   * When given, expiry checks call it instead of sleeping.
   */
  advanceClock?(store: S, ms: number): void | Promise<void>;
  /** Reads the store's clock, in epoch milliseconds (default `Date.now`). Used to bound `recordedAt`. */
  now?: () => number;
  /** Upper bound of one check, in milliseconds, so a hung store fails instead of hanging (default 20 000). */
  checkTimeoutMs?: number;
  /** More checks to run after the built-in ones (journal, subscription, lease, durability suites). */
  extraChecks?: ConformanceCheck<S>[];
}

/** One named contract check. */
export interface ConformanceCheck<S extends DurableEventStore = DurableEventStore> {
  /** Unique, kebab-case name; it appears in results, skips and failure messages. */
  name: string;
  /** Capabilities the check needs; without them it is skipped and reported. */
  requires?: ConformanceRequirement[];
  /** Throws (any Error) when the store breaks the contract. */
  run(ctx: ConformanceContext<S>): Promise<void>;
}

/** What the runner hands to each check. */
export interface ConformanceContext<S extends DurableEventStore = DurableEventStore> {
  /** The store under test. After {@link ConformanceContext.restart} it is the reopened store. */
  readonly store: S;
  /** The options the run was started with. */
  readonly options: StoreConformanceOptions<S>;
  /** Name of the running check. */
  readonly checkName: string;
  /** A session ID no other check (and no earlier call) uses. */
  newSessionId(): SessionId;
  /** Reopens the store (requires `restart`); `ctx.store` becomes the returned store. */
  restart(): Promise<S>;
  /** Arms a failure of the next commit (requires `failNextCommit`). */
  failNextCommit(): Promise<void>;
  /** The store's clock in epoch milliseconds. */
  now(): number;
  /** TTL of the short leases expiry checks use. */
  readonly shortLeaseTtlMs: number;
  /** Lets `ms` of lease time pass: advances the store clock when possible, else sleeps. */
  elapse(ms: number): Promise<void>;
  /** Reads a whole session (every page) and returns its events. */
  readAll(sessionId: SessionId): Promise<DurableEventEnvelope[]>;
  /** Asserts that the session's head is `expected`, through both `getHeadSequence` and `read`. */
  expectHead(sessionId: SessionId, expected: EventSequence | number | null, what?: string): Promise<void>;
}

/** Outcome of a successful run. */
export interface StoreConformanceResult {
  /** `'durable'` when a `restart` control was given, else `'ephemeral'`. */
  mode: 'durable' | 'ephemeral';
  /** Names of the checks that ran and passed, in order. */
  checks: string[];
  /** Checks that did not run, each with its reason. */
  skipped: Array<{ check: string; reason: string }>;
}

/** One failed check, as {@link StoreConformanceError} lists it. */
export interface ConformanceFailure {
  check: string;
  error: unknown;
}
