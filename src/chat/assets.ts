/**
 * The chat page's static assets, served from `/chat/assets/` so the page runs under the
 * inspector's Content-Security-Policy (`script-src 'self'; style-src 'self'; connect-src 'self'`):
 * no inline code, no CDN, no request to another origin.
 *
 * - `agent-client.js`: the agent client of `agent-ledger/browser` (`AgentSessionClient`), bundled
 *   by `scripts/build-chat-client.ts` into `agent-client-bundle.ts`;
 * - `chat.js` ({@link CHAT_SCRIPT}): the page. Plain browser JavaScript in a string (it never runs
 *   on the server), like the inspector's script. What it does:
 *   1. sign-in: the token is checked with `status()` and kept in `sessionStorage` (this tab only);
 *      it travels only as a bearer token to the same origin;
 *   2. sessions: the chats started in this browser are listed from `localStorage`; the open one is
 *      the URL's fragment (`/#<sessionId>`), so a reload reopens it; each has a link to its inspector;
 *   3. the conversation: `client.stream({ after: null })` replays the session's log from its start
 *      and then follows it live, so a reloaded page rebuilds everything from the log, and the
 *      answer in flight continues from the text the server holds (the client turns it into the
 *      missing part: no gap, no repeat). Deltas, tool calls with their progress and results,
 *      permission prompts (Allow / Deny through `answerPermission`), and the log's account of a
 *      cut or recovered run are rendered with `textContent` only: markup in an answer or a tool
 *      result shows as text.
 */
import { AGENT_CLIENT_SCRIPT } from './agent-client-bundle.js';

export { AGENT_CLIENT_SCRIPT };

