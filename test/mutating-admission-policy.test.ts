// MutatingAdmissionPolicy (issue 20, alpha in 1.33) against started servers with the real
// kubectl. With --feature-gates=MutatingAdmissionPolicy=true and the v1alpha1 API switched on:
// an ApplyConfiguration policy adds a label kubectl sees, a JSONPatch policy sets a field, a
// policy reads its param, and a failing expression refuses the write with kube's Status under
// failurePolicy Fail and lets it through under Ignore; reinvocation together with a real HTTPS
// mutating webhook (the policy runs before it, and again, IfNeeded, after it changed the
// object). With the gate off the v1alpha1 kinds
// are not served, whatever --runtime-config says.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import https from 'node:https';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { request, startServer, until, type TestServer } from './helpers/server.js';
import { kubectl, kubectlOk, kubectlPath } from './helpers/kubectl.js';

const RUNTIME_CONFIG = '--runtime-config=admissionregistration.k8s.io/v1alpha1=true';
const MAP_PATH = '/apis/admissionregistration.k8s.io/v1alpha1/mutatingadmissionpolicies';

let s: TestServer;
beforeAll(async () => {
  kubectlPath();
  s = await startServer({ args: ['--feature-gates=MutatingAdmissionPolicy=true', RUNTIME_CONFIG] });
}, 60_000);
afterAll(async () => {
  await s?.stop();
  s?.cleanup();
});

const apply = (yaml: string) => kubectlOk(s, ['apply', '-f', '-'], yaml);

/** A policy on one resource and its binding, limited to namespaces labelled map-test=<label>. */
function policy(name: string, opts: { resource: string; group?: string; mutations: string; failurePolicy?: string; label: string; param?: string; paramKind?: string }): string {
  return `
apiVersion: admissionregistration.k8s.io/v1alpha1
kind: MutatingAdmissionPolicy
metadata:
  name: ${name}
spec:
  failurePolicy: ${opts.failurePolicy ?? 'Fail'}
  reinvocationPolicy: Never
${opts.paramKind ?? ''}
  matchConstraints:
    resourceRules:
    - apiGroups: ["${opts.group ?? ''}"]
      apiVersions: ["v1"]
      operations: ["CREATE"]
      resources: ["${opts.resource}"]
  mutations:
${opts.mutations}
---
apiVersion: admissionregistration.k8s.io/v1alpha1
kind: MutatingAdmissionPolicyBinding
metadata:
  name: ${name}-binding
spec:
  policyName: ${name}
${opts.param ?? ''}
  matchResources:
    namespaceSelector:
      matchLabels:
        map-test: ${opts.label}
`;
}

async function namespace(name: string, label: string): Promise<void> {
  await kubectlOk(s, ['create', 'namespace', name]);
  await kubectlOk(s, ['label', 'namespace', name, `map-test=${label}`]);
}

let seq = 0;
/** Creates ConfigMaps until one comes back as the policy left it (the policy reaches admission's cache shortly after it is written). */
async function createdConfigMap(ns: string, check: (cm: any) => boolean): Promise<any> {
  return until(async () => {
    const name = `cm-${++seq}`;
    await kubectlOk(s, ['create', 'configmap', name, '-n', ns, '--from-literal=k=v']);
    const cm = JSON.parse(await kubectlOk(s, ['get', 'configmap', name, '-n', ns, '-o', 'json']));
    return check(cm) && cm;
  });
}

