// kubeshard (--storage-backend=etcd3) and the reference kube-apiserver (../shared/reference,
// 1.24) on one etcd: objects written through each are read through the other with kubectl
// (issue 19, "Must show"), and an update through one is seen by the other.
//
// Skips with a message when the reference, etcd or kubectl is absent, or when this build's
// server does not run on etcd yet (--storage-backend=etcd3 and --etcd-servers wired in
// src/options.ts and src/storage/factory.ts).
//
// The reference is 1.24: it does not know flowcontrol.apiserver.k8s.io/v1 (1.33's storage
// version of FlowSchemas, which kubeshard writes), so it runs without priority and fairness
// and without the flowcontrol group (its informers would never sync on objects it cannot read);
// and it is given kubeshard's service range, so that its repair loop accepts the kubernetes
// Service kubeshard made.
//
// Both are given one EncryptionConfiguration (aescbc for Secrets): each stores its Secrets
// encrypted under kube's prefix, bound to the etcd key, and reads the other's.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFile, execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { etcdAvailable, startCluster, type TestCluster } from '../src/storage/etcd/test-cluster.js';
import { EtcdClient } from '../src/storage/etcd/client.js';
import { freePort, startServer, type TestServer } from './helpers/server.js';
import { kubectlPath } from './helpers/kubectl.js';

const REF = process.env.KUBESHARD_REFERENCE ?? join(fileURLToPath(new URL('.', import.meta.url)), '..', '..', 'shared', 'reference');
const missing = [!existsSync(join(REF, 'start.sh')) ? `the reference kube-apiserver (${REF})` : '', !etcdAvailable() ? '/usr/bin/etcd' : ''].filter(Boolean);
if (missing.length) console.warn(`skipping the shared-etcd tests: ${missing.join(' and ')} missing`);

