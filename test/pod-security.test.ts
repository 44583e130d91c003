// PodSecurity against a started server, through real kubectl where users meet it: a pod that
// fails restricted is refused with kube's list of violations, a compliant one admitted; warn
// labels give Warning lines and still admit; workloads with pod templates get warnings only;
// invalid labels are refused as kube refuses them; and labelling a namespace restricted warns
// about the pods already in it (a server dry run too).
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request, startServer, type TestServer, useServer } from './helpers/server.js';
import { kubectl } from './helpers/kubectl.js';

// Warnings from an update's admission, audit annotations, the user and the plugin's
// configuration come through the admission seam of issue 20 (handlers building kube's
// attributes, --admission-control-config-file); the tests needing it run once it is there.

let s: TestServer;

useServer((started) => (s = started));

const NS = '/api/v1/namespaces';
const RESTRICTED_NGINX = (name: string) =>
  `violates PodSecurity "restricted:latest": ` +
  `allowPrivilegeEscalation != false (container "${name}" must set securityContext.allowPrivilegeEscalation=false), ` +
  `unrestricted capabilities (container "${name}" must set securityContext.capabilities.drop=["ALL"]), ` +
  `runAsNonRoot != true (pod or container "${name}" must set securityContext.runAsNonRoot=true), ` +
  `seccompProfile (pod or container "${name}" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")`;

const compliant = (ns: string, name: string) => `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${ns}}
spec:
  securityContext: {runAsNonRoot: true, runAsUser: 1000, seccompProfile: {type: RuntimeDefault}}
  containers:
  - name: app
    image: nginx
    securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}
`;

async function namespace(name: string, labels: Record<string, string> = {}): Promise<void> {
  const r = await request(s, 'POST', NS, { metadata: { name, labels } });
  expect(r.status).toBe(201);
}

describe('PodSecurity enforce', () => {
  it('refuses a pod that fails restricted with kube\'s list of violations; admits a compliant one', async () => {
    await namespace('psa-enforce', { 'pod-security.kubernetes.io/enforce': 'restricted' });
    const bad = await kubectl(s, ['run', 'web', '-n', 'psa-enforce', '--image=nginx']);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr.trim()).toBe(`Error from server (Forbidden): pods "web" is forbidden: ${RESTRICTED_NGINX('web')}`);
    const good = await kubectl(s, ['apply', '-f', '-'], { input: compliant('psa-enforce', 'ok') });
    expect(good.stderr).toBe('');
    expect(good.stdout.trim()).toBe('pod/ok created');
    // the refusal is kube's Status
    const raw = await request(s, 'POST', `${NS}/psa-enforce/pods`, { metadata: { name: 'raw' }, spec: { containers: [{ name: 'c', image: 'nginx', securityContext: { privileged: true } }] } });
    expect(raw.status).toBe(403);
    expect(raw.json()).toMatchObject({
      kind: 'Status',
      status: 'Failure',
      reason: 'Forbidden',
      code: 403,
      details: { name: 'raw', kind: 'pods' },
    });
    expect(raw.json().message).toMatch(/^pods "raw" is forbidden: violates PodSecurity "restricted:latest": privileged \(container "c" must not set securityContext\.privileged=true\), allowPrivilegeEscalation != false/);
  });

  it('applies the labelled version: baseline at v1.0 admits what restricted refuses', async () => {
    await namespace('psa-base', { 'pod-security.kubernetes.io/enforce': 'baseline', 'pod-security.kubernetes.io/enforce-version': 'v1.0' });
    const r = await kubectl(s, ['run', 'web', '-n', 'psa-base', '--image=nginx']);
    expect(r.code).toBe(0);
    const host = await request(s, 'POST', `${NS}/psa-base/pods`, { metadata: { name: 'h' }, spec: { hostPID: true, containers: [{ name: 'c', image: 'nginx' }] } });
    expect(host.status).toBe(403);
    expect(host.json().message).toBe('pods "h" is forbidden: violates PodSecurity "baseline:v1.0": host namespaces (hostPID=true)');
  });
});

describe('PodSecurity on pod updates', () => {
  it('checks an update that changes an image, not one that changes labels', async () => {
    await namespace('psa-upd');
    expect((await kubectl(s, ['run', 'x', '-n', 'psa-upd', '--image=nginx'])).code).toBe(0);
    const l = await request(s, 'PATCH', `${NS}/psa-upd`, { metadata: { labels: { 'pod-security.kubernetes.io/enforce': 'restricted' } } }, { 'Content-Type': 'application/merge-patch+json' });
    expect(l.status).toBe(200);
    const img = await kubectl(s, ['set', 'image', 'pod/x', '-n', 'psa-upd', 'x=nginx:2']);
    expect(img.stderr.trim()).toBe(`error: failed to patch image update to pod template: pods "x" is forbidden: ${RESTRICTED_NGINX('x')}`);
    const lbl = await kubectl(s, ['label', 'pod', 'x', '-n', 'psa-upd', 'a=b']);
    expect(lbl.stdout.trim()).toBe('pod/x labeled');
  });
});

