import { describe, it, expect } from 'vitest';
import { printerFor } from './printers.js';

const NOW = Date.parse('2025-03-03T12:00:00Z');
const m = (name: string, extra: object = {}) => ({ name, namespace: 'default', creationTimestamp: '2025-03-03T11:00:00Z', ...extra });
const cells = (g: string, r: string, o: any) => printerFor(g, r).row(o, NOW).cells;
const header = (g: string, r: string) => printerFor(g, r).columns.map((c) => (c.priority ? `${c.name}*` : c.name));

describe('further kinds', () => {
  it('ingresses', () => {
    expect(header('networking.k8s.io', 'ingresses')).toEqual(['Name', 'Class', 'Hosts', 'Address', 'Ports', 'Age']);
    const ing = { metadata: m('web'), spec: { ingressClassName: 'nginx', rules: [{ host: 'a.example.com' }, { host: 'b.example.com' }], tls: [{ hosts: ['a.example.com'] }] }, status: { loadBalancer: { ingress: [{ ip: '203.0.113.7' }] } } };
    expect(cells('networking.k8s.io', 'ingresses', ing)).toEqual(['web', 'nginx', 'a.example.com,b.example.com', '203.0.113.7', '80, 443', '60m']);
    expect(cells('networking.k8s.io', 'ingresses', { metadata: m('x'), spec: { defaultBackend: {} } }).slice(1, 5)).toEqual(['<none>', '*', '', '80']);
  });

  it('persistent volumes and claims', () => {
    const pv = { metadata: m('pv-1'), spec: { capacity: { storage: '10Gi' }, accessModes: ['ReadWriteMany', 'ReadWriteOnce'], persistentVolumeReclaimPolicy: 'Retain', storageClassName: 'fast', claimRef: { namespace: 'default', name: 'data' }, volumeMode: 'Filesystem' }, status: { phase: 'Bound' } };
    expect(cells('', 'persistentvolumes', pv)).toEqual(['pv-1', '10Gi', 'RWO,RWX', 'Retain', 'Bound', 'default/data', 'fast', '<unset>', '', '60m', 'Filesystem']);
    const pvc = { metadata: m('data'), spec: { volumeName: 'pv-1', storageClassName: 'fast', resources: { requests: { storage: '5Gi' } } }, status: { phase: 'Bound', capacity: { storage: '10Gi' }, accessModes: ['ReadWriteOnce'] } };
    expect(cells('', 'persistentvolumeclaims', pvc)).toEqual(['data', 'Bound', 'pv-1', '10Gi', 'RWO', 'fast', '<unset>', '60m', '<unset>']);
    expect(cells('', 'persistentvolumeclaims', { metadata: m('p'), spec: {}, status: { phase: 'Pending' } }).slice(1, 5)).toEqual(['Pending', '', '', '']);
  });

  it('rbac bindings, storage classes, priority classes, PDBs, controller revisions', () => {
    const rb = { metadata: m('rb'), roleRef: { kind: 'ClusterRole', name: 'view' }, subjects: [{ kind: 'User', name: 'alice' }, { kind: 'Group', name: 'devs' }, { kind: 'ServiceAccount', namespace: 'ci', name: 'bot' }, { kind: 'User', name: 'bob' }] };
    expect(cells('rbac.authorization.k8s.io', 'rolebindings', rb)).toEqual(['rb', 'ClusterRole/view', '60m', 'alice, bob', 'devs', 'ci:bot']);
    const sc = { metadata: m('standard', { annotations: { 'storageclass.kubernetes.io/is-default-class': 'true' } }), provisioner: 'rancher.io/local-path', volumeBindingMode: 'WaitForFirstConsumer' };
    expect(cells('storage.k8s.io', 'storageclasses', sc)).toEqual(['standard (default)', 'rancher.io/local-path', 'Delete', 'WaitForFirstConsumer', false, '60m']);
    expect(cells('scheduling.k8s.io', 'priorityclasses', { metadata: m('high'), value: 1000000, globalDefault: false, preemptionPolicy: 'PreemptLowerPriority' })).toEqual(['high', 1000000, false, '60m', 'PreemptLowerPriority']);
    expect(cells('policy', 'poddisruptionbudgets', { metadata: m('pdb'), spec: { minAvailable: '50%' }, status: { disruptionsAllowed: 1 } })).toEqual(['pdb', '50%', 'N/A', 1, '60m']);
    const cr = { metadata: m('web-7c9', { ownerReferences: [{ apiVersion: 'apps/v1', kind: 'StatefulSet', name: 'web', controller: true }] }), revision: 2 };
    expect(cells('apps', 'controllerrevisions', cr)).toEqual(['web-7c9', 'statefulset.apps/web', 2, '60m']);
  });

  it('endpoint slices, webhooks, CSRs, replication controllers, pod templates', () => {
    const es = { metadata: m('web-abc'), addressType: 'IPv4', ports: [{ name: 'http', port: 8080 }], endpoints: [{ addresses: ['10.0.0.1'] }, { addresses: ['10.0.0.2'] }, { addresses: ['10.0.0.3'] }, { addresses: ['10.0.0.4'] }] };
    expect(cells('discovery.k8s.io', 'endpointslices', es)).toEqual(['web-abc', 'IPv4', '8080', '10.0.0.1,10.0.0.2,10.0.0.3 + 1 more...', '60m']);
    expect(cells('discovery.k8s.io', 'endpointslices', { metadata: m('e'), addressType: 'IPv4' }).slice(2, 4)).toEqual(['<unset>', '<unset>']);
    expect(cells('admissionregistration.k8s.io', 'validatingwebhookconfigurations', { metadata: m('v'), webhooks: [{}, {}] })).toEqual(['v', 2, '60m']);
    const csr = { metadata: m('csr-1'), spec: { signerName: 'kubernetes.io/kube-apiserver-client', username: 'alice', expirationSeconds: 86400 }, status: { conditions: [{ type: 'Approved' }], certificate: 'LS0t' } };
    expect(cells('certificates.k8s.io', 'certificatesigningrequests', csr)).toEqual(['csr-1', '60m', 'kubernetes.io/kube-apiserver-client', 'alice', '24h', 'Approved,Issued']);
    const rc = { metadata: m('rc'), spec: { replicas: 2, selector: { app: 'x' }, template: { spec: { containers: [{ name: 'c', image: 'i' }] } } }, status: { replicas: 2, readyReplicas: 1 } };
    expect(cells('', 'replicationcontrollers', rc)).toEqual(['rc', 2, 2, 1, '60m', 'c', 'i', 'app=x']);
    expect(cells('', 'podtemplates', { metadata: m('pt'), template: { metadata: { labels: { a: 'b' } }, spec: { containers: [{ name: 'c', image: 'i' }] } } })).toEqual(['pt', 'c', 'i', 'a=b']);
  });
});
