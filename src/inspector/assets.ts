/**
 * The page's static assets: one script and one stylesheet, served from
 * `/inspector/assets/` so the page runs under `script-src 'self'; style-src 'self'` with no
 * inline code, no CDN, and no network beyond its own origin.
 *
 * The script is kept as plain browser JavaScript in a string (it never runs on the server) so
 * that the same module bundles into the Worker with esbuild and loads under `tsx` on Node.
 * What it does:
 * 1. live tail: an `EventSource` on `<page>/tail?after=<head cursor>` (same origin: the HttpOnly
 *    cookie authenticates it, the token is never in the URL); each message carries the
 *    server-rendered row; on a dropped connection EventSource resumes with `Last-Event-ID`;
 * 2. actions: buttons and forms with `data-action` post JSON to `<page>/actions/<scope>` with a fresh
 *    `commandId` (a retry of the same click reuses it) and the header
 *    `x-agent-ledger-inspector: 1`, which a cross-site form cannot send.
 */

/** The browser script. */
export const INSPECTOR_SCRIPT = String.raw`(function () {
  'use strict';
  var root = document.getElementById('inspector');
  if (!root) return;
  var base = root.getAttribute('data-base');
  var after = root.getAttribute('data-after') || '';
  var statusBox = document.getElementById('action-status');
  var tailBody = document.querySelector('#tail tbody');
  var tailState = document.getElementById('tail-state');
  var headBox = document.getElementById('head');

  function say(text, state) {
    if (!statusBox) return;
    statusBox.textContent = text;
    statusBox.className = state;
  }

  function newId() {
    if (window.crypto && typeof window.crypto.randomUUID === 'function') return 'inspector-' + window.crypto.randomUUID();
    return 'inspector-' + Date.now().toString(36) + '-' + Math.random().toString(36).slice(2);
  }

  function connect() {
    var url = base + '/tail' + (after ? '?after=' + encodeURIComponent(after) : '');
    var source = new EventSource(url);
    source.addEventListener('open', function () { tailState.textContent = 'live'; tailState.className = 'tail-state live'; });
    source.addEventListener('event', function (message) {
      var data = JSON.parse(message.data);
      after = message.lastEventId || after;
      tailBody.insertAdjacentHTML('beforeend', data.html);
      if (headBox) headBox.textContent = String(data.sequence);
    });
    source.addEventListener('closed', function () {
      tailState.textContent = 'session closed';
      source.close();
    });
    source.addEventListener('error', function () {
      tailState.textContent = source.readyState === 2 ? 'disconnected' : 'reconnecting…';
      tailState.className = 'tail-state';
    });
  }

  var GROUPS = { 'resolve-permission': 'recover', 'reconcile-tool-outcome': 'recover', 'reconcile-model-outcome': 'recover', deliver: 'deliver', fork: 'fork' };

  function post(body, done) {
    say('working…', 'pending');
    fetch(base + '/actions/' + GROUPS[body.action], {
      method: 'POST',
      credentials: 'same-origin',
      headers: { 'content-type': 'application/json', 'x-agent-ledger-inspector': '1' },
      body: JSON.stringify(body)
    }).then(function (response) {
      return response.json().then(function (json) { return { ok: response.ok, json: json }; });
    }).then(function (result) {
      if (result.ok) { say(result.json.message || 'done', 'ok'); if (done) done(); }
      else say((result.json.title || 'refused') + ': ' + (result.json.detail || ''), 'error');
    }).catch(function (error) { say('request failed: ' + error, 'error'); });
  }

  function parseValue(text) {
    if (!text || !text.trim()) return null;
    return JSON.parse(text);
  }

  document.addEventListener('click', function (event) {
    var target = event.target;
    if (!(target instanceof HTMLElement) || !target.classList.contains('act')) return;
    var item = target.closest('li');
    var body = {
      action: target.getAttribute('data-action'),
      commandId: target.getAttribute('data-command-id') || newId(),
      permissionRequestId: target.getAttribute('data-permission-request-id'),
      decision: target.getAttribute('data-decision')
    };
    target.setAttribute('data-command-id', body.commandId);
    post(body, function () {
      if (item) item.querySelectorAll('button').forEach(function (button) { button.disabled = true; });
      if (item) item.classList.add('done');
    });
  });

  document.addEventListener('submit', function (event) {
    var form = event.target;
    if (!(form instanceof HTMLFormElement) || !form.classList.contains('act-form')) return;
    event.preventDefault();
    var action = form.getAttribute('data-action');
    var fields = new FormData(form);
    var body;
    try {
      if (action === 'deliver') {
        body = { action: action, runId: form.getAttribute('data-run-id'), key: form.getAttribute('data-key'),
          deliveryId: form.getAttribute('data-delivery-id') || newId(), payload: parseValue(fields.get('value')) };
        form.setAttribute('data-delivery-id', body.deliveryId);
      } else if (action === 'fork') {
        body = { action: action, at: Number(fields.get('at')), newSessionId: String(fields.get('newSessionId') || '') };
      } else {
        var status = String(fields.get('status'));
        var value = parseValue(fields.get('value'));
        var outcome = { status: status };
        if (status === 'completed') outcome[action === 'reconcile-model-outcome' ? 'response' : 'result'] = value;
        if (status === 'failed') outcome.error = value;
        body = { action: action, commandId: form.getAttribute('data-command-id') || newId(), outcome: outcome,
          toolAttemptId: form.getAttribute('data-tool-attempt-id'), requestId: form.getAttribute('data-request-id'),
          turnId: form.getAttribute('data-turn-id'), modelAttemptId: form.getAttribute('data-model-attempt-id') };
        form.setAttribute('data-command-id', body.commandId);
      }
    } catch (error) {
      say('not valid JSON: ' + error.message, 'error');
      return;
    }
    post(body);
  });

  connect();
})();
`;

