// A node bootstraps (spec 5.4, issue 21's must-show) against a server with
// --authorization-mode=Node,RBAC, NodeRestriction and the cluster signing CA: the node's
// identity (a static token of system:node:n1 in system:nodes) creates a CSR for
// kubernetes.io/kube-apiserver-client-kubelet, `kubectl certificate approve` makes
// status.certificate a certificate the CA signed for CN=system:node:n1; with that
// certificate the node reads the secret of a pod bound to it and is refused another pod's
// secret with the Node authorizer's reason; NodeRestriction keeps it off another node's
// labels. Also: kube's CSR validation, the signer refusing a wrong subject, the node client
// auto-approver, and the whole chain from a real bootstrap token (a bootstrap.kubernetes.io/token
// Secret, --enable-bootstrap-token-auth): its CSR auto-approved and signed, the certificate then
// used on the node:http2 front end and confined by the Node authorizer; and server-side apply
// needing create to create.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { X509Certificate } from 'node:crypto';
import { request, startServer, until, type TestServer } from './helpers/server.js';
import { kubectl, kubectlOk, kubectlPath, certKubeconfig } from './helpers/kubectl.js';

const dir = mkdtempSync(join(tmpdir(), 'kubeshard-node-bootstrap-'));
const ssl = (args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
const TOKENS = { n1: 'n1-token', n2: 'n2-token', bob: 'bob-token', boot: 'abcdef.0123456789abcdef' };
const CSRS = '/apis/certificates.k8s.io/v1/certificatesigningrequests';
let s: TestServer;
const bearer = (t: string) => ({ authorization: `Bearer ${t}` });

/** A key and a PKCS#10 request for the subject (PEM). */
function makeCsr(name: string, subj: string): string {
  ssl(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', `${name}.key`]);
  ssl(['req', '-new', '-key', `${name}.key`, '-subj', subj, '-out', `${name}.csr`]);
  return readFileSync(join(dir, `${name}.csr`), 'utf8');
}

function csrObject(name: string, pem: string, signerName = 'kubernetes.io/kube-apiserver-client-kubelet', usages = ['digital signature', 'client auth']): any {
  return { apiVersion: 'certificates.k8s.io/v1', kind: 'CertificateSigningRequest', metadata: { name }, spec: { request: Buffer.from(pem).toString('base64'), signerName, usages } };
}

const pod = (name: string, node: string, secret: string) => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: 'default' },
  spec: { nodeName: node, containers: [{ name: 'c', image: 'busybox' }], volumes: [{ name: 's', secret: { secretName: secret } }] },
});

