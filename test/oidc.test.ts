// Issue 21: OIDC (the --oidc-* flags and --authentication-config with CEL) and bootstrap
// tokens, end to end through kubectl against a really started server and a local HTTPS
// OpenID provider (test/helpers/oidc-issuer.ts) that counts its hits.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServer, request, until, type TestServer } from './helpers/server.js';
import { kubectlPath, kubectlOk } from './helpers/kubectl.js';
import { startIssuer, type TestIssuer } from './helpers/oidc-issuer.js';

const dir = mkdtempSync(join(tmpdir(), 'oidc-test-'));

function tokenKubeconfig(s: TestServer, name: string, token: string): string {
  const path = join(dir, `${name}-${Math.random().toString(36).slice(2)}.kubeconfig`);
  writeFileSync(
    path,
    `apiVersion: v1
kind: Config
clusters:
- name: ks
  cluster:
    server: ${s.url}
    certificate-authority-data: ${Buffer.from(s.ca).toString('base64')}
users:
- name: ${name}
  user:
    token: ${token}
contexts:
- name: ks
  context: {cluster: ks, user: ${name}}
current-context: ks
`,
    { mode: 0o600 },
  );
  return path;
}

function kubectlAs(kubeconfig: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((res) => {
    execFile(kubectlPath(), ['--kubeconfig', kubeconfig, ...args], { timeout: 30_000, env: { ...process.env, HOME: dir } }, (err, stdout, stderr) => {
      res({ code: err ? ((err as any).code ?? 1) : 0, stdout, stderr });
    });
  });
}

async function tokenReview(s: TestServer, token: string): Promise<any> {
  const r = await request(s, 'POST', '/apis/authentication.k8s.io/v1/tokenreviews', { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token } });
  expect(r.status).toBe(201);
  return r.json().status;
}

