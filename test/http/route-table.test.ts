/**
 * docs/http-api.md carries the full route table, generated from the same route declarations as
 * the OpenAPI document: this fails when the file is stale (run `npx tsx scripts/http-api-table.ts`)
 * and checks that the table names every route the app mounts.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { appRoutes, chatRoutes } from '../../src/app/app.js';

/** The routes of the repository's Worker (worker/index.ts): the built-in groups and the chat page. */
const REPOSITORY_WORKER = { extraGroups: [chatRoutes] };
import { ROUTE_TABLE_BEGIN, ROUTE_TABLE_END, renderRouteTable, withRouteTable } from '../../src/app/route-table.js';

const DOC = new URL('../../docs/http-api.md', import.meta.url);

describe('docs/http-api.md route table', () => {
  it('is the table generated from the route declarations', () => {
    const document = readFileSync(DOC, 'utf8');
    const expected = withRouteTable(document, renderRouteTable(appRoutes(REPOSITORY_WORKER).map((route) => route.spec)));
    expect(document, 'stale: run `npx tsx scripts/http-api-table.ts`').toBe(expected);
  });

  it('lists every mounted route, recovery, runs, deliveries and commands included', () => {
    const document = readFileSync(DOC, 'utf8');
    const table = document.slice(document.indexOf(ROUTE_TABLE_BEGIN), document.indexOf(ROUTE_TABLE_END));
    const specs = appRoutes(REPOSITORY_WORKER).map((route) => route.spec);
    expect(specs.length).toBeGreaterThan(25);
    for (const spec of specs) expect(table).toContain(`\`${spec.method.toUpperCase()} ${spec.path}\``);
    for (const path of ['/commands', '/projection', '/recovery/resolve-permission', '/runs/{runId}/deliveries', '/runs/{runId}/tool-calls']) {
      expect(table).toContain(path);
    }
  });

  it('changes when a declaration changes (the check can fail)', () => {
    const specs = appRoutes(REPOSITORY_WORKER).map((route) => route.spec);
    const changed = specs.map((spec, index) => (index === 0 ? { ...spec, summary: `${spec.summary} (changed)` } : spec));
    expect(renderRouteTable(changed)).not.toBe(renderRouteTable(specs));
  });
});
