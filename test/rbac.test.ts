// The RBAC authorization mode against a started server (--authorization-mode=Node,RBAC) with
// a token file of unprivileged users, through real kubectl where a user would use it: kube's
// Forbidden errors, roles and bindings taking effect, auth can-i, aggregation into view, the
// bootstrap policy, escalation prevention and service-account subjects.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request, startServer, until, type TestServer } from './helpers/server.js';
import { kubectl, kubectlOk } from './helpers/kubectl.js';

let s: TestServer;
let dir: string;
const TOKENS = { bob: 'bob-token', carol: 'carol-token', dave: 'dave-token' };

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'kubeshard-rbac-'));
  const file = join(dir, 'tokens.csv');
  writeFileSync(file, `${TOKENS.bob},bob,uid-bob\n${TOKENS.carol},carol,uid-carol,"team-a"\n${TOKENS.dave},dave,uid-dave\n`);
  s = await startServer({ args: ['--authorization-mode', 'Node,RBAC', '--token-auth-file', file] });
});
afterAll(async () => {
  await s?.stop();
  s?.cleanup();
  rmSync(dir, { recursive: true, force: true });
});

const as = (user: keyof typeof TOKENS, args: string[]) => kubectl(s, ['--token', TOKENS[user], ...args]);
const bearer = (user: keyof typeof TOKENS) => ({ authorization: `Bearer ${TOKENS[user]}` });
const SSAR = '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews';