let issuer: TestIssuer;
beforeAll(async () => {
  issuer = await startIssuer();
});
afterAll(async () => {
  await issuer?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('--oidc-* flags and bootstrap tokens', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startServer({
      args: [
        '--authorization-mode=RBAC',
        `--oidc-issuer-url=${issuer.url}`,
        '--oidc-client-id=kubeshard',
        `--oidc-ca-file=${issuer.caFile}`,
        '--oidc-groups-claim=groups',
        '--oidc-groups-prefix=oidc:',
        '--oidc-required-claim=tenant=acme',
        '--enable-bootstrap-token-auth',
        '--controllers=*,tokencleaner',
      ],
    });
    await kubectlOk(s, ['create', 'clusterrolebinding', 'alice-view', '--clusterrole=view', `--user=${issuer.url}#alice`]);
  }, 90_000);
  afterAll(async () => {
    await s?.stop();
    s?.cleanup();
  });

  it('kubectl with an OIDC token is the issuer-prefixed user, RBAC-authorized through its binding', async () => {
    const token = await issuer.sign({ sub: 'alice', aud: 'kubeshard', tenant: 'acme', groups: ['dev', 'ops'] });
    const kc = tokenKubeconfig(s, 'alice', token);
    const who = await kubectlAs(kc, ['auth', 'whoami', '-o', 'json']);
    expect(who.code, who.stderr).toBe(0);
    const info = JSON.parse(who.stdout).status.userInfo;
    expect(info.username).toBe(`${issuer.url}#alice`);
    expect(info.groups).toEqual(['oidc:dev', 'oidc:ops', 'system:authenticated']);
    const pods = await kubectlAs(kc, ['get', 'pods', '-n', 'default']);
    expect(pods.code, pods.stderr).toBe(0);
    // view does not read secrets: authorization sees the prefixed name
    const secrets = await kubectlAs(kc, ['get', 'secrets', '-n', 'default']);
    expect(secrets.code).not.toBe(0);
    expect(secrets.stderr).toContain(`User "${issuer.url}#alice" cannot list resource "secrets"`);
  });

  it('refuses bad, expired, wrong-audience and claim-less tokens with 401 and kube\'s reasons', async () => {
    const expired = await issuer.sign({ sub: 'alice', aud: 'kubeshard', tenant: 'acme' }, { expiresIn: -120 });
    const wrongAud = await issuer.sign({ sub: 'alice', aud: 'other', tenant: 'acme' });
    const noTenant = await issuer.sign({ sub: 'alice', aud: 'kubeshard' });
    const good = await issuer.sign({ sub: 'alice', aud: 'kubeshard', tenant: 'acme' });
    const forged = good.slice(0, -6) + (good.endsWith('AAAAAA') ? 'BBBBBB' : 'AAAAAA');
    for (const t of [expired, wrongAud, noTenant, forged]) {
      const r = await request(s, 'GET', '/api/v1/namespaces/default/pods', undefined, { authorization: `Bearer ${t}` });
      expect(r.status).toBe(401);
      expect(r.json()).toMatchObject({ kind: 'Status', status: 'Failure', reason: 'Unauthorized', message: 'Unauthorized', code: 401 });
    }
    const k = await kubectlAs(tokenKubeconfig(s, 'expired', expired), ['get', 'pods']);
    expect(k.code).not.toBe(0);
    expect(k.stderr).toContain('error: You must be logged in to the server (Unauthorized)');
    expect((await tokenReview(s, expired)).error).toMatch(/^oidc: verify token: oidc: token is expired \(Token Expiry: \d{4}-\d\d-\d\d \d\d:\d\d:\d\d \+0000 UTC\)$/);
    expect((await tokenReview(s, wrongAud)).error).toBe('oidc: verify token: oidc: expected audience in ["kubeshard"] got ["other"]');
    expect((await tokenReview(s, noTenant)).error).toBe('oidc: required claim tenant not present in ID token');
    expect((await tokenReview(s, forged)).error).toBe('oidc: verify token: failed to verify signature: failed to verify id token signature');
  });

  it('does not contact the issuer per request; an unknown key id refreshes the keys once', async () => {
    const before = { ...issuer.hits };
    const token = await issuer.sign({ sub: 'alice', aud: 'kubeshard', tenant: 'acme' });
    for (let i = 0; i < 20; i++) {
      const r = await request(s, 'GET', '/api/v1/namespaces/default/pods', undefined, { authorization: `Bearer ${token}` });
      expect(r.status).toBe(200);
    }
    for (let i = 0; i < 5; i++) {
      const t = await issuer.sign({ sub: `alice`, aud: 'kubeshard', tenant: 'acme', n: i });
      expect((await request(s, 'GET', '/api/v1/namespaces/default/pods', undefined, { authorization: `Bearer ${t}` })).status).toBe(200);
    }
    expect(issuer.hits).toEqual(before);
    // a rotated key the server has not seen: one refresh fetches it and the token is accepted
    const { publish } = await issuer.rotate();
    publish();
    const rotated = await issuer.sign({ sub: 'alice', aud: 'kubeshard', tenant: 'acme' });
    const r = await request(s, 'GET', '/api/v1/namespaces/default/pods', undefined, { authorization: `Bearer ${rotated}` });
    expect(r.status).toBe(200);
    expect(issuer.hits.discovery).toBe(before.discovery);
    const afterRotation = issuer.hits.jwks;
    expect(afterRotation).toBeGreaterThan(before.jwks);
    // an unknown key id again at once: refused without another fetch (rate-limited)
    const stranger = await issuer.rotate();
    const t2 = await issuer.sign({ sub: 'alice', aud: 'kubeshard', tenant: 'acme' }, { kid: stranger.kid });
    for (let i = 0; i < 3; i++) expect((await request(s, 'GET', '/api/v1/namespaces/default/pods', undefined, { authorization: `Bearer ${t2}` })).status).toBe(401);
    expect(issuer.hits.jwks).toBe(afterRotation);
    stranger.publish(); // (later tests sign with it)
  });

  const bootstrapSecret = (id: string, secret: string, expiration?: string) => ({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: `bootstrap-token-${id}`, namespace: 'kube-system' },
    type: 'bootstrap.kubernetes.io/token',
    stringData: {
      'token-id': id,
      'token-secret': secret,
      'usage-bootstrap-authentication': 'true',
      'auth-extra-groups': 'system:bootstrappers:kubeadm:default-node-token',
      ...(expiration ? { expiration } : {}),
    },
  });

  it('a bootstrap token authenticates as system:bootstrap:<id>; an expired one does not, and the cleaner deletes it', async () => {
    const soon = new Date(Date.now() + 4000).toISOString().replace(/\.\d+Z$/, 'Z');
    for (const body of [bootstrapSecret('abcdef', '0123456789abcdef'), bootstrapSecret('expird', '0123456789abcdef', '2020-01-01T00:00:00Z'), bootstrapSecret('soonxx', 'fedcba9876543210', soon)]) {
      const r = await request(s, 'POST', '/api/v1/namespaces/kube-system/secrets', body);
      expect(r.status, r.body).toBe(201);
    }
    const who = await kubectlAs(tokenKubeconfig(s, 'boot', 'abcdef.0123456789abcdef'), ['auth', 'whoami', '-o', 'json']);
    expect(who.code, who.stderr).toBe(0);
    const info = JSON.parse(who.stdout).status.userInfo;
    expect(info.username).toBe('system:bootstrap:abcdef');
    expect(info.groups).toEqual(['system:bootstrappers', 'system:bootstrappers:kubeadm:default-node-token', 'system:authenticated']);
    // a wrong secret for a known id, and the expired token: 401
    expect((await request(s, 'GET', '/api', undefined, { authorization: 'Bearer abcdef.0123456789abcdee' })).status).toBe(401);
    expect((await request(s, 'GET', '/api', undefined, { authorization: 'Bearer expird.0123456789abcdef' })).status).toBe(401);
    // the cleaner deletes the expired Secret
    await until(async () => (await request(s, 'GET', '/api/v1/namespaces/kube-system/secrets/bootstrap-token-expird')).status === 404, 15_000);
    // the one expiring soon works until it expires, then is refused and deleted
    const first = await request(s, 'GET', '/api', undefined, { authorization: 'Bearer soonxx.fedcba9876543210' });
    expect(first.status).toBe(200);
    await until(async () => (await request(s, 'GET', '/api/v1/namespaces/kube-system/secrets/bootstrap-token-soonxx')).status === 404, 20_000);
    expect((await request(s, 'GET', '/api', undefined, { authorization: 'Bearer soonxx.fedcba9876543210' })).status).toBe(401);
    // the unexpired one is left alone
    expect((await request(s, 'GET', '/api/v1/namespaces/kube-system/secrets/bootstrap-token-abcdef')).status).toBe(200);
  }, 60_000);
});

