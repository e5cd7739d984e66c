/**
 * The inspector at the edge: the real Worker (wrangler's local runtime, workerd) serves
 * `/v1/sessions/{sessionId}/inspect` for a session that `agent-ledger copy` put there over HTTP.
 *
 * Covers: the CLI copying a JSONL session to the edge (and resuming as a no-op), `plan`,
 * `checkpoint --rebuild` and `verify` (its checkpoint audit) over HTTP, `inspect` over HTTP, the page's
 * checkpoint line (audited by its fold), the sign-in cookie (HttpOnly, SameSite=Strict, scoped to the page), scopes (a read-only
 * session token sees the page but cannot act; another session's token cannot sign in), the CSP,
 * the live tail over SSE, an action answered by the session object, and a session of more than
 * 50,000 events opened from its checkpoint (the whole log on `?full=1`).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalWorker, type LocalWorker } from '../http/local-worker.js';
import { runCliInProcess, seed, tempDir } from '../cli/helpers.js';
import { cycleDrafts } from '../checkpoint/lifecycle-log.js';
import { HttpDurableEventStore } from '../../src/client.js';
import { DurableSessionJournal } from '../../src/core/journal/index.js';
import type { DurableEventDraft } from '../../src/protocol/events.js';
import { SessionId } from '../../src/protocol/ids.js';

const SESSION = 'edge-inspect';

/**
 * Appends lifecycle cycles `first..first+cycles-1` (test/checkpoint/lifecycle-log.ts, five events
 * each, after `session_created` on an empty session) with their request texts cut to the cycle's
 * number: the page's limit counts events, not bytes, so ~0.1 KB events prove it as well as the
 * ~0.5 KB ones and cost a fifth to append, read back and fold. Returns the new head.
 */
async function appendShortCycles(store: HttpDurableEventStore, sessionId: SessionId, first: number, cycles: number): Promise<number> {
  let head = (await store.getHeadSequence(sessionId)) ?? 0;
  if (head === 0) head = (await store.append(sessionId, [{ type: 'session_created', data: { source: 'create' } }], { expectedLastSequence: null })).lastSequence;
  // 200 cycles: the 1,000 events an append may hold.
  for (let start = first; start < first + cycles; start += 200) {
    const drafts: DurableEventDraft[] = [];
    for (let index = start; index < Math.min(start + 200, first + cycles); index++) {
      for (const draft of cycleDrafts(index)) {
        if (draft.type === 'request_accepted') drafts.push({ ...draft, data: { ...draft.data, input: `#${index}` } });
        else if (draft.type === 'request_completed') drafts.push({ ...draft, data: { ...draft.data, output: `#${index}` } });
        else drafts.push(draft);
      }
    }
    head = (await store.append(sessionId, drafts)).lastSequence;
  }
  return head;
}

