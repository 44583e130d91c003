// The built-in admission plugins against a started server, with real kubectl where a user
// meets them: ServiceAccount (default account, missing account, the kube-api-access token
// volume), kube-root-ca.crt, StorageObjectInUseProtection with its in-process controllers,
// DefaultStorageClass, DefaultIngressClass and LimitRanger.
import { describe, it, expect, beforeAll } from 'vitest';
import { request, type TestServer, until, useServer } from './helpers/server.js';
import { kubectl } from './helpers/kubectl.js';

let s: TestServer;

useServer((started) => (s = started));

const NS = '/api/v1/namespaces';
const pod = (name: string, spec: any = {}, metadata: any = {}) => ({
  metadata: { name, ...metadata },
  spec: { containers: [{ name: 'c', image: 'busybox' }], ...spec },
});
const yaml = (s: string) => s.replace(/^ {4}/gm, '');

describe('ServiceAccount admission', () => {
  it('kubectl run gets the default account and the kube-api-access projected volume mounted read-only', async () => {
    const r = await kubectl(s, ['run', 'sa-run', '--image=nginx']);
    expect(r.stderr).toBe('');
    const got = await kubectl(s, ['get', 'pod', 'sa-run', '-o', 'json']);
    const p = JSON.parse(got.stdout);
    expect(p.spec.serviceAccountName).toBe('default');
    expect(p.spec.serviceAccount).toBe('default');
    const vol = p.spec.volumes.find((v: any) => v.name.startsWith('kube-api-access-'));
    expect(vol.name).toMatch(/^kube-api-access-[bcdfghjklmnpqrstvwxz2456789]{5}$/);
    expect(vol.projected).toEqual({
      defaultMode: 420,
      sources: [
        { serviceAccountToken: { expirationSeconds: 3607, path: 'token' } },
        { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
        { downwardAPI: { items: [{ path: 'namespace', fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } }] } },
      ],
    });
    expect(p.spec.containers[0].volumeMounts).toEqual([{ name: vol.name, readOnly: true, mountPath: '/var/run/secrets/kubernetes.io/serviceaccount' }]);
    const y = await kubectl(s, ['get', 'pod', 'sa-run', '-o', 'yaml']);
    expect(y.stdout).toContain('mountPath: /var/run/secrets/kubernetes.io/serviceaccount');
  });

  it('mounts in init containers too, never in ephemeral ones, and keeps an existing mount at the token path', async () => {
    const r = await request(
      s,
      'POST',
      `${NS}/default/pods`,
      pod('sa-init', {
        initContainers: [{ name: 'i', image: 'busybox' }],
        containers: [
          { name: 'a', image: 'busybox' },
          { name: 'b', image: 'busybox', volumeMounts: [{ name: 'own', mountPath: '/var/run/secrets/kubernetes.io/serviceaccount' }] },
        ],
        volumes: [{ name: 'own', emptyDir: {} }],
      }),
    );
    expect(r.status).toBe(201);
    const spec = r.json().spec;
    const name = spec.volumes[1].name;
    expect(name).toMatch(/^kube-api-access-/);
    expect(spec.initContainers[0].volumeMounts).toEqual([{ name, readOnly: true, mountPath: '/var/run/secrets/kubernetes.io/serviceaccount' }]);
    expect(spec.containers[0].volumeMounts[0].name).toBe(name);
    expect(spec.containers[1].volumeMounts).toEqual([{ name: 'own', mountPath: '/var/run/secrets/kubernetes.io/serviceaccount' }]);
  });

  it('no token volume when the pod or its account opts out; the account\'s imagePullSecrets are copied', async () => {
    const off = await request(s, 'POST', `${NS}/default/pods`, pod('sa-off', { automountServiceAccountToken: false }));
    expect(off.status).toBe(201);
    expect(off.json().spec.volumes).toBeUndefined();
    expect(off.json().spec.containers[0].volumeMounts).toBeUndefined();
    await request(s, 'POST', `${NS}/default/serviceaccounts`, { metadata: { name: 'quiet' }, automountServiceAccountToken: false, imagePullSecrets: [{ name: 'reg' }] });
    const q = await request(s, 'POST', `${NS}/default/pods`, pod('sa-quiet', { serviceAccountName: 'quiet' }));
    expect(q.status).toBe(201);
    expect(q.json().spec.volumes).toBeUndefined();
    expect(q.json().spec.imagePullSecrets).toEqual([{ name: 'reg' }]);
    // The pod's own choice wins over the account's.
    const on = await request(s, 'POST', `${NS}/default/pods`, pod('sa-on', { serviceAccountName: 'quiet', automountServiceAccountToken: true }));
    expect(on.json().spec.volumes[0].name).toMatch(/^kube-api-access-/);
  });

  it('a missing account is a 403 with kube\'s message', async () => {
    const r = await kubectl(s, ['run', 'sa-missing', '--image=nginx', '--overrides', '{"spec":{"serviceAccountName":"nope"}}']);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('Error from server (Forbidden): pods "sa-missing" is forbidden: error looking up service account default/nope: serviceaccount "nope" not found');
    const api = await request(s, 'POST', `${NS}/default/pods`, pod('sa-missing', { serviceAccountName: 'nope' }));
    expect(api.status).toBe(403);
    expect(api.json()).toMatchObject({ reason: 'Forbidden', code: 403, details: { name: 'sa-missing', kind: 'pods' } });
  });

  it('a pod created right after its namespace waits for the default account', async () => {
    expect((await request(s, 'POST', NS, { metadata: { name: 'adm-fresh' } })).status).toBe(201);
    const r = await request(s, 'POST', `${NS}/adm-fresh/pods`, pod('p'));
    expect(r.status).toBe(201);
    expect(r.json().spec.serviceAccountName).toBe('default');
  });

  it('every namespace has kube-root-ca.crt holding the serving CA; it comes back when deleted', async () => {
    const cm = await until(async () => {
      const r = await request(s, 'GET', `${NS}/adm-fresh/configmaps/kube-root-ca.crt`);
      return r.status === 200 && r.json();
    });
    expect((await cm).data).toEqual({ 'ca.crt': s.ca });
    const all = await kubectl(s, ['get', 'configmaps', '-A', '--field-selector', 'metadata.name=kube-root-ca.crt', '-o', 'name']);
    expect(all.stdout.trim().split('\n').length).toBeGreaterThanOrEqual(5);
    expect((await request(s, 'DELETE', `${NS}/default/configmaps/kube-root-ca.crt`)).status).toBe(200);
    await until(async () => (await request(s, 'GET', `${NS}/default/configmaps/kube-root-ca.crt`)).status === 200);
  });
});

