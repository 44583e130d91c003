// Impersonation headers (kubectl --as / --as-group / --as-uid) under RBAC and AlwaysAllow:
// the requester must be allowed to impersonate each user, group, uid and extra asked for;
// the request then runs as the impersonated user, system:authenticated added as kube does.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request, startServer, type TestServer } from './helpers/server.js';
import { kubectl, kubectlOk } from './helpers/kubectl.js';

let rbac: TestServer;
let open: TestServer;
let dir: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'kubeshard-imp-'));
  const file = join(dir, 'tokens.csv');
  writeFileSync(file, 'bob-token,bob,uid-bob\n');
  [rbac, open] = await Promise.all([startServer({ args: ['--authorization-mode', 'RBAC', '--token-auth-file', file] }), startServer()]);
});
afterAll(async () => {
  for (const x of [rbac, open]) {
    await x?.stop();
    x?.cleanup();
  }
  rmSync(dir, { recursive: true, force: true });
});

const SSR = '/apis/authentication.k8s.io/v1/selfsubjectreviews';

describe('impersonation under RBAC', () => {
  it('the admin (system:masters) acts as alice with her groups; alice holds only what is bound to her', async () => {
    const who = await kubectlOk(rbac, ['--as', 'alice', '--as-group', 'g', 'auth', 'whoami', '-o', 'json']);
    expect(JSON.parse(who).status.userInfo).toEqual({ username: 'alice', groups: ['g', 'system:authenticated'] });
    const denied = await kubectl(rbac, ['--as', 'alice', '--as-group', 'g', 'get', 'pods', '-n', 'default']);
    expect(denied.stderr).toContain('Error from server (Forbidden): pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "default"');
    await kubectlOk(rbac, ['create', 'rolebinding', 'g-views', '--clusterrole=view', '--group=g', '-n', 'default']);
    expect((await kubectl(rbac, ['--as', 'alice', '--as-group', 'g', 'get', 'pods', '-n', 'default'])).code).toBe(0);
    // without the group, alice alone has nothing
    expect((await kubectl(rbac, ['--as', 'alice', 'get', 'pods', '-n', 'default'])).code).not.toBe(0);
  });

  it('a service account user gets its groups; a uid and extras come through', async () => {
    const who = JSON.parse(await kubectlOk(rbac, ['--as', 'system:serviceaccount:default:robot', 'auth', 'whoami', '-o', 'json']));
    expect(who.status.userInfo).toEqual({ username: 'system:serviceaccount:default:robot', groups: ['system:serviceaccounts', 'system:serviceaccounts:default', 'system:authenticated'] });
    const r = await request(rbac, 'POST', SSR, {}, { 'impersonate-user': 'alice', 'impersonate-uid': 'u-1', 'impersonate-extra-scopes': 'a' });
    expect(r.status).toBe(201);
    expect(r.json().status.userInfo).toEqual({ username: 'alice', uid: 'u-1', groups: ['system:authenticated'], extra: { scopes: ['a'] } });
  });

  it('needs the impersonate verb on each user, group, uid and extra asked for', async () => {
    const bob = (args: string[]) => kubectl(rbac, ['--token', 'bob-token', ...args]);
    const r = await bob(['--as', 'alice', 'get', 'pods', '-n', 'default']);
    expect(r.stderr).toContain('Error from server (Forbidden): users "alice" is forbidden: User "bob" cannot impersonate resource "users" in API group "" at the cluster scope');
    await kubectlOk(
      rbac,
      ['apply', '-f', '-'],
      `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: impersonate-alice
rules:
- apiGroups: [""]
  resources: ["users"]
  resourceNames: ["alice"]
  verbs: ["impersonate"]
- apiGroups: [""]
  resources: ["serviceaccounts"]
  verbs: ["impersonate"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: bob-impersonates
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: impersonate-alice}
subjects:
- {kind: User, apiGroup: rbac.authorization.k8s.io, name: bob}
`,
    );
    expect(JSON.parse((await bob(['--as', 'alice', 'auth', 'whoami', '-o', 'json'])).stdout).status.userInfo.username).toBe('alice');
    const other = await bob(['--as', 'mallory', 'get', 'pods']);
    expect(other.stderr).toContain('users "mallory" is forbidden: User "bob" cannot impersonate resource "users" in API group "" at the cluster scope');
    const group = await bob(['--as', 'alice', '--as-group', 'system:masters', 'get', 'secrets']);
    expect(group.stderr).toContain('groups "system:masters" is forbidden: User "bob" cannot impersonate resource "groups" in API group "" at the cluster scope');
    const sa = await bob(['--as', 'system:serviceaccount:kube-system:x', 'auth', 'whoami']);
    expect(sa.code).toBe(0);
    const extra = await request(rbac, 'POST', SSR, {}, { authorization: 'Bearer bob-token', 'impersonate-user': 'alice', 'impersonate-extra-scopes': 'view' });
    expect(extra.status).toBe(403);
    expect(extra.json().message).toBe('userextras.authentication.k8s.io "view" is forbidden: User "bob" cannot impersonate resource "userextras/scopes" in API group "authentication.k8s.io" at the cluster scope');
    const uid = await request(rbac, 'POST', SSR, {}, { authorization: 'Bearer bob-token', 'impersonate-user': 'alice', 'impersonate-uid': 'u-9' });
    expect(uid.json().message).toBe('uids.authentication.k8s.io "u-9" is forbidden: User "bob" cannot impersonate resource "uids" in API group "authentication.k8s.io" at the cluster scope');
  });
});

describe('impersonation under AlwaysAllow', () => {
  it('kubectl --as --as-group runs as the impersonated user', async () => {
    const who = JSON.parse(await kubectlOk(open, ['--as', 'alice', '--as-group', 'g1', '--as-group', 'g2', 'auth', 'whoami', '-o', 'json']));
    expect(who.status.userInfo).toEqual({ username: 'alice', groups: ['g1', 'g2', 'system:authenticated'] });
    const anon = await request(open, 'POST', SSR, {}, { 'impersonate-user': 'system:anonymous' });
    expect(anon.json().status.userInfo).toEqual({ username: 'system:anonymous', groups: ['system:unauthenticated'] });
  });

  it('groups without a user are refused', async () => {
    const r = await request(open, 'POST', SSR, {}, { 'impersonate-group': 'g' });
    expect(r.status).toBe(500);
    expect(r.json().message).toContain('without impersonating a user');
  });
});