describe('PodSecurity warn and audit', () => {
  it('warns on create in warn mode and admits the pod', async () => {
    await namespace('psa-warn', { 'pod-security.kubernetes.io/warn': 'baseline', 'pod-security.kubernetes.io/audit': 'restricted' });
    const r = await kubectl(s, ['run', 'priv', '-n', 'psa-warn', '--image=nginx', '--privileged']);
    expect(r.code).toBe(0);
    expect(r.stderr).toContain('Warning: would violate PodSecurity "baseline:latest": privileged (container "priv" must not set securityContext.privileged=true)');
    expect(r.stdout.trim()).toBe('pod/priv created');
  });

  it('gives workloads with a pod template warnings only, never a refusal', async () => {
    await namespace('psa-work', { 'pod-security.kubernetes.io/enforce': 'restricted', 'pod-security.kubernetes.io/warn': 'restricted' });
    const r = await kubectl(s, ['create', 'deployment', 'd', '-n', 'psa-work', '--image=nginx']);
    expect(r.code).toBe(0);
    expect(r.stderr).toContain(`Warning: would violate PodSecurity "restricted:latest": allowPrivilegeEscalation != false (container "nginx" must set securityContext.allowPrivilegeEscalation=false)`);
    expect(r.stdout.trim()).toBe('deployment.apps/d created');
  });
});

describe('PodSecurity metrics', () => {
  it('/metrics counts the evaluations by decision, mode, level and version', async () => {
    const r = await kubectl(s, ['get', '--raw', '/metrics']);
    expect(r.stdout).toContain('# TYPE pod_security_evaluations_total counter');
    expect(r.stdout).toMatch(/^pod_security_evaluations_total\{decision="deny",mode="enforce",policy_level="restricted",policy_version="latest",request_operation="create",resource="pod",subresource=""\} [1-9]/m);
    expect(r.stdout).toMatch(/^pod_security_evaluations_total\{decision="deny",mode="warn",policy_level="baseline",policy_version="latest",request_operation="create",resource="pod",subresource=""\} [1-9]/m);
  });
});

describe('PodSecurity namespace labels', () => {
  it('refuses invalid labels with kube\'s Invalid status', async () => {
    const r = await kubectl(s, ['create', '-f', '-'], {
      input: 'apiVersion: v1\nkind: Namespace\nmetadata: {name: psa-bad, labels: {pod-security.kubernetes.io/enforce: nope, pod-security.kubernetes.io/warn-version: v2}}\n',
    });
    expect(r.code).not.toBe(0);
    expect(r.stderr.trim()).toBe(
      'The Namespace "psa-bad" is invalid: \n' +
        '* metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "nope": must be one of privileged, baseline, restricted\n' +
        '* metadata.labels[pod-security.kubernetes.io/warn-version]: Invalid value: "v2": must be "latest" or "v1.x"',
    );
    await namespace('psa-lbl');
    const l = await kubectl(s, ['label', 'ns', 'psa-lbl', 'pod-security.kubernetes.io/enforce=bogus']);
    expect(l.stderr.trim()).toBe('The Namespace "psa-lbl" is invalid: metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "bogus": must be one of privileged, baseline, restricted');
  });

  it('labelling a namespace restricted warns about the pods already in it (and a server dry run too)', async () => {
    await namespace('psa-existing');
    for (const n of ['a1', 'a2']) expect((await kubectl(s, ['run', n, '-n', 'psa-existing', '--image=nginx'])).code).toBe(0);
    expect((await kubectl(s, ['run', 'p', '-n', 'psa-existing', '--image=nginx', '--privileged'])).code).toBe(0);
    expect((await kubectl(s, ['apply', '-f', '-'], { input: compliant('psa-existing', 'fine') })).code).toBe(0);
    const expected =
      'Warning: existing pods in namespace "psa-existing" violate the new PodSecurity enforce level "restricted:latest"\n' +
      'Warning: a1 (and 1 other pod): allowPrivilegeEscalation != false, unrestricted capabilities, runAsNonRoot != true, seccompProfile\n' +
      'Warning: p: privileged, allowPrivilegeEscalation != false, unrestricted capabilities, runAsNonRoot != true, seccompProfile\n';
    const dry = await kubectl(s, ['label', 'ns', 'psa-existing', 'pod-security.kubernetes.io/enforce=restricted', '--dry-run=server']);
    expect(dry.stderr).toBe(expected);
    expect(dry.stdout.trim()).toBe('namespace/psa-existing labeled (server dry run)');
    const r = await kubectl(s, ['label', 'ns', 'psa-existing', 'pod-security.kubernetes.io/enforce=restricted']);
    expect(r.stderr).toBe(expected);
    expect(r.stdout.trim()).toBe('namespace/psa-existing labeled');
    // relaxing it again checks nothing
    const relax = await kubectl(s, ['label', 'ns', 'psa-existing', 'pod-security.kubernetes.io/enforce=baseline', '--overwrite']);
    expect(relax.stderr).toBe('');
  });
});