/** The stylesheet. */
export const INSPECTOR_CSS = `
:root { color-scheme: light dark; --fg: #1b1f24; --muted: #667; --bg: #fff; --line: #d8dde3;
  --safe: #1a7f37; --recon: #9a6700; --person: #cf222e; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6edf3; --muted: #8b949e; --bg: #0d1117; --line: #30363d; } }
body { font: 14px/1.45 system-ui, sans-serif; color: var(--fg); background: var(--bg); margin: 0; }
main { max-width: 1200px; margin: 0 auto; padding: 16px; }
h1 { font-size: 18px; margin: 0 0 8px; word-break: break-all; }
h2 { font-size: 15px; margin: 24px 0 8px; border-bottom: 1px solid var(--line); padding-bottom: 4px; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: 2px 12px; margin: 0; }
dt { color: var(--muted); }
dd { margin: 0; font-family: ui-monospace, monospace; }
.badge { display: inline-block; padding: 0 6px; border-radius: 8px; font-size: 12px; color: #fff; }
.badge.safe_to_retry { background: var(--safe); }
.badge.needs_reconciliation { background: var(--recon); }
.badge.needs_person { background: var(--person); }
.plan-items { list-style: none; padding: 0; }
.plan-item { padding: 6px 0; border-bottom: 1px solid var(--line); }
.plan-item.done { opacity: .6; }
.actions button, .act-form button { margin-left: 6px; }
button.allow { border-color: var(--safe); }
button.deny { border-color: var(--person); }
.act-form { display: flex; gap: 6px; align-items: flex-start; margin-top: 4px; flex-wrap: wrap; }
.act-form textarea { min-width: 320px; font-family: ui-monospace, monospace; }
.error { color: var(--person); }
.ok { color: var(--safe); }
.note, .hint, .empty, .pending { color: var(--muted); }
table.events { width: 100%; border-collapse: collapse; font-size: 12px; }
table.events td, table.events th { border-bottom: 1px solid var(--line); padding: 2px 6px; text-align: left; vertical-align: top; }
td.seq { text-align: right; font-variant-numeric: tabular-nums; }
td.type, td.time, td.ids { font-family: ui-monospace, monospace; white-space: nowrap; }
pre { margin: 4px 0; max-height: 320px; overflow: auto; }
.pager a { margin-right: 10px; }
.tail-state { font-size: 12px; color: var(--muted); font-weight: normal; }
.tail-state.live { color: var(--safe); }
#timeline { font-size: 10px; }
#timeline .lane-label, #timeline .axis { fill: var(--muted); }
#timeline .axis.end { text-anchor: end; }
.bar { fill: #8c959f; }
.bar.request { fill: #0969da; } .bar.turn { fill: #54aeff; } .bar.model { fill: #8250df; }
.bar.tool { fill: #1a7f37; } .bar.permission { fill: #cf222e; } .bar.step { fill: #9a6700; }
.bar.sleep { fill: #bf8700; } .bar.wait { fill: #bc4c00; } .bar.open { opacity: .55; }
.login { max-width: 420px; margin-top: 10vh; }
.login input { width: 100%; }
`;
