// kube's etcd storage format, checked against a real kube-apiserver (../shared/reference: 1.24
// on Debian's etcd 3.4). Objects created with kubectl through kube-apiserver are read from its
// etcd with kubeshard's client (src/storage/etcd/client.ts) under the keys of keys.ts,
// decoded with codec.ts and compared with what kubectl get answers; then copies of them
// (and objects built here) are encoded with codec.ts, put under kube's keys, and read back
// through kube-apiserver with kubectl: the same objects, resourceVersion the put's revision.
// Skips with a message when the reference, etcd or kubectl is absent.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { EtcdClient } from '../src/storage/etcd/client.js';
import { freePorts } from '../src/storage/etcd/test-cluster.js';
import { objectKey } from '../src/storage/etcd/keys.js';
import { decodeFromStorage, encodeForStorage } from '../src/storage/etcd/codec.js';
import { kubectlPath } from './helpers/kubectl.js';

// ../shared/reference beside the repository (the README's place for it)
const REF = process.env.KUBESHARD_REFERENCE ?? join(fileURLToPath(new URL('.', import.meta.url)), '..', '..', 'shared', 'reference');
const START = join(REF, 'start.sh');
const STOP = join(REF, 'stop.sh');
const missing = [
  !existsSync(START) || !existsSync(join(REF, 'kube-apiserver-1.24.xz')) ? `the reference kube-apiserver (${REF})` : '',
  !existsSync('/usr/bin/etcd') ? '/usr/bin/etcd' : '',
].filter(Boolean);
if (missing.length) console.warn(`skipping the etcd format tests: ${missing.join(' and ')} missing`);

interface Case {
  group: string;
  resource: string;
  namespace?: string;
  name: string;
  /** kubectl's name for the resource */
  kres: string;
}

const OBJECTS = `
apiVersion: v1
kind: ConfigMap
metadata: {name: cm1, namespace: default, labels: {a: b}}
data: {k: v, empty: ""}
---
apiVersion: v1
kind: Secret
metadata: {name: s1, namespace: default}
type: Opaque
data: {password: c2VjcmV0}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: d1, namespace: default}
spec:
  replicas: 0
  selector: {matchLabels: {app: d1}}
  template:
    metadata: {labels: {app: d1}}
    spec:
      containers: [{name: c, image: nginx, ports: [{containerPort: 80}], resources: {limits: {cpu: 500m, memory: 128Mi}}}]
---
apiVersion: v1
kind: Service
metadata: {name: svc1, namespace: default}
spec:
  ports: [{port: 80, targetPort: 8080}]
  selector: {app: d1}
---
apiVersion: v1
kind: Node
metadata: {name: node1, labels: {kubernetes.io/hostname: node1}}
spec: {podCIDR: 10.1.0.0/24}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {size: {type: integer}, color: {type: string}}}
    additionalPrinterColumns: [{name: Size, type: integer, jsonPath: .spec.size}]
    subresources: {status: {}}
`;
const WIDGET = `
apiVersion: example.com/v1
kind: Widget
metadata: {name: w1, namespace: default}
spec: {size: 3, color: red}
`;

const CASES: Case[] = [
  { group: '', resource: 'configmaps', namespace: 'default', name: 'cm1', kres: 'configmaps' },
  { group: '', resource: 'secrets', namespace: 'default', name: 's1', kres: 'secrets' },
  { group: 'apps', resource: 'deployments', namespace: 'default', name: 'd1', kres: 'deployments.apps' },
  { group: '', resource: 'services', namespace: 'default', name: 'svc1', kres: 'services' },
  { group: '', resource: 'nodes', name: 'node1', kres: 'nodes' },
  { group: 'apiextensions.k8s.io', resource: 'customresourcedefinitions', name: 'widgets.example.com', kres: 'customresourcedefinitions.apiextensions.k8s.io' },
  { group: 'example.com', resource: 'widgets', namespace: 'default', name: 'w1', kres: 'widgets.example.com' },
];

