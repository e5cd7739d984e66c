#!/usr/bin/env node
// `npm start`: run the Worker locally, offline.
//
// 1. If `.dev.vars` is missing in the current directory (npm runs scripts from the package
//    root), create it with a fresh ADMIN_TOKEN and TOKEN_SECRET (32 random bytes each, hex),
//    readable by the owner only. An existing file is never touched.
// 2. Print the admin token, curl lines that are safe to paste twice (a journal command, which is
//    idempotent by its commandId, and reads) and how to reset the local state.
// 3. Run `wrangler dev` on 127.0.0.1 with telemetry, the update check, the `request.cf`
//    download and any Cloudflare credentials switched off, forward SIGINT/SIGTERM to it and
//    exit with its exit code.
//
// `--dry-run` stops after step 2 and prints the wrangler command instead of running it.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { constants } from 'node:os';
import path from 'node:path';

const root = process.cwd();
const dryRun = process.argv.includes('--dry-run');
const devVarsPath = path.join(root, '.dev.vars');
const host = '127.0.0.1';
const port = process.env.PORT ?? '8787';

if (!/^\d{1,5}$/.test(port)) {
  console.error(`PORT must be a port number, got ${JSON.stringify(port)}`);
  process.exit(2);
}

/** Creates `.dev.vars` unless it exists; returns its variables. */
function ensureDevVars() {
  if (!existsSync(devVarsPath)) {
    const content = [
      '# Local secrets for `wrangler dev` (created by `npm start`; never commit this file).',
      `ADMIN_TOKEN=${randomBytes(32).toString('hex')}`,
      `TOKEN_SECRET=${randomBytes(32).toString('hex')}`,
      '',
    ].join('\n');
    // `wx` fails instead of overwriting if another process created the file meanwhile.
    writeFileSync(devVarsPath, content, { mode: 0o600, flag: 'wx' });
    console.log(`Created ${devVarsPath} with a new ADMIN_TOKEN and TOKEN_SECRET.`);
  }
  const vars = new Map();
  for (const line of readFileSync(devVarsPath, 'utf8').split(/\r?\n/)) {
    const match = /^\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*?)\s*$/.exec(line);
    if (match) vars.set(match[1], match[2].replace(/^(["'])(.*)\1$/, '$2'));
  }
  return vars;
}

const vars = ensureDevVars();
const adminToken = vars.get('ADMIN_TOKEN');
const baseUrl = `http://${host}:${port}`;

console.log('');
if (adminToken) {
  console.log(`Admin token: ${adminToken}`);
} else {
  console.log(`Warning: ${devVarsPath} has no ADMIN_TOKEN; admin routes will refuse every request.`);
}
console.log('Try (each line is safe to paste twice):');
console.log(`  curl -s ${baseUrl}/healthz`);
if (adminToken) {
  const auth = `-H 'Authorization: Bearer ${adminToken}'`;
  const json = "-H 'content-type: application/json'";
  // A journal command is idempotent by its commandId: pasting it again answers "replayed" and
  // appends nothing (the raw events route would append a second session_created, which the
  // session's projection then refuses for good).
  console.log(
    `  curl -s ${auth} ${json} ${baseUrl}/v1/sessions/demo/commands \\\n` +
      `    -d '{"commandId":"demo-create","events":[{"type":"session_created","data":{"source":"create"}}]}'`,
  );
  console.log(`  curl -s ${auth} ${baseUrl}/v1/sessions/demo/events`);
  console.log(`  curl -s ${auth} ${baseUrl}/v1/sessions/demo/projection`);
  console.log(`  API reference: ${baseUrl}/docs`);
}
// ---- edge agent demo (edge-agent helper; keep this block separate) ----
console.log('');
console.log('Watch the demo agent run inside its Durable Object (deterministic local model, no key):');
// The demo reads PORT as this script does: name it when it is not the default.
console.log(`  ${port === '8787' ? '' : `PORT=${port} `}node scripts/agent-demo.mjs "How many words is this?"`);
if (adminToken) {
  console.log(
    `  or: curl -s -H 'Authorization: Bearer ${adminToken}' -H 'content-type: application/json' \\\n` +
      `    ${baseUrl}/v1/sessions/demo-agent/requests -d '{"commandId":"c1","input":"hello edge agents"}'`,
  );
  console.log(`  and subscribe: ws://${host}:${port}/v1/sessions/demo-agent/subscribe?access_token=<admin token>`);
}
// ---- end of edge agent demo ----
console.log('');
console.log(`Talk to the demo agent in a browser: ${baseUrl}/ (sign in with the admin token; see docs/chat.md)`);
console.log('');
console.log(`Local state lives in ${path.join(root, '.wrangler', 'state')}; to start from an empty ledger, stop`);
console.log('this server and delete that directory (rm -rf .wrangler/state).');
console.log('');

const wrangler = path.join(root, 'node_modules', '.bin', process.platform === 'win32' ? 'wrangler.cmd' : 'wrangler');
const args = ['dev', '--ip', host, '--port', port];

const env = {
  ...process.env,
  CLOUDFLARE_CF_FETCH_ENABLED: 'false',
  WRANGLER_SEND_METRICS: 'false',
  // The banner is where wrangler checks npm for a newer version; hiding it skips the check.
  WRANGLER_HIDE_BANNER: 'true',
};
// Local development must never act on a Cloudflare account.
delete env.CLOUDFLARE_API_TOKEN;
delete env.CLOUDFLARE_API_KEY;
delete env.CLOUDFLARE_EMAIL;
delete env.CLOUDFLARE_ACCOUNT_ID;

if (dryRun) {
  console.log(`[dry run] would run: ${wrangler} ${args.join(' ')}`);
  process.exit(0);
}

const child = spawn(wrangler, args, { cwd: root, env, stdio: 'inherit' });

for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
  });
}

child.on('error', (error) => {
  console.error(`Could not start wrangler (${wrangler}): ${error.message}`);
  process.exit(1);
});

child.on('exit', (code, signal) => {
  if (code !== null) process.exit(code);
  // Killed by a signal: report it the shell's way (128 + signal number).
  process.exit(128 + (constants.signals[signal] ?? 1));
});