describe('storage admission and protection', () => {
  it('a new PVC gets the default StorageClass (newest of several) and pvc-protection; kubectl delete pvc completes', async () => {
    const sc = (name: string) =>
      yaml(`
    apiVersion: storage.k8s.io/v1
    kind: StorageClass
    metadata:
      name: ${name}
      annotations: {storageclass.kubernetes.io/is-default-class: "true"}
    provisioner: example.com/x
    `);
    expect((await kubectl(s, ['apply', '-f', '-'], { input: sc('older') })).code).toBe(0);
    await new Promise((r) => setTimeout(r, 1100)); // creationTimestamp has second precision
    expect((await kubectl(s, ['apply', '-f', '-'], { input: sc('newer') })).code).toBe(0);
    const pvc = (name: string, cls = '') =>
      yaml(`
    apiVersion: v1
    kind: PersistentVolumeClaim
    metadata: {name: ${name}}
    spec:
      ${cls}accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 1Gi}}
    `);
    expect((await kubectl(s, ['apply', '-f', '-'], { input: pvc('claim') })).code).toBe(0);
    const got = JSON.parse((await kubectl(s, ['get', 'pvc', 'claim', '-o', 'json'])).stdout);
    expect(got.spec.storageClassName).toBe('newer');
    expect(got.metadata.finalizers).toEqual(['kubernetes.io/pvc-protection']);
    // An explicit empty class is a choice.
    expect((await kubectl(s, ['apply', '-f', '-'], { input: pvc('noclass', 'storageClassName: ""\n      ') })).code).toBe(0);
    expect(JSON.parse((await kubectl(s, ['get', 'pvc', 'noclass', '-o', 'json'])).stdout).spec.storageClassName).toBe('');
    const del = await kubectl(s, ['delete', 'pvc', 'claim', 'noclass'], { timeoutMs: 20_000 });
    expect(del.code).toBe(0);
    expect((await request(s, 'GET', `${NS}/default/persistentvolumeclaims/claim`)).status).toBe(404);
  });

  it('a PVC used by a scheduled pod stays Terminating until the pod is gone', async () => {
    await request(s, 'POST', `${NS}/default/persistentvolumeclaims`, { metadata: { name: 'held' }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } } });
    const p = pod('holder', { nodeName: 'node-1', volumes: [{ name: 'd', persistentVolumeClaim: { claimName: 'held' } }] });
    expect((await request(s, 'POST', `${NS}/default/pods`, p)).status).toBe(201);
    expect((await request(s, 'DELETE', `${NS}/default/persistentvolumeclaims/held`)).status).toBe(200);
    await new Promise((r) => setTimeout(r, 300));
    const held = await request(s, 'GET', `${NS}/default/persistentvolumeclaims/held`);
    expect(held.status).toBe(200);
    expect(held.json().metadata.deletionTimestamp).toBeDefined();
    expect((await request(s, 'DELETE', `${NS}/default/pods/holder`, { gracePeriodSeconds: 0 })).status).toBe(200);
    await until(async () => (await request(s, 'GET', `${NS}/default/persistentvolumeclaims/held`)).status === 404);
  });

  it('a new PV gets pv-protection and, not bound, is deleted', async () => {
    const r = await request(s, 'POST', '/api/v1/persistentvolumes', {
      metadata: { name: 'adm-pv' },
      spec: { capacity: { storage: '1Gi' }, accessModes: ['ReadWriteOnce'], hostPath: { path: '/tmp/x' } },
    });
    expect(r.json().metadata.finalizers).toEqual(['kubernetes.io/pv-protection']);
    expect((await kubectl(s, ['delete', 'pv', 'adm-pv'], { timeoutMs: 20_000 })).code).toBe(0);
  });

  it('a new Ingress without a class gets the default IngressClass', async () => {
    await request(s, 'POST', '/apis/networking.k8s.io/v1/ingressclasses', {
      metadata: { name: 'nginx', annotations: { 'ingressclass.kubernetes.io/is-default-class': 'true' } },
      spec: { controller: 'example.com/ingress' },
    });
    const r = await kubectl(s, ['create', 'ingress', 'web', '--rule=example.com/=svc:80']);
    expect(r.code).toBe(0);
    const ing = JSON.parse((await kubectl(s, ['get', 'ingress', 'web', '-o', 'json'])).stdout);
    expect(ing.spec.ingressClassName).toBe('nginx');
    const ann = await request(s, 'POST', '/apis/networking.k8s.io/v1/namespaces/default/ingresses', {
      metadata: { name: 'legacy', annotations: { 'kubernetes.io/ingress.class': 'other' } },
      spec: { defaultBackend: { service: { name: 'svc', port: { number: 80 } } } },
    });
    expect(ann.json().spec.ingressClassName).toBeUndefined();
  });
});

