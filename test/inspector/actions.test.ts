/**
 * The inspector app's routes in-process (`app.fetch`) over a real JSONL store: sign-in, scopes,
 * the action header, each action kind, event-list pages, and tail resumption with Last-Event-ID.
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JsonlDurableEventStore } from '../../src/adapters/node/jsonl/jsonl-store.js';
import { ALL_INSPECTOR_SCOPES, type InspectorScope } from '../../src/inspector/backend.js';
import { createInspectorApp, INSPECTOR_COOKIE } from '../../src/inspector/app.js';
import { loadInspection } from '../../src/inspector/model/inspection.js';
import { SessionId, WorkerId } from '../../src/protocol/ids.js';
import { STATUS_BY_CODE } from '../../src/app/http-errors.js';
import { seedForkable, seedLong, seedPermission } from '../cli/fixtures/seed.js';
import { tempDir } from '../cli/helpers.js';

const TOKENS: Record<string, ReadonlySet<InspectorScope>> = {
  'all-scopes-token-000000': ALL_INSPECTOR_SCOPES,
  'read-only-token-0000000': new Set<InspectorScope>(['read', 'subscribe']),
};

let store: JsonlDurableEventStore;
let app: ReturnType<typeof createInspectorApp>;

beforeAll(async () => {
  store = new JsonlDurableEventStore(path.join(tempDir('agent-ledger-actions-'), 'data'));
  await seedPermission(store, SessionId('perm'));
  await seedForkable(store, SessionId('forkable'));
  await seedLong(store, SessionId('long'), 30);
  await seedPermission(store, SessionId('leased'));
  await store.acquireExecutionLease(SessionId('leased'), { ownerId: WorkerId('some-agent'), leaseId: 'lease-1', ttlMs: 600_000 });
  app = createInspectorApp({ store: () => store, authorize: async (_env, token) => TOKENS[token] ?? null });
});

afterAll(async () => {
  await store.close();
});

function call(pathname: string, init: RequestInit & { token?: string } = {}): Promise<Response> {
  const headers = new Headers(init.headers);
  if (init.token !== undefined) headers.set('cookie', `${INSPECTOR_COOKIE}=${init.token}`);
  return Promise.resolve(app.fetch(new Request(`http://127.0.0.1${pathname}`, { ...init, headers })));
}

const GROUPS: Record<string, string> = { deliver: 'deliver', fork: 'fork' };

function action(session: string, body: { action: string; [key: string]: unknown }, token = 'all-scopes-token-000000', header = true): Promise<Response> {
  return call(`/v1/sessions/${session}/inspect/actions/${GROUPS[body.action] ?? 'recover'}`, {
    method: 'POST',
    token,
    headers: { 'content-type': 'application/json', ...(header ? { 'x-agent-ledger-inspector': '1' } : {}) },
    body: JSON.stringify(body),
  });
}

describe('inspector routes', () => {
  it('signs in with a form post and refuses a wrong token', async () => {
    const bad = await call('/v1/sessions/perm/inspect/login', { method: 'POST', body: new URLSearchParams({ token: 'nope' }) });
    expect(bad.status).toBe(401);
    expect(bad.headers.get('set-cookie')).toBeNull();
    const good = await call('/v1/sessions/perm/inspect/login', { method: 'POST', body: new URLSearchParams({ token: 'read-only-token-0000000' }) });
    expect(good.status).toBe(303);
    expect(good.headers.get('location')).toBe('/v1/sessions/perm/inspect');
    expect(good.headers.get('set-cookie')).toMatch(/^agent_ledger_inspector=read-only-token-0000000; Path=\/v1\/sessions\/perm\/inspect; HttpOnly; SameSite=Strict/);
    const readOnlyPage = await (await call('/v1/sessions/perm/inspect', { token: 'read-only-token-0000000' })).text();
    expect(readOnlyPage).toContain('needs a person');
    expect(readOnlyPage).not.toContain('data-action=');
  });

  it('requires the action header and the scope', async () => {
    const body = { action: 'resolve-permission', commandId: 'c-x', permissionRequestId: 'perm-deploy', decision: 'deny' };
    expect((await action('perm', body, 'all-scopes-token-000000', false)).status).toBe(403);
    expect((await action('perm', body, 'read-only-token-0000000')).status).toBe(403);
    expect((await action('perm', { action: 'explode' })).status).toBe(400);
    // An action posted under another scope's path is refused even with every scope.
    const misplaced = await call('/v1/sessions/perm/inspect/actions/deliver', {
      method: 'POST',
      token: 'all-scopes-token-000000',
      headers: { 'content-type': 'application/json', 'x-agent-ledger-inspector': '1' },
      body: JSON.stringify(body),
    });
    expect(misplaced.status).toBe(400);
    // A bearer token is not ambient: no action header needed, and the same scopes apply.
    const viaBearer = await call('/v1/sessions/perm/inspect/actions/recover', {
      method: 'POST',
      headers: { authorization: 'Bearer read-only-token-0000000', 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    expect(viaBearer.status).toBe(403);
    const anonymous = await call('/v1/sessions/perm/inspect/actions/recover', { method: 'POST', body: JSON.stringify(body) });
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get('www-authenticate')).toMatch(/^Bearer/);
    const missing = await action('perm', { ...body, permissionRequestId: 'perm-unknown' });
    expect(missing.status).toBe(404);
    expect(await missing.json()).toMatchObject({ code: 'DURABLE_RECOVERY_TARGET_NOT_FOUND' });
    expect((await loadInspection(store, SessionId('perm'))).headSequence).toBe(12);
  });

  it('delivers an awaited event once', async () => {
    const body = { action: 'deliver', runId: 'run-1', key: 'approval', deliveryId: 'd-1', payload: { ok: true } };
    expect(await (await action('perm', body)).json()).toMatchObject({ message: 'delivered approval to run-1' });
    expect(await (await action('perm', body)).json()).toMatchObject({ message: 'already delivered (same delivery ID)' });
    expect((await loadInspection(store, SessionId('perm'))).pendingWaits).toEqual([]);
  });

  it('answers a permission and reconciles the tool it started', async () => {
    const deny = await action('perm', { action: 'resolve-permission', commandId: 'c-deny', permissionRequestId: 'perm-deploy', decision: 'deny' });
    expect(await deny.json()).toMatchObject({ message: 'resolve-permission: committed' });
    const retry = await action('perm', { action: 'resolve-permission', commandId: 'c-deny', permissionRequestId: 'perm-deploy', decision: 'deny' });
    expect(await retry.json()).toMatchObject({ message: 'resolve-permission: reconciled' });
    const inspection = await loadInspection(store, SessionId('perm'));
    expect(inspection.recent.slice(-2).map((event) => event.type)).toEqual(['permission_resolved', 'tool_cancelled']);
    expect(inspection.classified?.items).toEqual([expect.objectContaining({ kind: 'turn', safety: 'safe_to_retry' })]);
  });

  it('refuses an action on a session under an execution lease with the status of DURABLE_EXECUTION_LEASE_REQUIRED everywhere (428)', async () => {
    const refused = await action('leased', { action: 'resolve-permission', commandId: 'c-leased', permissionRequestId: 'perm-deploy', decision: 'allow' });
    expect(STATUS_BY_CODE.DURABLE_EXECUTION_LEASE_REQUIRED).toBe(428);
    expect(refused.status).toBe(428);
    expect(await refused.json()).toMatchObject({ status: 428, code: 'DURABLE_EXECUTION_LEASE_REQUIRED' });
  });

  it('forks from the page', async () => {
    const response = await action('forkable', { action: 'fork', at: 9, newSessionId: 'forked-from-page' });
    const result = (await response.json()) as { fork: { appended: number; rerun: { tools: unknown[] } } };
    expect(result.fork.appended).toBe(9);
    expect(result.fork.rerun.tools).toHaveLength(2);
    expect((await action('forkable', { action: 'fork', at: 9, newSessionId: 'forked-2' }, 'read-only-token-0000000')).status).toBe(403);
  });

  it('pages the event list and resumes the tail after a Last-Event-ID', async () => {
    const latest = await (await call('/v1/sessions/long/inspect', { token: 'read-only-token-0000000' })).text();
    expect(latest).toContain('Events 142–241 of 241');
    const first = await (await call('/v1/sessions/long/inspect?from=1', { token: 'read-only-token-0000000' })).text();
    expect(first).toContain('Events 1–100 of 241');
    expect(first).toContain('href="/v1/sessions/long/inspect?from=101"');
    const inspection = await loadInspection(store, SessionId('long'));
    const cursor = inspection.headCursor ?? '';
    const controller = new AbortController();
    const tail = await call('/v1/sessions/long/inspect/tail', { token: 'read-only-token-0000000', headers: { 'last-event-id': cursor }, signal: controller.signal });
    expect(tail.status).toBe(200);
    const reader = tail.body?.getReader();
    await store.append(SessionId('long'), [{ type: 'session_closed', data: { reason: 'completed' } }]);
    let text = '';
    while (!text.includes('event: closed')) {
      const chunk = await reader?.read();
      if (chunk === undefined || chunk.done) break;
      text += new TextDecoder().decode(chunk.value);
    }
    expect(text).toContain('"sequence":242');
    expect(text).not.toContain('"sequence":241');
    expect(text).toContain('event: closed');
    controller.abort();
    const foreign = await call('/v1/sessions/perm/inspect/tail', { token: 'read-only-token-0000000', headers: { 'last-event-id': cursor } });
    expect(foreign.status).toBe(400);
  });
});