describe.skipIf(missing.length > 0)('kubeshard and kube-apiserver on one etcd', () => {
  let cluster: TestCluster;
  let server: TestServer | undefined;
  let refDir: string;
  let refKubeconfig: string;
  let unsupported = '';

  const run = (kubeconfig: string, args: string[], input?: string): Promise<string> =>
    new Promise((resolve, reject) => {
      const p = execFile(kubectlPath(), ['--kubeconfig', kubeconfig, ...args], { timeout: 30_000 }, (err, stdout, stderr) => (err ? reject(new Error(`kubectl ${args.join(' ')}: ${stderr}`)) : resolve(stdout)));
      if (input !== undefined) p.stdin!.end(input);
    });
  const ks = (args: string[], input?: string) => run(server!.kubeconfigPath, args, input);
  const ref = (args: string[], input?: string) => run(refKubeconfig, args, input);
  const json = async (via: typeof ks, args: string[]) => JSON.parse(await via([...args, '-o', 'json']));
  async function eventually<T>(fn: () => Promise<T>, ms = 30_000): Promise<T> {
    const end = Date.now() + ms;
    for (;;) {
      try {
        return await fn();
      } catch (e) {
        if (Date.now() > end) throw e;
        await new Promise((r) => setTimeout(r, 300));
      }
    }
  }

  let encDir: string;
  let encConfig: string;

  beforeAll(async () => {
    cluster = await startCluster(1);
    encDir = mkdtempSync(join(tmpdir(), 'kubeshard-shared-enc-'));
    encConfig = join(encDir, 'encryption.yaml');
    writeFileSync(
      encConfig,
      `apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n  providers:\n  - aescbc: {keys: [{name: shared, secret: "${randomBytes(32).toString('base64')}"}]}\n  - identity: {}\n`,
    );
    try {
      server = await startServer({ args: ['--storage-backend', 'etcd3', '--etcd-servers', cluster.endpoints[0], '--encryption-provider-config', encConfig] });
    } catch (e) {
      unsupported = `this build's server does not run on etcd (${(e as Error).message.split('\n')[0]})`;
      console.warn(`skipping the shared-etcd tests: ${unsupported}`);
      return;
    }
    // the reference on the same etcd: start.sh starts no etcd of its own when its pid file names a live one
    refDir = mkdtempSync(join(tmpdir(), 'kubeshard-shared-'));
    mkdirSync(join(refDir, 'run'), { recursive: true });
    writeFileSync(join(refDir, 'run', 'etcd.pid'), String(cluster.members[0].proc!.pid));
    const etcdPort = new URL(cluster.endpoints[0]).port;
    execFileSync(join(REF, 'start.sh'), [
      refDir,
      '--',
      '--enable-priority-and-fairness=false',
      '--runtime-config=flowcontrol.apiserver.k8s.io/v1beta2=false,flowcontrol.apiserver.k8s.io/v1beta1=false',
      '--service-cluster-ip-range=10.96.0.0/12',
      `--encryption-provider-config=${encConfig}`,
    ], {
      env: { ...process.env, ETCD_PORT: etcdPort, ETCD_PEER_PORT: String(await freePort()), APISERVER_PORT: String(await freePort()) },
      stdio: 'ignore',
      timeout: 180_000,
    });
    refKubeconfig = join(refDir, 'kubeconfig');
  }, 300_000);

  afterAll(async () => {
    await server?.stop();
    server?.cleanup();
    if (refDir) {
      // stop.sh stops what its pid files name: the reference's kube-apiserver, and our etcd (stopped below anyway)
      rmSync(join(refDir, 'run', 'etcd.pid'), { force: true });
      execFileSync(join(REF, 'stop.sh'), [refDir], { stdio: 'ignore', timeout: 60_000 });
      rmSync(refDir, { recursive: true, force: true });
    }
    await cluster?.stop();
    if (encDir) rmSync(encDir, { recursive: true, force: true });
  });

  it('objects written through kubeshard are read through kube-apiserver, and the other way round', async (ctx) => {
    if (unsupported) ctx.skip();
    const objects = (suffix: string) => `
apiVersion: v1
kind: ConfigMap
metadata: {name: cm-${suffix}, namespace: default}
data: {from: ${suffix}}
---
apiVersion: v1
kind: Secret
metadata: {name: s-${suffix}, namespace: default}
type: Opaque
stringData: {password: pw-${suffix}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: d-${suffix}, namespace: default}
spec:
  replicas: 0
  selector: {matchLabels: {app: d-${suffix}}}
  template:
    metadata: {labels: {app: d-${suffix}}}
    spec: {containers: [{name: c, image: nginx}]}
`;
    await ks(['apply', '-f', '-'], objects('kubeshard'));
    await ref(['apply', '-f', '-'], objects('kube'));
    for (const [reader, suffix] of [[ref, 'kubeshard'], [ks, 'kube']] as const) {
      const cm = await eventually(() => json(reader, ['get', 'configmap', `cm-${suffix}`]));
      expect(cm.data).toEqual({ from: suffix });
      const s = await eventually(() => json(reader, ['get', 'secret', `s-${suffix}`]));
      expect(Buffer.from(s.data.password, 'base64').toString()).toBe(`pw-${suffix}`);
      const d = await eventually(() => json(reader, ['get', 'deployment', `d-${suffix}`]));
      expect(d.spec.template.spec.containers[0].image).toBe('nginx');
    }
    // both Secrets are stored encrypted, with the key's name in kube's prefix, and no plaintext
    const client = new EtcdClient({ endpoints: cluster.endpoints });
    try {
      for (const suffix of ['kubeshard', 'kube']) {
        const kv = (await client.get(`/registry/secrets/default/s-${suffix}`)).kv!;
        expect(kv.value.subarray(0, 25).toString()).toBe('k8s:enc:aescbc:v1:shared:');
        expect(kv.value.includes(`pw-${suffix}`)).toBe(false);
      }
    } finally {
      client.close();
    }
    // the same resourceVersion through both: the etcd revision
    const a = await json(ks, ['get', 'configmap', 'cm-kube']);
    const b = await json(ref, ['get', 'configmap', 'cm-kube']);
    expect(a.metadata.resourceVersion).toBe(b.metadata.resourceVersion);
    // an update through kube-apiserver reaches kubeshard's caches through its etcd watch
    await ref(['label', 'configmap', 'cm-kubeshard', 'seen=by-kube']);
    await eventually(async () => expect((await json(ks, ['get', 'configmap', 'cm-kubeshard'])).metadata.labels).toEqual({ seen: 'by-kube' }));
  });

  it('a custom resource written through either is read through the other', async (ctx) => {
    if (unsupported) ctx.skip();
    await ks(
      ['apply', '-f', '-'],
      `
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
    schema: {openAPIV3Schema: {type: object, properties: {spec: {type: object, properties: {size: {type: integer}}}}}}
`,
    );
    await eventually(() => ks(['apply', '-f', '-'], 'apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w-kubeshard, namespace: default}\nspec: {size: 1}\n'));
    // kube-apiserver serves the CRD it found in etcd
    await eventually(() => ref(['apply', '-f', '-'], 'apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w-kube, namespace: default}\nspec: {size: 2}\n'), 60_000);
    expect((await eventually(() => json(ref, ['get', 'widgets.example.com', 'w-kubeshard']))).spec).toEqual({ size: 1 });
    expect((await eventually(() => json(ks, ['get', 'widgets.example.com', 'w-kube']))).spec).toEqual({ size: 2 });
  });
  it('the kubernetes endpoints list both servers: each reads the other\'s master lease in etcd', async (ctx) => {
    if (unsupported) ctx.skip();
    // the reference advertises 192.0.2.10 (start.sh); kubeshard a host interface address of its own
    const ips = async (via: typeof ks) => ((await json(via, ['get', 'endpoints', 'kubernetes'])).subsets?.[0]?.addresses ?? []).map((a: any) => a.ip);
    const both = await eventually(async () => {
      const l = await ips(ks);
      expect(l).toHaveLength(2);
      expect(l).toContain('192.0.2.10');
      return l;
    }, 60_000);
    await eventually(async () => expect(await ips(ref)).toEqual(both), 30_000);
    // (the EndpointSlice is not compared: kube 1.24 stores EndpointSlices as discovery.k8s.io/v1beta1
    // protobuf, a version a 1.33 catalog has no schema for; a 1.33 kube-apiserver stores v1)
  }, 120_000);
});
