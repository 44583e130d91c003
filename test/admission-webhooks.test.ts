// MutatingAdmissionWebhook and ValidatingAdmissionWebhook against a started server, with REAL
// HTTPS webhook servers started here (a CA and a serving certificate made by openssl), driven
// through kubectl where a user meets them: a mutating hook's label seen by `kubectl get`, a
// denial in kube's words, a dead hook under Fail and under Ignore, a server-side dry run
// through a hook with side effects, reinvocation, a hook reached through a Service's
// EndpointSlice, warnings, metrics, and the exemption of the configurations themselves.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import https from 'node:https';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { freePort, request, type TestServer, until, useServer } from './helpers/server.js';
import { kubectl, kubectlOk } from './helpers/kubectl.js';

let s: TestServer;
useServer((started) => (s = started));

// ---- certificates: a CA, and a serving certificate for 127.0.0.1 and the Service's DNS name

let certDir: string;
let caPem: string;
let caBundle: string;
let webhook: https.Server;
let hookPort: number;
/** every review received, by path */
const calls = new Map<string, any[]>();

function makeCerts(): { key: string; cert: string } {
  certDir = mkdtempSync(join(tmpdir(), 'kubeshard-webhook-certs-'));
  const run = (args: string[]) => execFileSync('openssl', args, { cwd: certDir, stdio: 'ignore' });
  run(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', 'ca.key']);
  run(['req', '-x509', '-new', '-key', 'ca.key', '-days', '2', '-subj', '/CN=webhook-test-ca', '-out', 'ca.crt']);
  run(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', 'tls.key']);
  run(['req', '-new', '-key', 'tls.key', '-subj', '/CN=hooks.hooks-system.svc', '-out', 'tls.csr']);
  writeFileSync(join(certDir, 'ext.cnf'), 'subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:hooks.hooks-system.svc\n');
  run(['x509', '-req', '-in', 'tls.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-days', '2', '-extfile', 'ext.cnf', '-out', 'tls.crt']);
  caPem = readFileSync(join(certDir, 'ca.crt'), 'utf8');
  caBundle = Buffer.from(caPem).toString('base64');
  return { key: readFileSync(join(certDir, 'tls.key'), 'utf8'), cert: readFileSync(join(certDir, 'tls.crt'), 'utf8') };
}

const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64');
const labelPatch = (obj: any, key: string, value: string) =>
  obj?.metadata?.labels ? [{ op: 'add', path: `/metadata/labels/${key.replace(/~/g, '~0').replace(/\//g, '~1')}`, value }] : [{ op: 'add', path: '/metadata/labels', value: { [key]: value } }];

/** The webhook server's answers, by path. */
const handlers: Record<string, (req: any) => any> = {
  '/add-label': (r) => ({ allowed: true, patchType: 'JSONPatch', patch: b64(labelPatch(r.object, 'webhook-added', 'yes')), warnings: ['a label was added by the webhook'], auditAnnotations: { added: 'webhook-added' } }),
  '/deny': (r) => (r.name?.startsWith('deny-') ? { allowed: false, status: { code: 403, message: 'pods named deny-* are not allowed' } } : { allowed: true }),
  '/allow': () => ({ allowed: true }),
  // reinvocation: A adds a=1, and once it sees b, a-saw-b=yes; B adds b=1
  '/reinvoke-a': (r) => {
    const l = r.object?.metadata?.labels ?? {};
    if (!l.a) return { allowed: true, patchType: 'JSONPatch', patch: b64(labelPatch(r.object, 'a', '1')) };
    if (l.b && !l['a-saw-b']) return { allowed: true, patchType: 'JSONPatch', patch: b64(labelPatch(r.object, 'a-saw-b', 'yes')) };
    return { allowed: true };
  },
  '/reinvoke-b': (r) => (r.object?.metadata?.labels?.b ? { allowed: true } : { allowed: true, patchType: 'JSONPatch', patch: b64(labelPatch(r.object, 'b', '1')) }),
  '/inject': () => ({ allowed: true, patchType: 'JSONPatch', patch: b64([{ op: 'add', path: '/spec/containers/-', value: { name: 'sidecar', image: 'busybox' } }]) }),
  '/v1beta1': () => ({ allowed: false, status: { message: 'v1beta1 says no' } }),
};

beforeAll(async () => {
  const { key, cert } = makeCerts();
  webhook = https.createServer({ key, cert }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const review = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      const path = (req.url ?? '').split('?')[0];
      const list = calls.get(path) ?? [];
      list.push({ review, url: req.url, host: req.headers.host });
      calls.set(path, list);
      const h = handlers[path];
      if (!h) {
        res.writeHead(404).end();
        return;
      }
      const response = { uid: review.request.uid, ...h(review.request) };
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ apiVersion: review.apiVersion, kind: 'AdmissionReview', response }));
    });
  });
  await new Promise<void>((r) => webhook.listen(0, '127.0.0.1', r));
  hookPort = (webhook.address() as AddressInfo).port;
});

