// Webhook token authentication, the Webhook authorizer and ABAC against started servers,
// with a REAL HTTPS webhook started here (a CA, a serving certificate and a client
// certificate the server presents, made by openssl), driven through kubectl: a token the
// webhook accepts works and a wrong one is kube's 401; a webhook's Deny ends the chain even
// with RBAC after it; both caches are observable (a repeated request does not reach the
// webhook); ABAC allows and denies by its policy file.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import https from 'node:https';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { request, startServer, until, type TestServer } from './helpers/server.js';
import { kubectl, kubectlOk } from './helpers/kubectl.js';

let dir: string;
let hook: https.Server;
let hooked: TestServer;
let abac: TestServer;
let configured: TestServer;
let authzConfigFile: string;
let hookPortNo: number;
/** reviews received, by path */
const calls: Record<string, any[]> = { '/authn': [], '/authz': [] };
/** the client certificates the webhook saw (the server must present its kubeconfig's) */
const clientNames: string[] = [];

function certs(): void {
  dir = mkdtempSync(join(tmpdir(), 'kubeshard-authhooks-'));
  const run = (args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' });
  run(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', 'ca.key']);
  run(['req', '-x509', '-new', '-key', 'ca.key', '-days', '2', '-subj', '/CN=authhook-ca', '-out', 'ca.crt']);
  for (const [name, cn, ext] of [
    ['tls', 'authhook', 'subjectAltName=IP:127.0.0.1,DNS:localhost\n'],
    ['client', 'kube-apiserver-client', 'extendedKeyUsage=clientAuth\n'],
  ]) {
    run(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', `${name}.key`]);
    run(['req', '-new', '-key', `${name}.key`, '-subj', `/CN=${cn}`, '-out', `${name}.csr`]);
    writeFileSync(join(dir, `${name}.cnf`), ext);
    run(['x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-days', '2', '-extfile', `${name}.cnf`, '-out', `${name}.crt`]);
  }
}

function kubeconfig(file: string, path: string, port: number): string {
  const p = join(dir, file);
  // relative file names resolve against the kubeconfig's directory, as clientcmd does
  writeFileSync(
    p,
    [
      'apiVersion: v1',
      'kind: Config',
      'clusters:',
      '- name: hook',
      '  cluster:',
      `    server: https://127.0.0.1:${port}${path}`,
      '    certificate-authority: ca.crt',
      'users:',
      '- name: apiserver',
      '  user:',
      '    client-certificate: client.crt',
      '    client-key: client.key',
      'contexts:',
      '- name: hook',
      '  context: {cluster: hook, user: apiserver}',
      'current-context: hook',
      '',
    ].join('\n'),
  );
  return p;
}

/** the authentication webhook: one good token */
function authn(review: any): any {
  const ok = review.spec?.token === 'hook-token-alice';
  return { apiVersion: review.apiVersion, kind: 'TokenReview', status: ok ? { authenticated: true, user: { username: 'alice', uid: 'alice-uid', groups: ['hook-users'] } } : { authenticated: false } };
}

/** the authorization webhook: alice may use configmaps; nobody may touch secrets; else no opinion */
function authz(review: any): any {
  const ra = review.spec?.resourceAttributes;
  let status: any = { allowed: false };
  if (ra?.resource === 'secrets') status = { allowed: false, denied: true, reason: 'secrets are off limits' };
  else if (review.spec?.user === 'alice' && (ra?.resource === 'configmaps' || !ra)) status = { allowed: true, reason: 'alice may' };
  return { apiVersion: review.apiVersion, kind: 'SubjectAccessReview', status };
}

beforeAll(async () => {
  certs();
  hook = https.createServer(
    { key: readFileSync(join(dir, 'tls.key')), cert: readFileSync(join(dir, 'tls.crt')), ca: readFileSync(join(dir, 'ca.crt')), requestCert: true, rejectUnauthorized: true },
    (req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        const review = JSON.parse(body);
        const cert = (req.socket as any).getPeerCertificate?.();
        clientNames.push(cert?.subject?.CN ?? '');
        calls[req.url!]?.push(review);
        // a webhook that fails (403 is not retried): the configuration's failurePolicy decides
        if (req.url === '/broken') {
          calls['/broken'] = [...(calls['/broken'] ?? []), review];
          res.writeHead(403);
          res.end();
          return;
        }
        const answer = req.url === '/authn' ? authn(review) : authz(review);
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(answer));
      });
    },
  );
  await new Promise<void>((r) => hook.listen(0, '127.0.0.1', r));
  const port = (hook.address() as AddressInfo).port;
  const authnConfig = kubeconfig('authn.kubeconfig', '/authn', port);
  const authzConfig = kubeconfig('authz.kubeconfig', '/authz', port);
  const policy = join(dir, 'policy.jsonl');
  writeFileSync(
    policy,
    [
      '{"apiVersion":"abac.authorization.kubernetes.io/v1beta1","kind":"Policy","spec":{"group":"system:masters","namespace":"*","resource":"*","apiGroup":"*","nonResourcePath":"*"}}',
      '{"apiVersion":"abac.authorization.kubernetes.io/v1beta1","kind":"Policy","spec":{"group":"system:authenticated","readonly":true,"nonResourcePath":"*"}}',
      '{"apiVersion":"abac.authorization.kubernetes.io/v1beta1","kind":"Policy","spec":{"user":"bob","namespace":"default","resource":"pods","apiGroup":"","readonly":true}}',
      '',
    ].join('\n'),
  );
  hookPortNo = port;
  kubeconfig('broken.kubeconfig', '/broken', port);
  authzConfigFile = join(dir, 'authz-config.yaml');
  writeFileSync(authzConfigFile, authorizationConfig(true));
  const tokens = join(dir, 'tokens.csv');
  writeFileSync(tokens, 'bob-token,bob,bob-uid\n');
  [hooked, abac, configured] = await Promise.all([
    startServer({
      args: [
        '--front-threads', '1',
        '--authorization-mode', 'Webhook,RBAC',
        '--authorization-webhook-config-file', authzConfig,
        '--authentication-token-webhook-config-file', authnConfig,
        '--authentication-token-webhook-version', 'v1',
      ],
    }),
    startServer({ args: ['--front-threads', '1', '--authorization-mode', 'ABAC', '--authorization-policy-file', policy, '--token-auth-file', tokens] }),
    startServer({ args: ['--front-threads', '1', '--authorization-config', authzConfigFile, '--token-auth-file', tokens] }),
  ]);
}, 90_000);

