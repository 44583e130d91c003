// The everyday kubectl scenario of issue #2, with the real kubectl 1.33 binary.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { startServer, type TestServer } from './helpers/server.js';
import { kubectl, kubectlOk, kubectlPath, kubectlStream } from './helpers/kubectl.js';

const MANIFEST = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: e2e
  labels: {app: web}
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: nginx
        image: nginx:1.25
        ports:
        - containerPort: 80
---
apiVersion: v1
kind: Service
metadata:
  name: web
  namespace: e2e
spec:
  selector: {app: web}
  ports:
  - port: 80
    targetPort: 80
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: web-config
  namespace: e2e
data:
  key: value
`;

let s: TestServer;
const k = (args: string[], input?: string) => kubectlOk(s, args, input);

beforeAll(async () => {
  kubectlPath();
  s = await startServer();
});
afterAll(async () => {
  await s?.stop();
  s?.cleanup();
});

describe('kubectl end to end', () => {
  it('get ns lists the initial namespaces; create ns adds one', async () => {
    const out = await k(['get', 'ns']);
    for (const ns of ['default', 'kube-system', 'kube-public', 'kube-node-lease']) expect(out).toContain(ns);
    expect(await k(['create', 'ns', 'e2e'])).toContain('namespace/e2e created');
    expect(await k(['get', 'ns', 'e2e', '-o', 'jsonpath={.status.phase}'])).toBe('Active');
  });

  it('apply -f creates a Deployment, a Service and a ConfigMap; re-apply is unchanged', async () => {
    const out = await k(['apply', '-f', '-'], MANIFEST);
    expect(out).toContain('deployment.apps/web created');
    expect(out).toContain('service/web created');
    expect(out).toContain('configmap/web-config created');
    const again = await k(['apply', '-f', '-'], MANIFEST);
    expect(again).toContain('deployment.apps/web unchanged');
  });

  it('get -o yaml shows server-set fields', async () => {
    const y = await k(['get', 'deployment', 'web', '-n', 'e2e', '-o', 'yaml']);
    expect(y).toMatch(/resourceVersion: "\d+"/);
    expect(y).toMatch(/uid: [0-9a-f-]{36}/);
    expect(y).toContain('creationTimestamp:');
    expect(y).toContain('revisionHistoryLimit: 10');
    const svc = await k(['get', 'svc', 'web', '-n', 'e2e', '-o', 'jsonpath={.spec.clusterIP}']);
    expect(svc).toMatch(/^10\.\d+\.\d+\.\d+$/);
  });

  it('describe works for deployments and configmaps', async () => {
    const d = await k(['describe', 'deployment/web', '-n', 'e2e']);
    expect(d).toContain('Name:');
    expect(d).toContain('RollingUpdate');
    const c = await k(['describe', 'cm/web-config', '-n', 'e2e']);
    expect(c).toContain('key');
  });

  it('patch --type=merge, label and annotate change the object', async () => {
    await k(['patch', 'cm', 'web-config', '-n', 'e2e', '--type=merge', '-p', '{"data":{"k2":"v2"}}']);
    await k(['label', 'cm', 'web-config', '-n', 'e2e', 'tier=front']);
    await k(['annotate', 'cm', 'web-config', '-n', 'e2e', 'note=hi']);
    const obj = JSON.parse(await k(['get', 'cm', 'web-config', '-n', 'e2e', '-o', 'json']));
    expect(obj.data).toEqual({ key: 'value', k2: 'v2' });
    expect(obj.metadata.labels.tier).toBe('front');
    expect(obj.metadata.annotations.note).toBe('hi');
    expect(await k(['get', 'cm', '-n', 'e2e', '-l', 'tier=front', '-o', 'name'])).toContain('configmap/web-config');
  });

  it('get -w sees a change made meanwhile', async () => {
    const w = kubectlStream(s, ['get', 'cm', '-n', 'e2e', '-w', '-o', 'name']);
    try {
      await new Promise((r) => setTimeout(r, 1500));
      await k(['create', 'cm', 'watched-one', '-n', 'e2e', '--from-literal=a=b']);
      const deadline = Date.now() + 10_000;
      while (!w.output().includes('watched-one') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      expect(w.output()).toContain('configmap/watched-one');
    } finally {
      w.stop();
    }
  });

  it('delete removes objects', async () => {
    expect(await k(['delete', 'cm/web-config', '-n', 'e2e'])).toContain('deleted');
    const r = await kubectl(s, ['get', 'cm/web-config', '-n', 'e2e']);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('NotFound');
    expect(await k(['delete', 'deployment/web', 'service/web', '-n', 'e2e'])).toContain('deleted');
  });

  it('api-resources and api-versions list the built-in kinds', async () => {
    const res = await k(['api-resources']);
    expect(res).toMatch(/configmaps\s+cm\s+v1\s+true\s+ConfigMap/);
    expect(res).toMatch(/deployments\s+deploy\s+apps\/v1\s+true\s+Deployment/);
    const vers = await k(['api-versions']);
    for (const v of ['v1', 'apps/v1', 'batch/v1']) expect(vers.split('\n')).toContain(v);
  });

  it('deleting a namespace removes its contents, then the namespace', async () => {
    await k(['create', 'cm', 'left-behind', '-n', 'e2e']);
    await k(['delete', 'ns', 'e2e', '--wait=true', '--timeout=30s']);
    const r = await kubectl(s, ['get', 'ns', 'e2e']);
    expect(r.stderr).toContain('NotFound');
  });
});