afterAll(async () => {
  webhook?.closeAllConnections();
  await new Promise((r) => webhook?.close(r));
  if (certDir) rmSync(certDir, { recursive: true, force: true });
});

// ---- helpers

const podRules = [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] }];

function hookConfig(kind: 'Mutating' | 'Validating', name: string, hooks: any[]): any {
  return {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: `${kind}WebhookConfiguration`,
    metadata: { name },
    webhooks: hooks.map((h) => ({
      admissionReviewVersions: ['v1'],
      sideEffects: 'None',
      rules: podRules,
      ...h,
      clientConfig: h.clientConfig ?? { url: `https://127.0.0.1:${hookPort}${h.path}`, caBundle },
      path: undefined,
    })),
  };
}

/** A namespace only the test's hooks select (namespaceSelector wh-test=<name>). */
async function namespace(name: string): Promise<void> {
  await kubectlOk(s, ['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels: { 'wh-test': name } } }));
}
const selector = (ns: string) => ({ namespaceSelector: { matchLabels: { 'wh-test': ns } } });

async function apply(obj: any): Promise<void> {
  await kubectlOk(s, ['apply', '-f', '-'], JSON.stringify(obj));
}

const pod = (name: string, labels?: Record<string, string>) => ({ apiVersion: 'v1', kind: 'Pod', metadata: { name, ...(labels ? { labels } : {}) }, spec: { containers: [{ name: 'c', image: 'nginx' }] } });

/** Waits until the server's admission sees a configuration: a server-side dry run in ns gives `ready`. */
async function active(ns: string, ready: (r: { status: number; body: any }) => boolean): Promise<void> {
  await until(async () => {
    const r = await request(s, 'POST', `/api/v1/namespaces/${ns}/pods?dryRun=All`, pod(`probe-${Math.random().toString(36).slice(2, 8)}`));
    return ready({ status: r.status, body: r.json() });
  });
}

// ---- the tests

describe('admission webhooks', () => {
  it('a mutating webhook adds a label that kubectl get shows; its warning reaches kubectl; the review carries kube fields', async () => {
    await namespace('wh-mut');
    await apply(hookConfig('Mutating', 'add-label', [{ name: 'add-label.test.kubeshard.io', path: '/add-label', ...selector('wh-mut') }]));
    await active('wh-mut', (r) => r.body?.metadata?.labels?.['webhook-added'] === 'yes');
    const run = await kubectl(s, ['run', 'mutated', '--image=nginx', '-n', 'wh-mut']);
    expect(run.code).toBe(0);
    expect(run.stderr).toContain('Warning: a label was added by the webhook');
    const label = await kubectlOk(s, ['get', 'pod', 'mutated', '-n', 'wh-mut', '-o', 'jsonpath={.metadata.labels.webhook-added}']);
    expect(label).toBe('yes');
    const shown = await kubectlOk(s, ['get', 'pod', 'mutated', '-n', 'wh-mut', '--show-labels']);
    expect(shown).toContain('webhook-added=yes');
    const seen = calls.get('/add-label')!.map((c) => c.review).find((r) => r.request.name === 'mutated');
    expect(seen.apiVersion).toBe('admission.k8s.io/v1');
    expect(seen.kind).toBe('AdmissionReview');
    const rq = seen.request;
    expect(rq.uid).toMatch(/^[0-9a-f-]{36}$/);
    expect(rq.kind).toEqual({ group: '', version: 'v1', kind: 'Pod' });
    expect(rq.resource).toEqual({ group: '', version: 'v1', resource: 'pods' });
    expect(rq.requestKind).toEqual({ group: '', version: 'v1', kind: 'Pod' });
    expect(rq.requestResource).toEqual({ group: '', version: 'v1', resource: 'pods' });
    expect(rq.namespace).toBe('wh-mut');
    expect(rq.operation).toBe('CREATE');
    expect(rq.dryRun).toBe(false);
    expect(rq.oldObject).toBeNull();
    expect(rq.object.metadata.name).toBe('mutated');
    expect(rq.options.kind).toBe('CreateOptions');
    // the timeout is passed on as kube passes it
    expect(calls.get('/add-label')![0].url).toBe('/add-label?timeout=10s');
  });

  it('a sidecar injected by a mutating webhook gets the container defaults', async () => {
    await namespace('wh-inject');
    await apply(hookConfig('Mutating', 'inject', [{ name: 'inject.test.kubeshard.io', path: '/inject', ...selector('wh-inject') }]));
    await active('wh-inject', (r) => r.body?.spec?.containers?.length === 2);
    expect((await kubectl(s, ['run', 'with-sidecar', '--image=nginx', '-n', 'wh-inject'])).code).toBe(0);
    const p = JSON.parse(await kubectlOk(s, ['get', 'pod', 'with-sidecar', '-n', 'wh-inject', '-o', 'json']));
    const sidecar = p.spec.containers.find((c: any) => c.name === 'sidecar');
    expect(sidecar).toMatchObject({ image: 'busybox', imagePullPolicy: 'Always', terminationMessagePath: '/dev/termination-log', terminationMessagePolicy: 'File' });
  });

  it('a validating webhook denies with its message as kube phrases it', async () => {
    await namespace('wh-val');
    await apply(hookConfig('Validating', 'deny', [{ name: 'deny.test.kubeshard.io', path: '/deny', ...selector('wh-val') }]));
    await active('wh-val', () => (calls.get('/deny') ?? []).length > 0);
    const r = await kubectl(s, ['run', 'deny-me', '--image=nginx', '-n', 'wh-val']);
    expect(r.code).not.toBe(0);
    expect(r.stderr.trim()).toBe('Error from server: admission webhook "deny.test.kubeshard.io" denied the request: pods named deny-* are not allowed');
    const api = await request(s, 'POST', '/api/v1/namespaces/wh-val/pods', pod('deny-api'));
    expect(api.status).toBe(403);
    expect(api.json()).toMatchObject({ kind: 'Status', status: 'Failure', code: 403, message: 'admission webhook "deny.test.kubeshard.io" denied the request: pods named deny-* are not allowed' });
    expect((await kubectl(s, ['run', 'fine', '--image=nginx', '-n', 'wh-val'])).code).toBe(0);
  });

  it('matchConditions (CEL) decide which requests reach a hook', async () => {
    await namespace('wh-cond');
    await apply(
      hookConfig('Validating', 'cond', [
        {
          name: 'cond.test.kubeshard.io',
          path: '/deny',
          ...selector('wh-cond'),
          // only pods whose name starts with deny- and that are not labelled exempt go to the hook
          matchConditions: [
            { name: 'named-deny', expression: "object.metadata.name.startsWith('deny-')" },
            { name: 'not-exempt', expression: "!has(object.metadata.labels) || !('exempt' in object.metadata.labels)" },
          ],
        },
      ]),
    );
    // (active: a dry-run pod named deny-... is refused once the server's admission has the configuration)
    await until(async () => (await request(s, 'POST', `/api/v1/namespaces/wh-cond/pods?dryRun=All`, pod(`deny-probe-${Math.random().toString(36).slice(2, 8)}`))).status === 403);
    const before = (calls.get('/deny') ?? []).length;
    // no condition false for this one: the hook denies it
    const denied = await kubectl(s, ['run', 'deny-cond', '--image=nginx', '-n', 'wh-cond']);
    expect(denied.code).not.toBe(0);
    expect(denied.stderr).toContain('admission webhook "cond.test.kubeshard.io" denied the request');
    // a condition false: the hook is not called at all, the pod is admitted
    expect((await kubectl(s, ['run', 'other-name', '--image=nginx', '-n', 'wh-cond'])).code).toBe(0);
    expect((await kubectl(s, ['run', 'deny-exempt', '--image=nginx', '-n', 'wh-cond', '--labels', 'exempt=yes'])).code).toBe(0);
    const reached = (calls.get('/deny') ?? []).slice(before).map((c) => c.review.request.name);
    expect(reached).toEqual(['deny-cond']);
    // an expression that does not compile is refused when the configuration is written
    const bad = await kubectl(s, ['apply', '-f', '-'], { input: JSON.stringify(hookConfig('Validating', 'cond-bad', [{ name: 'bad.test.kubeshard.io', path: '/deny', matchConditions: [{ name: 'x', expression: 'object.nope(' }] }])) });
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('matchConditions[0].expression');
  });

  it('a dead webhook: failurePolicy Fail refuses with kube message, Ignore admits', async () => {
    await namespace('wh-dead');
    const dead = await freePort();
    const url = `https://127.0.0.1:${dead}/`;
    await apply(hookConfig('Validating', 'dead', [{ name: 'dead.test.kubeshard.io', clientConfig: { url, caBundle }, failurePolicy: 'Fail', ...selector('wh-dead') }]));
    await active('wh-dead', (r) => r.status === 500);
    const r = await kubectl(s, ['run', 'refused', '--image=nginx', '-n', 'wh-dead']);
    expect(r.code).not.toBe(0);
    expect(r.stderr.trim()).toBe(
      `Error from server (InternalError): Internal error occurred: failed calling webhook "dead.test.kubeshard.io": failed to call webhook: Post "https://127.0.0.1:${dead}/?timeout=10s": dial tcp 127.0.0.1:${dead}: connect: connection refused`,
    );
    await apply(hookConfig('Validating', 'dead', [{ name: 'dead.test.kubeshard.io', clientConfig: { url, caBundle }, failurePolicy: 'Ignore', ...selector('wh-dead') }]));
    await active('wh-dead', (r) => r.status === 201);
    expect((await kubectl(s, ['run', 'admitted', '--image=nginx', '-n', 'wh-dead'])).code).toBe(0);
    expect(await kubectlOk(s, ['get', 'pod', 'admitted', '-n', 'wh-dead', '-o', 'name'])).toBe('pod/admitted\n');
  });

  it('a webhook whose CA does not match fails the TLS check in Go words', async () => {
    await namespace('wh-tls');
    const otherCa = Buffer.from(readFileSync(join(s.dataDir, 'certs', 'ca.crt'))).toString('base64');
    await apply(hookConfig('Validating', 'bad-ca', [{ name: 'bad-ca.test.kubeshard.io', clientConfig: { url: `https://127.0.0.1:${hookPort}/allow`, caBundle: otherCa }, ...selector('wh-tls') }]));
    await active('wh-tls', (r) => r.status === 500);
    const r = await request(s, 'POST', '/api/v1/namespaces/wh-tls/pods', pod('tls'));
    expect(r.status).toBe(500);
    expect(r.json().message).toBe(
      `Internal error occurred: failed calling webhook "bad-ca.test.kubeshard.io": failed to call webhook: Post "https://127.0.0.1:${hookPort}/allow?timeout=10s": tls: failed to verify certificate: x509: certificate signed by unknown authority`,
    );
  });

  it('server-side dry run: a sideEffects: None hook sees dryRun true; sideEffects Some is refused as in v1', async () => {
    await namespace('wh-dry');
    // v1 accepts only None and NoneOnDryRun (kube's validation): a hook with side effects cannot be configured
    const some = await kubectl(s, ['apply', '-f', '-'], { input: JSON.stringify(hookConfig('Mutating', 'side-effects', [{ name: 'side-effects.test.kubeshard.io', path: '/allow', sideEffects: 'Some', ...selector('wh-dry') }])) });
    expect(some.code).not.toBe(0);
    expect(some.stderr).toContain('webhooks[0].sideEffects: Unsupported value: "Some": supported values: "None", "NoneOnDryRun"');
    await apply(hookConfig('Mutating', 'side-effects', [{ name: 'side-effects.test.kubeshard.io', path: '/add-label', sideEffects: 'NoneOnDryRun', ...selector('wh-dry') }]));
    await active('wh-dry', (r) => r.body?.metadata?.labels?.['webhook-added'] === 'yes');
    const r = await kubectl(s, ['create', '-f', '-', '-n', 'wh-dry', '--dry-run=server', '-o', 'json'], { input: JSON.stringify(pod('dry')) });
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).metadata.labels['webhook-added']).toBe('yes');
    const seen = (calls.get('/add-label') ?? []).find((c) => c.review.request.name === 'dry');
    expect(seen.review.request.dryRun).toBe(true);
    expect(seen.review.request.options).toMatchObject({ kind: 'CreateOptions', apiVersion: 'meta.k8s.io/v1', dryRun: ['All'], fieldManager: 'kubectl-create' });
    expect((await kubectl(s, ['get', 'pod', 'dry', '-n', 'wh-dry'])).code).not.toBe(0);
  });

  it('reinvocationPolicy IfNeeded: a hook is called again after a later hook changed the object', async () => {
    await namespace('wh-re');
    await apply(
      hookConfig('Mutating', 'reinvoke', [
        { name: 'a.reinvoke.test.kubeshard.io', path: '/reinvoke-a', reinvocationPolicy: 'IfNeeded', ...selector('wh-re') },
        { name: 'b.reinvoke.test.kubeshard.io', path: '/reinvoke-b', reinvocationPolicy: 'Never', ...selector('wh-re') },
      ]),
    );
    await active('wh-re', (r) => r.body?.metadata?.labels?.['a-saw-b'] === 'yes');
    expect((await kubectl(s, ['run', 'twice', '--image=nginx', '-n', 'wh-re'])).code).toBe(0);
    const labels = JSON.parse(await kubectlOk(s, ['get', 'pod', 'twice', '-n', 'wh-re', '-o', 'jsonpath={.metadata.labels}']));
    expect(labels).toMatchObject({ a: '1', b: '1', 'a-saw-b': 'yes', run: 'twice' });
    const named = (p: string) => (calls.get(p) ?? []).filter((c) => c.review.request.name === 'twice');
    expect(named('/reinvoke-a')).toHaveLength(2);
    expect(named('/reinvoke-b')).toHaveLength(1);
  });

  it('a webhook referenced by Service is reached through its EndpointSlice, with the Service DNS name verified', async () => {
    await namespace('hooks-system');
    await namespace('wh-svc');
    await apply({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'hooks', namespace: 'hooks-system' }, spec: { ports: [{ name: 'https', port: 443, targetPort: hookPort }] } });
    await apply({
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: { name: 'hooks-1', namespace: 'hooks-system', labels: { 'kubernetes.io/service-name': 'hooks', 'endpointslice.kubernetes.io/managed-by': 'test' } },
      addressType: 'IPv4',
      ports: [{ name: 'https', port: hookPort, protocol: 'TCP' }],
      endpoints: [{ addresses: ['127.0.0.1'], conditions: { ready: true } }],
    });
    await apply(hookConfig('Mutating', 'by-service', [{ name: 'by-service.test.kubeshard.io', clientConfig: { service: { namespace: 'hooks-system', name: 'hooks', path: '/add-label' }, caBundle }, ...selector('wh-svc') }]));
    await active('wh-svc', (r) => r.body?.metadata?.labels?.['webhook-added'] === 'yes');
    expect((await kubectl(s, ['run', 'via-svc', '--image=nginx', '-n', 'wh-svc'])).code).toBe(0);
    expect(await kubectlOk(s, ['get', 'pod', 'via-svc', '-n', 'wh-svc', '-o', 'jsonpath={.metadata.labels.webhook-added}'])).toBe('yes');
    const call = (calls.get('/add-label') ?? []).find((c) => c.review.request.name === 'via-svc');
    expect(call.host).toBe('hooks.hooks-system.svc:443');
    // no ready endpoint: kube's words
    await apply({
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: { name: 'hooks-1', namespace: 'hooks-system', labels: { 'kubernetes.io/service-name': 'hooks', 'endpointslice.kubernetes.io/managed-by': 'test' } },
      addressType: 'IPv4',
      ports: [{ name: 'https', port: hookPort, protocol: 'TCP' }],
      endpoints: [{ addresses: ['127.0.0.1'], conditions: { ready: false } }],
    });
    await active('wh-svc', (r) => r.status === 500);
    const r = await request(s, 'POST', '/api/v1/namespaces/wh-svc/pods', pod('no-endpoints'));
    expect(r.json().message).toBe(
      'Internal error occurred: failed calling webhook "by-service.test.kubeshard.io": failed to call webhook: Post "https://hooks.hooks-system.svc:443/add-label?timeout=10s": no endpoints available for service "hooks"',
    );
  });

  it('AdmissionReview v1beta1 when it comes first; a denial without a code is a 400', async () => {
    await namespace('wh-beta');
    await apply(hookConfig('Validating', 'beta', [{ name: 'beta.test.kubeshard.io', path: '/v1beta1', admissionReviewVersions: ['v1beta1', 'v1'], ...selector('wh-beta') }]));
    await active('wh-beta', (r) => r.status === 400);
    const r = await request(s, 'POST', '/api/v1/namespaces/wh-beta/pods', pod('beta'));
    expect(r.status).toBe(400);
    expect(r.json().message).toBe('admission webhook "beta.test.kubeshard.io" denied the request: v1beta1 says no');
    const seen = (calls.get('/v1beta1') ?? []).find((c) => c.review.request.name === 'beta');
    expect(seen.review.apiVersion).toBe('admission.k8s.io/v1beta1');
  });

  it('the webhook metrics count calls and rejections', async () => {
    const r = await request(s, 'GET', '/metrics');
    const text = r.body;
    expect(text).toMatch(/apiserver_admission_webhook_admission_duration_seconds_count\{name="add-label.test.kubeshard.io",type="admit",operation="CREATE",rejected="false"\} [1-9]/);
    expect(text).toMatch(/apiserver_admission_webhook_rejection_count\{name="deny.test.kubeshard.io",type="validating",operation="CREATE",error_type="no_error",rejection_code="403"\} [1-9]/);
    expect(text).toMatch(/apiserver_admission_webhook_rejection_count\{name="dead.test.kubeshard.io",type="validating",operation="CREATE",error_type="calling_webhook_error",rejection_code="400"\} [1-9]/);
    expect(text).toMatch(/apiserver_admission_step_admission_duration_seconds_count\{operation="CREATE",rejected="false",type="admit"\} [1-9]/);
  });

  it('matchPolicy Equivalent: a hook on autoscaling/v1 sees a v2 HPA converted, with the request kind beside it', async () => {
    await namespace('wh-eq');
    await apply(
      hookConfig('Validating', 'equivalent', [
        { name: 'hpa-v1.test.kubeshard.io', path: '/allow', rules: [{ operations: ['CREATE', 'UPDATE'], apiGroups: ['autoscaling'], apiVersions: ['v1'], resources: ['horizontalpodautoscalers'] }], ...selector('wh-eq') },
      ]),
    );
    const hpa = (name: string) => ({
      apiVersion: 'autoscaling/v2',
      kind: 'HorizontalPodAutoscaler',
      metadata: { name, namespace: 'wh-eq' },
      spec: { scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'web' }, minReplicas: 1, maxReplicas: 4, metrics: [{ type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 60 } } }] },
    });
    await until(async () => {
      const r = await request(s, 'POST', `/apis/autoscaling/v2/namespaces/wh-eq/horizontalpodautoscalers?dryRun=All`, hpa(`probe-${Math.random().toString(36).slice(2, 8)}`));
      return r.status === 201 && (calls.get('/allow') ?? []).some((c) => c.review.request.namespace === 'wh-eq');
    });
    await apply(hpa('web'));
    const seen = (calls.get('/allow') ?? []).find((c) => c.review.request.name === 'web' && c.review.request.namespace === 'wh-eq').review.request;
    expect(seen.kind).toEqual({ group: 'autoscaling', version: 'v1', kind: 'HorizontalPodAutoscaler' });
    expect(seen.resource).toEqual({ group: 'autoscaling', version: 'v1', resource: 'horizontalpodautoscalers' });
    expect(seen.requestKind).toEqual({ group: 'autoscaling', version: 'v2', kind: 'HorizontalPodAutoscaler' });
    expect(seen.requestResource).toEqual({ group: 'autoscaling', version: 'v2', resource: 'horizontalpodautoscalers' });
    expect(seen.object.apiVersion).toBe('autoscaling/v1');
    expect(seen.object.spec.targetCPUUtilizationPercentage).toBe(60);
  });

  it('an UPDATE carries the old object', async () => {
    await namespace('wh-upd');
    await apply(hookConfig('Validating', 'on-update', [{ name: 'update.test.kubeshard.io', path: '/allow', rules: [{ operations: ['UPDATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }], ...selector('wh-upd') }]));
    await kubectlOk(s, ['create', 'configmap', 'cm', '-n', 'wh-upd', '--from-literal=k=v1']);
    await until(async () => {
      await kubectlOk(s, ['label', 'configmap', 'cm', '-n', 'wh-upd', `round=${Math.random().toString(36).slice(2, 8)}`, '--overwrite']);
      return (calls.get('/allow') ?? []).some((c) => c.review.request.namespace === 'wh-upd');
    });
    const seen = (calls.get('/allow') ?? []).find((c) => c.review.request.namespace === 'wh-upd').review.request;
    expect(seen.operation).toBe('UPDATE');
    expect(seen.oldObject.data).toEqual({ k: 'v1' });
    expect(seen.object.metadata.labels.round).toBeTruthy();
    expect(seen.oldObject.metadata.labels?.round).not.toBe(seen.object.metadata.labels.round);
    expect(seen.options.kind).toBe('UpdateOptions');
  });

  it('webhooks never intercept their own configuration objects', async () => {
    const dead = await freePort();
    // a dead hook on everything, failing closed
    await apply({
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingWebhookConfiguration',
      metadata: { name: 'deny-everything' },
      webhooks: [{ name: 'everything.test.kubeshard.io', admissionReviewVersions: ['v1'], sideEffects: 'None', failurePolicy: 'Fail', clientConfig: { url: `https://127.0.0.1:${dead}/`, caBundle }, rules: [{ operations: ['*'], apiGroups: ['*'], apiVersions: ['*'], resources: ['*/*'] }] }],
    });
    await until(async () => (await request(s, 'POST', '/api/v1/namespaces/default/configmaps', { metadata: { name: 'cm-refused' } })).status === 500);
    // the configurations themselves still change
    await apply({ apiVersion: 'admissionregistration.k8s.io/v1', kind: 'MutatingWebhookConfiguration', metadata: { name: 'unrelated' }, webhooks: [] });
    expect((await kubectl(s, ['delete', 'validatingwebhookconfiguration', 'deny-everything'])).code).toBe(0);
    await until(async () => (await request(s, 'POST', '/api/v1/namespaces/default/configmaps', { metadata: { name: 'cm-admitted' } })).status === 201);
  });
});