afterAll(async () => {
  await Promise.all([hooked, abac, configured].filter(Boolean).map((s) => s.stop()));
  for (const s of [hooked, abac, configured]) s?.cleanup();
  hook?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const asAlice = ['--token', 'hook-token-alice'];

/**
 * An AuthorizationConfiguration: a broken webhook asked only about services (failurePolicy
 * Deny), when `broken`; the answering webhook asked only about bob (v1 reviews, no cache of
 * refusals); then RBAC.
 */
function authorizationConfig(broken: boolean): string {
  const hook = (name: string, file: string, expression: string, failurePolicy: string) => [
    '- type: Webhook',
    `  name: ${name}`,
    '  webhook:',
    '    timeout: 5s',
    '    subjectAccessReviewVersion: v1',
    '    matchConditionSubjectAccessReviewVersion: v1',
    `    failurePolicy: ${failurePolicy}`,
    '    authorizedTTL: 5m',
    '    cacheUnauthorizedRequests: false',
    `    connectionInfo: {type: KubeConfigFile, kubeConfigFile: ${join(dir, file)}}`,
    '    matchConditions:',
    `    - expression: ${JSON.stringify(expression)}`,
  ];
  return [
    'apiVersion: apiserver.config.k8s.io/v1',
    'kind: AuthorizationConfiguration',
    'authorizers:',
    ...(broken ? hook('broken', 'broken.kubeconfig', "has(request.resourceAttributes) && request.resourceAttributes.resource == 'services'", 'Deny') : []),
    ...hook('answering', 'authz.kubeconfig', "request.user == 'bob'", 'NoOpinion'),
    '- {type: RBAC, name: rbac}',
    '',
  ].join('\n');
}

describe('webhook token authentication', () => {
  it('kubectl with a token the webhook accepts works; the webhook sees a v1 TokenReview from the client certificate', async () => {
    const out = await kubectlOk(hooked, [...asAlice, 'auth', 'whoami', '-o', 'json']);
    const who = JSON.parse(out).status.userInfo;
    expect(who).toMatchObject({ username: 'alice', uid: 'alice-uid' });
    expect(who.groups).toEqual(['hook-users', 'system:authenticated']);
    const review = calls['/authn'].find((r) => r.spec.token === 'hook-token-alice');
    expect(review).toMatchObject({ apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview' });
    expect(clientNames).toContain('kube-apiserver-client');
  });

  it('the answer is cached: repeated requests with the token do not reach the webhook', async () => {
    const before = calls['/authn'].filter((r) => r.spec.token === 'hook-token-alice').length;
    expect(before).toBe(1);
    await kubectlOk(hooked, [...asAlice, 'get', 'configmaps', '-n', 'default']);
    await kubectlOk(hooked, [...asAlice, 'get', 'configmaps', '-n', 'default']);
    expect(calls['/authn'].filter((r) => r.spec.token === 'hook-token-alice').length).toBe(1);
  });

  it("a wrong token is a 401 with kube's message, and the refusal is cached too", async () => {
    const r = await kubectl(hooked, ['--token', 'not-a-token', 'get', 'pods']);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('You must be logged in to the server (Unauthorized)');
    const raw = await request(hooked, 'GET', '/api/v1/namespaces', undefined, { authorization: 'Bearer not-a-token' });
    expect(raw.status).toBe(401);
    expect(JSON.parse(raw.body)).toMatchObject({ kind: 'Status', status: 'Failure', message: 'Unauthorized', reason: 'Unauthorized', code: 401 });
    expect(calls['/authn'].filter((r) => r.spec.token === 'not-a-token').length).toBe(1);
  });
});

describe('webhook authorizer', () => {
  it('allows what the webhook allows (alice, who RBAC knows nothing of, lists configmaps)', async () => {
    await kubectlOk(hooked, [...asAlice, 'get', 'configmaps', '-n', 'kube-system']);
    const sar = calls['/authz'].find((r) => r.spec.user === 'alice' && r.spec.resourceAttributes?.resource === 'configmaps');
    // v1beta1 by default: the groups travel as "group"
    expect(sar).toMatchObject({ apiVersion: 'authorization.k8s.io/v1beta1', kind: 'SubjectAccessReview' });
    expect(sar.spec.group).toEqual(['hook-users', 'system:authenticated']);
  });

  it('no opinion passes to RBAC: the admin (system:masters) works, alice is refused pods', async () => {
    await kubectlOk(hooked, ['get', 'pods', '-n', 'default']);
    const r = await kubectl(hooked, [...asAlice, 'get', 'pods', '-n', 'default']);
    expect(r.stderr).toContain('pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "default"');
  });

  it("a Deny ends the chain even with RBAC after it: the admin cannot list secrets; SubjectAccessReview says denied", async () => {
    const r = await kubectl(hooked, ['get', 'secrets', '-n', 'default']);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('secrets is forbidden: User');
    expect(r.stderr).toContain('secrets are off limits');
    const sar = await kubectlOk(hooked, ['create', '-o', 'json', '-f', '-'], JSON.stringify({ apiVersion: 'authorization.k8s.io/v1', kind: 'SubjectAccessReview', spec: { user: 'carol', groups: ['system:masters'], resourceAttributes: { verb: 'get', resource: 'secrets', namespace: 'default' } } }));
    expect(JSON.parse(sar).status).toEqual({ allowed: false, denied: true, reason: 'secrets are off limits' });
  });

  it('answers are cached: the same question twice reaches the webhook once', async () => {
    const count = () => calls['/authz'].filter((r) => r.spec.user === 'alice' && r.spec.resourceAttributes?.resource === 'configmaps' && r.spec.resourceAttributes?.namespace === 'kube-public').length;
    await kubectlOk(hooked, [...asAlice, 'get', 'configmaps', '-n', 'kube-public']);
    await kubectlOk(hooked, [...asAlice, 'get', 'configmaps', '-n', 'kube-public']);
    expect(count()).toBe(1);
    // a denial is cached as well
    const denials = () => calls['/authz'].filter((r) => r.spec.user === 'alice' && r.spec.resourceAttributes?.resource === 'secrets').length;
    await kubectl(hooked, [...asAlice, 'get', 'secrets', '-n', 'default']);
    await kubectl(hooked, [...asAlice, 'get', 'secrets', '-n', 'default']);
    expect(denials()).toBe(1);
  });
});

describe('ABAC', () => {
  it('allows what a policy allows: bob reads pods in default', async () => {
    const r = await kubectl(abac, ['--token', 'bob-token', 'get', 'pods', '-n', 'default']);
    expect(r.code).toBe(0);
    expect(r.stderr).toContain('No resources found in default namespace.');
  });
  it('denies the rest with "No policy matched."', async () => {
    const write = await kubectl(abac, ['--token', 'bob-token', 'create', 'configmap', 'x', '-n', 'default']);
    expect(write.stderr).toContain('configmaps is forbidden: User "bob" cannot create resource "configmaps" in API group "" in the namespace "default": No policy matched.');
    const other = await kubectl(abac, ['--token', 'bob-token', 'get', 'pods', '-n', 'kube-system']);
    expect(other.stderr).toContain('pods is forbidden: User "bob" cannot list resource "pods" in API group "" in the namespace "kube-system"');
    // the admin's policy covers everything
    await kubectlOk(abac, ['create', 'configmap', 'y', '-n', 'default']);
  });
});

describe('--authorization-config', () => {
  it('matchConditions choose the webhook; a failing webhook under failurePolicy Deny denies with its error', async () => {
    const before = calls['/authz'].length;
    // the admin is not bob: the answering webhook is skipped, RBAC allows
    await kubectlOk(configured, ['get', 'configmaps', '-n', 'default']);
    expect(calls['/authz'].length).toBe(before);
    // bob is asked about (v1: groups), and the webhook denies secrets
    const r = await kubectl(configured, ['--token', 'bob-token', 'get', 'secrets', '-n', 'default']);
    expect(r.stderr).toContain('secrets are off limits');
    const sar = calls['/authz'].at(-1);
    expect(sar).toMatchObject({ apiVersion: 'authorization.k8s.io/v1', spec: { user: 'bob', groups: ['system:authenticated'] } });
    // services: the broken webhook is asked and fails closed, even for the admin
    const svc = await kubectl(configured, ['get', 'services', '-n', 'default']);
    expect(svc.code).not.toBe(0);
    expect(svc.stderr).toContain('services is forbidden');
    expect(calls['/broken']?.length).toBeGreaterThan(0);
  });

  it('is reloaded when the file changes', async () => {
    writeFileSync(authzConfigFile, authorizationConfig(false));
    await until(async () => (await kubectl(configured, ['get', 'services', '-n', 'default'])).code === 0, 20_000);
    expect(configured.output()).toContain('reloaded');
  });

  it('is exclusive with --authorization-mode, in kube\'s words', async () => {
    await expect(startServer({ args: ['--authorization-config', authzConfigFile, '--authorization-mode', 'RBAC'] })).rejects.toThrow(
      '--authorization-config can not be specified when --authorization-mode or --authorization-webhook-* flags are defined',
    );
  });
});
