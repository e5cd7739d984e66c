/**
 * Rewrites the route table of docs/http-api.md from the app's route declarations (the same ones
 * the OpenAPI document is built from). Run: `npx tsx scripts/http-api-table.ts`.
 * `test/http/route-table.test.ts` fails when the file is stale.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { appRoutes, chatRoutes } from '../src/app/app.js';
import { renderRouteTable, withRouteTable } from '../src/app/route-table.js';

const file = fileURLToPath(new URL('../docs/http-api.md', import.meta.url));
const before = readFileSync(file, 'utf8');
const after = withRouteTable(before, renderRouteTable(appRoutes({ extraGroups: [chatRoutes] }).map((route) => route.spec)));
if (after !== before) writeFileSync(file, after);
console.log(after === before ? 'docs/http-api.md is up to date' : 'docs/http-api.md rewritten');