describe('RBAC', () => {
  it('puts the bootstrap policy in place, with admin/edit/view filled by aggregation', async () => {
    for (const name of ['cluster-admin', 'admin', 'edit', 'view', 'system:discovery', 'system:basic-user', 'system:public-info-viewer', 'system:aggregate-to-view']) {
      const r = await request(s, 'GET', `/apis/rbac.authorization.k8s.io/v1/clusterroles/${encodeURIComponent(name)}`);
      expect(r.status, name).toBe(200);
      expect(r.json().metadata.annotations['rbac.authorization.kubernetes.io/autoupdate']).toBe('true');
      expect(r.json().metadata.labels['kubernetes.io/bootstrapping']).toBe('rbac-defaults');
    }
    const crb = (await request(s, 'GET', '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/system:public-info-viewer')).json();
    expect(crb.subjects.map((x: any) => x.name)).toEqual(['system:authenticated', 'system:unauthenticated']);
    const yaml = await kubectlOk(s, ['get', 'clusterrole', 'admin', '-o', 'yaml']);
    expect(yaml).toContain('rbac.authorization.k8s.io/aggregate-to-admin: "true"');
    expect(yaml).toContain('localsubjectaccessreviews'); // from system:aggregate-to-admin
    expect(yaml).toContain('pods/exec'); // from system:aggregate-to-edit, through edit
    expect(yaml).toContain('controllerrevisions'); // from system:aggregate-to-view, through view and edit
  });

  it('refuses an unprivileged user with kube Forbidden errors; discovery and health stay open', async () => {
    const r = await as('bob', ['get', 'pods', '-n', 'default']);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('Error from server (Forbidden): pods is forbidden: User "bob" cannot list resource "pods" in API group "" in the namespace "default"');
    const ns = await as('bob', ['get', 'namespace', 'default']);
    expect(ns.stderr).toContain('Error from server (Forbidden): namespaces "default" is forbidden: User "bob" cannot get resource "namespaces" in API group "" in the namespace "default"');
    expect((await request(s, 'GET', '/apis', undefined, bearer('bob'))).status).toBe(200);
    const anon = await request(s, 'GET', '/healthz', undefined, { authorization: '' });
    expect(anon.status).toBe(200);
    const anonPods = await request(s, 'GET', '/api/v1/pods', undefined, { authorization: '' });
    expect(anonPods.status).toBe(403);
    expect(anonPods.json()).toMatchObject({
      kind: 'Status',
      status: 'Failure',
      reason: 'Forbidden',
      code: 403,
      message: 'pods is forbidden: User "system:anonymous" cannot list resource "pods" in API group "" at the cluster scope',
      details: { kind: 'pods' },
    });
    const anonApi = await request(s, 'GET', '/api', undefined, { authorization: '' });
    expect(anonApi.status).toBe(403);
    expect(anonApi.json().message).toBe('forbidden: User "system:anonymous" cannot get path "/api"');
  });

  it('a Role and RoleBinding made with kubectl grant exactly what they say', async () => {
    await kubectlOk(s, ['create', 'role', 'pod-reader', '--verb=get,list', '--resource=pods', '-n', 'default']);
    await kubectlOk(s, ['create', 'rolebinding', 'bob-reads', '--role=pod-reader', '--user=bob', '-n', 'default']);
    const ok = await as('bob', ['get', 'pods', '-n', 'default']);
    expect(ok.code).toBe(0);
    const del = await as('bob', ['delete', 'pod', 'some-pod', '-n', 'default']);
    expect(del.stderr).toContain('Error from server (Forbidden): pods "some-pod" is forbidden: User "bob" cannot delete resource "pods" in API group "" in the namespace "default"');
    const other = await as('bob', ['get', 'pods', '-n', 'kube-system']);
    expect(other.stderr).toContain('User "bob" cannot list resource "pods" in API group "" in the namespace "kube-system"');

    expect((await as('bob', ['auth', 'can-i', 'list', 'pods', '-n', 'default'])).stdout.trim()).toBe('yes');
    const no = await as('bob', ['auth', 'can-i', 'create', 'pods', '-n', 'default']);
    expect(no.stdout.trim()).toBe('no');
    expect(no.code).toBe(1);
    const list = await as('bob', ['auth', 'can-i', '--list', '-n', 'default']);
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(/^pods\s+\[\]\s+\[\]\s+\[get list\]$/m);
    expect(list.stdout).toMatch(/^selfsubjectaccessreviews\.authorization\.k8s\.io\s+\[\]\s+\[\]\s+\[create\]$/m);
    expect(list.stdout).toMatch(/^\s+\[\/api\/\*\]\s+\[\]\s+\[get\]$/m);

    // a SubjectAccessReview says which binding allowed it
    const sar = await request(s, 'POST', '/apis/authorization.k8s.io/v1/subjectaccessreviews', { spec: { user: 'bob', resourceAttributes: { verb: 'list', resource: 'pods', namespace: 'default' } } });
    expect(sar.json().status).toEqual({ allowed: true, reason: 'RBAC: allowed by RoleBinding "bob-reads/default" of Role "pod-reader" to User "bob"' });
    const sarAdmin = await request(s, 'POST', '/apis/authorization.k8s.io/v1/subjectaccessreviews', { spec: { user: 'x', groups: ['system:masters'], resourceAttributes: { verb: 'delete', resource: 'nodes' } } });
    expect(sarAdmin.json().status).toEqual({ allowed: true, reason: 'RBAC: allowed by ClusterRoleBinding "cluster-admin" of ClusterRole "cluster-admin" to Group "system:masters"' });
    const sarNo = await request(s, 'POST', '/apis/authorization.k8s.io/v1/subjectaccessreviews', { spec: { user: 'bob', resourceAttributes: { verb: 'list', resource: 'secrets', namespace: 'default' } } });
    expect(sarNo.json().status).toEqual({ allowed: false });
  });

  it('a binding to a missing role denies with the RBAC resolution error in the message', async () => {
    await kubectlOk(s, ['create', 'rolebinding', 'dangling', '--clusterrole=no-such-role', '--user=bob', '-n', 'default']);
    const r = await as('bob', ['get', 'configmaps', '-n', 'default']);
    expect(r.stderr).toContain('User "bob" cannot list resource "configmaps" in API group "" in the namespace "default": RBAC: clusterrole.rbac.authorization.k8s.io "no-such-role" not found');
    await kubectlOk(s, ['delete', 'rolebinding', 'dangling', '-n', 'default']);
  });

  it('honors a ClusterRole aggregated into view', async () => {
    await kubectlOk(s, ['create', 'rolebinding', 'carol-views', '--clusterrole=view', '--group=team-a', '-n', 'default']);
    const can = async () => (await request(s, 'POST', SSAR, { spec: { resourceAttributes: { verb: 'list', group: 'example.com', resource: 'widgets', namespace: 'default' } } }, bearer('carol'))).json().status.allowed;
    expect(await can()).toBe(false);
    await kubectlOk(
      s,
      ['apply', '-f', '-'],
      `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: widget-viewer
  labels:
    rbac.authorization.k8s.io/aggregate-to-view: "true"
rules:
- apiGroups: ["example.com"]
  resources: ["widgets"]
  verbs: ["get", "list", "watch"]
`,
    );
    await until(async () => (await kubectlOk(s, ['get', 'clusterrole', 'view', '-o', 'yaml'])).includes('example.com'));
    expect(await can()).toBe(true);
    // and through view into edit and admin
    await until(async () => (await kubectlOk(s, ['get', 'clusterrole', 'admin', '-o', 'yaml'])).includes('example.com'));
    expect((await as('carol', ['get', 'configmaps', '-n', 'default'])).code).toBe(0);
    expect((await as('carol', ['auth', 'can-i', 'create', 'configmaps', '-n', 'default'])).stdout.trim()).toBe('no');
  });

  it('refuses escalation: roles granting more than held, bindings to roles not held, unless escalate/bind', async () => {
    await kubectlOk(s, ['create', 'namespace', 'esc']);
    await kubectlOk(s, ['create', 'role', 'role-maker', '--verb=create,get,update', '--resource=roles,rolebindings', '-n', 'esc']);
    await kubectlOk(s, ['create', 'rolebinding', 'dave-makes', '--role=role-maker', '--user=dave', '-n', 'esc']);
    // a role within dave's own permissions is fine
    expect((await as('dave', ['create', 'role', 'small', '--verb=get', '--resource=roles', '-n', 'esc'])).code).toBe(0);
    const r = await as('dave', ['create', 'role', 'big', '--verb=get,list', '--resource=pods,secrets', '-n', 'esc']);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain(
      'Error from server (Forbidden): roles.rbac.authorization.k8s.io "big" is forbidden: user "dave" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[""], Resources:["pods"], Verbs:["get" "list"]}\n{APIGroups:[""], Resources:["secrets"], Verbs:["get" "list"]}',
    );
    const b = await as('dave', ['create', 'rolebinding', 'dave-admin', '--clusterrole=admin', '--user=dave', '-n', 'esc']);
    expect(b.code).not.toBe(0);
    expect(b.stderr).toContain('rolebindings.rbac.authorization.k8s.io "dave-admin" is forbidden: user "dave" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:');
    // binding a role dave holds entirely is allowed
    expect((await as('dave', ['create', 'rolebinding', 'dave-small', '--role=small', '--user=dave', '-n', 'esc'])).code).toBe(0);
    // the bind verb on the admin ClusterRole lets dave bind it; escalate lets him write any role
    await kubectlOk(s, ['create', 'role', 'binder', '--verb=bind,escalate', '--resource=clusterroles,roles', '-n', 'esc']);
    await kubectlOk(s, ['create', 'rolebinding', 'dave-binds', '--role=binder', '--user=dave', '-n', 'esc']);
    expect((await as('dave', ['create', 'rolebinding', 'dave-admin', '--clusterrole=admin', '--user=dave', '-n', 'esc'])).code).toBe(0);
    expect((await as('dave', ['create', 'role', 'big2', '--verb=get,list', '--resource=nodes', '-n', 'esc'])).code).toBe(0);
    // the server's own admin (system:masters) is never refused
    expect((await kubectl(s, ['create', 'clusterrole', 'anything', '--verb=*', '--resource=*'])).code).toBe(0);
  });

  it('authorizes a service account token through a RoleBinding with a ServiceAccount subject', async () => {
    await kubectlOk(s, ['create', 'serviceaccount', 'robot', '-n', 'default']);
    const token = (await kubectlOk(s, ['create', 'token', 'robot', '-n', 'default'])).trim();
    const denied = await kubectl(s, ['--token', token, 'get', 'pods', '-n', 'default']);
    expect(denied.stderr).toContain('User "system:serviceaccount:default:robot" cannot list resource "pods" in API group "" in the namespace "default"');
    await kubectlOk(s, ['create', 'rolebinding', 'robot-reads', '--role=pod-reader', '--serviceaccount=default:robot', '-n', 'default']);
    expect((await kubectl(s, ['--token', token, 'get', 'pods', '-n', 'default'])).code).toBe(0);
    expect((await kubectl(s, ['--token', token, 'get', 'secrets', '-n', 'default'])).stderr).toContain('cannot list resource "secrets"');
    const sar = await request(s, 'POST', '/apis/authorization.k8s.io/v1/subjectaccessreviews', { spec: { user: 'system:serviceaccount:default:robot', resourceAttributes: { verb: 'get', resource: 'pods', namespace: 'default' } } });
    expect(sar.json().status.reason).toBe('RBAC: allowed by RoleBinding "robot-reads/default" of Role "pod-reader" to ServiceAccount "robot/default"');
  });

  it("puts kube's namespaced bootstrap policy in place: kube-system's and kube-public's Roles and RoleBindings", async () => {
    const roles = await kubectlOk(s, ['get', 'roles', '-A', '-l', 'kubernetes.io/bootstrapping=rbac-defaults', '-o', 'jsonpath={range .items[*]}{.metadata.namespace}/{.metadata.name}{"\\n"}{end}']);
    expect(roles.trim().split('\n').sort()).toEqual([
      'kube-public/system:controller:bootstrap-signer',
      'kube-system/extension-apiserver-authentication-reader',
      'kube-system/system::leader-locking-kube-controller-manager',
      'kube-system/system::leader-locking-kube-scheduler',
      'kube-system/system:controller:bootstrap-signer',
      'kube-system/system:controller:cloud-provider',
      'kube-system/system:controller:token-cleaner',
    ]);
    const bindings = await kubectlOk(s, ['get', 'rolebindings', '-A', '-l', 'kubernetes.io/bootstrapping=rbac-defaults', '-o', 'jsonpath={range .items[*]}{.metadata.namespace}/{.metadata.name}->{.roleRef.name}{"\\n"}{end}']);
    expect(bindings.trim().split('\n').sort()).toEqual([
      'kube-public/system:controller:bootstrap-signer->system:controller:bootstrap-signer',
      'kube-system/system::extension-apiserver-authentication-reader->extension-apiserver-authentication-reader',
      'kube-system/system::leader-locking-kube-controller-manager->system::leader-locking-kube-controller-manager',
      'kube-system/system::leader-locking-kube-scheduler->system::leader-locking-kube-scheduler',
      'kube-system/system:controller:bootstrap-signer->system:controller:bootstrap-signer',
      'kube-system/system:controller:cloud-provider->system:controller:cloud-provider',
      'kube-system/system:controller:token-cleaner->system:controller:token-cleaner',
    ]);
    const reader = (await request(s, 'GET', '/apis/rbac.authorization.k8s.io/v1/namespaces/kube-system/rolebindings/system::extension-apiserver-authentication-reader')).json();
    expect(reader.metadata.annotations['rbac.authorization.kubernetes.io/autoupdate']).toBe('true');
    expect(reader.subjects).toEqual([
      { kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: 'system:kube-controller-manager' },
      { kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: 'system:kube-scheduler' },
    ]);
  });

  it('kubectl auth can-i as the bound subjects answers as kube', async () => {
    const canI = async (as: string, args: string[]) => {
      const r = await kubectl(s, ['auth', 'can-i', `--as=${as}`, ...args]);
      return r.stdout.trim();
    };
    const SA = (n: string) => `system:serviceaccount:kube-system:${n}`;
    const cases: Array<[string, string[], string]> = [
      ['system:kube-scheduler', ['get', 'configmaps/extension-apiserver-authentication', '-n', 'kube-system'], 'yes'],
      ['system:kube-scheduler', ['update', 'configmaps/kube-scheduler', '-n', 'kube-system'], 'yes'],
      [SA('kube-scheduler'), ['update', 'configmaps/kube-controller-manager', '-n', 'kube-system'], 'no'],
      [SA('kube-scheduler'), ['update', 'configmaps/kube-scheduler', '-n', 'kube-system'], 'yes'],
      [SA('leader-election-controller'), ['create', 'leases.coordination.k8s.io', '-n', 'kube-system'], 'yes'],
      [SA('leader-election-controller'), ['create', 'leases.coordination.k8s.io', '-n', 'default'], 'no'],
      [SA('token-cleaner'), ['delete', 'secrets', '-n', 'kube-system'], 'yes'],
      [SA('token-cleaner'), ['delete', 'secrets', '-n', 'default'], 'no'],
      [SA('bootstrap-signer'), ['list', 'secrets', '-n', 'kube-system'], 'yes'],
      [SA('bootstrap-signer'), ['update', 'configmaps/cluster-info', '-n', 'kube-public'], 'yes'],
      [SA('bootstrap-signer'), ['update', 'configmaps/other', '-n', 'kube-public'], 'no'],
      [SA('cloud-provider'), ['create', 'configmaps', '-n', 'kube-system'], 'yes'],
      [SA('cloud-provider'), ['delete', 'configmaps', '-n', 'kube-system'], 'no'],
      ['bob', ['get', 'configmaps/extension-apiserver-authentication', '-n', 'kube-system'], 'no'],
    ];
    for (const [as, args, want] of cases) expect(await canI(as, args), `${as} ${args.join(' ')}`).toBe(want);
  });

  it('recreates a deleted bootstrap role at the next start, and restores what an autoupdated Role lost', async () => {
    await kubectlOk(s, ['delete', 'clusterrole', 'system:basic-user']);
    await kubectlOk(s, ['delete', 'rolebinding', 'system:controller:token-cleaner', '-n', 'kube-system']);
    const path = '/apis/rbac.authorization.k8s.io/v1/namespaces/kube-system/roles/system::leader-locking-kube-scheduler';
    // one Role loses a rule but keeps autoupdate; another says "false" and keeps its change
    const mine = '/apis/rbac.authorization.k8s.io/v1/namespaces/kube-system/roles/system:controller:cloud-provider';
    expect((await request(s, 'PATCH', path, { rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['watch'] }] }, { 'content-type': 'application/merge-patch+json' })).status).toBe(200);
    expect((await request(s, 'PATCH', mine, { metadata: { annotations: { 'rbac.authorization.kubernetes.io/autoupdate': 'false' } }, rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get'] }] }, { 'content-type': 'application/merge-patch+json' })).status).toBe(200);
    // a binding made again to another role is made again to the policy's (roleRef cannot be updated)
    const bsPath = '/apis/rbac.authorization.k8s.io/v1/namespaces/kube-public/rolebindings/system:controller:bootstrap-signer';
    expect((await request(s, 'DELETE', bsPath)).status).toBe(200);
    await kubectlOk(s, ['create', 'rolebinding', 'system:controller:bootstrap-signer', '-n', 'kube-public', '--clusterrole=view', '--user=mallory']);
    // a Role whose annotation was taken away is not protected by that (only "false" protects)
    const tcPath = '/apis/rbac.authorization.k8s.io/v1/namespaces/kube-system/roles/system:controller:token-cleaner';
    expect((await request(s, 'PATCH', tcPath, { metadata: { annotations: null }, rules: [{ apiGroups: [''], resources: ['secrets'], verbs: ['get'] }] }, { 'content-type': 'application/merge-patch+json' })).status).toBe(200);
    await s.stop();
    await s.restart();
    expect((await request(s, 'GET', '/apis/rbac.authorization.k8s.io/v1/clusterroles/system:basic-user')).status).toBe(200);
    expect((await request(s, 'GET', '/apis/rbac.authorization.k8s.io/v1/namespaces/kube-system/rolebindings/system:controller:token-cleaner')).status).toBe(200);
    expect((await request(s, 'GET', path)).json().rules).toEqual([
      { apiGroups: [''], resources: ['configmaps'], verbs: ['watch'] },
      // (what was missing comes back broken down, one verb a rule, as kube's Covers returns it)
      { apiGroups: [''], resources: ['configmaps'], resourceNames: ['kube-scheduler'], verbs: ['get'] },
      { apiGroups: [''], resources: ['configmaps'], resourceNames: ['kube-scheduler'], verbs: ['update'] },
    ]);
    expect((await request(s, 'GET', mine)).json().rules).toEqual([{ apiGroups: [''], resources: ['configmaps'], verbs: ['get'] }]);
    const bs = (await request(s, 'GET', bsPath)).json();
    expect(bs.roleRef).toEqual({ apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'system:controller:bootstrap-signer' });
    expect(bs.subjects).toEqual([{ kind: 'ServiceAccount', name: 'bootstrap-signer', namespace: 'kube-system' }]);
    const tc = (await request(s, 'GET', tcPath)).json();
    expect(tc.metadata.annotations['rbac.authorization.kubernetes.io/autoupdate']).toBe('true');
    expect(tc.rules.some((r: any) => r.verbs.includes('delete') && r.resources.includes('secrets'))).toBe(true);
  });
});