describe('LimitRanger', () => {
  beforeAll(async () => {
    expect((await request(s, 'POST', NS, { metadata: { name: 'limited' } })).status).toBe(201);
    const lr = await request(s, 'POST', `${NS}/limited/limitranges`, {
      metadata: { name: 'lr' },
      spec: {
        limits: [
          { type: 'Container', default: { cpu: '500m', memory: '256Mi' }, defaultRequest: { cpu: '100m' }, max: { cpu: '1' }, min: { memory: '64Mi' }, maxLimitRequestRatio: { cpu: '10' } },
          { type: 'PersistentVolumeClaim', max: { storage: '2Gi' } },
        ],
      },
    });
    expect(lr.status).toBe(201);
  });

  it('fills default limits and requests and notes them in kubernetes.io/limit-ranger', async () => {
    expect((await kubectl(s, ['-n', 'limited', 'run', 'lr1', '--image=nginx'])).code).toBe(0);
    const p = JSON.parse((await kubectl(s, ['-n', 'limited', 'get', 'pod', 'lr1', '-o', 'json'])).stdout);
    expect(p.spec.containers[0].resources).toEqual({ limits: { cpu: '500m', memory: '256Mi' }, requests: { cpu: '100m', memory: '256Mi' } });
    expect(p.metadata.annotations['kubernetes.io/limit-ranger']).toBe('LimitRanger plugin set: cpu, memory request for container lr1; cpu, memory limit for container lr1');
    expect(p.status.qosClass).toBe('Burstable');
  });

  it('refuses pods outside min, max and the ratio with kube\'s 403 messages', async () => {
    const over = JSON.stringify({ spec: { containers: [{ name: 'lr2', image: 'nginx', resources: { limits: { cpu: '2', memory: '32Mi' }, requests: { cpu: '100m' } } }] } });
    const r = await kubectl(s, ['-n', 'limited', 'run', 'lr2', '--image=nginx', '--overrides', over]);
    expect(r.stderr).toContain('Error from server (Forbidden): pods "lr2" is forbidden: [');
    expect(r.stderr).toContain('minimum memory usage per Container is 64Mi, but request is 32Mi');
    expect(r.stderr).toContain('maximum cpu usage per Container is 1, but limit is 2');
    expect(r.stderr).toContain('cpu max limit to request ratio per Container is 10, but provided ratio is 20.000000');
    const one = await request(s, 'POST', `${NS}/limited/pods`, pod('lr3', { containers: [{ name: 'c', image: 'x', resources: { limits: { cpu: '1' }, requests: { cpu: '50m' } } }] }));
    expect(one.status).toBe(403);
    expect(one.json().message).toBe('pods "lr3" is forbidden: cpu max limit to request ratio per Container is 10, but provided ratio is 20.000000');
  });

  it('refuses a PVC over the max storage', async () => {
    const r = await kubectl(s, ['-n', 'limited', 'apply', '-f', '-'], {
      input: yaml(`
    apiVersion: v1
    kind: PersistentVolumeClaim
    metadata: {name: big}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 5Gi}}
    `),
    });
    expect(r.stderr).toContain('persistentvolumeclaims "big" is forbidden: maximum storage usage per PersistentVolumeClaim is 2Gi, but request is 5Gi');
  });
});

