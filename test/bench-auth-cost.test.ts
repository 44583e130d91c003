// The authentication bench (bench/auth-cost.ts, issue 21), run for one short round from the
// build: every credential it measures is the user it claims to be and is answered 200 on
// every request (so the figures are GETs, not refusals), each server's front end is the one
// named, and neither the OIDC issuer nor the token webhook is asked anything while the load
// runs (their answers are cached). Behaviour only: the rates are not checked.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '..');

describe('bench/auth-cost', () => {
  it('measures GETs by static token, OIDC JWT, webhook token and client certificate, all authenticated and authorized', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'auth-cost-test-'));
    try {
      const out = join(dir, 'result.json');
      await new Promise<void>((res, rej) =>
        execFile(process.execPath, [join(ROOT, 'dist', 'bench', 'auth-cost.js'), '--seconds', '1', '--rounds', '1', '--connections', '2', '--json', out], { timeout: 150_000 }, (err, stdout, stderr) =>
          err ? rej(new Error(`${err.message}\n${stdout}\n${stderr}`)) : res(),
        ),
      );
      const r = JSON.parse(readFileSync(out, 'utf8'));
      expect(r.frontEnds.uws).toMatch(/^I front end: uWebSockets\.js/);
      expect(r.frontEnds['node:http2']).toMatch(/^I front end: node:http2 .*needed by --client-ca-file/);
      const users = Object.fromEntries(r.cases.map((c: { id: string; user: string }) => [c.id, c.user]));
      expect(users).toEqual({
        'uws-static': 'static-user',
        'uws-static-long': 'static-long-user',
        'uws-oidc': 'oidc-user',
        'uws-webhook': 'webhook-user',
        'h2-static': 'static-user',
        'h2-static-long': 'static-long-user',
        'h2-oidc': 'oidc-user',
        'h2-webhook': 'webhook-user',
        'h2-cert': 'cert-user',
        'h2-static-http2': 'static-user',
        'h2-cert-http2': 'cert-user',
      });
      for (const c of r.cases) {
        expect(c.failed, c.id).toBe(0);
        expect(c.rps[0], c.id).toBeGreaterThan(0);
      }
      expect(r.webhookCalls).toBe(0);
      expect(r.issuerRequests).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 180_000);
});