describe('PodSecurity configuration (--admission-control-config-file) and audit annotations', () => {
  let t: TestServer;
  let dir = '';
  let logPath = '';
  const events = () => (existsSync(logPath) ? readFileSync(logPath, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l)) : []);

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'psa-config-'));
    logPath = join(dir, 'audit.log');
    writeFileSync(
      join(dir, 'admission.yaml'),
      `apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: PodSecurity
  configuration:
    apiVersion: pod-security.admission.config.k8s.io/v1
    kind: PodSecurityConfiguration
    defaults: {enforce: baseline, enforce-version: latest, audit: restricted, audit-version: latest, warn: restricted, warn-version: latest}
    exemptions: {usernames: [trusted], runtimeClasses: [kata], namespaces: [psa-exempt]}
`,
    );
    writeFileSync(join(dir, 'policy.yaml'), 'apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n  resources: [{group: "", resources: ["pods"]}]\n');
    t = await startServer({ args: ['--admission-control-config-file', join(dir, 'admission.yaml'), '--audit-policy-file', join(dir, 'policy.yaml'), '--audit-log-path', logPath] });
  }, 60_000);
  afterAll(async () => {
    await t?.stop();
    t?.cleanup();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('the configured defaults apply to a namespace without labels (kube-system is not exempt unless listed)', async () => {
    const r = await kubectl(t, ['run', 'priv', '-n', 'default', '--image=nginx', '--privileged']);
    expect(r.stderr.trim()).toBe('Error from server (Forbidden): pods "priv" is forbidden: violates PodSecurity "baseline:latest": privileged (container "priv" must not set securityContext.privileged=true)');
    const sys = await kubectl(t, ['run', 'priv', '-n', 'kube-system', '--image=nginx', '--privileged']);
    expect(sys.stderr).toContain('violates PodSecurity "baseline:latest"');
    const w = await kubectl(t, ['run', 'plain', '-n', 'default', '--image=nginx']);
    expect(w.stderr).toContain('Warning: would violate PodSecurity "restricted:latest": allowPrivilegeEscalation != false');
    expect(w.code).toBe(0);
  });

  it('exempt users, runtime classes and namespaces are not checked, and the audit event says why', async () => {
    expect((await kubectl(t, ['run', 'u', '-n', 'default', '--image=nginx', '--privileged', '--as', 'trusted', '--as-group', 'system:masters'])).code).toBe(0);
    const kata = await request(t, 'POST', '/api/v1/namespaces/default/pods', { metadata: { name: 'k' }, spec: { runtimeClassName: 'kata', containers: [{ name: 'c', image: 'x', securityContext: { privileged: true } }] } });
    expect(kata.status).toBe(201);
    await request(t, 'POST', '/api/v1/namespaces', { metadata: { name: 'psa-exempt' } });
    expect((await kubectl(t, ['run', 'e', '-n', 'psa-exempt', '--image=nginx', '--privileged'])).code).toBe(0);
    const ann = (name: string, ns = 'default') => events().find((e) => e.verb === 'create' && e.objectRef?.name === name && e.objectRef?.namespace === ns && e.stage === 'ResponseComplete')?.annotations ?? {};
    expect(ann('u')['pod-security.kubernetes.io/exempt']).toBe('user');
    expect(ann('k')['pod-security.kubernetes.io/exempt']).toBe('runtimeClass');
    expect(ann('e', 'psa-exempt')['pod-security.kubernetes.io/exempt']).toBe('namespace');
  });

  it('records the enforced policy and the audit-level violations, on refusals too', async () => {
    const ann = (name: string) => events().find((e) => e.verb === 'create' && e.objectRef?.name === name && e.objectRef?.namespace === 'default' && e.stage === 'ResponseComplete')?.annotations ?? {};
    expect(ann('priv')).toMatchObject({
      'pod-security.kubernetes.io/enforce-policy': 'baseline:latest',
      'pod-security.kubernetes.io/audit-violations': expect.stringMatching(/^would violate PodSecurity "restricted:latest": privileged \(container "priv" must not set securityContext\.privileged=true\), allowPrivilegeEscalation != false/),
    });
    expect(ann('plain')['pod-security.kubernetes.io/enforce-policy']).toBe('baseline:latest');
  });
});