describe('ResourceQuota', () => {
  it('refuses creates over hard limits with kube\'s messages and keeps status.used current', async () => {
    expect((await kubectl(s, ['create', 'ns', 'quota'])).code).toBe(0);
    expect((await kubectl(s, ['-n', 'quota', 'create', 'quota', 'compute', '--hard=pods=2,requests.cpu=1,count/configmaps=2'])).code).toBe(0);
    const missing = await kubectl(s, ['-n', 'quota', 'run', 'a', '--image=nginx']);
    expect(missing.stderr).toContain('Error from server (Forbidden): pods "a" is forbidden: failed quota: compute: must specify requests.cpu');
    const cpu = (n: string) => JSON.stringify({ spec: { containers: [{ name: n, image: 'nginx', resources: { requests: { cpu: '600m' } } }] } });
    expect((await kubectl(s, ['-n', 'quota', 'run', 'b', '--image=nginx', '--overrides', cpu('b')])).code).toBe(0);
    const over = await kubectl(s, ['-n', 'quota', 'run', 'c', '--image=nginx', '--overrides', cpu('c')]);
    expect(over.stderr).toContain('pods "c" is forbidden: exceeded quota: compute, requested: requests.cpu=600m, used: requests.cpu=600m, limited: requests.cpu=1');
    // kube-root-ca.crt counts too, as in kube.
    await until(async () => (await request(s, 'GET', `${NS}/quota/configmaps/kube-root-ca.crt`)).status === 200);
    expect((await kubectl(s, ['-n', 'quota', 'create', 'cm', 'x1'])).code).toBe(0);
    const cm = await kubectl(s, ['-n', 'quota', 'create', 'cm', 'x2']);
    expect(cm.stderr).toContain('configmaps "x2" is forbidden: exceeded quota: compute, requested: count/configmaps=1, used: count/configmaps=2, limited: count/configmaps=2');
    const status = await until(async () => {
      const q = (await request(s, 'GET', `${NS}/quota/resourcequotas/compute`)).json();
      return q.status?.used?.pods === '1' && q.status?.used?.['count/configmaps'] === '2' && q.status;
    });
    expect((await status).used).toEqual({ 'count/configmaps': '2', pods: '1', 'requests.cpu': '600m' });
    expect((await status).hard).toEqual({ 'count/configmaps': '2', pods: '2', 'requests.cpu': '1' });
  });
});