describe('Worker inspect route', () => {
  let worker: LocalWorker;
  let dir: string;

  beforeAll(async () => {
    dir = tempDir('agent-ledger-edge-inspect-');
    await seed(`jsonl:${dir}`, 'permission', SESSION);
    worker = await startLocalWorker();
  }, 120_000);

  afterAll(async () => {
    await worker?.stop();
  });

  async function signIn(token: string): Promise<{ status: number; cookie: string | null; setCookie: string }> {
    const response = await fetch(worker.href(`/v1/sessions/${SESSION}/inspect/login`), {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token }),
      redirect: 'manual',
    });
    await response.body?.cancel();
    const setCookie = response.headers.get('set-cookie') ?? '';
    return { status: response.status, cookie: setCookie === '' ? null : (setCookie.split(';')[0] ?? null), setCookie };
  }

  it('copies a session to the edge with the CLI, resumably, and inspects it over HTTP', async () => {
    const env = { AGENT_LEDGER_TOKEN: worker.adminToken };
    const first = await runCliInProcess(['copy', `jsonl:${dir}`, worker.url.href, '--session', SESSION, '--json'], env);
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    const report = JSON.parse(first.stdout) as { sessions: { appendedEvents: number; verifiedEvents: number; durability: unknown }[] };
    expect(report.sessions[0]).toMatchObject({ appendedEvents: 12, verifiedEvents: 0 });
    const again = await runCliInProcess(['copy', `jsonl:${dir}`, worker.url.href, '--session', SESSION, '--json'], env);
    expect(JSON.parse(again.stdout)).toMatchObject({ sessions: [{ appendedEvents: 0, verifiedEvents: 12 }] });
    const plan = await runCliInProcess(['plan', worker.url.href, SESSION, '--json'], env);
    expect(plan.code).toBe(0);
    expect(JSON.parse(plan.stdout)).toMatchObject({ action: 'resolve_permissions', items: [{ kind: 'permission', safety: 'needs_person' }] });
    // The checkpoint commands over HTTP: rebuild one in the session object, then audit it.
    const rebuilt = await runCliInProcess(['checkpoint', worker.url.href, SESSION, '--rebuild', '--json'], env);
    expect(rebuilt.stderr).toBe('');
    expect(JSON.parse(rebuilt.stdout)).toMatchObject({ head: 12, rebuilt: { sequence: 12 } });
    const audited = await runCliInProcess(['verify', worker.url.href, SESSION, '--json'], env);
    expect(audited.code).toBe(0);
    expect(JSON.parse(audited.stdout)).toMatchObject({ ok: true, sessions: [{ events: 12, checkpoint: { sequence: 12, status: 'matches' } }] });
    const noToken = await runCliInProcess(['inspect', worker.url.href, SESSION], { AGENT_LEDGER_TOKEN: '' });
    expect(noToken.code).toBe(1);
    expect(noToken.stderr.trim().split('\n')).toHaveLength(1);
    expect(noToken.stderr).toContain('AGENT_LEDGER_TOKEN');
  }, 120_000);

  it('serves the sign-in form, then the page under a strict CSP with a scoped HttpOnly cookie', async () => {
    const anonymous = await fetch(worker.href(`/v1/sessions/${SESSION}/inspect`), { headers: { accept: 'text/html' } });
    expect(anonymous.status).toBe(401);
    expect(await anonymous.text()).toContain('name="token"');
    const api = await fetch(worker.href(`/v1/sessions/${SESSION}/inspect`));
    expect(api.status).toBe(401);
    expect(api.headers.get('content-type')).toMatch(/problem\+json/);
    await api.body?.cancel();
    const foreign = await signIn(await worker.mintToken('another-session', ['read']));
    expect(foreign.status).toBe(403);
    expect(foreign.cookie).toBeNull();

    const token = await worker.mintToken(SESSION, ['read', 'subscribe', 'recover']);
    const signed = await signIn(token);
    expect(signed.status).toBe(303);
    expect(signed.setCookie).toMatch(/HttpOnly/i);
    expect(signed.setCookie).toMatch(/SameSite=Strict/i);
    expect(signed.setCookie).toContain(`Path=/v1/sessions/${SESSION}/inspect`);
    const page = await fetch(worker.href(`/v1/sessions/${SESSION}/inspect`), { headers: { cookie: signed.cookie ?? '' } });
    expect(page.status).toBe(200);
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
    const html = await page.text();
    expect(html).toContain('needs a person');
    expect(html).toContain('data-action="resolve-permission"');
    // The checkpoint the first test rebuilt in the session object, audited by the page's fold.
    expect(html).toMatch(/<dd id="checkpoint" data-status="matches">at sequence 12, 0 event\(s\) behind the head, \d+ bytes: matches a fold of the whole log<\/dd>/);
    expect(html).not.toContain('checkpoint-defects');
    expect(html).not.toContain('<script>');
    expect(html).not.toContain(token);
    const script = await fetch(worker.href('/inspector/assets/inspector.js'));
    expect(script.headers.get('content-type')).toMatch(/javascript/);
    expect(await script.text()).toContain('EventSource');
  }, 60_000);

  it('streams the live tail and runs actions within the token scopes', async () => {
    const reader = await worker.mintToken(SESSION, ['read']);
    const readOnly = await signIn(reader);
    const refused = await fetch(worker.href(`/v1/sessions/${SESSION}/inspect/actions/recover`), {
      method: 'POST',
      headers: { cookie: readOnly.cookie ?? '', 'content-type': 'application/json', 'x-agent-ledger-inspector': '1' },
      body: JSON.stringify({ action: 'resolve-permission', commandId: 'c-1', permissionRequestId: 'perm-deploy', decision: 'allow' }),
    });
    expect(refused.status).toBe(403);
    await refused.body?.cancel();

    const operator = await signIn(await worker.mintToken(SESSION, ['read', 'recover']));
    const noHeader = await fetch(worker.href(`/v1/sessions/${SESSION}/inspect/actions/recover`), {
      method: 'POST',
      headers: { cookie: operator.cookie ?? '', 'content-type': 'application/json' },
      body: JSON.stringify({ action: 'resolve-permission', commandId: 'c-1', permissionRequestId: 'perm-deploy', decision: 'allow' }),
    });
    expect(noHeader.status).toBe(403);
    await noHeader.body?.cancel();

    const controller = new AbortController();
    const tail = await fetch(worker.href(`/v1/sessions/${SESSION}/inspect/tail`), { headers: { cookie: operator.cookie ?? '' }, signal: controller.signal });
    expect(tail.status).toBe(200);
    expect(tail.headers.get('content-type')).toMatch(/text\/event-stream/);
    const body = tail.body?.getReader();
    const decoder = new TextDecoder();
    let received = '';
    const readUntil = async (needle: string): Promise<void> => {
      while (!received.includes(needle)) {
        const chunk = await body?.read();
        if (chunk === undefined || chunk.done) throw new Error(`tail ended before ${needle}`);
        received += decoder.decode(chunk.value, { stream: true });
      }
    };
    await readUntil('"sequence":12');

    const allowed = await fetch(worker.href(`/v1/sessions/${SESSION}/inspect/actions/recover`), {
      method: 'POST',
      headers: { cookie: operator.cookie ?? '', 'content-type': 'application/json', 'x-agent-ledger-inspector': '1' },
      body: JSON.stringify({ action: 'resolve-permission', commandId: 'c-allow', permissionRequestId: 'perm-deploy', decision: 'allow' }),
    });
    expect(allowed.status).toBe(200);
    expect(await allowed.json()).toMatchObject({ ok: true, message: 'resolve-permission: committed' });
    await readUntil('permission_resolved');
    controller.abort();
    const plan = await runCliInProcess(['plan', worker.url.href, SESSION, '--json'], { AGENT_LEDGER_TOKEN: worker.adminToken });
    expect(JSON.parse(plan.stdout)).toMatchObject({ action: 'resume_turn' });
  }, 60_000);
  it('opens a session of more than 50,000 events from its checkpoint, and folds the whole log on ?full=1', async () => {
    const long = SessionId('edge-inspect-long');
    const client = new HttpDurableEventStore({ baseUrl: worker.url, token: worker.adminToken });
    await appendShortCycles(client, long, 0, 10_000);
    const journal = await DurableSessionJournal.open(client, long);
    expect(await journal.writeCheckpoint()).toBe(true);
    const head = await appendShortCycles(client, long, 10_000, 20);
    expect(head).toBe(50_101);
    const login = await fetch(worker.href(`/v1/sessions/${long}/inspect/login`), {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: worker.adminToken }),
      redirect: 'manual',
    });
    await login.body?.cancel();
    const cookie = (login.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
    const page = await fetch(worker.href(`/v1/sessions/${long}/inspect`), { headers: { cookie } });
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toMatch(/<dd id="checkpoint" data-status="used">at sequence 50001, 100 event\(s\) behind the head, \d+ bytes: this view opened from it and folded the 100 event\(s\) after it; not audited/);
    expect(html).toContain(`href="/v1/sessions/${long}/inspect?full=1"`);
    expect(html).toContain('bars begun from sequence 46102 on');
    expect(html).toContain('cycle-request-10019');
    const whole = await fetch(worker.href(`/v1/sessions/${long}/inspect?full=1`), { headers: { cookie } });
    expect(whole.status).toBe(200);
    const wholeHtml = await whole.text();
    expect(wholeHtml).toMatch(/<dd id="checkpoint" data-status="matches">at sequence 50001, 100 event\(s\) behind the head/);
    expect(wholeHtml).not.toContain('id="timeline-from"');
  }, 240_000);
});