describe('MutatingAdmissionPolicy with its gate on', () => {
  it('serves the v1alpha1 kinds', async () => {
    expect((await request(s, 'GET', MAP_PATH)).status).toBe(200);
    expect((await request(s, 'GET', '/apis/admissionregistration.k8s.io/v1alpha1/mutatingadmissionpolicybindings')).status).toBe(200);
  });

  it('refuses a policy whose mutation does not compile, or returns the wrong type', async () => {
    const bad = (expression: string) =>
      policy('broken', { resource: 'configmaps', label: 'none', mutations: `
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: '${expression}'` }).split('---')[0];
    let r = await kubectl(s, ['apply', '-f', '-'], { input: bad('Object{') });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('spec.mutations[0].applyConfiguration.expression: Invalid value: "Object{": compilation failed: ERROR: <input>:1:');
    r = await kubectl(s, ['apply', '-f', '-'], { input: bad('{"a": 1}') });
    expect(r.stderr).toContain('must evaluate to Object but got map(string, int)');
    expect((await request(s, 'GET', `${MAP_PATH}/broken`)).status).toBe(404);
  });

  it('refuses an invalid binding with kube field errors', async () => {
    const r = await kubectl(s, ['apply', '-f', '-'], {
      input: `
apiVersion: admissionregistration.k8s.io/v1alpha1
kind: MutatingAdmissionPolicyBinding
metadata:
  name: bad-binding
spec:
  paramRef:
    name: cfg
    selector: {}
  matchResources:
    resourceRules:
    - apiGroups: [""]
      apiVersions: ["v1"]
      operations: ["DELETE"]
      resources: ["configmaps"]
`,
    });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('The MutatingAdmissionPolicyBinding "bad-binding" is invalid:');
    for (const e of [
      'spec.policyName: Required value',
      'spec.paramRef.name: Forbidden: name and selector are mutually exclusive',
      'spec.paramRef.selector: Forbidden: name and selector are mutually exclusive',
      'spec.paramRef.parameterNotFoundAction: Required value',
      'spec.matchResources.resourceRules.operations: Unsupported value: "DELETE": supported values: "*", "CONNECT", "CREATE", "UPDATE"',
    ]) expect(r.stderr).toContain(e);
    expect((await request(s, 'GET', '/apis/admissionregistration.k8s.io/v1alpha1/mutatingadmissionpolicybindings/bad-binding')).status).toBe(404);
  });

  it('adds a label by ApplyConfiguration, seen by kubectl get', async () => {
    await namespace('map-label', 'label');
    await apply(
      policy('add-label', {
        resource: 'configmaps',
        label: 'label',
        mutations: `
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: >
        Object{metadata: Object.metadata{labels: {"mutated-by": "add-label"}}}`,
      }),
    );
    // kube's table columns for the policy kinds
    expect(await kubectlOk(s, ['get', 'mutatingadmissionpolicies', 'add-label'])).toMatch(/NAME\s+MUTATIONS\s+PARAMKIND\s+AGE\nadd-label\s+1\s+<unset>\s+\d+s/);
    expect(await kubectlOk(s, ['get', 'mutatingadmissionpolicybindings', 'add-label-binding'])).toMatch(/NAME\s+POLICYNAME\s+PARAMREF\s+AGE\nadd-label-binding\s+add-label\s+<unset>/);
    const cm = await createdConfigMap('map-label', (c) => c.metadata.labels?.['mutated-by'] === 'add-label');
    expect(cm.data).toEqual({ k: 'v' });
    const out = await kubectlOk(s, ['get', 'configmap', cm.metadata.name, '-n', 'map-label', '-L', 'mutated-by']);
    expect(out).toMatch(/add-label/);
    // a namespace the binding does not select is left alone
    await kubectlOk(s, ['create', 'configmap', 'plain', '-n', 'default', '--from-literal=k=v']);
    const plain = JSON.parse(await kubectlOk(s, ['get', 'configmap', 'plain', '-n', 'default', '-o', 'json']));
    expect(plain.metadata.labels).toBeUndefined();
  });

  it('leaves out an optional field whose optional is empty (?field: in an object construction)', async () => {
    await namespace('map-optional', 'optional');
    await apply(
      policy('optional-fields', {
        resource: 'configmaps',
        label: 'optional',
        mutations: `
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: >
        Object{?data: object.?data.?missing.hasValue() ? optional.of({"never": "set"}) : optional.none(),
               metadata: Object.metadata{?annotations: optional.of({"opt": "set"}), ?labels: object.metadata.?labels.?nope}}`,
      }),
    );
    // had the empty optionals been written as null, apply would have removed data
    const cm = await createdConfigMap('map-optional', (c) => c.metadata.annotations?.opt === 'set');
    expect(cm.data).toEqual({ k: 'v' });
    expect(cm.metadata.labels).toBeUndefined();
  });

  it('sets a field by JSONPatch (the object then validated as written)', async () => {
    await namespace('map-patch', 'patch');
    await apply(
      policy('two-replicas', {
        resource: 'deployments',
        group: 'apps',
        label: 'patch',
        mutations: `
  - patchType: JSONPatch
    jsonPatch:
      expression: >
        [JSONPatch{op: "replace", path: "/spec/replicas", value: 2},
         JSONPatch{op: "add", path: "/metadata/annotations", value: {"a/b": "c"}},
         JSONPatch{op: "replace", path: "/metadata/annotations/" + jsonpatch.escapeKey("a/b"), value: "escaped"}]`,
      }),
    );
    const d = await until(async () => {
      const name = `d-${++seq}`;
      await kubectlOk(s, ['create', 'deployment', name, '-n', 'map-patch', '--image=nginx', '--replicas=5']);
      const got = JSON.parse(await kubectlOk(s, ['get', 'deployment', name, '-n', 'map-patch', '-o', 'json']));
      return got.spec.replicas === 2 && got;
    });
    expect(d.metadata.annotations['a/b']).toBe('escaped');
    expect(await kubectlOk(s, ['get', 'deployment', d.metadata.name, '-n', 'map-patch', '-o', 'jsonpath={.spec.replicas}'])).toBe('2');
  });

  it('reads its param', async () => {
    await namespace('map-param', 'param');
    await kubectlOk(s, ['create', 'configmap', 'team-config', '-n', 'map-param', '--from-literal=team=blue']);
    await apply(
      policy('team-annotation', {
        resource: 'configmaps',
        label: 'param',
        paramKind: `  paramKind:
    apiVersion: v1
    kind: ConfigMap`,
        param: `  paramRef:
    name: team-config
    parameterNotFoundAction: Deny`,
        mutations: `
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: >
        Object{metadata: Object.metadata{annotations: {"team": params.data.team}}}`,
      }),
    );
    const cm = await createdConfigMap('map-param', (c) => c.metadata.annotations?.team === 'blue');
    expect(cm.metadata.annotations).toEqual({ team: 'blue' });
  });

  it('refuses the write when a mutation fails under failurePolicy Fail, with kube Status', async () => {
    await namespace('map-fail', 'fail');
    const expression = `Object{metadata: Object.metadata{labels: {"x": object.metadata.labels["nope"]}}}`;
    await apply(
      policy('fail-closed', {
        resource: 'configmaps',
        label: 'fail',
        mutations: `
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: '${expression}'`,
      }),
    );
    const why = `policy 'fail-closed' with binding 'fail-closed-binding' denied request: expression '${expression}' resulted in error: no such key: labels`;
    const raw = await until(async () => {
      const r = await request(s, 'POST', '/api/v1/namespaces/map-fail/configmaps', { metadata: { name: `f-${++seq}` }, data: { k: 'v' } });
      return r.status !== 201 && r;
    });
    expect(raw.status).toBe(403);
    const st = raw.json();
    expect(st.reason).toBe('Invalid');
    expect(st.message).toBe(why);
    expect(st.details).toEqual({ name: `f-${seq}`, kind: 'configmaps', causes: [{ message: why }] });
    const r = await kubectl(s, ['create', 'configmap', 'refused', '-n', 'map-fail', '--from-literal=k=v']);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain(why);
    expect((await kubectl(s, ['get', 'configmap', 'refused', '-n', 'map-fail'])).code).not.toBe(0);
  });

  it('admits the write when a mutation fails under failurePolicy Ignore', async () => {
    await namespace('map-ignore', 'ignore');
    await apply(
      policy('fail-open', {
        resource: 'configmaps',
        label: 'ignore',
        failurePolicy: 'Ignore',
        mutations: `
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: 'Object{metadata: Object.metadata{labels: {"x": object.metadata.labels["nope"]}}}'
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: 'Object{metadata: Object.metadata{labels: {"after": "failure"}}}'`,
      }),
    );
    // the failed mutation is dropped; the next one still runs (kube goes on with the policy's mutations)
    const cm = await createdConfigMap('map-ignore', (c) => c.metadata.labels?.after === 'failure');
    expect(cm.metadata.labels).toEqual({ after: 'failure' });
  });
});

