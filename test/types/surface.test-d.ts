/**
 * Type-level tests of the public surface: recovery operations type their inputs and results from
 * the one table and the coordinator, the object's RPC client and the HTTP client return plain
 * values, subscription frames narrow by type, HTTP paths demand their parameters, and store
 * internals are not on the root entry (they live in `agent-ledger/store-kit`).
 */
import { describe, expectTypeOf, it } from 'vitest';
import type { SessionObjectClient } from '../../src/adapters/durable-object/session-client.js';
import { httpPath, HTTP_PATHS, parseSubscriptionFrame, type HttpDurableEventStore, type SubscriptionFrame } from '../../src/client.js';
import type {
  DurableCommitResult,
  DurableEventEnvelope,
  DurableRecoveryCommandResult,
  DurableResumeDecision,
  DurableStartToolAttemptResult,
  DurableTurnRecoveryResult,
  RecoveryMutation,
  RecoveryOperation,
  ResolvePermissionInput,
} from '../../src/index.js';
import { planAppend } from '../../src/store-kit.js';

describe('recovery operations', () => {
  it('are the coordinator methods, read-only planResume excluded from mutations', () => {
    expectTypeOf<RecoveryOperation>().toEqualTypeOf<
      | 'reconcileToolOutcome'
      | 'reconcileModelOutcome'
      | 'resolvePermission'
      | 'startToolAttempt'
      | 'prepareRequestRecovery'
      | 'prepareTurnRecovery'
      | 'reconcileRequestOutcome'
      | 'planResume'
    >();
    expectTypeOf<RecoveryMutation>().toEqualTypeOf<Exclude<RecoveryOperation, 'planResume'>>();
  });

  it('type each call of the object client from the coordinator', () => {
    const _client = {} as SessionObjectClient;
    expectTypeOf<Parameters<typeof _client.recover<'resolvePermission'>>[1]>().toEqualTypeOf<ResolvePermissionInput>();
    expectTypeOf<ReturnType<typeof _client.recover<'resolvePermission'>>>().toEqualTypeOf<Promise<DurableRecoveryCommandResult>>();
    expectTypeOf<ReturnType<typeof _client.recover<'startToolAttempt'>>>().toEqualTypeOf<Promise<DurableStartToolAttemptResult>>();
    expectTypeOf<ReturnType<typeof _client.recover<'prepareTurnRecovery'>>>().toEqualTypeOf<Promise<DurableTurnRecoveryResult>>();
    expectTypeOf<Awaited<ReturnType<typeof _client.recover<'planResume'>>>>().toMatchTypeOf<DurableResumeDecision>();
  });

  it('give the object client plain results, not envelopes', () => {
    expectTypeOf<ReturnType<SessionObjectClient['commit']>>().toEqualTypeOf<Promise<DurableCommitResult>>();
    expectTypeOf<Awaited<ReturnType<SessionObjectClient['read']>>['events']>().toEqualTypeOf<DurableEventEnvelope[]>();
    // The sessionId is bound: append takes the drafts first.
    expectTypeOf<Parameters<SessionObjectClient['append']>[0]>().not.toBeString();
  });

  it('type the HTTP client the same way', () => {
    const _http = {} as HttpDurableEventStore;
    expectTypeOf<ReturnType<typeof _http.recover<'startToolAttempt'>>>().toEqualTypeOf<Promise<DurableStartToolAttemptResult>>();
  });
});

describe('subscription frames', () => {
  it('narrow by type', () => {
    const frame = parseSubscriptionFrame('{"type":"caught_up","headSequence":null}');
    expectTypeOf(frame).toEqualTypeOf<SubscriptionFrame | undefined>();
    if (frame?.type === 'event') expectTypeOf(frame.cursor).toBeString();
    if (frame?.type === 'durability') expectTypeOf(frame.record.sequence).toBeNumber();
  });
});

describe('HTTP paths', () => {
  it('demand every placeholder', () => {
    expectTypeOf(httpPath(HTTP_PATHS.run, { sessionId: 's', runId: 'r' })).toBeString();
    // @ts-expect-error runId is missing
    httpPath(HTTP_PATHS.run, { sessionId: 's' });
  });
});

describe('the root entry', () => {
  it('leaves the log engine to store-kit', async () => {
    expectTypeOf(planAppend).toBeFunction();
    const root = await import('../../src/index.js');
    // @ts-expect-error planAppend is not a root export
    expectTypeOf(root.planAppend).toBeFunction();
    // @ts-expect-error zod schemas are not root exports
    expectTypeOf(root.sessionIdSchema).toBeObject();
  });
});
