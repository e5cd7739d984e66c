/**
 * Smoke test of the Worker inside workerd: the real `worker/index.ts`, loaded from
 * wrangler.toml by @cloudflare/vitest-pool-workers, answers its health check.
 */
import { env, exports } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import * as main from '../../worker/index.js';

describe('GET /healthz (inside workerd)', () => {
  it('answers with the service name and protocol version', async () => {
    const response = await exports.default.fetch('http://agent-ledger.test/healthz');

    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await response.json()).toEqual({ ok: true, name: 'agent-ledger', protocol: 4 });
  });

  it('does not answer unknown paths with the health body', async () => {
    const response = await exports.default.fetch('http://agent-ledger.test/no-such-route');

    expect(response.status).toBe(404);
    await response.body?.cancel();
  });

  it('runs with the test bindings from vitest.config.ts', () => {
    expect(env.ADMIN_TOKEN).toBe('test-admin-token-0123456789abcdef');
    expect(env.TOKEN_SECRET).toBe('test-token-secret-0123456789abcdef');
  });
});

describe('worker/index.ts', () => {
  // wrangler dev refuses to start when the main module exports anything but entry points
  // (the test pool does not check this itself).
  it('exports only entry points: the default handler and classes', () => {
    for (const [name, value] of Object.entries(main)) {
      if (name === 'default') {
        expect(value).toHaveProperty('fetch', expect.any(Function));
      } else {
        expect({ name, type: typeof value }).toEqual({ name, type: 'function' });
      }
    }
  });
});