/** The page's script (see the module header). */
export const CHAT_SCRIPT = String.raw`(function () {
  'use strict';
  var Lib = window.AgentLedgerAgentClient;
  var TOKEN_KEY = 'agent-ledger-chat:token';
  var SESSIONS_KEY = 'agent-ledger-chat:sessions';
  var $ = function (id) { return document.getElementById(id); };
  var signin = $('signin'), app = $('app'), messages = $('messages'), connState = $('conn-state');
  var current = null;

  function el(tag, className, text) {
    var node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }
  function json(value) { return typeof value === 'string' ? value : JSON.stringify(value, null, 2); }
  var REASONS = {
    process_restart: 'the server stopped mid-call',
    user_abort: 'stopped by the user',
    timeout: 'timed out',
    lease_lost: 'another worker took the session over',
    permission_denied: 'permission denied',
    permission_cancelled: 'permission cancelled'
  };
  // A reason is a code string (DurableReason) or an error ({ code, message }).
  function reasonText(reason) {
    if (!reason) return '';
    if (typeof reason === 'string') return REASONS[reason] ? reason + ': ' + REASONS[reason] : reason;
    return [reason.code, reason.message].filter(Boolean).join(': ');
  }
  function inputText(input) {
    if (typeof input === 'string') return input;
    if (Array.isArray(input)) return input.map(function (part) { return part && part.type === 'text' ? part.text : ''; }).join('');
    return json(input);
  }
  function newSessionId() {
    var bytes = new Uint8Array(6);
    window.crypto.getRandomValues(bytes);
    return 'chat-' + Array.prototype.map.call(bytes, function (b) { return ('0' + b.toString(16)).slice(-2); }).join('');
  }

  // ---- sessions (this browser's list) ----
  function loadSessions() {
    try { var list = JSON.parse(localStorage.getItem(SESSIONS_KEY) || '[]'); return Array.isArray(list) ? list : []; }
    catch (error) { return []; }
  }
  function saveSessions(list) { localStorage.setItem(SESSIONS_KEY, JSON.stringify(list)); }
  function rememberSession(id, title) {
    var list = loadSessions();
    var found = list.filter(function (s) { return s.id === id; })[0];
    if (!found) { found = { id: id, title: '' }; list.unshift(found); }
    if (title && !found.title) found.title = title.slice(0, 60);
    saveSessions(list);
    renderSessions();
  }
  function inspectUrl(id) { return '/v1/sessions/' + encodeURIComponent(id) + '/inspect'; }
  function renderSessions() {
    var ul = $('sessions');
    ul.textContent = '';
    loadSessions().forEach(function (s) {
      var li = el('li', current && current.id === s.id ? 'session current' : 'session');
      li.setAttribute('data-session-id', s.id);
      var open = el('a', 'open', s.title || s.id);
      open.href = '#' + encodeURIComponent(s.id);
      var inspect = el('a', 'inspect', 'inspect');
      inspect.href = inspectUrl(s.id);
      inspect.target = '_blank';
      inspect.rel = 'noopener noreferrer';
      li.appendChild(open);
      li.appendChild(inspect);
      ul.appendChild(li);
    });
  }

  // ---- the conversation of one session ----
  function Conversation(id, token) {
    this.id = id;
    this.client = new Lib.AgentSessionClient({ baseUrl: location.origin, sessionId: id, token: token });
    this.requests = {};
    this.attempts = {};
    this.tools = {};
    this.prompts = {};
    this.stream = null;
  }
  Conversation.prototype.assistant = function (requestId) {
    var entry = this.requests[requestId];
    if (!entry) {
      entry = el('li', 'assistant');
      entry.setAttribute('data-request-id', requestId);
      messages.appendChild(entry);
      this.requests[requestId] = entry;
    }
    return entry;
  };
  Conversation.prototype.text = function (requestId, attemptId) {
    var node = this.attempts[attemptId];
    if (!node) {
      node = el('div', 'text');
      node.setAttribute('data-model-attempt-id', attemptId);
      this.assistant(requestId).appendChild(node);
      this.attempts[attemptId] = node;
    }
    return node;
  };
  Conversation.prototype.note = function (requestId, kind, text) {
    var node = el('div', 'note ' + kind, text);
    (requestId ? this.assistant(requestId) : messages).appendChild(node);
    return node;
  };
  Conversation.prototype.tool = function (requestId, data) {
    var node = this.tools[data.toolCallId];
    if (!node) {
      node = el('div', 'tool');
      node.setAttribute('data-tool-call-id', data.toolCallId);
      node.setAttribute('data-tool-name', data.toolName);
      var head = el('div', 'tool-head');
      head.appendChild(el('span', 'tool-name', data.toolName));
      head.appendChild(el('span', 'tool-status', 'scheduled'));
      node.appendChild(head);
      node.appendChild(el('pre', 'tool-input', data.input === undefined ? '' : json(data.input)));
      node.appendChild(el('div', 'tool-progress'));
      this.assistant(requestId).appendChild(node);
      this.tools[data.toolCallId] = node;
    }
    return node;
  };
  Conversation.prototype.toolStatus = function (node, status) {
    node.setAttribute('data-status', status);
    node.querySelector('.tool-status').textContent = status;
  };
  Conversation.prototype.permission = function (event) {
    var self = this, data = event.data;
    var tool = this.tool(event.requestId, data);
    var box = el('div', 'permission');
    box.setAttribute('data-permission-request-id', data.permissionRequestId);
    box.appendChild(el('span', 'permission-message', data.message || ('Run ' + data.toolName + '?')));
    var buttons = el('span', 'permission-actions');
    var status = el('span', 'permission-status');
    [['allow', 'Allow'], ['deny', 'Deny']].forEach(function (pair) {
      var button = el('button', 'answer ' + pair[0], pair[1]);
      button.type = 'button';
      button.addEventListener('click', function () {
        buttons.querySelectorAll('button').forEach(function (b) { b.disabled = true; });
        status.textContent = 'sending…';
        self.client.answerPermission(data.permissionRequestId, pair[0]).catch(function (error) {
          status.textContent = 'not sent: ' + error.message;
          buttons.querySelectorAll('button').forEach(function (b) { b.disabled = false; });
        });
      });
      buttons.appendChild(button);
    });
    box.appendChild(buttons);
    box.appendChild(status);
    tool.appendChild(box);
    this.prompts[data.permissionRequestId] = box;
    this.toolStatus(tool, 'waiting for you');
  };
  Conversation.prototype.onEvent = function (event) {
    var data = event.data || {};
    var node;
    switch (event.type) {
      case 'request_accepted':
        var text = inputText(data.input);
        var user = el('li', 'user', text);
        user.setAttribute('data-request-id', event.requestId);
        messages.appendChild(user);
        rememberSession(this.id, text);
        if (data.recovery) {
          this.note(event.requestId, 'recovery', 'Recovery: this request continues request ' + data.recovery.requestId +
            ' (turn ' + data.recovery.turn + '), which was cut.');
        }
        this.assistant(event.requestId).classList.add('running');
        break;
      case 'model_request_completed':
        var content = data.response && data.response.content;
        var full = typeof content === 'string' ? content
          : (Array.isArray(content) ? content.map(function (p) { return p.type === 'text' ? p.text : ''; }).join('') : '');
        node = this.attempts[event.modelAttemptId];
        if (!node && full === '') break;
        node = this.text(event.requestId, event.modelAttemptId);
        var seen = node.textContent;
        if (full.indexOf(seen) === 0) { if (full.length > seen.length) node.textContent = full; }
        else node.textContent = full;
        node.classList.add('complete');
        break;
      case 'model_request_aborted':
      case 'model_request_failed':
        node = this.attempts[event.modelAttemptId];
        if (node) node.classList.add('cut');
        this.note(event.requestId, 'recovery', 'The model call was cut (' +
          (event.type === 'model_request_aborted' ? reasonText(data.reason) : reasonText(data.error)) + ').');
        break;
      case 'turn_aborted':
        this.note(event.requestId, 'recovery', 'Turn ' + data.turn + ' was aborted (' + reasonText(data.reason) + ').');
        break;
      case 'tool_scheduled':
        this.tool(event.requestId, data);
        break;
      case 'tool_started':
        this.toolStatus(this.tool(event.requestId, data), 'running');
        break;
      case 'tool_completed':
        node = this.tool(event.requestId, data);
        node.appendChild(el('pre', 'tool-result', json(data.result)));
        this.toolStatus(node, 'done');
        break;
      case 'tool_failed':
        node = this.tool(event.requestId, data);
        node.appendChild(el('pre', 'tool-error', reasonText(data.error)));
        this.toolStatus(node, 'failed');
        break;
      case 'tool_cancelled':
        this.toolStatus(this.tool(event.requestId, data), 'cancelled (' + reasonText(data.reason) + ')');
        break;
      case 'tool_outcome_unknown':
        this.toolStatus(this.tool(event.requestId, data), 'outcome unknown');
        this.note(event.requestId, 'recovery', 'The outcome of ' + data.toolName + ' is unknown (' + reasonText(data.reason) + ').');
        break;
      case 'permission_requested':
        this.permission(event);
        break;
      case 'permission_resolved':
        node = this.prompts[data.permissionRequestId];
        if (node) {
          node.querySelectorAll('button').forEach(function (b) { b.remove(); });
          node.setAttribute('data-decision', data.decision);
          node.querySelector('.permission-status').textContent = data.decision === 'allow' ? 'allowed' : (data.decision === 'deny' ? 'denied' : data.decision);
        }
        break;
      case 'request_completed':
        node = this.assistant(event.requestId);
        node.classList.remove('running');
        node.classList.add('done');
        break;
      case 'request_failed':
        node = this.assistant(event.requestId);
        node.classList.remove('running');
        this.note(event.requestId, 'error', 'The request failed: ' + reasonText(data.error));
        break;
      case 'request_interrupted':
        node = this.assistant(event.requestId);
        node.classList.remove('running');
        this.note(event.requestId, 'recovery', 'The request was interrupted (' + reasonText(data.reason) + ').');
        break;
    }
  };
  Conversation.prototype.onItem = function (item) {
    if (item.type === 'event') return this.onEvent(item.event);
    if (item.type === 'caught_up') { connState.textContent = 'live'; connState.className = 'conn-state live'; return; }
    if (item.type === 'text_delta') {
      var node = this.text(item.requestId, item.modelAttemptId);
      node.textContent = node.textContent.slice(0, item.offset) + item.delta;
      return;
    }
    if (item.type === 'tool_progress') {
      var tool = this.tools[item.toolCallId];
      if (tool) tool.querySelector('.tool-progress').textContent = 'progress: ' + json(item.data);
    }
  };
  Conversation.prototype.open = function () {
    var self = this;
    messages.textContent = '';
    connState.textContent = 'connecting…';
    connState.className = 'conn-state';
    this.stream = this.client.stream({
      after: null,
      onReconnect: function () { connState.textContent = 'reconnecting…'; connState.className = 'conn-state'; },
    });
    (async function () {
      try {
        for await (const item of self.stream) {
          if (current !== self) return;
          self.onItem(item);
        }
      } catch (error) {
        if (current !== self) return;
        connState.textContent = 'disconnected: ' + error.message;
        connState.className = 'conn-state error';
        var status = error.details && error.details.httpStatus;
        if (status === 401) signOut('The saved sign-in is no longer valid.');
      }
    })();
  };
  Conversation.prototype.close = function () { if (this.stream) this.stream.close(); };

  // ---- page ----
  function openSession(id) {
    if (current) current.close();
    current = new Conversation(id, sessionStorage.getItem(TOKEN_KEY) || '');
    $('session-title').textContent = id;
    var link = $('inspect-link');
    link.href = inspectUrl(id);
    rememberSession(id);
    current.open();
  }
  function sessionFromHash() {
    var raw = location.hash.replace(/^#/, '');
    try { raw = decodeURIComponent(raw); } catch (error) { raw = ''; }
    return raw;
  }
  function route() {
    var id = sessionFromHash();
    if (!id) {
      var list = loadSessions();
      id = list.length > 0 ? list[0].id : newSessionId();
      history.replaceState(null, '', '#' + encodeURIComponent(id));
    }
    if (!current || current.id !== id) openSession(id);
  }
  function showApp() {
    signin.hidden = true;
    app.hidden = false;
    route();
    $('message').focus();
  }
  function signOut(message) {
    sessionStorage.removeItem(TOKEN_KEY);
    if (current) current.close();
    current = null;
    app.hidden = true;
    signin.hidden = false;
    $('signin-error').textContent = message || '';
  }

  $('signin-form').addEventListener('submit', function (event) {
    event.preventDefault();
    var token = $('token').value.trim();
    var error = $('signin-error');
    error.textContent = '';
    var probe = new Lib.AgentSessionClient({ baseUrl: location.origin, sessionId: sessionFromHash() || 'chat-sign-in', token: token });
    probe.status().then(function () {
      sessionStorage.setItem(TOKEN_KEY, token);
      $('token').value = '';
      showApp();
    }, function (failure) {
      var status = failure.details && failure.details.httpStatus;
      error.textContent = status === 401 || status === 403 ? 'That token is not valid here.' : 'Sign-in failed: ' + failure.message;
    });
  });
  $('sign-out').addEventListener('click', function () { signOut(''); });
  $('new-session').addEventListener('click', function () { location.hash = '#' + encodeURIComponent(newSessionId()); });
  window.addEventListener('hashchange', function () { if (!app.hidden) route(); });

  $('composer').addEventListener('submit', function (event) {
    event.preventDefault();
    if (!current) return;
    var form = event.target, box = $('message'), send = $('send'), error = $('composer-error');
    var text = box.value.trim();
    if (!text) return;
    // A retry of the same text reuses its commandId, so it runs once.
    if (form.getAttribute('data-text') !== text) {
      form.setAttribute('data-text', text);
      form.setAttribute('data-command-id', 'chat-' + window.crypto.randomUUID());
    }
    send.disabled = true;
    error.textContent = '';
    current.client.send(text, { commandId: form.getAttribute('data-command-id') }).then(function () {
      box.value = '';
      form.removeAttribute('data-text');
      form.removeAttribute('data-command-id');
    }, function (failure) {
      error.textContent = 'Not sent: ' + failure.message;
    }).then(function () { send.disabled = false; box.focus(); });
  });
  $('message').addEventListener('keydown', function (event) {
    if (event.key === 'Enter' && !event.shiftKey) { event.preventDefault(); $('composer').requestSubmit(); }
  });

  renderSessions();
  if (sessionStorage.getItem(TOKEN_KEY)) showApp();
})();
`;