describe.skipIf(missing.length > 0)('kube-apiserver and kubeshard read each other\'s etcd objects', () => {
  let dir: string;
  let kubeconfig: string;
  let client: EtcdClient;

  const kubectl = (args: string[], input?: string): Promise<string> =>
    new Promise((resolve, reject) => {
      const p = execFile(kubectlPath(), ['--kubeconfig', kubeconfig, ...args], { timeout: 30_000 }, (err, stdout, stderr) => (err ? reject(new Error(`kubectl ${args.join(' ')}: ${stderr}`)) : resolve(stdout)));
      if (input !== undefined) p.stdin!.end(input);
    });
  const getJson = async (c: Pick<Case, 'kres' | 'namespace' | 'name'>) =>
    JSON.parse(await kubectl(['get', c.kres, c.name, ...(c.namespace ? ['-n', c.namespace] : []), '--show-managed-fields', '-o', 'json']));

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'kubeshard-ref-'));
    const [etcdPort, peerPort, apiPort] = await freePorts(3);
    execFileSync(START, [dir], {
      env: { ...process.env, ETCD_PORT: String(etcdPort), ETCD_PEER_PORT: String(peerPort), APISERVER_PORT: String(apiPort) },
      stdio: 'ignore',
      timeout: 180_000,
    });
    kubeconfig = join(dir, 'kubeconfig');
    client = new EtcdClient({ endpoints: [`http://127.0.0.1:${etcdPort}`], callTimeoutMs: 10_000 });
    await kubectl(['apply', '-f', '-'], OBJECTS);
    await kubectl(['wait', '--for=condition=Established', 'crd/widgets.example.com', '--timeout=60s']);
    // the CRD's resource is served a moment after it is established
    for (let i = 0; ; i++) {
      try {
        await kubectl(['apply', '-f', '-'], WIDGET);
        break;
      } catch (e) {
        if (i > 60) throw e;
        await new Promise((r) => setTimeout(r, 500));
      }
    }
  }, 240_000);

  afterAll(async () => {
    client?.close();
    if (dir) {
      try {
        execFileSync(STOP, [dir], { stdio: 'ignore', timeout: 60_000 });
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    }
  });

  it('reads what kube-apiserver wrote: keys, protobuf and JSON values, resourceVersion from mod_revision', async () => {
    for (const c of CASES) {
      const key = objectKey('/registry', c.group, c.resource, c.namespace, c.name);
      const { kv } = await client.get(key);
      expect(kv, key).toBeDefined();
      const decoded = decodeFromStorage(c, kv!.value, kv!.modRevision);
      expect(decoded.obj, key).toEqual(await getJson(c));
      expect(JSON.parse(decoded.json.toString())).toEqual(decoded.obj);
    }
    // the exceptions of kube's layout, literally
    const keys = (await client.range('/registry/', { rangeEnd: '/registry0', keysOnly: true })).kvs.map((kv) => kv.key.toString());
    expect(keys).toEqual(
      expect.arrayContaining([
        '/registry/services/specs/default/svc1',
        '/registry/minions/node1',
        '/registry/deployments/default/d1',
        '/registry/apiextensions.k8s.io/customresourcedefinitions/widgets.example.com',
        '/registry/example.com/widgets/default/w1',
        '/registry/services/endpoints/default/kubernetes',
      ]),
    );
  });

  it('kube-apiserver reads what kubeshard wrote', async () => {
    const written: Array<{ c: Case; obj: any; revision: number }> = [];
    const put = async (c: Case, obj: any) => {
      const key = objectKey('/registry', c.group, c.resource, c.namespace, c.name);
      const { revision } = await client.put(key, encodeForStorage(c, obj));
      written.push({ c, obj, revision });
    };
    // copies of kube's objects (every field kube defaults is there), under new names and uids
    for (const c of CASES) {
      if (c.resource === 'customresourcedefinitions') continue;
      const { kv } = await client.get(objectKey('/registry', c.group, c.resource, c.namespace, c.name));
      const obj = structuredClone(decodeFromStorage(c, kv!.value, kv!.modRevision).obj);
      obj.metadata.name = `ks-${c.name}`;
      obj.metadata.uid = randomUUID();
      await put({ ...c, name: obj.metadata.name }, obj);
    }
    // one built here, as kubeshard would store it
    await put(
      { group: '', resource: 'configmaps', namespace: 'default', name: 'ks-made', kres: 'configmaps' },
      {
        kind: 'ConfigMap',
        apiVersion: 'v1',
        metadata: { name: 'ks-made', namespace: 'default', uid: randomUUID(), resourceVersion: '12345', creationTimestamp: '2026-01-02T03:04:05Z', labels: { made: 'here' } },
        data: { 'a.txt': 'hello\n', b: '' },
        binaryData: { bin: Buffer.from([0, 1, 2, 255]).toString('base64') },
      },
    );
    for (const { c, obj, revision } of written) {
      const want = { ...obj, metadata: { ...obj.metadata, resourceVersion: String(revision) } };
      expect(await getJson(c), `${c.resource}/${c.name}`).toEqual(want);
    }
    // the stored value carries no resourceVersion (kube's PrepareObjectForStorage)
    const { kv } = await client.get('/registry/configmaps/default/ks-made');
    expect(kv!.value.subarray(0, 4).toString('latin1')).toBe('k8s\0');
    expect(kv!.value.includes('12345')).toBe(false);
  });

  it('a CustomResourceDefinition kubeshard wrote (v1beta1 JSON) is served by kube-apiserver, with its custom resources', async () => {
    const c = CASES.find((x) => x.resource === 'customresourcedefinitions')!;
    const { kv } = await client.get(objectKey('/registry', c.group, c.resource, undefined, c.name));
    const crd = structuredClone(decodeFromStorage(c, kv!.value, kv!.modRevision).obj);
    const names = { plural: 'gadgets', singular: 'gadget', kind: 'Gadget', listKind: 'GadgetList' };
    crd.metadata.name = 'gadgets.example.com';
    crd.metadata.uid = randomUUID();
    crd.spec.names = names;
    crd.status.acceptedNames = names;
    const value = encodeForStorage(c, crd);
    const stored = JSON.parse(value.toString());
    expect(stored.apiVersion).toBe('apiextensions.k8s.io/v1beta1');
    expect(stored.spec.validation).toEqual(crd.spec.versions[0].schema);
    expect(stored.spec.additionalPrinterColumns[0].JSONPath).toBe('.spec.size');
    await client.put(objectKey('/registry', c.group, c.resource, undefined, 'gadgets.example.com'), value);
    const got = await getJson({ kres: c.kres, name: 'gadgets.example.com' });
    expect(got.spec).toEqual(crd.spec);
    expect(got.metadata.uid).toBe(crd.metadata.uid);

    // kube serves the new resource from the CRD it found in etcd; a Gadget kubeshard wrote reads back
    const gadget = {
      apiVersion: 'example.com/v1',
      kind: 'Gadget',
      metadata: { name: 'g1', namespace: 'default', uid: randomUUID(), creationTimestamp: '2026-01-02T03:04:05Z', generation: 1 },
      spec: { size: 7, color: 'blue' },
    };
    const { revision } = await client.put(objectKey('/registry', 'example.com', 'gadgets', 'default', 'g1'), encodeForStorage({ group: 'example.com', resource: 'gadgets' }, gadget));
    let got2: any;
    for (let i = 0; ; i++) {
      try {
        got2 = await getJson({ kres: 'gadgets.example.com', namespace: 'default', name: 'g1' });
        break;
      } catch (e) {
        if (i > 60) throw e;
        await new Promise((r) => setTimeout(r, 500));
      }
    }
    expect(got2).toEqual({ ...gadget, metadata: { ...gadget.metadata, resourceVersion: String(revision) } });
  });
});