describe('MutatingAdmissionPolicy reinvocation with a mutating webhook', () => {
  let certDir: string;
  let hook: https.Server;
  let caBundle: string;
  /** the objects the webhook was called with, by the object's name */
  const seen = new Map<string, any[]>();

  beforeAll(async () => {
    certDir = mkdtempSync(join(tmpdir(), 'kubeshard-map-certs-'));
    const run = (args: string[]) => execFileSync('openssl', args, { cwd: certDir, stdio: 'ignore' });
    run(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', 'ca.key']);
    run(['req', '-x509', '-new', '-key', 'ca.key', '-days', '2', '-subj', '/CN=map-test-ca', '-out', 'ca.crt']);
    run(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', 'tls.key']);
    run(['req', '-new', '-key', 'tls.key', '-subj', '/CN=127.0.0.1', '-out', 'tls.csr']);
    writeFileSync(join(certDir, 'ext.cnf'), 'subjectAltName=IP:127.0.0.1\n');
    run(['x509', '-req', '-in', 'tls.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-days', '2', '-extfile', 'ext.cnf', '-out', 'tls.crt']);
    caBundle = readFileSync(join(certDir, 'ca.crt')).toString('base64');
    hook = https.createServer({ key: readFileSync(join(certDir, 'tls.key')), cert: readFileSync(join(certDir, 'tls.crt')) }, (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c) => chunks.push(c));
      req.on('end', () => {
        const review = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        const obj = review.request.object;
        const l = seen.get(obj.metadata.name) ?? [];
        l.push(obj);
        seen.set(obj.metadata.name, l);
        // the webhook annotates the object once
        const response: any = { uid: review.request.uid, allowed: true };
        if (!obj.metadata.annotations?.webhook) {
          const ops = obj.metadata.annotations ? [{ op: 'add', path: '/metadata/annotations/webhook', value: '1' }] : [{ op: 'add', path: '/metadata/annotations', value: { webhook: '1' } }];
          Object.assign(response, { patchType: 'JSONPatch', patch: Buffer.from(JSON.stringify(ops)).toString('base64') });
        }
        res.writeHead(200, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response }));
      });
    });
    await new Promise<void>((r) => hook.listen(0, '127.0.0.1', r));
    const port = (hook.address() as AddressInfo).port;
    for (const [ns, reinvocation] of [['map-reinvoke', 'IfNeeded'], ['map-never', 'Never']]) {
      await namespace(ns, ns);
      await apply(
        policy(`saw-webhook-${ns}`, {
          resource: 'configmaps',
          label: ns,
          mutations: `
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: >
        Object{metadata: Object.metadata{labels: {"policy-saw-webhook": has(object.metadata.annotations) && "webhook" in object.metadata.annotations ? "yes" : "no"}}}`,
        }).replace('reinvocationPolicy: Never', `reinvocationPolicy: ${reinvocation}`),
      );
    }
    await kubectlOk(
      s,
      ['apply', '-f', '-'],
      JSON.stringify({
        apiVersion: 'admissionregistration.k8s.io/v1',
        kind: 'MutatingWebhookConfiguration',
        metadata: { name: 'map-annotator' },
        webhooks: [
          {
            name: 'annotate.map.test.kubeshard.io',
            admissionReviewVersions: ['v1'],
            sideEffects: 'None',
            reinvocationPolicy: 'IfNeeded',
            rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }],
            namespaceSelector: { matchExpressions: [{ key: 'map-test', operator: 'In', values: ['map-reinvoke', 'map-never'] }] },
            clientConfig: { url: `https://127.0.0.1:${port}/annotate`, caBundle },
          },
        ],
      }),
    );
  }, 60_000);
  afterAll(async () => {
    hook?.closeAllConnections();
    await new Promise((r) => hook?.close(r));
    if (certDir) rmSync(certDir, { recursive: true, force: true });
  });

  it('IfNeeded: the policy runs first, then again after the webhook changed the object; the webhook is called again after that', async () => {
    const cm = await createdConfigMap('map-reinvoke', (c) => c.metadata.labels?.['policy-saw-webhook'] === 'yes' && c.metadata.annotations?.webhook === '1');
    const calls = seen.get(cm.metadata.name)!;
    // first call: the policy had already run (mutating policies come before webhooks)
    expect(calls[0].metadata.labels).toEqual({ 'policy-saw-webhook': 'no' });
    // second call: the policy's reinvocation changed the object, so the IfNeeded webhook is called again
    expect(calls).toHaveLength(2);
    expect(calls[1].metadata.labels).toEqual({ 'policy-saw-webhook': 'yes' });
  });

  it('Never: the policy is not run again', async () => {
    const cm = await createdConfigMap('map-never', (c) => c.metadata.annotations?.webhook === '1' && c.metadata.labels?.['policy-saw-webhook'] !== undefined);
    expect(cm.metadata.labels).toEqual({ 'policy-saw-webhook': 'no' });
    expect(seen.get(cm.metadata.name)).toHaveLength(1);
  });
});

describe('MutatingAdmissionPolicy with its gate off', () => {
  let off: TestServer;
  beforeAll(async () => {
    off = await startServer({ args: [RUNTIME_CONFIG] });
  }, 60_000);
  afterAll(async () => {
    await off?.stop();
    off?.cleanup();
  });

  it('does not serve the v1alpha1 kinds, even with the API switched on', async () => {
    expect((await request(off, 'GET', MAP_PATH)).status).toBe(404);
    expect((await request(off, 'GET', '/apis/admissionregistration.k8s.io/v1alpha1/mutatingadmissionpolicybindings')).status).toBe(404);
    expect((await request(off, 'GET', '/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies')).status).toBe(200);
  });
});