/** The stylesheet. */
export const CHAT_CSS = `
:root { color-scheme: light dark; --fg: #1b1f24; --muted: #667; --bg: #fff; --line: #d8dde3; --soft: #f3f5f7;
  --ok: #1a7f37; --warn: #9a6700; --bad: #cf222e; --accent: #0969da; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6edf3; --muted: #8b949e; --bg: #0d1117; --line: #30363d; --soft: #161b22; } }
body { font: 15px/1.5 system-ui, sans-serif; color: var(--fg); background: var(--bg); margin: 0; }
[hidden] { display: none !important; }
.signin { max-width: 420px; margin: 12vh auto; padding: 16px; }
.signin input { width: 100%; }
.app { display: grid; grid-template-columns: 240px 1fr; min-height: 100vh; }
.sessions { border-right: 1px solid var(--line); padding: 12px; display: flex; flex-direction: column; gap: 8px; }
.sessions ul { list-style: none; padding: 0; margin: 0; flex: 1; }
.session { display: flex; justify-content: space-between; gap: 6px; padding: 4px 6px; border-radius: 6px; }
.session.current { background: var(--soft); }
.session a.open { color: var(--fg); text-decoration: none; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.session a.inspect { font-size: 12px; color: var(--muted); }
.conversation { display: flex; flex-direction: column; max-width: 860px; width: 100%; margin: 0 auto; padding: 12px 16px; box-sizing: border-box; }
.conversation header { display: flex; align-items: baseline; gap: 12px; border-bottom: 1px solid var(--line); }
.conversation h1 { font-size: 16px; margin: 0 0 8px; font-family: ui-monospace, monospace; }
.conn-state { font-size: 12px; color: var(--muted); margin-left: auto; }
.conn-state.live { color: var(--ok); }
.conn-state.error { color: var(--bad); }
#messages { list-style: none; padding: 0; flex: 1; }
#messages > li { margin: 10px 0; padding: 8px 12px; border-radius: 10px; }
li.user { background: var(--accent); color: #fff; margin-left: 20%; white-space: pre-wrap; }
li.assistant { background: var(--soft); margin-right: 10%; }
li.assistant.running::after { content: '…'; color: var(--muted); }
.text { white-space: pre-wrap; }
.text.cut { opacity: .7; text-decoration: line-through dotted; }
.tool { border: 1px solid var(--line); border-radius: 8px; padding: 6px 8px; margin: 6px 0; font-size: 13px; }
.tool-head { display: flex; gap: 8px; }
.tool-name { font-family: ui-monospace, monospace; font-weight: 600; }
.tool-status { color: var(--muted); }
.tool[data-status="done"] .tool-status { color: var(--ok); }
.tool[data-status="failed"] .tool-status { color: var(--bad); }
.tool pre { margin: 4px 0; white-space: pre-wrap; word-break: break-word; font-size: 12px; }
.tool-result { border-left: 3px solid var(--ok); padding-left: 6px; }
.tool-error { border-left: 3px solid var(--bad); padding-left: 6px; }
.tool-progress { color: var(--muted); font-size: 12px; }
.permission { display: flex; gap: 8px; align-items: center; flex-wrap: wrap; padding: 6px; border: 1px dashed var(--warn); border-radius: 6px; }
.permission[data-decision="allow"] { border-color: var(--ok); }
.permission[data-decision="deny"] { border-color: var(--bad); }
button.allow { border-color: var(--ok); }
button.deny { border-color: var(--bad); }
.note { font-size: 13px; color: var(--muted); margin: 4px 0; }
.note.recovery { color: var(--warn); }
.note.recovery::before { content: '↻ '; }
.note.error { color: var(--bad); }
#composer { display: flex; gap: 8px; }
#composer textarea { flex: 1; font: inherit; }
.error { color: var(--bad); }
.hint { color: var(--muted); font-size: 13px; }
button.quiet { background: none; border: none; color: var(--muted); cursor: pointer; text-align: left; }
`;
