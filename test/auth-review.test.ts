// The create-only review kinds, service-account tokens (serviceaccounts/token, bearer
// authentication, TokenReview, OIDC discovery) and the default ServiceAccount, against a
// started server with real kubectl where a user would use it.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { request, startServer, type TestServer } from './helpers/server.js';
import { kubectl } from './helpers/kubectl.js';

let s: TestServer;
let denied: TestServer;

beforeAll(async () => {
  [s, denied] = await Promise.all([startServer(), startServer({ args: ['--authorization-mode', 'AlwaysDeny'] })]);
});
afterAll(async () => {
  for (const x of [s, denied]) {
    await x?.stop();
    x?.cleanup();
  }
});

const SSAR = '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews';

const waitFor = async (fn: () => Promise<boolean>) => {
  for (let i = 0; i < 100; i++) {
    if (await fn()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('condition never held');
};

describe('access reviews', () => {
  it('kubectl auth can-i and can-i --list answer from the authorizer', async () => {
    const yes = await kubectl(s, ['auth', 'can-i', 'create', 'pods']);
    expect(yes.stdout.trim()).toBe('yes');
    expect(yes.code).toBe(0);
    const list = await kubectl(s, ['auth', 'can-i', '--list']);
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(/^\*\.\*\s+\[\]\s+\[\]\s+\[\*\]$/m);
  });

  it('a SelfSubjectAccessReview needs no name, is answered with its status and is not stored', async () => {
    const r = await request(s, 'POST', SSAR, { spec: { resourceAttributes: { verb: 'get', resource: 'pods', namespace: 'default' } } });
    expect(r.status).toBe(201);
    expect(r.json()).toEqual({
      kind: 'SelfSubjectAccessReview',
      apiVersion: 'authorization.k8s.io/v1',
      metadata: { creationTimestamp: null },
      spec: { resourceAttributes: { verb: 'get', resource: 'pods', namespace: 'default' } },
      status: { allowed: true },
    });
    expect((await request(s, 'GET', SSAR)).status).toBe(405);
  });

  it('validates as kube: exactly one kind of attributes, empty metadata, a subject for SAR', async () => {
    const none = await request(s, 'POST', SSAR, { spec: {} });
    expect(none.status).toBe(422);
    expect(none.json().message).toBe('SelfSubjectAccessReview.authorization.k8s.io "" is invalid: spec.resourceAttributes: Invalid value: null: exactly one of nonResourceAttributes or resourceAttributes must be specified');
    const named = await request(s, 'POST', SSAR, { metadata: { name: 'x' }, spec: { nonResourceAttributes: { verb: 'get', path: '/healthz' } } });
    expect(named.status).toBe(422);
    expect(named.json().details.causes[0]).toMatchObject({ field: 'metadata', message: expect.stringContaining('must be empty') });
    const sar = await request(s, 'POST', '/apis/authorization.k8s.io/v1/subjectaccessreviews', { spec: { resourceAttributes: { verb: 'get', resource: 'pods' } } });
    expect(sar.status).toBe(422);
    expect(sar.json().message).toContain('spec.user: Invalid value: "": at least one of user or group must be specified');
  });

  it('a LocalSubjectAccessReview must name the namespace of its path', async () => {
    const path = '/apis/authorization.k8s.io/v1/namespaces/default/localsubjectaccessreviews';
    const ok = await request(s, 'POST', path, { spec: { user: 'bob', resourceAttributes: { verb: 'get', resource: 'pods', namespace: 'default' } } });
    expect(ok.status).toBe(201);
    expect(ok.json().metadata.namespace).toBe('default');
    expect(ok.json().status).toEqual({ allowed: true });
    const other = await request(s, 'POST', path, { spec: { user: 'bob', resourceAttributes: { verb: 'get', resource: 'pods', namespace: 'kube-system' } } });
    expect(other.status).toBe(422);
    expect(other.json().message).toContain('spec.resourceAttributes.namespace: Invalid value: "kube-system": must match metadata.namespace');
    const mismatch = await request(s, 'POST', path, { metadata: { namespace: 'kube-system' }, spec: { user: 'bob', resourceAttributes: { namespace: 'kube-system' } } });
    expect(mismatch.status).toBe(400);
  });

  it('AlwaysDeny: a SubjectAccessReview says not allowed, with the reason; kubectl auth can-i is refused', async () => {
    const r = await request(denied, 'POST', SSAR, { spec: { resourceAttributes: { verb: 'get', resource: 'pods' } } });
    expect(r.status).toBe(403);
    const can = await kubectl(denied, ['auth', 'can-i', 'create', 'pods']);
    expect(can.code).not.toBe(0);
  });
});

describe('self subject review', () => {
  it('kubectl auth whoami prints the authenticated user', async () => {
    const r = await kubectl(s, ['auth', 'whoami']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/Username\s+admin/);
    expect(r.stdout).toMatch(/Groups\s+\[system:masters system:authenticated\]/);
  });
});

describe('service account tokens', () => {
  it('every namespace has a default ServiceAccount, new ones too', async () => {
    for (const ns of ['default', 'kube-system', 'kube-public', 'kube-node-lease']) {
      expect((await request(s, 'GET', `/api/v1/namespaces/${ns}/serviceaccounts/default`)).status).toBe(200);
    }
    expect((await kubectl(s, ['create', 'namespace', 'sa-ns'])).code).toBe(0);
    await waitFor(async () => (await request(s, 'GET', '/api/v1/namespaces/sa-ns/serviceaccounts/default')).status === 200);
  });

  it('kubectl create token prints a signed JWT with kube claims that authenticates as the account', async () => {
    const r = await kubectl(s, ['create', 'token', 'default']);
    expect(r.code).toBe(0);
    const token = r.stdout.trim();
    const [h, p] = token.split('.').slice(0, 2).map((x) => JSON.parse(Buffer.from(x, 'base64url').toString()));
    expect(h.alg).toBe('RS256');
    const sa = (await request(s, 'GET', '/api/v1/namespaces/default/serviceaccounts/default')).json();
    expect(p).toMatchObject({
      iss: 'https://kubernetes.default.svc.cluster.local',
      aud: ['https://kubernetes.default.svc.cluster.local'],
      sub: 'system:serviceaccount:default:default',
      'kubernetes.io': { namespace: 'default', serviceaccount: { name: 'default', uid: sa.metadata.uid } },
    });
    expect(p.exp - p.iat).toBe(3600);
    const who = await kubectl(s, ['--token', token, 'auth', 'whoami']);
    expect(who.stdout).toMatch(/Username\s+system:serviceaccount:default:default/);
    expect(who.stdout).toContain('[system:serviceaccounts system:serviceaccounts:default system:authenticated]');

    const review = await request(s, 'POST', '/apis/authentication.k8s.io/v1/tokenreviews', { spec: { token } });
    expect(review.status).toBe(201);
    expect(review.json().status).toMatchObject({ authenticated: true, user: { username: 'system:serviceaccount:default:default', uid: sa.metadata.uid } });
    const bad = await request(s, 'POST', '/apis/authentication.k8s.io/v1/tokenreviews', { spec: { token: 'nope' } });
    expect(bad.json().status).toEqual({ user: {} });
  });

  it('a token of a deleted account is refused (--service-account-lookup)', async () => {
    await request(s, 'POST', '/api/v1/namespaces/default/serviceaccounts', { metadata: { name: 'gone' } });
    const token = (await kubectl(s, ['create', 'token', 'gone', '--duration', '20m'])).stdout.trim();
    expect((await request(s, 'GET', '/api/v1/namespaces/default/pods', undefined, { authorization: `Bearer ${token}` })).status).toBe(200);
    await request(s, 'DELETE', '/api/v1/namespaces/default/serviceaccounts/gone');
    expect((await request(s, 'GET', '/api/v1/namespaces/default/pods', undefined, { authorization: `Bearer ${token}` })).status).toBe(401);
    const review = await request(s, 'POST', '/apis/authentication.k8s.io/v1/tokenreviews', { spec: { token } });
    expect(review.json().status).toEqual({ user: {}, error: 'serviceaccounts "gone" not found' });
  });

  it('TokenRequest: expirationSeconds of at least 10 minutes, pod binding, unknown accounts', async () => {
    const path = '/api/v1/namespaces/default/serviceaccounts/default/token';
    const short = await request(s, 'POST', path, { spec: { expirationSeconds: 60 } });
    expect(short.status).toBe(422);
    expect(short.json().message).toBe('TokenRequest.authentication.k8s.io "default" is invalid: spec.expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes');
    expect((await request(s, 'POST', '/api/v1/namespaces/default/serviceaccounts/nobody/token', { spec: {} })).status).toBe(404);
    const pod = (await request(s, 'POST', '/api/v1/namespaces/default/pods', { metadata: { name: 'tp' }, spec: { containers: [{ name: 'c', image: 'x' }] } })).json();
    const r = await request(s, 'POST', path, { spec: { audiences: ['x'], boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: 'tp' } } });
    expect(r.status).toBe(201);
    const body = r.json();
    expect(body).toMatchObject({ kind: 'TokenRequest', apiVersion: 'authentication.k8s.io/v1', metadata: { name: 'default', namespace: 'default' }, spec: { audiences: ['x'], expirationSeconds: 3600 } });
    const claims = JSON.parse(Buffer.from(body.status.token.split('.')[1], 'base64url').toString());
    expect(claims['kubernetes.io'].pod).toEqual({ name: 'tp', uid: pod.metadata.uid });
    // audience x is not the API's: the token does not authenticate requests
    expect((await request(s, 'GET', '/api/v1/namespaces', undefined, { authorization: `Bearer ${body.status.token}` })).status).toBe(401);
    const cm = await request(s, 'POST', path, { spec: { boundObjectRef: { apiVersion: 'v1', kind: 'ConfigMap', name: 'x' } } });
    expect(cm.status).toBe(400);
    expect(cm.json().message).toBe('cannot bind token to object of type /v1, Kind=ConfigMap');
  });

  it('serves the OpenID discovery document and the JWKS that verifies the tokens', async () => {
    const conf = await request(s, 'GET', '/.well-known/openid-configuration');
    expect(conf.status).toBe(200);
    expect(conf.json()).toMatchObject({ issuer: 'https://kubernetes.default.svc.cluster.local', jwks_uri: expect.stringMatching(/\/openid\/v1\/jwks$/), id_token_signing_alg_values_supported: ['RS256'] });
    const jwks = await request(s, 'GET', '/openid/v1/jwks');
    expect(jwks.headers['content-type']).toBe('application/jwk-set+json');
    const token = (await kubectl(s, ['create', 'token', 'default'])).stdout.trim();
    const kid = JSON.parse(Buffer.from(token.split('.')[0], 'base64url').toString()).kid;
    expect(jwks.json().keys.map((k: any) => k.kid)).toContain(kid);
  });
});

describe('deprecation warnings', () => {
  it('a request to a deprecated resource carries kube\'s Warning header; kubectl prints it', async () => {
    const cs = await request(s, 'GET', '/api/v1/componentstatuses');
    expect(cs.headers['warning']).toBe('299 - "v1 ComponentStatus is deprecated in v1.19+"');
    const ep = await request(s, 'GET', '/api/v1/namespaces/default/endpoints');
    expect(ep.headers['warning']).toBe('299 - "v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice"');
    expect((await request(s, 'GET', '/api/v1/namespaces/default/configmaps')).headers['warning']).toBeUndefined();
    const k = await kubectl(s, ['get', 'endpoints']);
    expect(k.stderr).toContain('Warning: v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice');
  });

  it('review kinds have no storage version hash in discovery', async () => {
    const doc = (await request(s, 'GET', '/apis/authorization.k8s.io/v1')).json();
    const ssar = doc.resources.find((r: any) => r.name === 'selfsubjectaccessreviews');
    expect(ssar).toEqual({ name: 'selfsubjectaccessreviews', singularName: 'selfsubjectaccessreview', namespaced: false, kind: 'SelfSubjectAccessReview', verbs: ['create'] });
  });
});
