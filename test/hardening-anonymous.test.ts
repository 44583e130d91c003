// Issue 17, item 1: with the defaults (AlwaysAllow, --anonymous-auth true) anonymous was
// cluster-admin. As kube-apiserver does, anonymous authentication is switched off whenever
// AlwaysAllow is among the authorization modes, with kube's warning; every unauthenticated
// request is then 401, probes included. Under RBAC, anonymous keeps kube's narrow rights
// (system:public-info-viewer: health and version) and nothing else.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { request, startServer, type TestServer } from './helpers/server.js';

const WARNING = 'AnonymousAuth is not allowed with the AlwaysAllow authorizer. Resetting AnonymousAuth to false. You should use a different authorizer';
const anon = { authorization: '' };
const CM = '/api/v1/namespaces/default/configmaps';

let open: TestServer;
let rbac: TestServer;
beforeAll(async () => {
  [open, rbac] = await Promise.all([startServer(), startServer({ args: ['--anonymous-auth=true', '--authorization-mode=RBAC'] })]);
}, 90_000);
afterAll(async () => {
  for (const s of [open, rbac]) {
    await s?.stop();
    s?.cleanup();
  }
});

describe('defaults (AlwaysAllow): anonymous is off', () => {
  it('logs kube-apiserver\'s warning at start-up', () => {
    expect(open.output()).toContain(`W ${WARNING}`);
  });

  it('an unauthenticated read of Secrets is 401, not 200', async () => {
    const r = await request(open, 'GET', '/api/v1/secrets', undefined, anon);
    expect(r.status).toBe(401);
    expect(r.json()).toMatchObject({ kind: 'Status', reason: 'Unauthorized', code: 401 });
  });

  it('an unauthenticated create is 401 and creates nothing', async () => {
    const r = await request(open, 'POST', CM, { metadata: { name: 'anon-made' }, data: { a: 'b' } }, anon);
    expect(r.status).toBe(401);
    expect((await request(open, 'GET', `${CM}/anon-made`)).status).toBe(404);
  });

  it('every path is 401 without credentials, health and discovery included (as kube with anonymous off)', async () => {
    for (const path of ['/healthz', '/livez', '/readyz', '/version', '/api', '/apis', '/openapi/v2', '/metrics', '/.well-known/openid-configuration']) {
      expect([path, (await request(open, 'GET', path, undefined, anon)).status]).toEqual([path, 401]);
    }
  });

  it('the admin kubeconfig\'s token still works', async () => {
    expect((await request(open, 'GET', '/api/v1/secrets')).status).toBe(200);
    expect((await request(open, 'POST', CM, { metadata: { name: 'admin-made' } })).status).toBe(201);
  });
});

describe('--anonymous-auth=true with RBAC: kube\'s anonymous rights only', () => {
  it('no warning: AlwaysAllow is not among the modes', () => {
    expect(rbac.output()).not.toContain(WARNING);
  });

  it('health and version are public (system:public-info-viewer)', async () => {
    for (const path of ['/healthz', '/livez', '/readyz', '/version']) {
      expect([path, (await request(rbac, 'GET', path, undefined, anon)).status]).toEqual([path, 200]);
    }
  });

  it('Secrets, writes and discovery are 403 for system:anonymous', async () => {
    const read = await request(rbac, 'GET', '/api/v1/secrets', undefined, anon);
    expect(read.status).toBe(403);
    expect(read.json().message).toBe('secrets is forbidden: User "system:anonymous" cannot list resource "secrets" in API group "" at the cluster scope');
    expect((await request(rbac, 'POST', CM, { metadata: { name: 'anon-made' } }, anon)).status).toBe(403);
    // system:discovery is bound to system:authenticated only (since kube 1.14)
    expect((await request(rbac, 'GET', '/api', undefined, anon)).status).toBe(403);
  });
});