describe('--authentication-config with CEL claim mappings', () => {
  let s: TestServer;
  let configFile: string;
  const config = (prefix: string) => `apiVersion: apiserver.config.k8s.io/v1
kind: AuthenticationConfiguration
jwt:
- issuer:
    url: ${issuer.url}
    certificateAuthority: |
${issuer.caPem.trim().split('\n').map((l) => '      ' + l).join('\n')}
    audiences: [kubeshard, other-client]
    audienceMatchPolicy: MatchAny
  claimValidationRules:
  - expression: "claims.tenant == 'acme'"
    message: tenant must be acme
  claimMappings:
    username:
      expression: "'${prefix}' + claims.sub"
    groups:
      expression: "claims.roles.map(r, 'role:' + r)"
    uid:
      claim: sid
    extra:
    - key: example.com/tenant
      valueExpression: claims.tenant
  userValidationRules:
  - expression: "!user.username.startsWith('${prefix}system:')"
    message: no system users from the issuer
anonymous:
  enabled: true
  conditions:
  - path: /healthz
`;
  beforeAll(async () => {
    configFile = join(dir, 'authn.yaml');
    writeFileSync(configFile, config('sso:'));
    s = await startServer({ args: ['--authorization-mode=RBAC', `--authentication-config=${configFile}`], env: { KUBESHARD_AUTHN_CONFIG_RELOAD_MS: '300' } });
    await kubectlOk(s, ['create', 'clusterrolebinding', 'sso-view', '--clusterrole=view', '--group=role:viewer']);
  }, 90_000);
  afterAll(async () => {
    await s?.stop();
    s?.cleanup();
  });

  it('maps claims with CEL (username, groups, uid, extra) and authorizes through the mapped group', async () => {
    const token = await issuer.sign({ sub: 'bob', aud: ['other-client'], tenant: 'acme', roles: ['viewer', 'dev'], sid: 'u-42' });
    const kc = tokenKubeconfig(s, 'bob', token);
    const who = await kubectlAs(kc, ['auth', 'whoami', '-o', 'json']);
    expect(who.code, who.stderr).toBe(0);
    const info = JSON.parse(who.stdout).status.userInfo;
    expect(info).toEqual({ username: 'sso:bob', uid: 'u-42', groups: ['role:viewer', 'role:dev', 'system:authenticated'], extra: { 'example.com/tenant': ['acme'] } });
    const pods = await kubectlAs(kc, ['get', 'configmaps', '-n', 'default']);
    expect(pods.code, pods.stderr).toBe(0);
  });

  it('claim and user validation rules refuse with their messages', async () => {
    const wrongTenant = await issuer.sign({ sub: 'bob', aud: 'kubeshard', tenant: 'evil', roles: [], sid: 'x' });
    const systemUser = await issuer.sign({ sub: 'system:admin', aud: 'kubeshard', tenant: 'acme', roles: [], sid: 'x' });
    for (const t of [wrongTenant, systemUser]) expect((await request(s, 'GET', '/api', undefined, { authorization: `Bearer ${t}` })).status).toBe(401);
    expect((await tokenReview(s, wrongTenant)).error).toBe("oidc: error evaluating claim validation expression: validation expression 'claims.tenant == 'acme'' failed: tenant must be acme");
    expect((await tokenReview(s, systemUser)).error).toBe("oidc: error evaluating user info validation rule: validation expression '!user.username.startsWith('sso:system:')' failed: no system users from the issuer");
  });

  it('anonymous only on the configured paths', async () => {
    expect((await request(s, 'GET', '/healthz', undefined, { authorization: '' })).status).toBe(200);
    const v = await request(s, 'GET', '/version', undefined, { authorization: '' });
    expect(v.status).toBe(401);
  });

  it('reloads the file when it changes', async () => {
    const token = await issuer.sign({ sub: 'carol', aud: 'kubeshard', tenant: 'acme', roles: ['viewer'], sid: 'c' });
    const kc = tokenKubeconfig(s, 'carol', token);
    writeFileSync(configFile, config('corp:'));
    await until(async () => {
      const who = await kubectlAs(kc, ['auth', 'whoami', '-o', 'json']);
      return who.code === 0 && JSON.parse(who.stdout).status.userInfo.username === 'corp:carol';
    }, 20_000);
    // an invalid file is refused and the running configuration kept
    writeFileSync(configFile, config('corp:').replace("claims.tenant == 'acme'", 'claims.tenant =='));
    await new Promise((r) => setTimeout(r, 1000));
    const who = await kubectlAs(kc, ['auth', 'whoami', '-o', 'json']);
    expect(JSON.parse(who.stdout).status.userInfo.username).toBe('corp:carol');
    expect(s.output()).toContain('authentication config: reload failed');
  });
});

describe('start-up refusals', () => {
  it('--authentication-config and --oidc-* flags are exclusive; --anonymous-auth with an anonymous section is refused', async () => {
    const f = join(dir, 'anon.yaml');
    writeFileSync(f, 'apiVersion: apiserver.config.k8s.io/v1\nkind: AuthenticationConfiguration\nanonymous:\n  enabled: true\n');
    await expect(startServer({ args: [`--authentication-config=${f}`, `--oidc-issuer-url=${issuer.url}`, '--oidc-client-id=x'] })).rejects.toThrow(/authentication-config file and oidc-\* flags are mutually exclusive/);
    await expect(startServer({ args: [`--authentication-config=${f}`, '--anonymous-auth=true'] })).rejects.toThrow(
      /anonymous: Forbidden: --anonymous-auth flag cannot be set when anonymous field is configured in authentication configuration file/,
    );
  }, 60_000);
});
