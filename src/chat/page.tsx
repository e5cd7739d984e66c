/** @jsxRuntime automatic */
/** @jsxImportSource hono/jsx */
/**
 * The chat page served at `/`: a static shell, server-rendered with Hono's JSX. Everything
 * dynamic (sign-in, the session list, the conversation) is done by its two scripts, served from
 * {@link CHAT_ASSET_PREFIX} under the inspector's strict Content-Security-Policy (no inline code,
 * nothing from another origin): the agent client bundle, then the page's script (`assets.ts`).
 */
import type { FC } from 'hono/jsx';

/** Where the page's static assets are served. */
export const CHAT_ASSET_PREFIX = '/chat/assets';

/** The page (see the module header). */
const ChatPage: FC = () => (
  <html lang="en">
    <head>
      <meta charset="utf-8" />
      <meta name="viewport" content="width=device-width, initial-scale=1" />
      <meta name="referrer" content="no-referrer" />
      <title>agent-ledger · chat</title>
      <link rel="stylesheet" href={`${CHAT_ASSET_PREFIX}/chat.css`} />
      <script src={`${CHAT_ASSET_PREFIX}/agent-client.js`} defer></script>
      <script src={`${CHAT_ASSET_PREFIX}/chat.js`} defer></script>
    </head>
    <body>
      <main id="chat">
        <section id="signin" class="signin">
          <h1>Talk to the demo agent</h1>
          <form id="signin-form" autocomplete="off">
            <label>
              Token <input type="password" name="token" id="token" required autofocus />
            </label>
            <button type="submit" id="sign-in">Sign in</button>
          </form>
          <p id="signin-error" class="error" role="alert"></p>
          <p class="hint">
            The admin token <code>npm start</code> printed. It stays in this tab (sessionStorage) and is sent only to this
            server, as a bearer token.
          </p>
        </section>
        <div id="app" class="app" hidden>
          <aside class="sessions">
            <button type="button" id="new-session">New chat</button>
            <ul id="sessions"></ul>
            <button type="button" id="sign-out" class="quiet">Sign out</button>
          </aside>
          <section class="conversation">
            <header>
              <h1 id="session-title"></h1>
              <a id="inspect-link" target="_blank" rel="noopener noreferrer" href="#">Inspector</a>
              <span id="conn-state" class="conn-state"></span>
            </header>
            <ol id="messages" aria-live="polite"></ol>
            <form id="composer" autocomplete="off">
              <textarea id="message" name="message" rows={2} placeholder="Ask something, or “note: …” to save a note (asks first)" required></textarea>
              <button type="submit" id="send">Send</button>
            </form>
            <p id="composer-error" class="error" role="alert"></p>
          </section>
        </div>
      </main>
    </body>
  </html>
);

/** The page as an HTML document. */
export async function renderChatPage(): Promise<string> {
  return `<!DOCTYPE html>${String(await (<ChatPage />))}`;
}