beforeAll(async () => {
  kubectlPath();
  ssl(['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '2', '-subj', '/CN=cluster-signer']);
  writeFileSync(join(dir, 'tokens.csv'), `${TOKENS.n1},system:node:n1,uid-n1,"system:nodes"\n${TOKENS.n2},system:node:n2,uid-n2,"system:nodes"\n${TOKENS.bob},bob,uid-bob\n`);
  s = await startServer({
    args: [
      '--authorization-mode', 'Node,RBAC',
      '--token-auth-file', join(dir, 'tokens.csv'),
      '--client-ca-file', join(dir, 'ca.crt'),
      '--cluster-signing-cert-file', join(dir, 'ca.crt'),
      '--cluster-signing-key-file', join(dir, 'ca.key'),
      '--enable-admission-plugins', 'NodeRestriction',
      // a new node's first credential is a real bootstrap token (a Secret in kube-system)
      '--enable-bootstrap-token-auth',
      '--front-end', 'http2',
    ],
  });
}, 60_000);
afterAll(async () => {
  await s?.stop();
  s?.cleanup();
  rmSync(dir, { recursive: true, force: true });
});

describe('node bootstrap: CSR, signing, Node authorizer, NodeRestriction', () => {
  it('a node gets a client certificate through a CSR that kubectl certificate approve approves', async () => {
    const pem = makeCsr('n1', '/O=system:nodes/CN=system:node:n1');
    const created = await request(s, 'POST', CSRS, csrObject('node-csr-n1', pem), bearer(TOKENS.n1));
    expect(created.status, created.body).toBe(201);
    const c = created.json();
    // the requester is recorded by the server, whatever the body says
    expect(c.spec.username).toBe('system:node:n1');
    expect(c.spec.groups).toContain('system:nodes');
    expect(c.status ?? {}).toEqual({});
    // not approved automatically: nothing grants system:nodes selfnodeclient here
    expect(await kubectlOk(s, ['get', 'csr', 'node-csr-n1'])).toMatch(/node-csr-n1\s+\S+\s+kubernetes.io\/kube-apiserver-client-kubelet\s+system:node:n1\s+<none>\s+Pending/);
    await kubectlOk(s, ['certificate', 'approve', 'node-csr-n1']);
    const signed = await until(async () => {
      const r = (await request(s, 'GET', `${CSRS}/node-csr-n1`)).json();
      return r.status?.certificate ? r : undefined;
    });
    const approved = signed.status.conditions.find((x: any) => x.type === 'Approved');
    expect(approved).toMatchObject({ status: 'True', reason: 'KubectlApprove' });
    const certPem = Buffer.from(signed.status.certificate, 'base64').toString();
    const cert = new X509Certificate(certPem);
    const ca = new X509Certificate(readFileSync(join(dir, 'ca.crt')));
    expect(cert.checkIssued(ca)).toBe(true);
    expect(cert.verify(ca.publicKey)).toBe(true);
    expect(cert.subject).toContain('CN=system:node:n1');
    expect(cert.subject).toContain('O=system:nodes');
    expect(cert.keyUsage).toContain('1.3.6.1.5.5.7.3.2');
    writeFileSync(join(dir, 'n1.crt'), certPem);
    expect(await kubectlOk(s, ['get', 'csr', 'node-csr-n1'])).toContain('Approved,Issued');
  });

  it('the node, with its new certificate, reads the secret of its pod and not another pod\'s', async () => {
    for (const name of ['s1', 's2']) {
      expect((await request(s, 'POST', '/api/v1/namespaces/default/secrets', { apiVersion: 'v1', kind: 'Secret', metadata: { name }, stringData: { k: name } })).status).toBe(201);
    }
    expect((await request(s, 'POST', '/api/v1/namespaces/default/pods', pod('p1', 'n1', 's1'))).status).toBe(201);
    expect((await request(s, 'POST', '/api/v1/namespaces/default/pods', pod('p2', 'n2', 's2'))).status).toBe(201);
    const asNode = (args: string[]) => kubectl({ ...s, kubeconfigPath: certKubeconfig(s, dir, 'n1') }, args);
    expect((await asNode(['auth', 'whoami', '-o', 'jsonpath={.status.userInfo.username}'])).stdout).toBe('system:node:n1');
    const ok = await asNode(['get', 'secret', 's1', '-n', 'default', '-o', 'jsonpath={.data.k}']);
    expect(ok.stderr).toBe('');
    expect(Buffer.from(ok.stdout, 'base64').toString()).toBe('s1');
    const no = await asNode(['get', 'secret', 's2', '-n', 'default']);
    expect(no.code).not.toBe(0);
    expect(no.stderr).toContain(
      `Error from server (Forbidden): secrets "s2" is forbidden: User "system:node:n1" cannot get resource "secrets" in API group "" in the namespace "default": no relationship found between node 'n1' and this object`,
    );
    // the node reads its own Node's name only; listing every secret is refused
    const list = await asNode(['get', 'secrets', '-n', 'default']);
    expect(list.stderr).toContain('No Object name found');
    // binding the pod to the node later gives access at once (the graph follows the pods cache)
    expect((await request(s, 'POST', '/api/v1/namespaces/default/pods', pod('p3', 'n1', 's2'))).status).toBe(201);
    await until(async () => (await asNode(['get', 'secret', 's2', '-n', 'default'])).code === 0);
    expect((await request(s, 'DELETE', '/api/v1/namespaces/default/pods/p3?gracePeriodSeconds=0')).status).toBe(200);
    await until(async () => (await asNode(['get', 'secret', 's2', '-n', 'default'])).code !== 0);
  });

  it('NodeRestriction: a node changes its own Node and the labels kube lets kubelets set, not another node', async () => {
    for (const n of ['n1', 'n2']) expect((await request(s, 'POST', '/api/v1/nodes', { apiVersion: 'v1', kind: 'Node', metadata: { name: n } })).status).toBe(201);
    const n1 = (args: string[]) => kubectl(s, ['--token', TOKENS.n1, ...args]);
    // the Node authorizer lets a node patch Nodes; NodeRestriction keeps it to its own
    const other = await request(s, 'PATCH', '/api/v1/nodes/n2', { metadata: { labels: { 'topology.kubernetes.io/zone': 'z1' } } }, { ...bearer(TOKENS.n1), 'content-type': 'application/merge-patch+json' });
    expect(other.status).toBe(403);
    expect(other.json().message).toBe('nodes "n2" is forbidden: node "n1" is not allowed to modify node "n2"');
    expect((await n1(['label', 'node', 'n1', 'topology.kubernetes.io/zone=z1', 'example.com/team=a'])).code).toBe(0);
    const bad = await n1(['label', 'node', 'n1', 'node-restriction.kubernetes.io/pool=x']);
    expect(bad.stderr).toContain('nodes "n1" is forbidden: node "n1" is not allowed to modify labels: node-restriction.kubernetes.io/pool');
    const taint = await n1(['taint', 'node', 'n1', 'k=v:NoSchedule']);
    expect(taint.stderr).toContain('node "n1" is not allowed to modify taints');
    // reading another Node is the Node authorizer's refusal
    const read = await n1(['get', 'node', 'n2']);
    expect(read.stderr).toContain(`node 'n1' cannot read 'n2', only its own Node object`);
    // an admin is not restricted
    expect((await kubectl(s, ['label', 'node', 'n2', 'node-restriction.kubernetes.io/pool=x'])).code).toBe(0);
  });

  it('validates CSRs as kube does, and the signer fails a request of the wrong subject', async () => {
    const bad = await request(s, 'POST', CSRS, { ...csrObject('bad', 'not a pem'), spec: { request: Buffer.from('nope').toString('base64'), signerName: 'example', usages: ['client auth', 'client auth', 'flying'], expirationSeconds: 60 } });
    expect(bad.status).toBe(422);
    const msg = bad.json().message;
    expect(msg).toContain('spec.request: Invalid value');
    expect(msg).toContain('PEM block type must be CERTIFICATE REQUEST');
    expect(msg).toContain(`spec.signerName: Invalid value: "example": must be a fully qualified domain and path of the form 'example.com/signer-name'`);
    expect(msg).toContain('spec.usages[1]: Duplicate value: "client auth"');
    expect(msg).toContain('spec.usages[2]: Unsupported value: "flying"');
    expect(msg).toContain('spec.expirationSeconds: Invalid value: 60: may not specify a duration less than 600 seconds (10 minutes)');
    // a kubelet client request for a subject outside system:nodes: approved, then failed by the signer
    const pem = makeCsr('wrong', '/O=team/CN=system:node:n9');
    expect((await request(s, 'POST', CSRS, csrObject('wrong', pem))).status).toBe(201);
    await kubectlOk(s, ['certificate', 'approve', 'wrong']);
    const failed = await until(async () => {
      const r = (await request(s, 'GET', `${CSRS}/wrong`)).json();
      return r.status?.conditions?.find((x: any) => x.type === 'Failed') ?? undefined;
    });
    expect(failed).toMatchObject({ status: 'True', reason: 'SignerValidationFailure', message: 'subject organization is not system:nodes' });
    // the main resource cannot approve; status cannot be removed
    const cur = (await request(s, 'GET', `${CSRS}/wrong`)).json();
    const put = await request(s, 'PUT', `${CSRS}/wrong/status`, { ...cur, status: { ...cur.status, conditions: [] } });
    expect(put.status).toBe(422);
    expect(put.json().message).toContain('updates may not remove a condition of type "Approved"');
    // a denied request is never signed
    const pem2 = makeCsr('denied', '/CN=someone');
    expect((await request(s, 'POST', CSRS, csrObject('denied', pem2, 'kubernetes.io/kube-apiserver-client'))).status).toBe(201);
    await kubectlOk(s, ['certificate', 'deny', 'denied']);
    expect(await kubectlOk(s, ['get', 'csr', 'denied'])).toContain('Denied');
    // CertificateSubjectRestriction: no kube-apiserver-client certificate for system:masters
    const masters = await request(s, 'POST', CSRS, csrObject('masters', makeCsr('m', '/O=system:masters/CN=evil'), 'kubernetes.io/kube-apiserver-client'));
    expect(masters.status).toBe(403);
    expect(masters.json().message).toBe('certificatesigningrequests.certificates.k8s.io "masters" is forbidden: use of kubernetes.io/kube-apiserver-client signer with system:masters group is not allowed');
    // CertificateApproval: writing the approval subresource needs `approve` on the signer
    await kubectlOk(s, ['create', 'clusterrole', 'csr-approval-writer', '--verb=get,list,update', '--resource=certificatesigningrequests,certificatesigningrequests/approval']);
    await kubectlOk(s, ['create', 'clusterrolebinding', 'bob-csr', '--clusterrole=csr-approval-writer', '--user=bob']);
    expect((await request(s, 'POST', CSRS, csrObject('for-bob', makeCsr('b', '/CN=bob-client'), 'kubernetes.io/kube-apiserver-client'))).status).toBe(201);
    const byBob = await until(async () => {
      const r = await kubectl(s, ['--token', TOKENS.bob, 'certificate', 'approve', 'for-bob']);
      return r.stderr.includes('forbidden') ? r : undefined;
    });
    expect(byBob.stderr).toContain('user not permitted to approve requests with signerName "kubernetes.io/kube-apiserver-client"');
    await kubectlOk(s, ['create', 'clusterrolebinding', 'bob-approver', '--clusterrole=system:certificates.k8s.io:kube-apiserver-client-approver', '--user=bob']);
    await until(async () => (await kubectl(s, ['--token', TOKENS.bob, 'certificate', 'approve', 'for-bob'])).code === 0);
  });

  it('auto-approves a node\'s own client CSR when RBAC grants selfnodeclient (kube\'s csrapproving); a real bootstrap token gets a new node its certificate, which the Node authorizer then confines', async () => {
    await kubectlOk(s, ['create', 'clusterrolebinding', 'auto-approve-renewals', '--clusterrole=system:certificates.k8s.io:certificatesigningrequests:selfnodeclient', '--group=system:nodes']);
    const pem = makeCsr('n2', '/O=system:nodes/CN=system:node:n2');
    expect((await request(s, 'POST', CSRS, csrObject('node-csr-n2', pem), bearer(TOKENS.n2))).status).toBe(201);
    const signed = await until(async () => {
      const r = (await request(s, 'GET', `${CSRS}/node-csr-n2`)).json();
      return r.status?.certificate ? r : undefined;
    }).catch((e) => {
      throw new Error(`${e.message}\n${s.output().slice(-3000)}`);
    });
    expect(signed.status.conditions.find((x: any) => x.type === 'Approved')).toMatchObject({ reason: 'AutoApproved', message: 'Auto approving self kubelet client certificate after SubjectAccessReview.' });
    // a new node with a bootstrap token (kubeadm's: a Secret of type bootstrap.kubernetes.io/token
    // in kube-system) asks for its client certificate: approved through nodeclient once
    // system:bootstrappers holds it, as kubeadm binds it
    const bootSecret = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'bootstrap-token-abcdef', namespace: 'kube-system' },
      type: 'bootstrap.kubernetes.io/token',
      stringData: { 'token-id': 'abcdef', 'token-secret': '0123456789abcdef', 'usage-bootstrap-authentication': 'true', 'auth-extra-groups': 'system:bootstrappers:kubeadm:default-node-token', expiration: new Date(Date.now() + 3600_000).toISOString().replace(/\.\d+Z$/, 'Z') },
    };
    expect((await request(s, 'POST', '/api/v1/namespaces/kube-system/secrets', bootSecret)).status).toBe(201);
    const who = await until(async () => {
      const r = await request(s, 'POST', '/apis/authentication.k8s.io/v1/selfsubjectreviews', { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' }, bearer(TOKENS.boot));
      return r.status === 201 ? r.json().status.userInfo : undefined;
    });
    expect(who).toEqual({ username: 'system:bootstrap:abcdef', groups: ['system:bootstrappers', 'system:bootstrappers:kubeadm:default-node-token', 'system:authenticated'] });
    await kubectlOk(s, ['create', 'clusterrolebinding', 'auto-approve-csrs-for-group', '--clusterrole=system:certificates.k8s.io:certificatesigningrequests:nodeclient', '--group=system:bootstrappers']);
    await kubectlOk(s, ['create', 'clusterrolebinding', 'kubeadm:kubelet-bootstrap', '--clusterrole=system:node-bootstrapper', '--group=system:bootstrappers']);
    const pem4 = makeCsr('n3', '/O=system:nodes/CN=system:node:n3');
    const byBoot = await until(async () => {
      const r = await request(s, 'POST', CSRS, csrObject('node-csr-n3', pem4), bearer(TOKENS.boot));
      return r.status === 201 ? r : undefined;
    });
    expect(byBoot.json().spec.username).toBe('system:bootstrap:abcdef');
    const n3 = await until(async () => {
      const r = (await request(s, 'GET', `${CSRS}/node-csr-n3`)).json();
      return r.status?.certificate ? r : undefined;
    });
    expect(n3.status.conditions[0]).toMatchObject({ type: 'Approved', reason: 'AutoApproved', message: 'Auto approving kubelet client certificate after SubjectAccessReview.' });
    const n3Pem = Buffer.from(n3.status.certificate, 'base64').toString();
    expect(new X509Certificate(n3Pem).subject).toContain('CN=system:node:n3');
    // the new node then works with that certificate, the Node authorizer confining it to its pods
    writeFileSync(join(dir, 'n3.crt'), n3Pem);
    for (const [name, node] of [['s3', 'n3'], ['s4', 'n1']]) {
      expect((await request(s, 'POST', '/api/v1/namespaces/default/secrets', { apiVersion: 'v1', kind: 'Secret', metadata: { name }, stringData: { k: name } })).status).toBe(201);
      expect((await request(s, 'POST', '/api/v1/namespaces/default/pods', pod(`p-${name}`, node, name))).status).toBe(201);
    }
    const asN3 = (args: string[]) => kubectl({ ...s, kubeconfigPath: certKubeconfig(s, dir, 'n3') }, args);
    expect((await asN3(['auth', 'whoami', '-o', 'jsonpath={.status.userInfo.username}'])).stdout).toBe('system:node:n3');
    const mine = await until(async () => {
      const r = await asN3(['get', 'secret', 's3', '-n', 'default', '-o', 'jsonpath={.data.k}']);
      return r.code === 0 ? r : undefined;
    });
    expect(Buffer.from(mine.stdout, 'base64').toString()).toBe('s3');
    const theirs = await asN3(['get', 'secret', 's4', '-n', 'default']);
    expect(theirs.code).not.toBe(0);
    expect(theirs.stderr).toContain(`secrets "s4" is forbidden: User "system:node:n3" cannot get resource "secrets" in API group "" in the namespace "default": no relationship found between node 'n3' and this object`);
    // the bootstrap token itself is no node: it reads no secret
    expect((await request(s, 'GET', '/api/v1/namespaces/default/secrets/s3', undefined, bearer(TOKENS.boot))).status).toBe(403);
    // n2 asking for n1's name is not its own: selfnodeclient does not apply, nodeclient is not granted
    const pem3 = makeCsr('n1b', '/O=system:nodes/CN=system:node:n1');
    expect((await request(s, 'POST', CSRS, csrObject('n2-for-n1', pem3), bearer(TOKENS.n2))).status).toBe(201);
    await new Promise((r) => setTimeout(r, 500));
    expect((await request(s, 'GET', `${CSRS}/n2-for-n1`)).json().status?.conditions).toBeUndefined();
  });

  it('server-side apply that would create needs create as well as patch', async () => {
    await kubectlOk(s, ['create', 'role', 'patch-only', '-n', 'default', '--verb=patch,get', '--resource=configmaps']);
    await kubectlOk(s, ['create', 'rolebinding', 'bob-patch', '-n', 'default', '--role=patch-only', '--user=bob']);
    const cm = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'applied', namespace: 'default' }, data: { a: '1' } };
    const r = await request(s, 'PATCH', '/api/v1/namespaces/default/configmaps/applied?fieldManager=bob', cm, { ...bearer(TOKENS.bob), 'content-type': 'application/apply-patch+yaml' });
    expect(r.status).toBe(403);
    expect(r.json().message).toBe('configmaps "applied" is forbidden: ');
    await kubectlOk(s, ['create', 'role', 'create-too', '-n', 'default', '--verb=create', '--resource=configmaps']);
    await kubectlOk(s, ['create', 'rolebinding', 'bob-create', '-n', 'default', '--role=create-too', '--user=bob']);
    const ok = await until(async () => {
      const x = await request(s, 'PATCH', '/api/v1/namespaces/default/configmaps/applied?fieldManager=bob', cm, { ...bearer(TOKENS.bob), 'content-type': 'application/apply-patch+yaml' });
      return x.status === 201 ? x : undefined;
    });
    expect(ok.json().data).toEqual({ a: '1' });
  });

  it('puts the component and controller roles of kube\'s bootstrap policy in place', async () => {
    for (const name of ['system:node', 'system:node-proxier', 'system:kube-controller-manager', 'system:kube-scheduler', 'system:monitoring', 'system:node-bootstrapper', 'system:controller:deployment-controller', 'system:certificates.k8s.io:certificatesigningrequests:nodeclient']) {
      expect((await request(s, 'GET', `/apis/rbac.authorization.k8s.io/v1/clusterroles/${encodeURIComponent(name)}`)).status, name).toBe(200);
    }
    const b = (await request(s, 'GET', '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/system:controller:deployment-controller')).json();
    expect(b.subjects).toEqual([{ kind: 'ServiceAccount', name: 'deployment-controller', namespace: 'kube-system' }]);
  });
});
